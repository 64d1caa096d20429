// Package anthropic is the model adapter for the Anthropic Messages API.
//
// It streams by default (Options.NoStream asks for whole responses).
// Thinking blocks, signed or redacted, come back as thinking parts tagged
// "anthropic", and only thinking so tagged is replayed, with its
// signature, on later requests; thinking another provider produced is
// dropped. The system prompt and the end of the conversation are marked
// for prompt caching.
//
// It speaks the wire format itself, JSON over HTTP with the reply streamed
// as server-sent events, rather than through Anthropic's SDK, which links
// every API family it knows for the one endpoint meka calls. It imports
// only package model and model/sse from meka.
package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"meka.dev/meka/model"
	"meka.dev/meka/model/sse"
)

// Name is the provider name: it tags the errors and the thinking this
// adapter produces.
const Name = "anthropic"

// DefaultBaseURL is Anthropic's own API root.
const DefaultBaseURL = "https://api.anthropic.com"

// DefaultMaxOutputTokens is sent when neither the request nor the options
// cap the reply, since the API requires a cap.
const DefaultMaxOutputTokens = 8192

// Options configures a Client. The zero value of each field means its
// default.
type Options struct {
	// BaseURL is the API root, the part before /v1/messages; default
	// DefaultBaseURL.
	BaseURL string
	// APIKey is sent as x-api-key.
	APIKey string
	Model  string
	// MaxOutputTokens caps a reply when the request does not; default
	// DefaultMaxOutputTokens.
	MaxOutputTokens int
	// HTTPClient defaults to http.DefaultClient. Requests go through a
	// copy that refuses a redirect to another origin, so the key stays
	// with the server it is for.
	HTTPClient *http.Client
	// Retry bounds the retries of a call that failed before its first
	// event.
	Retry model.Retry
	// Timeouts bound the waits for a reply (a whole, unstreamed reply is
	// its first token); connecting is bounded by HTTPClient's dialer.
	Timeouts model.Timeouts
	// NoStream asks for the whole response at once. Stream still yields
	// deltas, all at the end.
	NoStream bool
	// ThinkingBudget, when positive, turns on extended thinking with that
	// many tokens; max_tokens is raised above it when it is not already.
	ThinkingBudget int
}

// EffortBudget is the thinking budget a reasoning effort stands for, as
// a profile's reasoning_effort names it: none, minimal, low, medium,
// high, xhigh or max, or a number of tokens (at least 1024, the least the
// API takes). It is 0 for "" and none.
func EffortBudget(effort string) (int, error) {
	switch effort {
	case "", "none":
		return 0, nil
	case "minimal":
		return 1024, nil
	case "low":
		return 4096, nil
	case "medium":
		return 10000, nil
	case "high":
		return 32000, nil
	case "xhigh", "max":
		return 64000, nil
	}
	n, err := strconv.Atoi(effort)
	if err != nil || n < 1024 {
		return 0, fmt.Errorf("reasoning effort %q: want none, minimal, low, medium, high, xhigh, max or a thinking budget of at least 1024 tokens", effort)
	}
	return n, nil
}

// apiVersion is the Messages API version every request names in its
// anthropic-version header.
const apiVersion = "2023-06-01"

// userAgent names meka to the API and to the proxies in between.
const userAgent = "meka"

// maxWholeResponse bounds an unstreamed reply; the largest max_tokens
// Anthropic allows encodes to a small fraction of it.
const maxWholeResponse = 64 << 20

// Client is an Anthropic Messages provider. It is safe for concurrent use.
type Client struct {
	opts   Options
	hc     *http.Client
	url    *url.URL
	urlErr error // a BaseURL that cannot be joined, reported by each call
}

var _ model.Provider = (*Client)(nil)

// New returns a client for o. It reads no environment variable: every
// setting comes from o.
func New(o Options) *Client {
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	c := &Client{opts: o}
	c.url, c.urlErr = model.Endpoint(Name, o.BaseURL, "v1/messages")
	hc := o.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	// The key is a header the HTTP client would carry to any server a
	// redirect names.
	c.hc = model.GuardRedirects(Name, hc, c.url)
	return c
}

// Name reports "anthropic".
func (c *Client) Name() string { return Name }

