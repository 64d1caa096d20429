package telemetry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/telemetry"
	"meka.dev/meka/model"
	"meka.dev/meka/model/script"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// receiver is an OTLP/HTTP collector in the test process, reading the
// JSON encoding.
type receiver struct {
	mu      sync.Mutex
	spans   []otlpSpan
	metrics []string
	headers http.Header
}

type otlpValue struct {
	StringValue *string  `json:"stringValue"`
	IntValue    *string  `json:"intValue"`
	DoubleValue *float64 `json:"doubleValue"`
	BoolValue   *bool    `json:"boolValue"`
	ArrayValue  *struct {
		Values []otlpValue `json:"values"`
	} `json:"arrayValue"`
}

type otlpSpan struct {
	TraceID      string `json:"traceId"`
	SpanID       string `json:"spanId"`
	ParentSpanID string `json:"parentSpanId"`
	Name         string `json:"name"`
	Kind         int    `json:"kind"`
	Start        string `json:"startTimeUnixNano"`
	End          string `json:"endTimeUnixNano"`
	Attributes   []struct {
		Key   string    `json:"key"`
		Value otlpValue `json:"value"`
	} `json:"attributes"`
	Events []struct {
		Name string `json:"name"`
	} `json:"events"`
}

func newReceiver(t *testing.T) (*receiver, string) {
	r := &receiver{}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.headers = req.Header.Clone()
		if req.Header.Get("Content-Type") != "application/json" {
			t.Errorf("content type %q", req.Header.Get("Content-Type"))
		}
		switch req.URL.Path {
		case "/v1/traces":
			var m struct {
				ResourceSpans []struct {
					Resource   struct{ Attributes []any }
					ScopeSpans []struct {
						Spans []otlpSpan `json:"spans"`
					} `json:"scopeSpans"`
				} `json:"resourceSpans"`
			}
			if err := json.Unmarshal(body, &m); err != nil {
				t.Errorf("traces: %v", err)
			}
			for _, rs := range m.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					r.spans = append(r.spans, ss.Spans...)
				}
			}
		case "/v1/metrics":
			var m struct {
				ResourceMetrics []struct {
					ScopeMetrics []struct {
						Metrics []struct {
							Name string `json:"name"`
							Sum  struct {
								DataPoints []map[string]any `json:"dataPoints"`
							} `json:"sum"`
						} `json:"metrics"`
					} `json:"scopeMetrics"`
				} `json:"resourceMetrics"`
			}
			if err := json.Unmarshal(body, &m); err != nil {
				t.Errorf("metrics: %v", err)
			}
			for _, rm := range m.ResourceMetrics {
				for _, sm := range rm.ScopeMetrics {
					for _, mt := range sm.Metrics {
						if len(mt.Sum.DataPoints) > 0 {
							r.metrics = append(r.metrics, mt.Name)
						}
					}
				}
			}
		default:
			http.NotFound(w, req)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("{}"))
	}))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return r, srv.URL
}

type log struct{ rows []session.Row }

func (l *log) Append(_ context.Context, rows []session.Row) ([]session.Row, error) {
	for i := range rows {
		rows[i].Seq = int64(len(l.rows) + 1)
		l.rows = append(l.rows, rows[i])
	}
	return rows, nil
}

type readTool struct{}

func (readTool) Spec() tool.Spec {
	return tool.Spec{Name: "file_read", Description: "read", Schema: json.RawMessage(`{"type":"object"}`), Level: permission.Read, Kind: tool.KindRead}
}
func (readTool) Run(context.Context, tool.Call) (tool.Result, error) {
	return tool.Text("secret file body"), nil
}

func attrs(s otlpSpan) map[string]string {
	out := map[string]string{}
	for _, a := range s.Attributes {
		v := a.Value
		switch {
		case v.StringValue != nil:
			out[a.Key] = *v.StringValue
		case v.IntValue != nil:
			out[a.Key] = "int " + *v.IntValue
		case v.DoubleValue != nil:
			out[a.Key] = fmt.Sprint("double ", *v.DoubleValue)
		case v.BoolValue != nil:
			out[a.Key] = fmt.Sprint(*v.BoolValue)
		case v.ArrayValue != nil:
			out[a.Key] = "array"
		}
	}
	return out
}

