package anthropic_test

import (
	"errors"
	"testing"
	"time"

	"meka.dev/meka/model"
	"meka.dev/meka/model/anthropic"
	"meka.dev/meka/model/modeltest"
)

// A Messages stream that stops before its end fails with
// stream_idle_timeout instead of waiting for ever.
func TestStreamIdleTimeout(t *testing.T) {
	srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"partial reply","stall":"stream"}]}`))
	c := anthropic.New(anthropic.Options{BaseURL: srv.URL, APIKey: "k", Model: "m",
		Timeouts: model.Timeouts{FirstToken: time.Minute, StreamIdle: 50 * time.Millisecond}})
	_, err := model.Collect(c.Stream(t.Context(), hello()), nil)
	var te *model.TimeoutError
	if !errors.As(err, &te) || te.Wait != "stream_idle_timeout" {
		t.Fatalf("err = %v, want stream_idle_timeout", err)
	}
}