// Stream sends req and streams the reply. A call that fails before its
// first event is retried as Options.Retry allows, honouring the server's
// Retry-After; once an event has been yielded, an error ends the stream.
func (c *Client) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		if c.urlErr != nil {
			yield(nil, c.urlErr)
			return
		}
		p, err := c.body(req)
		if err != nil {
			yield(nil, err)
			return
		}
		p.Stream = !c.opts.NoStream
		body, err := json.Marshal(p)
		if err != nil {
			yield(nil, fmt.Errorf("build anthropic request: %w", err))
			return
		}
		c.opts.Retry.Stream(ctx, Name, c.opts.Timeouts, func(ctx context.Context, emit func(model.Event) bool) error {
			if c.opts.NoStream {
				return c.whole(ctx, body, emit)
			}
			return c.stream(ctx, body, emit)
		})(yield)
	}
}

// post sends one request. An error status or a failure to connect comes
// back as a *model.Error carrying the provider's text and Retry-After.
func (c *Client) post(ctx context.Context, body []byte, accept string) (*http.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("call anthropic: %w", err)
	}
	h := hr.Header
	h.Set("Content-Type", "application/json")
	h.Set("Accept", accept)
	h.Set("Anthropic-Version", apiVersion)
	h.Set("User-Agent", userAgent)
	if c.opts.APIKey != "" {
		h.Set("X-Api-Key", c.opts.APIKey)
	}
	res, err := c.hc.Do(hr)
	return model.ClassifyHTTP(ctx, Name, res, err, time.Now())
}

// stream makes one streamed call, passing its events to emit. It returns
// nil when emit asks to stop.
func (c *Client) stream(ctx context.Context, body []byte, emit func(model.Event) bool) error {
	res, err := c.post(ctx, body, "text/event-stream")
	if err != nil {
		return callError(ctx, err)
	}
	// Closing the body is what ends a read still under way when the
	// consumer stops early; ClassifyHTTP has it closed when ctx ends.
	defer res.Body.Close()
	emit = model.RateLimited(res.Header, time.Now(), emit)
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt == "application/json" {
		// A gateway that does not stream answers with the whole message.
		return decodeWhole(ctx, res, emit)
	}
	a := assembler{emit: emit}
	r := sse.NewReader(res.Body)
	// message_stop ends the reply; what a server sends after it is not
	// waited for.
	for !a.done {
		ev, err := r.Next()
		if ctx.Err() != nil {
			// A buffered body may still yield events after a cancel.
			return callError(ctx, ctx.Err())
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return readError("read anthropic stream", err)
		}
		ok, err := a.event(ev.Type, ev.Data)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
	}
	resp, err := a.response()
	if err != nil {
		return err
	}
	emit(model.Completed{Response: resp})
	return nil
}

// whole makes one call for a whole response and replays it as events.
func (c *Client) whole(ctx context.Context, body []byte, emit func(model.Event) bool) error {
	res, err := c.post(ctx, body, "application/json")
	if err != nil {
		return callError(ctx, err)
	}
	defer res.Body.Close()
	return decodeWhole(ctx, res, model.RateLimited(res.Header, time.Now(), emit))
}

// decodeWhole reads a whole message from res and replays it as events.
func decodeWhole(ctx context.Context, res *http.Response, emit func(model.Event) bool) error {
	data, err := io.ReadAll(io.LimitReader(res.Body, maxWholeResponse+1))
	if err != nil {
		if ctx.Err() != nil {
			return callError(ctx, err)
		}
		return readError("read anthropic response", err)
	}
	if len(data) > maxWholeResponse {
		return fmt.Errorf("read anthropic response: over %d bytes", maxWholeResponse)
	}
	var msg respMessage
	if err := json.Unmarshal(data, &msg); err != nil {
		return fmt.Errorf("read anthropic response: %w (body %q)", err, model.Cap(string(data), 200))
	}
	switch msg.Type {
	case "message":
	case "error":
		return eventError(msg.Error, data)
	default:
		return fmt.Errorf("read anthropic response: not a message: %q", model.Cap(string(data), 200))
	}
	a := assembler{emit: emit}
	if !a.message(&msg) {
		return nil
	}
	resp, err := a.response()
	if err != nil {
		return err
	}
	emit(model.Completed{Response: resp})
	return nil
}
