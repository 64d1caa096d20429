package model

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// maxErrorBody bounds how much of an error response is read; a provider's
// error text is far shorter, so this only guards memory.
const maxErrorBody = 1 << 20

// ClassifyHTTP is what every adapter's SDK middleware does with the
// outcome of one HTTP exchange, so that the provider's text and its
// Retry-After survive whole whatever the SDK would make of them: a
// connection failure (unless ctxErr says the caller gave up) and an error
// status become an *Error; anything else passes through.
func ClassifyHTTP(provider string, res *http.Response, err, ctxErr error, now time.Time) (*http.Response, error) {
	if err != nil {
		if ctxErr == nil && IsConnError(err) {
			return nil, &Error{Provider: provider, Err: err}
		}
		return nil, err
	}
	if res.StatusCode < 400 {
		return res, nil
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	return nil, &Error{
		Provider:   provider,
		Status:     res.StatusCode,
		Body:       strings.TrimSpace(string(body)),
		RetryAfter: retryAfter(res.Header, now),
	}
}

// retryAfter reads retry-after-ms, which providers send for sub-second
// waits, or else Retry-After.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 && ms < float64(time.Hour/time.Millisecond) {
		return time.Duration(ms * float64(time.Millisecond))
	}
	return ParseRetryAfter(h.Get("Retry-After"), now)
}

// IsConnError reports a failure to reach a server or to hear it out:
// refused, reset, cut short or timed out.
func IsConnError(err error) bool {
	var op *net.OpError
	var ne net.Error
	return errors.As(err, &op) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		(errors.As(err, &ne) && ne.Timeout())
}
