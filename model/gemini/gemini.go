// Package gemini is the model adapter for Google's Gemini API, spoken
// natively (streamGenerateContent with alt=sse), so that the thought
// signatures Gemini attaches to its parts survive: Chat Completions shims
// drop them, and a model whose signed calls come back unsigned refuses
// the request.
//
// A model turn is kept as the parts Gemini sent, each signed part's
// bytes as they came (plain text pieces merged), in the Signature of a
// model.Thinking tagged "gemini" whose Text is the turn's thought
// summary; later requests, and resumed, forked or rewound sessions, send
// those parts back verbatim. Thinking of another provider is never sent.
//
// Tool schemas are converted to the OpenAPI subset Gemini accepts (see
// Schema); one that cannot be is refused with the keyword and where it
// is. It speaks the wire format itself over package sse; no wire type
// leaves it. It imports only packages model and model/sse from meka.
package gemini

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
const Name = "gemini"

// DefaultBaseURL is Google's Gemini API root.
const DefaultBaseURL = "https://generativelanguage.googleapis.com/v1beta"

// Options configures a Client. The zero value of each field means its
// default.
type Options struct {
	// BaseURL is the API root, the part before /models/; default
	// DefaultBaseURL.
	BaseURL string
	// APIKey is sent in the x-goog-api-key header.
	APIKey string
	Model  string
	// MaxOutputTokens caps a reply when the request does not; 0 leaves it
	// to the server.
	MaxOutputTokens int
	// ReasoningEffort sets thinkingConfig, with thought summaries: a
	// number is a thinkingBudget in tokens, a word (minimal, low, medium,
	// high) a thinkingLevel; empty sends none.
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

// Client is a Gemini provider. It is safe for concurrent use.
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
	c.endpoint, c.endpointErr = model.Endpoint(Name, o.BaseURL, "models/"+url.PathEscape(o.Model)+":streamGenerateContent")
	if c.endpoint != nil {
		c.endpoint.RawQuery = "alt=sse"
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	c.hc = model.GuardRedirects(Name, hc, c.endpoint)
	return c
}

// Name reports "gemini".
func (c *Client) Name() string { return Name }

// Stream sends req and streams the reply. A call that fails before its
// first event is retried as Options.Retry allows, honouring the delay a
// 429's RetryInfo asks for; once an event has been yielded, an error ends
// the stream.
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
		hr.Header.Set("x-goog-api-key", c.opts.APIKey)
	}
	res, err := c.hc.Do(hr)
	res, err = model.ClassifyHTTP(ctx, Name, res, err, time.Now())
	if err != nil {
		return nil, model.CallError(ctx, Name, withRetryDelay(err))
	}
	return res, nil
}

// stream reads one streamed reply. Each event is one whole
// GenerateContentResponse; the stream ends at EOF, and a reply is whole
// only once a candidate gave its finish reason.
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
		more, err := a.chunk(ev.Data)
		if err != nil {
			return err
		}
		if !more {
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
