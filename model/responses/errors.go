package responses

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"meka.dev/meka/model"
)

// codeStatus gives the error codes of response.failed and error events
// the HTTP status the same failure has outside a stream, so they retry
// (or do not) alike.
var codeStatus = map[string]int{
	"rate_limit_exceeded":     429,
	"insufficient_quota":      403, // not to be retried: the account is out of credit
	"server_error":            500,
	"internal_error":          500,
	"server_is_overloaded":    503,
	"overloaded":              503,
	"slow_down":               503,
	"context_length_exceeded": 400,
	"invalid_prompt":          400,
	"invalid_request_error":   400,
}

// streamError is a failure reported inside a 200 stream. A code without
// a known status reads as the stream breaking, as a connection does.
func streamError(code, msg string, data []byte) *model.Error {
	e := &model.Error{Provider: Name, Body: strings.TrimSpace(string(data)), Status: codeStatus[code]}
	if e.Status == 429 {
		e.RetryAfter = tryAgainIn(msg)
	}
	if e.Status == 0 {
		text := "error in stream"
		if code != "" {
			text += ": " + code
		}
		if msg != "" {
			text += ": " + msg
		}
		e.Err = errors.New(text)
	}
	return e
}

// tryAgainIn reads the wait a rate-limit message asks for ("Please try
// again in 1.5s", "in 250ms", "in 20 seconds"); 0 when it names none.
func tryAgainIn(msg string) time.Duration {
	_, rest, ok := strings.Cut(msg, "try again in ")
	if !ok {
		return 0
	}
	end := 0
	for end < len(rest) && (rest[end] >= '0' && rest[end] <= '9' || rest[end] == '.') {
		end++
	}
	n, err := strconv.ParseFloat(rest[:end], 64)
	if err != nil || n <= 0 || n > 3600 {
		return 0
	}
	unit := strings.TrimSpace(rest[end:])
	switch {
	case strings.HasPrefix(unit, "ms"):
		return time.Duration(n * float64(time.Millisecond))
	case strings.HasPrefix(unit, "s"):
		return time.Duration(n * float64(time.Second))
	}
	return 0
}
