// Package anthropic is the model adapter for the Anthropic Messages API.
//
// It streams by default (Options.NoStream asks for whole responses).
// Thinking blocks, signed or redacted, come back as thinking parts tagged
// "anthropic", and only thinking so tagged is replayed, with its
// signature, on later requests; thinking another provider produced is
// dropped. The system prompt and the end of the conversation are marked
// for prompt caching.
//
// It is the only package that imports the Anthropic SDK; no SDK type
// leaves it. It imports only package model from meka.
package anthropic

import (
	"context"
	"iter"
	"net/http"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"meka.dev/meka/model"
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
	// HTTPClient defaults to http.DefaultClient.
	HTTPClient *http.Client
	// Retry bounds the retries of a call that failed before its first
	// event; the SDK's own retries are off.
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

// Client is an Anthropic Messages provider. It is safe for concurrent use.
type Client struct {
	opts Options
	svc  anthropic.MessageService
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
	return &Client{opts: o, svc: anthropic.NewMessageService(opts...)}
}

// Name reports "anthropic".
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
func (c *Client) stream(ctx context.Context, params anthropic.MessageNewParams, emit func(model.Event) bool) error {
	s := c.svc.NewStreaming(ctx, params)
	defer s.Close()
	a := assembler{emit: emit}
	for s.Next() {
		if ctx.Err() != nil {
			break // s.Err is not bound to notice: the body may be buffered
		}
		if !a.event(s.Current()) {
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
func (c *Client) whole(ctx context.Context, params anthropic.MessageNewParams, emit func(model.Event) bool) error {
	// An explicit timeout keeps the SDK from refusing a large max_tokens
	// without streaming; the caller's ctx bounds the call in practice.
	msg, err := c.svc.New(ctx, params, option.WithRequestTimeout(time.Hour))
	if err != nil {
		return callError(ctx, err)
	}
	a := assembler{emit: emit}
	if !a.message(msg) {
		return nil
	}
	resp, err := a.response()
	if err != nil {
		return err
	}
	emit(model.Completed{Response: resp})
	return nil
}
