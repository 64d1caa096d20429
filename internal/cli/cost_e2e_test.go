package cli_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

// Every assistant row records what its call cost: the config's
// [models."ID"] price over the built-in table, by the model that answered.
func TestOneshotRecordsCost(t *testing.T) {
	s, err := script.Parse([]byte(`{"rounds":[
	 {"text":"One.","usage":{"input_tokens":12,"output_tokens":5}},
	 {"text":"Two.","usage":{"input_tokens":1000000,"output_tokens":0}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.NewServer(t, s)
	work := t.TempDir()
	env := isolatedEnv(t, "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+srv.URL+"/v1")

	// No config: gpt-4.1 at the built-in $2 in, $8 out.
	if _, errOut, code := run(t, work, env, "--oneshot", "first"); code != 0 {
		t.Fatalf("oneshot: %d %s", code, errOut)
	}
	// A price in the config overrides the built-in row.
	cfgDir := filepath.Join(strings.TrimPrefix(env[2], "XDG_CONFIG_HOME="), "meka")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := "[profiles.p]\nprovider = \"openai\"\nbase_url = \"" + srv.URL + "/v1\"\n\n[models.\"gpt-4.1\"]\ninput_price = 3\noutput_price = 9\n"
	if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := run(t, work, env, "--oneshot", "second"); code != 0 {
		t.Fatalf("oneshot with config: %d %s", code, errOut)
	}

	list, _, _ := run(t, work, env, "sessions", "list")
	var costs []float64
	for _, line := range strings.Split(strings.TrimSpace(list), "\n")[1:] {
		js, errOut, code := run(t, work, env, "sessions", "show", "--json", strings.Fields(line)[0])
		if code != 0 {
			t.Fatalf("show: %s", errOut)
		}
		for _, l := range strings.Split(strings.TrimSpace(js), "\n") {
			var row struct {
				Kind  string `json:"kind"`
				Entry struct {
					Usage struct {
						Cost float64 `json:"cost"`
					} `json:"usage"`
				} `json:"entry"`
			}
			if json.Unmarshal([]byte(l), &row) == nil && row.Kind == "assistant" {
				costs = append(costs, row.Entry.Usage.Cost)
			}
			if row.Kind == "assistant" && !bytes.Contains([]byte(l), []byte(`"cost":`)) {
				t.Errorf("assistant row without cost: %s", l)
			}
		}
	}
	want := map[float64]bool{(12*2 + 5*8) / 1e6: true, 3: true}
	if len(costs) != 2 || !want[costs[0]] || !want[costs[1]] || costs[0] == costs[1] {
		t.Fatalf("costs %v, want %v", costs, want)
	}

	// meka stats adds them up.
	js, errOut, code := run(t, work, env, "stats", "--by", "model", "--json")
	var rep struct {
		Groups []struct {
			Key   string
			Calls int
			Input int `json:"input_tokens"`
		}
		Total struct{ Cost float64 }
	}
	if code != 0 || json.Unmarshal([]byte(js), &rep) != nil || len(rep.Groups) != 1 || rep.Groups[0].Key != "gpt-4.1" ||
		rep.Groups[0].Calls != 2 || rep.Groups[0].Input != 1000012 || rep.Total.Cost != costs[0]+costs[1] {
		t.Fatalf("stats: code %d %s %s", code, js, errOut)
	}
	if txt, _, code := run(t, work, env, "stats"); code != 0 || !strings.Contains(txt, "total") {
		t.Fatalf("stats: %d %s", code, txt)
	}
	if _, errOut, code := run(t, work, env, "stats", "--since", "yesterday"); code != 2 || !strings.Contains(errOut, "2026-08-01") {
		t.Fatalf("bad --since: %d %s", code, errOut)
	}
}

// A profile of provider openai-responses talks to /v1/responses, with
// the profile's reasoning effort.
func TestOneshotOpenAIResponses(t *testing.T) {
	s, err := script.Parse([]byte(`{"rounds":[{"thinking":"hm","text":"Hello from Responses."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.NewServer(t, s)
	work := t.TempDir()
	env := isolatedEnv(t)
	cfg := filepath.Join(work, "config.toml")
	os.WriteFile(cfg, []byte("[profiles.r]\nprovider = \"openai-responses\"\nbase_url = \""+srv.URL+"/v1\"\nreasoning_effort = \"low\"\n"), 0o600)
	out, errOut, code := run(t, work, env, "--config", cfg, "--oneshot", "hi")
	if code != 0 || out != "Hello from Responses.\n" {
		t.Fatalf("code %d stdout %q stderr %q", code, out, errOut)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Path != "/v1/responses" || !bytes.Contains(reqs[0].Body, []byte(`"reasoning":{"effort":"low","summary":"auto"}`)) {
		t.Fatalf("requests %+v", reqs)
	}
}

// A profile of provider gemini talks to streamGenerateContent with the
// key in x-goog-api-key, and the reply is priced by the built-in table.
func TestOneshotGemini(t *testing.T) {
	s, err := script.Parse([]byte(`{"rounds":[{"thinking":"hm","text":"Hello from Gemini.","usage":{"input_tokens":1000000}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.NewServer(t, s)
	work := t.TempDir()
	env := isolatedEnv(t, "GEMINI_API_KEY=g-test")
	cfg := filepath.Join(work, "config.toml")
	os.WriteFile(cfg, []byte("[profiles.g]\nprovider = \"gemini\"\nbase_url = \""+srv.URL+"/v1beta\"\n"), 0o600)
	out, errOut, code := run(t, work, env, "--config", cfg, "--oneshot", "hi")
	if code != 0 || out != "Hello from Gemini.\n" {
		t.Fatalf("code %d stdout %q stderr %q", code, out, errOut)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Path != "/v1beta/models/gemini-2.5-pro:streamGenerateContent" || reqs[0].Header.Get("X-Goog-Api-Key") != "g-test" {
		t.Fatalf("requests %+v", reqs)
	}
	list, _, _ := run(t, work, env, "--config", cfg, "sessions", "list")
	js, _, _ := run(t, work, env, "--config", cfg, "sessions", "show", "--json", strings.Fields(strings.Split(list, "\n")[1])[0])
	if !strings.Contains(js, `"cost":1.25`) {
		t.Fatalf("no cost of $1.25 (1M input tokens of gemini-2.5-pro): %s", js)
	}
}

// With OTEL_EXPORTER_OTLP_ENDPOINT set, a one-shot turn's spans reach the
// collector before meka exits; without it nothing is sent.
func TestOneshotTelemetry(t *testing.T) {
	var mu sync.Mutex
	var traces [][]byte
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	col := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/traces" {
			mu.Lock()
			traces = append(traces, b)
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	col.Listener.Close()
	col.Listener = l
	col.Start()
	t.Cleanup(col.Close)

	s, err := script.Parse([]byte(`{"rounds":[{"text":"traced"},{"text":"untraced"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.NewServer(t, s)
	work := t.TempDir()
	base := []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + srv.URL + "/v1"}
	if out, errOut, code := run(t, work, isolatedEnv(t, append(base, "OTEL_EXPORTER_OTLP_ENDPOINT="+col.URL)...), "--oneshot", "hi"); code != 0 || out != "traced\n" {
		t.Fatalf("code %d %q %q", code, out, errOut)
	}
	mu.Lock()
	all := bytes.Join(traces, nil)
	mu.Unlock()
	for _, want := range []string{"invoke_agent meka", "chat gpt-4.1", "gen_ai.usage.input_tokens"} {
		if !bytes.Contains(all, []byte(want)) {
			t.Errorf("no %q in the traces sent (%d requests)", want, len(traces))
		}
	}
	if bytes.Contains(all, []byte("hi")) && bytes.Contains(all, []byte("gen_ai.input.messages")) {
		t.Error("the prompt was sent without log_content")
	}
	n := len(traces)
	if _, _, code := run(t, work, isolatedEnv(t, base...), "--oneshot", "hi"); code != 0 {
		t.Fatal("second run failed")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(traces) != n {
		t.Error("traces sent with telemetry off")
	}
}
