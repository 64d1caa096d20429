package anthropic

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"meka.dev/meka/model"
)

// callError is model.CallError for this provider.
func callError(ctx context.Context, err error) error { return model.CallError(ctx, Name, err) }

// readError is the error of a reply cut or garbled in transit: a broken
// connection, worth a retry while nothing was yielded, or anything else
// (a line over the bound, say) as itself.
func readError(what string, err error) error {
	if model.IsConnError(err) {
		return &model.Error{Provider: Name, Err: fmt.Errorf("%s: %w", what, err)}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// eventError is the error an error event reports, inside a stream that
// began 200 OK or as a whole 200 body: its status is the one its type
// implies, and its body the event's data, whole.
func eventError(e *respError, data []byte) error {
	typ := ""
	if e != nil {
		typ = e.Type
	}
	return &model.Error{Provider: Name, Status: errorStatus[typ], Body: strings.TrimSpace(string(data)), Err: errStreamEvent}
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
