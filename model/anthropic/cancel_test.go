package anthropic_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"testing/synctest"

	"meka.dev/meka/model"
	"meka.dev/meka/model/anthropic"
)

// pipeBody is a reply body whose reads ignore every context, as with some
// transports: only Close ends a blocked read.
type pipeBody struct {
	*io.PipeReader
	closed bool
}

func (b *pipeBody) Close() error { b.closed = true; return b.PipeReader.Close() }

type pipeTransport struct{ body *pipeBody }

func (p pipeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: p.body, Request: r}, nil
}

// Canceling the context closes the body, so a read blocked in a transport
// that does not watch the context still ends. In a synctest bubble a read
// that never ends fails the test as a deadlock rather than hanging it.
func TestCancelClosesBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pr, pw := io.Pipe()
		body := &pipeBody{PipeReader: pr}
		go fmt.Fprint(pw, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"type\":\"message\",\"content\":[]}}\n\n"+
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"+
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"first\"}}\n\n")
		c := anthropic.New(anthropic.Options{BaseURL: "http://pipe.invalid", HTTPClient: &http.Client{Transport: pipeTransport{body}}})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var err error
		var texts int
		for ev, e := range c.Stream(ctx, hello()) {
			if e != nil {
				err = e
				break
			}
			if _, ok := ev.(model.TextDelta); ok {
				texts++
				cancel()
			}
		}
		if !errors.Is(err, context.Canceled) || texts != 1 || !body.closed {
			t.Errorf("err = %v after %d texts, body closed %v; want the cancellation after one, the body closed", err, texts, body.closed)
		}
	})
}
