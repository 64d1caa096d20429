// Package openai is the model adapter for OpenAI Chat Completions, and so
// for every server that speaks it: Ollama, vLLM, llama.cpp server, LM
// Studio, OpenRouter, through Options.BaseURL.
//
// It streams by default (Options.NoStream asks for whole responses, for
// local servers that do not stream tool calls). Reasoning that
// OpenAI-compatible servers stream as reasoning_content or reasoning
// deltas is surfaced as thinking tagged "openai", and never replayed: the
// adapter drops every thinking part when it builds a request.
//
// It speaks the wire format itself (no SDK: an SDK registers every API
// family at init and links them all, for the one endpoint meka calls): it
// POSTs to BaseURL + /chat/completions and reads the server-sent events
// with package sse. No wire type leaves it. It imports only packages model
// and model/sse from meka.
package openai

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
	"strings"
	"time"

	"meka.dev/meka/model"
	"meka.dev/meka/model/sse"
)

// Name is the provider name: it tags the errors and the thinking this
// adapter produces.
const Name = "openai"

// DefaultBaseURL is OpenAI's own API root.
const DefaultBaseURL = "https://api.openai.com/v1"

// Options configures a Client. The zero value of each field means its
// default.
type Options struct {
	// BaseURL is the API root, the part before /chat/completions, such as
	// http://localhost:11434/v1 for Ollama; default DefaultBaseURL.
	BaseURL string
	// APIKey is sent as a bearer token; empty sends none, as local
	// servers expect.
	APIKey string
	Model  string
	// MaxOutputTokens caps a reply when the request does not; 0 leaves it
	// to the server. OpenAI itself is sent max_completion_tokens, every
	// other server the max_tokens they all understand.
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
	// NoStream asks for the whole response at once, for servers that do
	// not stream tool calls. Stream still yields deltas, all at the end.
	NoStream bool
	// CacheKey sends a request's cache key as prompt_cache_key to a server
	// other than OpenAI's own, which always gets it; other servers may
	// refuse a field they do not know.
	CacheKey bool
	// ReasoningEffort is sent as reasoning_effort (low, medium, high, …)
	// for reasoning models; empty sends none.
	ReasoningEffort string
}

// Client is an OpenAI Chat Completions provider. It is safe for concurrent
// use.
type Client struct {
	opts Options
	// endpoint is the chat completions URL, or endpointErr why BaseURL
	// gives none.
	endpoint    *url.URL
	endpointErr error
	hc          *http.Client
	// maxCompletionTokens says the server is OpenAI's, which wants
	// max_completion_tokens rather than max_tokens.
	maxCompletionTokens bool
	// cacheKey says prompt_cache_key is sent.
	cacheKey bool
}

var _ model.Provider = (*Client)(nil)

// maxResponse bounds a whole (unstreamed) response: far above any reply,
// it only guards memory.
const maxResponse = 64 << 20

// New returns a client for o. It reads no environment variable: every
// setting comes from o.
func New(o Options) *Client {
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	c := &Client{opts: o}
	c.endpoint, c.endpointErr = model.Endpoint(Name, o.BaseURL, "chat/completions")
	hc := o.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	c.hc = model.GuardRedirects(Name, hc, c.endpoint)
	if u, err := url.Parse(o.BaseURL); err == nil && strings.EqualFold(u.Hostname(), "api.openai.com") {
		c.maxCompletionTokens = true
		c.cacheKey = true
	}
	c.cacheKey = c.cacheKey || o.CacheKey
	return c
}

// userAgent names meka to the API and to the proxies in between.
const userAgent = "meka"

// Name reports "openai".
func (c *Client) Name() string { return Name }

