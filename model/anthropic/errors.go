package anthropic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

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

// retryAfter reads retry-after-ms, for sub-second waits, or else
// Retry-After.
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
	if isConnError(err) {
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
