// Package responses is the model adapter for the OpenAI Responses API
// (POST /v1/responses), the one API through which OpenAI's reasoning
// models keep their reasoning from one request to the next.
//
// It calls statelessly (store false): every request carries the whole
// conversation. Each reasoning item the model sends is kept whole, the
// bytes of its response.output_item.done event, encrypted_content and
// all, in the Signature of a model.Thinking tagged "openai-responses"
// whose Text is the item's summary; the next request, and a resumed,
// forked or rewound session's, sends those bytes back as they came, less
// the item's id and status (the API keeps no item under store false, and
// refuses an id it does not know).
// Thinking of any other provider is never sent.
//
// It speaks the wire format itself, like package openai, over package
// sse; no wire type leaves it. It imports only packages model and
// model/sse from meka.
package responses

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"time"

	"meka.dev/meka/model"
	"meka.dev/meka/model/sse"
)

// Name is the provider name: it tags the errors and the thinking this
// adapter produces.
const Name = "openai-responses"

// DefaultBaseURL is OpenAI's own API root.
const DefaultBaseURL = "https://api.openai.com/v1"

// Options configures a Client. The zero value of each field means its
// default.
type Options struct {
	// BaseURL is the API root, the part before /responses; default
	// DefaultBaseURL.
	BaseURL string
	// APIKey is sent as a bearer token; empty sends none.
	APIKey string
	Model  string
	// MaxOutputTokens caps a reply when the request does not; 0 leaves it
	// to the server.
	MaxOutputTokens int
	// ReasoningEffort is sent as reasoning.effort (none, minimal, low,
	// medium, high, xhigh), with reasoning summaries asked for; empty
	// sends no reasoning settings, which models without reasoning refuse.
	ReasoningEffort string
	// HTTPClient defaults to http.DefaultClient; requests go through a
	// copy that refuses a redirect to another origin.
	HTTPClient *http.Client
	// Retry bounds the retries of a call that failed before its first
	// event.
	Retry model.Retry
	// Timeouts bound the waits for a reply.
	Timeouts model.Timeouts
}

// Client is an OpenAI Responses API provider. It is safe for concurrent
// use.
type Client struct {
	opts        Options
	endpoint    *url.URL
	endpointErr error
	hc          *http.Client
}

var _ model.Provider = (*Client)(nil)

// New returns a client for o. It reads no environment variable.
func New(o Options) *Client {
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	c := &Client{opts: o}
	c.endpoint, c.endpointErr = model.Endpoint(Name, o.BaseURL, "responses")
	hc := o.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	c.hc = model.GuardRedirects(Name, hc, c.endpoint)
	return c
}

// Name reports "openai-responses".
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
		body, err := c.body(req)
		if err != nil {
			yield(nil, err)
			return
		}
		c.opts.Retry.Stream(ctx, Name, c.opts.Timeouts, func(ctx context.Context, emit func(model.Event) bool) error {
			res, err := c.post(ctx, body)
			if err != nil {
				return err
			}
			defer res.Body.Close()
			emit = model.RateLimited(res.Header, time.Now(), emit)
			return stream(ctx, res.Body, emit)
		})(yield)
	}
}

func (c *Client) post(ctx context.Context, body []byte) (*http.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("call %s: %w", Name, err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "text/event-stream")
	hr.Header.Set("User-Agent", "meka")
	if c.opts.APIKey != "" {
		hr.Header.Set("Authorization", "Bearer "+c.opts.APIKey)
	}
	res, err := c.hc.Do(hr)
	res, err = model.ClassifyHTTP(ctx, Name, res, err, time.Now())
	if err != nil {
		return nil, model.CallError(ctx, Name, err)
	}
	return res, nil
}

// stream reads one streamed reply, passing its events to emit. It
// returns nil when emit asks to stop. Only response.completed (or
// response.incomplete) is a reply; a stream that ends before one was
// cut short.
func stream(ctx context.Context, body io.Reader, emit func(model.Event) bool) error {
	a := assembler{emit: emit}
	r := sse.NewReader(body)
	for {
		ev, err := r.Next()
		if ctx.Err() != nil {
			return model.CallError(ctx, Name, ctx.Err())
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return model.CallError(ctx, Name, err)
		}
		more, err := a.event(ev.Data)
		if err != nil {
			return err
		}
		if !more {
			if a.final {
				break
			}
			return nil // the consumer stopped
		}
	}
	resp, err := a.response()
	if err != nil {
		return err
	}
	emit(model.Completed{Response: resp})
	return nil
}