// Stream sends req and streams the reply. A call that fails before its
// first event is retried as Options.Retry allows, honouring the server's
// Retry-After; once an event has been yielded, an error ends the stream.
func (c *Client) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		if c.endpointErr != nil {
			yield(nil, c.endpointErr)
			return
		}
		params, err := c.params(req)
		if err != nil {
			yield(nil, err)
			return
		}
		if !c.opts.NoStream {
			params.Stream = true
			params.StreamOptions = &streamOptions{IncludeUsage: true}
		}
		body, err := encode(params)
		if err != nil {
			yield(nil, fmt.Errorf("build openai request: %w", err))
			return
		}
		c.opts.Retry.Stream(ctx, Name, c.opts.Timeouts, func(ctx context.Context, emit func(model.Event) bool) error {
			res, err := c.post(ctx, body)
			if err != nil {
				return err
			}
			defer res.Body.Close() // and closed when ctx ends (ClassifyHTTP)
			emit = model.RateLimited(res.Header, time.Now(), emit)
			if c.opts.NoStream || isJSON(res.Header) {
				// Asked for whole, or a server that does not stream
				// answered whole anyway.
				return whole(ctx, res.Body, emit)
			}
			return stream(ctx, res.Body, emit)
		})(yield)
	}
}

// post sends one request. An error status or a connection failure comes
// back as a *model.Error.
func (c *Client) post(ctx context.Context, body []byte) (*http.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("call openai: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	if c.opts.NoStream {
		hr.Header.Set("Accept", "application/json")
	} else {
		hr.Header.Set("Accept", "text/event-stream")
	}
	hr.Header.Set("User-Agent", userAgent)
	if c.opts.APIKey != "" {
		hr.Header.Set("Authorization", "Bearer "+c.opts.APIKey)
	}
	res, err := c.hc.Do(hr)
	res, err = model.ClassifyHTTP(ctx, Name, res, err, time.Now())
	if err != nil {
		return nil, callError(ctx, err)
	}
	return res, nil
}

func isJSON(h http.Header) bool {
	t, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && t == "application/json"
}

// done is the data of the event that ends a stream.
var done = []byte("[DONE]")

// stream reads one streamed reply, passing its events to emit. It returns
// nil when emit asks to stop.
func stream(ctx context.Context, body io.Reader, emit func(model.Event) bool) error {
	a := assembler{emit: emit}
	r := sse.NewReader(body)
	for {
		ev, err := r.Next()
		if ctx.Err() != nil {
			// A buffered body may still yield events after a cancel.
			return callError(ctx, ctx.Err())
		}
		if err == io.EOF {
			// Some servers end with the finish reason and no [DONE];
			// response says whether the reply was whole.
			break
		}
		if err != nil {
			return callError(ctx, err)
		}
		switch ev.Type {
		case "", "message":
		case "error":
			return streamError(ev.Data)
		default:
			continue // not an event of Chat Completions
		}
		if bytes.HasPrefix(ev.Data, done) {
			break
		}
		var ck completion
		if err := json.Unmarshal(ev.Data, &ck); err != nil {
			return fmt.Errorf("read openai stream: event %s: %w", model.Cap(string(ev.Data), 200), err)
		}
		if hasError(ck.Error) {
			return streamError(ev.Data)
		}
		if !a.chunk(&ck) {
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

// whole reads one whole response and replays it as events.
func whole(ctx context.Context, body io.Reader, emit func(model.Event) bool) error {
	data, err := io.ReadAll(io.LimitReader(body, maxResponse+1))
	if err != nil {
		return callError(ctx, err)
	}
	if len(data) > maxResponse {
		return fmt.Errorf("read openai response: longer than %d bytes", maxResponse)
	}
	var cc completion
	if err := json.Unmarshal(data, &cc); err != nil {
		return fmt.Errorf("read openai response: %w: %s", err, model.Cap(string(data), 200))
	}
	if hasError(cc.Error) {
		return streamError(data)
	}
	a := assembler{emit: emit}
	if !a.completion(&cc) {
		return nil
	}
	resp, err := a.response()
	if err != nil {
		return err
	}
	emit(model.Completed{Response: resp})
	return nil
}
