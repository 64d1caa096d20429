// Package lsp owns meka's language servers: started lazily, one per
// workspace and language, confined like any command (internal/sandbox),
// stopped when idle, and asked for a file's diagnostics after the agent
// changed it. A server that crashes or answers nothing within the wait is
// dropped with a notice.
//
// The JSON-RPC 2.0 connection and the LSP framing are go.lsp.dev/jsonrpc2;
// this package writes only the few LSP messages it sends and reads
// (protocol.go). It imports internal/sandbox only: the file tools take its
// diagnostics through an option (fstool never imports it) and the
// composition root wires the two.
package lsp
