package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

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
		return fmt.Errorf("call anthropic: %w", context.Cause(ctx))
	}
	var ae *anthropic.Error
	if errors.As(err, &ae) {
		// HTTP statuses are the middleware's; this is an error event in a
		// stream that began 200 OK, its status implied by its type.
		status := ae.StatusCode
		if status < 400 {
			status = errorStatus[string(ae.Type())]
		}
		return &model.Error{Provider: Name, Status: status, Body: strings.TrimSpace(ae.RawJSON()), Err: errStreamEvent}
	}
	if model.IsConnError(err) {
		return &model.Error{Provider: Name, Err: err}
	}
	return fmt.Errorf("call anthropic: %w", err)
}

// errStreamEvent marks an error the server sent inside a stream; with no
// status known it reads, like a broken connection, as worth a retry.
var errStreamEvent = errors.New("error event in stream")

// errorStatus is the HTTP status Anthropic documents for each error type.
var errorStatus = map[string]int{
	"invalid_request_error": 400,
	"authentication_error":  401,
	"billing_error":         402,
	"permission_error":      403,
	"not_found_error":       404,
	"request_too_large":     413,
	"rate_limit_error":      429,
	"api_error":             500,
	"timeout_error":         504,
	"overloaded_error":      529,
}
