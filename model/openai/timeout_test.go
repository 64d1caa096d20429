package openai_test

import (
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"meka.dev/meka/model"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/openai"
)

// A provider that never answers costs first_token_timeout, and the
// timeout is retried like a dropped connection.
func TestFirstTokenTimeoutIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := modeltest.NewHandler(parse(t, `{"rounds":[{"stall":"response"},{"text":"second try"}]}`))
		c := openai.New(openai.Options{
			BaseURL:    "http://modeltest.invalid/v1",
			HTTPClient: &http.Client{Transport: h.Transport()},
			Retry:      model.Retry{Base: time.Second},
			Timeouts:   model.Timeouts{FirstToken: 2 * time.Minute},
		})
		start := time.Now()
		resp, _ := mustRun(t, c, hello())
		if resp.Message.Text() != "second try" || time.Since(start) != 2*time.Minute+time.Second {
			t.Fatalf("after %v: %q", time.Since(start), resp.Message.Text())
		}
	})
}

func TestFirstTokenTimeoutNamesTheWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := modeltest.NewHandler(parse(t, `{"rounds":[{"stall":"response"}]}`))
		c := openai.New(openai.Options{
			BaseURL:    "http://modeltest.invalid/v1",
			HTTPClient: &http.Client{Transport: h.Transport()},
			Retry:      model.Retry{Attempts: 1},
			Timeouts:   model.Timeouts{FirstToken: 30 * time.Second},
		})
		_, err := model.Collect(c.Stream(t.Context(), hello()), nil)
		var me *model.Error
		var te *model.TimeoutError
		if !errors.As(err, &me) || !me.Retryable() || !errors.As(err, &te) || te.Wait != "first_token_timeout" {
			t.Fatalf("err = %v, want a retryable first_token_timeout", err)
		}
	})
}

// A stream that stops mid-reply ends with stream_idle_timeout once its
// first events were seen (so it is not retried: output was shown).
func TestStreamIdleTimeout(t *testing.T) {
	srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"partial reply","stall":"stream"}]}`))
	c := openai.New(openai.Options{BaseURL: srv.URL + "/v1", Timeouts: model.Timeouts{FirstToken: time.Minute, StreamIdle: 50 * time.Millisecond}})
	_, events, err := run(t, c, hello())
	var te *model.TimeoutError
	if !errors.As(err, &te) || te.Wait != "stream_idle_timeout" || len(events) == 0 {
		t.Fatalf("err = %v after %d events, want stream_idle_timeout after some", err, len(events))
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d requests: a stream that showed output is not retried", n)
	}
}
