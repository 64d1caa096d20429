// Package httpapi is the `meka serve` front door: sessions and turns over
// HTTP, a durable live feed over server-sent events, approvals answered
// over HTTP and signed webhooks. It translates HTTP to host calls and
// renders the host's typed events; session lifecycle belongs to the host.
//
// Every event with an SSE id is a row of the feed, stored before it is
// sent (in the transaction of the log rows that caused it, where there
// are any), so a client resumes with Last-Event-ID after a dropped
// connection or a restart of the server and misses nothing. Deltas
// (message text, tool output) are ephemeral frames without ids. Event
// names and payloads are internal/events' (docs/events.schema.json),
// shared with `meka --oneshot --json` and export.
//
// It must not import another front door, a store driver or a provider.
package httpapi
