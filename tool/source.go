package tool

import "errors"

// Source is a set of tools that can change while sessions run, such as the
// tools of a connected MCP server. A Registry asks it for its tools again
// whenever Version moves, so a change reaches the next request.
type Source interface {
	// Version changes whenever Tools would return a different set. It is
	// called on every registry read and must be cheap (an atomic load).
	Version() uint64
	// Tools returns the current set; names must be unique within it.
	Tools() []Tool
}

// ErrUnavailable marks a call that could not reach what runs the tool (an
// MCP server that is not connected). The engine hands it to the model as
// a failed result rather than ending the turn; a schedule gate counts it
// as a probe that could not run.
var ErrUnavailable = errors.New("tool is unavailable")
