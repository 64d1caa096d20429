package model

import (
	"encoding/json"
	"html"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// This file holds what every adapter needs to agree on, so one
// conversation reads the same whichever wire format carries it.

// ToolArguments turns a tool call's streamed argument text into the JSON a
// ToolCall carries: "{}" when the model sent nothing, the text itself when
// it is valid JSON, and otherwise the text as a JSON string. A malformed
// call thus still round-trips through the log and fails the tool's schema
// check, where the model can be told, rather than failing a write.
func ToolArguments(s string) json.RawMessage {
	t := strings.TrimSpace(s)
	if t == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	b, _ := json.Marshal(s)
	return b
}

// PromptText is how a resource reads in a prompt for a wire format without
// a native block for it: an embedded resource as
// <resource uri="…">contents</resource>, a binary one as the marker
// <resource uri="…" encoding="base64"/>, a link as
// <resource_link name="…" uri="…">description</resource_link>, each with
// mime="…" when the type is known.
func (r Resource) PromptText() string {
	var b strings.Builder
	attr := func(k, v string) {
		if v != "" {
			b.WriteString(" " + k + `="` + html.EscapeString(v) + `"`)
		}
	}
	switch {
	case r.Blob:
		b.WriteString("<resource")
		attr("uri", r.URI)
		attr("mime", r.MimeType)
		b.WriteString(` encoding="base64"/>`)
		return b.String()
	case r.Text != "":
		b.WriteString("<resource")
		attr("uri", r.URI)
		attr("mime", r.MimeType)
		b.WriteString(">" + r.Text + "</resource>")
		return b.String()
	}
	b.WriteString("<resource_link")
	attr("name", r.Name)
	attr("uri", r.URI)
	attr("mime", r.MimeType)
	b.WriteString(">" + html.EscapeString(r.Description) + "</resource_link>")
	return b.String()
}

// Placeholder is the text that stands in for an image when the request
// does not have Vision on.
func (i Image) Placeholder() string {
	what := "an image"
	if i.Name != "" {
		what = "image " + i.Name
	}
	return "[" + what + " was omitted: this model does not accept images]"
}

// ParseRetryAfter reads a Retry-After header value, delay-seconds or an
// HTTP date, as a wait from now. It returns 0 for an empty, malformed or
// past value.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 || math.IsNaN(secs) || math.IsInf(secs, 0) {
			return 0
		}
		return time.Duration(min(secs, float64(math.MaxInt64/int64(time.Second))) * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}