// runTurn runs one turn of a tool call and a reply under telemetry sent
// to a fresh receiver, and returns what it received.
func runTurn(t *testing.T, logContent bool) *receiver {
	rec, url := newReceiver(t)
	tel, err := telemetry.Start(t.Context(), telemetry.Options{Endpoint: url, LogContent: logContent, Version: "test",
		Headers: telemetry.ParseHeaders("authorization=Bearer%20tok, x-team = a")})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := script.Parse([]byte(`{"rounds":[
		{"text":"reading","tool_calls":[{"id":"c1","name":"file_read","arguments":{"path":"secret.txt"}}],"usage":{"input_tokens":100,"cache_read_tokens":50,"output_tokens":10,"cost":0.25}},
		{"text":"the answer","usage":{"input_tokens":200,"output_tokens":20,"cost":0.5}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	sess := tel.Provider("default", "gpt-test", script.New(sc))
	observe := sess.Bind("sess-1", func() string { return "workspace" })
	reg := tool.NewRegistry()
	if err := reg.Add(readTool{}); err != nil {
		t.Fatal(err)
	}
	e, err := agent.New(agent.Options{Provider: sess, Log: &log{}, SessionID: "sess-1", Tools: reg, Events: observe}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(t.Context(), session.UserMessage{Parts: model.Parts{model.Text{Text: "private prompt"}}}); err != nil {
		t.Fatal(err)
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rec
}

// A turn is an invoke_agent span; each model call a chat span under it
// with the GenAI attributes, tokens and cost; the tool call an
// execute_tool span under it with its name, level and outcome. Counters
// of tokens and cost are exported. No prompt, reply or argument leaves
// without log_content.
func TestSpansReceived(t *testing.T) {
	rec := runTurn(t, false)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	byName := map[string][]otlpSpan{}
	for _, s := range rec.spans {
		byName[s.Name] = append(byName[s.Name], s)
	}
	turns, chats, tools := byName["invoke_agent meka"], byName["chat gpt-test"], byName["execute_tool file_read"]
	if len(turns) != 1 || len(chats) != 2 || len(tools) != 1 || len(rec.spans) != 4 {
		t.Fatalf("spans %v", byName)
	}
	turn := turns[0]
	for _, s := range append(chats, tools...) {
		if s.ParentSpanID != turn.SpanID || s.TraceID != turn.TraceID || len(s.TraceID) != 32 || len(s.SpanID) != 16 {
			t.Errorf("%s is not a child of the turn", s.Name)
		}
	}
	c := attrs(chats[0])
	for k, want := range map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "script", "gen_ai.request.model": "gpt-test",
		"gen_ai.conversation.id": "sess-1", "gen_ai.usage.input_tokens": "int 150", "gen_ai.usage.output_tokens": "int 10",
		"gen_ai.usage.cache_read.input_tokens": "int 50", "meka.cost.usd": "double 0.25", "gen_ai.response.finish_reasons": "array"} {
		if c[k] != want {
			t.Errorf("chat %s = %s, want %s", k, c[k], want)
		}
	}
	if chats[0].Kind != 3 { // SPAN_KIND_CLIENT
		t.Errorf("chat kind %v", chats[0].Kind)
	}
	tl := attrs(tools[0])
	if tl["gen_ai.tool.name"] != "file_read" || tl["meka.permission.level"] != "workspace" || tl["meka.tool.outcome"] != "ok" || tl["gen_ai.tool.call.id"] != "c1" ||
		len(tools[0].End) < len(tools[0].Start) || len(tools[0].End) == len(tools[0].Start) && tools[0].End < tools[0].Start {
		t.Errorf("tool span %v", tl)
	}
	if ta := attrs(turn); ta["meka.cost.usd"] != "double 0.75" || ta["meka.stop"] != "end_turn" {
		t.Errorf("turn span %v", ta)
	}
	for _, s := range rec.spans {
		for k, v := range attrs(s) {
			if strings.Contains(v, "private prompt") || strings.Contains(v, "secret") || strings.Contains(v, "the answer") {
				t.Errorf("%s carries content in %s without log_content", s.Name, k)
			}
		}
	}
	if m := strings.Join(rec.metrics, " "); !strings.Contains(m, "meka.tokens") || !strings.Contains(m, "meka.cost") {
		t.Errorf("metrics %q", m)
	}
	if rec.headers.Get("Authorization") != "Bearer tok" || rec.headers.Get("X-Team") != "a" {
		t.Errorf("headers %v", rec.headers)
	}
}

// With log_content the prompt, the reply and the tool's arguments are on
// the spans.
func TestContentOnlyWhenAsked(t *testing.T) {
	rec := runTurn(t, true)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var all strings.Builder
	for _, s := range rec.spans {
		for _, v := range attrs(s) {
			all.WriteString(v + "\n")
		}
	}
	for _, want := range []string{"private prompt", "secret.txt", "the answer", "secret file body"} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("no %q on any span", want)
		}
	}
}

// A call that moved to a fallback profile is one chat span, with the
// move as an event and the fallback's profile and model.
func TestFallbackOnTheSpan(t *testing.T) {
	rec, url := newReceiver(t)
	tel, err := telemetry.Start(t.Context(), telemetry.Options{Endpoint: url})
	if err != nil {
		t.Fatal(err)
	}
	busy, _ := script.Parse([]byte(`{"rounds":[{"error":{"status":429,"body":"slow down"}}]}`))
	spare, _ := script.Parse([]byte(`{"rounds":[{"text":"from b","usage":{"input_tokens":3,"output_tokens":1}}]}`))
	fb := model.NewFallback([]model.Profile{{Name: "a", Provider: script.New(busy), Model: "model-a"}, {Name: "b", Provider: script.New(spare), Model: "model-b"}})
	sess := tel.Provider("a", "model-a", fb)
	observe := sess.Bind("sess-2", func() string { return "read" })
	e, err := agent.New(agent.Options{Provider: sess, Log: &log{}, SessionID: "sess-2", Events: observe}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := e.Run(t.Context(), session.UserMessage{Parts: model.Parts{model.Text{Text: "x"}}}); err != nil || res.Reply != "from b" {
		t.Fatalf("%+v %v", res, err)
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, s := range rec.spans {
		if s.Name != "chat model-a" {
			continue
		}
		a := attrs(s)
		if len(s.Events) != 1 || s.Events[0].Name != "fallback" || a["meka.profile"] != "b" || a["gen_ai.request.model"] != "model-b" || a["gen_ai.usage.input_tokens"] != "int 3" {
			t.Fatalf("chat span %v events %v", a, s.Events)
		}
		return
	}
	t.Fatalf("no chat span in %d", len(rec.spans))
}
