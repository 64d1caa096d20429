package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"meka.dev/meka/model"
)

// maxErrorBody bounds how much of an error response is read; a provider's
// error text is far shorter, so this only guards memory.
const maxErrorBody = 1 << 20

// classify is SDK middleware that turns an HTTP error status or a
// connection failure into a *model.Error before the SDK sees it, so the
// provider's text and Retry-After survive whole.
func classify(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if err != nil {
		if req.Context().Err() == nil && isConnError(err) {
			return nil, &model.Error{Provider: Name, Err: err}
		}
		return nil, err
	}
	if res.StatusCode < 400 {
		return res, nil
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	return nil, &model.Error{
		Provider:   Name,
		Status:     res.StatusCode,
		Body:       strings.TrimSpace(string(body)),
		RetryAfter: retryAfter(res.Header, time.Now()),
	}
}

// retryAfter reads retry-after-ms, which OpenAI sends for sub-second
// waits, or else Retry-After.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 && ms < float64(time.Hour/time.Millisecond) {
		return time.Duration(ms * float64(time.Millisecond))
	}
	return model.ParseRetryAfter(h.Get("Retry-After"), now)
}

// isConnError reports a failure to reach the server or to hear it out:
// refused, reset, cut short or timed out.
func isConnError(err error) bool {
	var op *net.OpError
	var ne net.Error
	return errors.As(err, &op) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		(errors.As(err, &ne) && ne.Timeout())
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
	if isConnError(err) {
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
