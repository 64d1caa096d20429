package jsonrpc

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Error codes: JSON-RPC 2.0's, plus the two ACP uses.
const (
	ParseError       = -32700
	InvalidRequest   = -32600
	MethodNotFound   = -32601
	InvalidParams    = -32602
	InternalError    = -32603
	RequestCancelled = -32800 // the answer to $/cancel_request
	ResourceNotFound = -32002 // ACP: a file or session that does not exist
)

var (
	// ErrClosed is returned by Call and Notify once the connection has
	// stopped (Serve ended: no response can arrive, nothing more is sent),
	// and is the cause (context.Cause) of the contexts Serve's end cancels.
	ErrClosed = errors.New("jsonrpc: connection closed")
	// ErrTooLarge fails a Call whose response was longer than
	// Options.MaxLineBytes.
	ErrTooLarge = errors.New("jsonrpc: message exceeds the line limit")
	// ErrCancelRequested is the cause (context.Cause) of a handler's context
	// canceled by the peer's $/cancel_request.
	ErrCancelRequested = errors.New("jsonrpc: request cancelled by the peer")
	// errHandlerPanic stands for a handler's panic; it is logged, never sent.
	errHandlerPanic = errors.New("jsonrpc: handler panicked")
)

// Error is a JSON-RPC error object. Returned by a Handler it is sent as is;
// returned by Call it is the peer's answer.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message)
}

// NewError returns an Error with data marshalled as its data member; nil
// data, or data that cannot be marshalled, leaves it out (data is optional,
// and an error about an error would help nobody).
func NewError(code int, msg string, data any) *Error {
	e := &Error{Code: code, Message: msg}
	if data != nil {
		if b, err := json.Marshal(data); err == nil {
			e.Data = b
		}
	}
	return e
}

// Errors the reader sends for lines it cannot serve.
var (
	errParse         = &Error{Code: ParseError, Message: "Parse error"}
	errBatch         = &Error{Code: InvalidRequest, Message: "Invalid request: batches are not supported"}
	errNotObject     = &Error{Code: InvalidRequest, Message: "Invalid request: not a JSON object"}
	errVersion       = &Error{Code: InvalidRequest, Message: `Invalid request: jsonrpc must be "2.0"`}
	errMethodType    = &Error{Code: InvalidRequest, Message: "Invalid request: method must be a string"}
	errIDType        = &Error{Code: InvalidRequest, Message: "Invalid request: id must be a number or a string"}
	errParamsType    = &Error{Code: InvalidRequest, Message: "Invalid request: params must be an object or an array"}
	errNoMethod      = &Error{Code: InvalidRequest, Message: "Invalid request: no method"}
	errDuplicateID   = &Error{Code: InvalidRequest, Message: "Invalid request: id already in use by a request in progress"}
	errCancelledWire = &Error{Code: RequestCancelled, Message: "Request cancelled"}
	errInternalWire  = &Error{Code: InternalError, Message: "Internal error"}
)
