// Package mcp makes meka an MCP client: it connects to the servers
// config.toml names, on the official Go SDK, over stdio (a child process
// in a process group of its own, with the scrubbed environment) or
// streamable HTTP, and offers their tools to every session as meka tools
// named mcp__<server>__<tool>.
//
// One Manager serves the whole process: servers start in parallel when
// the host starts, one connection each is shared by every session, and a
// connection that drops is made again with backoff. A session sees the
// tools through a Binding, which carries what differs per session: who
// answers a server's elicitation, where large results go, whether images
// reach the model.
//
// It imports tool, model, permission, internal/sandbox and
// internal/imaging; only this package imports the MCP SDK.
package mcp
