package model

import (
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// ErrNoResponse is returned when a stream ended without a Completed event.
var ErrNoResponse = errors.New("model stream ended without a response")

// ErrScriptExhausted is returned by the script provider for a request past
// the end of its script.
var ErrScriptExhausted = errors.New("script has no more rounds")

// Error is a provider's answer that was not a response: an HTTP status
// with the provider's own error text, or a connection failure.
type Error struct {
	Provider string
	// Status is the HTTP status, 0 for a connection failure.
	Status int
	// Body is the provider's error text, whole. Show it through Display,
	// which caps it; log it whole.
	Body string
	// RetryAfter is what the provider asked for on a 429 or 503, if anything.
	RetryAfter time.Duration
	Err        error
	// Hint says what to do about it (Advice), when something can be.
	Hint string
}

func (e *Error) Error() string {
	msg := e.Provider
	if e.Status != 0 {
		msg += " " + strconv.Itoa(e.Status)
	}
	if e.Body != "" {
		msg += ": " + e.Body
	} else if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Display is the error as a person or a protocol client should see it, the
// provider's text capped at DisplayCap bytes with the cut marked.
func (e *Error) Display() string {
	msg := e.Provider + " error"
	if e.Status != 0 {
		msg = fmt.Sprintf("%s returned HTTP %d", e.Provider, e.Status)
	}
	body := e.Body
	if body == "" && e.Err != nil {
		body = e.Err.Error()
	}
	if body != "" {
		msg += ": " + Cap(body, DisplayCap)
	}
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

// Retryable reports whether the same request may succeed later: a 408,
// 409, 429 or 5xx status, or a connection failure.
func (e *Error) Retryable() bool {
	switch {
	case e.Status == 0:
		return e.Err != nil
	case e.Status == 408, e.Status == 409, e.Status == 429, e.Status >= 500:
		return true
	}
	return false
}

// DisplayCap bounds how much of a provider's error text is shown.
const DisplayCap = 4 << 10

// Cap returns s cut to at most n bytes on a rune boundary, with a marker
// saying how much was cut.
func Cap(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… [%d more bytes cut]", len(s)-cut)
}
