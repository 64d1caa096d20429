package model

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
)

// maxErrorBody bounds how much of an error response is read; a provider's
// error text is far shorter, so this only guards memory.
const maxErrorBody = 1 << 20

// ClassifyHTTP is what every adapter does with the outcome of one HTTP
// exchange made under ctx, so that the provider's text and its
// Retry-After survive whole: a connection failure (unless ctx says the
// caller gave up) and an error status become an *Error; anything else
// passes through, its body closed when ctx ends, since a transport need
// not end a blocked read then (HTTP/1's does, others may not) and closing
// the body does.
func ClassifyHTTP(ctx context.Context, provider string, res *http.Response, err error, now time.Time) (*http.Response, error) {
	if err != nil {
		if ctx.Err() == nil && IsConnError(err) {
			return nil, &Error{Provider: provider, Err: err}
		}
		return nil, err
	}
	body := res.Body
	res.Body = &cancelBody{ReadCloser: body, stop: context.AfterFunc(ctx, func() { body.Close() })}
	if res.StatusCode < 400 {
		return res, nil
	}
	defer res.Body.Close()
	text, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	return nil, &Error{
		Provider:   provider,
		Status:     res.StatusCode,
		Body:       strings.TrimSpace(string(text)),
		RetryAfter: retryAfter(res.Header, now),
	}
}

// cancelBody is a reply body that its context's end closes.
type cancelBody struct {
	io.ReadCloser
	stop func() bool
}

func (b *cancelBody) Close() error {
	b.stop()
	return b.ReadCloser.Close()
}

// CallError is the error an adapter's failed call, or a failed read of
// its reply, reports: a *Error as it is, the caller's cancellation (or a
// watchdog's timeout) as its cause, a connection failure as a retryable
// *Error, anything else wrapped as the provider's call.
func CallError(ctx context.Context, provider string, err error) error {
	var me *Error
	if errors.As(err, &me) {
		return me
	}
	if ctx.Err() != nil {
		return fmt.Errorf("call %s: %w", provider, context.Cause(ctx))
	}
	if IsConnError(err) {
		return &Error{Provider: provider, Err: err}
	}
	return fmt.Errorf("call %s: %w", provider, err)
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

// HTTPClient returns a client whose connecting (dialing and the TLS
// handshake) is bounded by connect; 0 means no bound beyond the system's.
// A dial that runs out fails with a *TimeoutError naming connect_timeout,
// still a connection error (IsConnError) and so retried.
func HTTPClient(connect time.Duration) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if connect > 0 {
		d := &net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			var ne net.Error
			if err != nil && errors.As(err, &ne) && ne.Timeout() {
				return nil, fmt.Errorf("%w: %w", &TimeoutError{Wait: "connect_timeout", After: connect}, err)
			}
			return c, err
		}
		tr.TLSHandshakeTimeout = connect
	}
	return &http.Client{Transport: tr}
}
