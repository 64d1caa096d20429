package model

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

func TestRetryAfterHeaders(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{}, 0},
		{http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{http.Header{"Retry-After": {"Sun, 01 Mar 2026 12:00:09 GMT"}}, 9 * time.Second},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"1"}}, 250 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"junk"}, "Retry-After": {"1"}}, time.Second},
	} {
		if got := retryAfter(tc.h, now); got != tc.want {
			t.Errorf("retryAfter(%v) = %v, want %v", tc.h, got, tc.want)
		}
	}
}

func TestIsConnError(t *testing.T) {
	if !IsConnError(fmt.Errorf("read body: %w", io.ErrUnexpectedEOF)) {
		t.Error("a body cut short is not a connection error")
	}
	if IsConnError(errors.New("invalid character 'x' looking for beginning of value")) {
		t.Error("a decoding error is a connection error")
	}
}
