package gemini_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"meka.dev/meka/model"
	"meka.dev/meka/model/gemini"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

var update = flag.Bool("update", false, "rewrite golden files")

var fast = model.Retry{Attempts: 3, Base: time.Millisecond, Max: 5 * time.Millisecond}

func parse(t testing.TB, s string) *script.Script {
	t.Helper()
	sc, err := script.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func client(srv *modeltest.Server, o gemini.Options) *gemini.Client {
	o.BaseURL = srv.URL + "/v1beta"
	if o.Model == "" {
		o.Model = "gpt-test"
	}
	if o.Retry == (model.Retry{}) {
		o.Retry = fast
	}
	return gemini.New(o)
}

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

// contents decodes the n-th request's contents, each as sent.
func contents(t *testing.T, srv interface{ Requests() []modeltest.Recorded }, n int) []json.RawMessage {
	t.Helper()
	var b struct {
		Contents []json.RawMessage `json:"contents"`
	}
	if err := json.Unmarshal(srv.Requests()[n].Body, &b); err != nil {
		t.Fatal(err)
	}
	return b.Contents
}

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
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
