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
// It is the only package that imports the OpenAI SDK; no SDK type leaves
// it. It imports only package model from meka.
package openai

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"meka.dev/meka/model"
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
	// HTTPClient defaults to http.DefaultClient.
	HTTPClient *http.Client
	// Retry bounds the retries of a call that failed before its first
	// event; the SDK's own retries are off.
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
}

// Client is an OpenAI Chat Completions provider. It is safe for concurrent
// use.
type Client struct {
	opts Options
	svc  openai.ChatCompletionService
	// maxCompletionTokens says the server is OpenAI's, which wants
	// max_completion_tokens rather than max_tokens.
	maxCompletionTokens bool
	// cacheKey says prompt_cache_key is sent.
	cacheKey bool
}

var _ model.Provider = (*Client)(nil)

// New returns a client for o. It reads no environment variable: every
// setting comes from o.
func New(o Options) *Client {
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	opts := []option.RequestOption{
		option.WithBaseURL(o.BaseURL),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
		option.WithMiddleware(classify),
	}
	if o.APIKey != "" {
		opts = append(opts, option.WithAPIKey(o.APIKey))
	}
	c := &Client{opts: o, svc: openai.NewChatCompletionService(opts...)}
	if u, err := url.Parse(o.BaseURL); err == nil && strings.EqualFold(u.Hostname(), "api.openai.com") {
		c.maxCompletionTokens = true
		c.cacheKey = true
	}
	c.cacheKey = c.cacheKey || o.CacheKey
	return c
}

// Name reports "openai".
func (c *Client) Name() string { return Name }

// Stream sends req and streams the reply. A call that fails before its
// first event is retried as Options.Retry allows, honouring the server's
// Retry-After; once an event has been yielded, an error ends the stream.
func (c *Client) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		params, err := c.params(req)
		if err != nil {
			yield(nil, err)
			return
		}
		c.opts.Retry.Stream(ctx, Name, c.opts.Timeouts, func(ctx context.Context, emit func(model.Event) bool) error {
			if c.opts.NoStream {
				return c.whole(ctx, params, emit)
			}
			return c.stream(ctx, params, emit)
		})(yield)
	}
}

// stream makes one streamed call, passing its events to emit. It returns
// nil when emit asks to stop.
func (c *Client) stream(ctx context.Context, params openai.ChatCompletionNewParams, emit func(model.Event) bool) error {
	params.StreamOptions.IncludeUsage = openai.Bool(true)
	s := c.svc.NewStreaming(ctx, params)
	defer s.Close()
	a := assembler{emit: emit}
	for s.Next() {
		if ctx.Err() != nil {
			break // s.Err is not bound to notice: the body may be buffered
		}
		if !a.chunk(s.Current()) {
			return nil
		}
	}
	if ctx.Err() != nil {
		return callError(ctx, ctx.Err())
	}
	if err := s.Err(); err != nil {
		return callError(ctx, err)
	}
	resp, err := a.response()
	if err != nil {
		return err
	}
	emit(model.Completed{Response: resp})
	return nil
}

// whole makes one call for a whole response and replays it as events.
func (c *Client) whole(ctx context.Context, params openai.ChatCompletionNewParams, emit func(model.Event) bool) error {
	cc, err := c.svc.New(ctx, params)
	if err != nil {
		return callError(ctx, err)
	}
	a := assembler{emit: emit}
	if !a.completion(cc) {
		return nil
	}
	resp, err := a.response()
	if err != nil {
		return err
	}
	emit(model.Completed{Response: resp})
	return nil
}
