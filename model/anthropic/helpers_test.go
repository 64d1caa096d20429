package anthropic_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"meka.dev/meka/model"
	"meka.dev/meka/model/anthropic"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

var update = flag.Bool("update", false, "rewrite golden files")

// fast retries quickly so tests that retry stay fast; waits are still
// real timers, bounded by Max.
var fast = model.Retry{Attempts: 3, Base: time.Millisecond, Max: 5 * time.Millisecond}

func parse(t *testing.T, s string) *script.Script {
	t.Helper()
	sc, err := script.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// modes runs f with the adapter streaming and not.
func modes(t *testing.T, f func(t *testing.T, noStream bool)) {
	t.Run("stream", func(t *testing.T) { f(t, false) })
	t.Run("nostream", func(t *testing.T) { f(t, true) })
}

func client(srv *modeltest.Server, noStream bool) *anthropic.Client {
	return anthropic.New(anthropic.Options{BaseURL: srv.URL, APIKey: "sk-ant-test", Model: "claude-test", NoStream: noStream, Retry: fast})
}

// run sends req and returns the response, every event, and the error.
func run(t *testing.T, p model.Provider, req *model.Request) (*model.Response, []model.Event, error) {
	t.Helper()
	var events []model.Event
	resp, err := model.Collect(p.Stream(t.Context(), req), func(ev model.Event) { events = append(events, ev) })
	return resp, events, err
}

func mustRun(t *testing.T, p model.Provider, req *model.Request) (*model.Response, []model.Event) {
	t.Helper()
	resp, events, err := run(t, p, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp, events
}

func hello() *model.Request {
	return &model.Request{Messages: []model.Message{{Role: model.RoleUser, Parts: model.Parts{model.Text{Text: "hi"}}}}}
}

// body decodes the n-th recorded request body.
func body(t *testing.T, srv interface{ Requests() []modeltest.Recorded }, n int) map[string]any {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) <= n {
		t.Fatalf("server got %d requests, want more than %d", len(reqs), n)
	}
	var m map[string]any
	if err := json.Unmarshal(reqs[n].Body, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != string(got) {
		t.Errorf("%s differs from what was sent:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func indent(t *testing.T, b []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// counting counts the round trips made through it.
type counting struct {
	n    atomic.Int32
	next http.RoundTripper
}

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}
