package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"meka.dev/meka/model"
)

// classify is SDK middleware that turns an HTTP error status or a
// connection failure into a *model.Error before the SDK sees it.
func classify(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	return model.ClassifyHTTP(Name, res, err, req.Context().Err(), time.Now())
}

// callError is the error a failed call reports.
func callError(ctx context.Context, err error) error {
	var me *model.Error
	if errors.As(err, &me) {
		return me
	}
	if ctx.Err() != nil {
		return fmt.Errorf("call openai: %w", context.Cause(ctx))
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		return streamError(se.Event.Data)
	}
	var ae *openai.Error
	if errors.As(err, &ae) {
		// The middleware handles statuses; this is a safety net.
		return &model.Error{Provider: Name, Status: ae.StatusCode, Body: ae.RawJSON(), Err: err}
	}
	if model.IsConnError(err) {
		return &model.Error{Provider: Name, Err: err}
	}
	return fmt.Errorf("call openai: %w", err)
}

// streamError is an error event in a stream, {"error": {...}}. Its status
// is the error's numeric code when it has one.
func streamError(data []byte) *model.Error {
	var ev struct {
		Error struct {
			Message string `json:"message"`
			Code    any    `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &ev)
	me := &model.Error{Provider: Name, Body: strings.TrimSpace(string(data))}
	if code, ok := ev.Error.Code.(float64); ok && code >= 400 && code < 600 {
		me.Status = int(code)
	} else {
		// No status to go by: the stream broke, as a connection does.
		me.Err = errors.New("error event in stream: " + ev.Error.Message)
	}
	return me
}
