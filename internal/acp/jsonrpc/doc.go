// Package jsonrpc is meka's JSON-RPC 2.0 layer for the Agent Client Protocol:
// newline-delimited JSON over a byte stream (stdio), both sides sending
// requests. It owns the framing (a bounded line reader that answers oversize
// and malformed lines and keeps serving), the single writer, request ids,
// the pending-call map, per-request goroutines with cancellable contexts,
// ordered notifications, `$/cancel_request` in both directions, and the
// AfterResponse hook that orders messages after a response.
//
// It knows nothing of ACP's methods or types (internal/acp does) and imports
// nothing from meka.
package jsonrpc
