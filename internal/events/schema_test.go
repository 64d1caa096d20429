package events_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/events"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("..", "..", "docs", "events.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("events.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("events.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validate(t *testing.T, s *jsonschema.Schema, b []byte) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if err := s.Validate(v); err != nil {
		t.Errorf("%s\n%v", b, err)
	}
}

// Every event rows cause, and the turn events, are what the documented
// schema says; a payload the schema refuses fails it.
func TestEventsMatchTheSchema(t *testing.T) {
	s := compileSchema(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rows := []session.Row{
		{Seq: 1, Turn: 1, Entry: session.UserMessage{Parts: model.Parts{model.Text{Text: "hi"}, model.Resource{URI: "file:///a", Name: "a"}}}},
		{Seq: 2, Turn: 1, Entry: session.AssistantMessage{Parts: model.Parts{model.Text{Text: "ok"},
			model.ToolCall{ID: "c1", Name: "checklist_add", Arguments: json.RawMessage(`{"items":["x"]}`)}}}},
		{Seq: 3, Turn: 1, Entry: session.ToolResult{CallID: "c1", Name: "checklist_add", Status: session.StatusOK,
			Content: model.Parts{model.Text{Text: "added"}}, State: json.RawMessage(`{"Items":[{"id":"1","text":"x","status":"pending"}]}`)}},
		{Seq: 4, Turn: 1, Entry: session.ToolResult{CallID: "c2", Name: "shell", Status: session.StatusRefused, Content: model.Parts{model.Text{Text: "no"}}}},
		{Seq: 5, Turn: 1, Entry: session.Notice{Severity: session.SeverityWarning, Title: "nudge", Description: "open items"}},
		{Seq: 6, Turn: 2, Entry: session.Compaction{Summary: "s", KeptFrom: 5, Trigger: "manual", Focus: "tests",
			Dropped: &session.Dropped{Turns: 1, Messages: 3, ToolOutputs: 2, Bytes: 90, ToolOutputBytes: 40}}},
		{Seq: 7, Turn: 2, Entry: session.HookRun{Event: "PreToolUse", Matcher: "Bash", Tool: "Bash", CallID: "c3",
			Source: "/w/.claude/settings.json", Command: "./guard.sh", Exit: 2, Decision: "block", Reason: "no", DurationMS: 3, Stderr: "no\n"}},
	}
	seen := map[string]bool{}
	for i, e := range events.FromRows("s1", rows) {
		seen[e.Type] = true
		b, _ := json.Marshal(events.Event{ID: int64(i + 1), Entry: e, Time: now}.Frame())
		validate(t, s, b)
	}
	for _, typ := range []string{"message.created", "tool.started", "tool.finished", "checklist.updated", "notice", "context.compacted", "hook.finished"} {
		if !seen[typ] {
			t.Errorf("no %s from the rows", typ)
		}
	}

	validate(t, s, mustFrame(events.ContextCompacting, events.CompactingData(agent.CompactionStarted{Trigger: "auto", TokensBefore: 900}), now))

	turn := events.Turn{ID: "t1", SessionID: "s1", Source: "client", Status: "running", StartedAt: now}
	turn.End(agent.Result{Stop: agent.StopEndTurn, Usage: model.Usage{InputTokens: 3, OutputTokens: 4}}, now, false)
	validate(t, s, mustFrame(events.TurnCompleted, turn, now))
	failed := events.Turn{ID: "t2", SessionID: "s1", Source: "client", Status: "running", StartedAt: now}
	failed.End(agent.Result{Stop: agent.StopFailed, Err: &model.Error{Status: 500, Body: "boom"}}, now, true)
	validate(t, s, mustFrame(events.TurnFailed, failed, now))
	if failed.Error == nil || failed.Error.ProviderError == nil || failed.Error.ProviderError.Text != "boom" {
		t.Errorf("failed turn's problem %+v", failed.Error)
	}
	cut := events.Turn{ID: "t4", SessionID: "s1", Source: "client", Status: "running", StartedAt: now}
	cut.Interrupt(now)
	validate(t, s, mustFrame(events.TurnCompleted, cut, now))
	other := events.Turn{ID: "t3", SessionID: "s1", Source: "client", StartedAt: now}
	other.End(agent.Result{Stop: agent.StopFailed, Err: errors.New("/secret/path: disk full")}, now, true)
	if b := mustFrame(events.TurnFailed, other, now); bytes.Contains(b, []byte("secret")) {
		t.Errorf("meka's own error text travelled: %s", b)
	}
	validate(t, s, mustJSON(events.Ephemeral(events.SessionStarted, "s1", 0, now,
		map[string]any{"session_id": "s1", "schema_version": events.SchemaVersion, "cwd": "/w", "resumed": false})))

	validate(t, s, mustJSON(events.Ephemeral(events.FeedReset, "", 0, now, events.Reset{Reason: "expired", OldestID: 7, LatestID: 9})))

	// The schema has teeth: a tool.finished without its status, a
	// turn.failed without its problem.
	for _, bad := range []string{
		`{"id":"1","type":"tool.finished","timestamp":"2026-01-02T03:04:05Z","session_id":"s","data":{"call_id":"c","tool":"t","result":"","truncated":false}}`,
		`{"id":"1","type":"hook.finished","timestamp":"2026-01-02T03:04:05Z","session_id":"s","data":{"event":"Stop","source":"f","command":"c","decision":"","duration_ms":1,"stdout":"","stderr":"","truncated":false,"confined":false}}`,
		`{"type":"turn.failed","timestamp":"2026-01-02T03:04:05Z","session_id":"s","data":{"turn_id":"t","session_id":"s","source":"client","status":"failed","started_at":"2026-01-02T03:04:05Z"}}`,
		`{"type":"session.started","timestamp":"2026-01-02T03:04:05Z","data":{"cwd":"/w","resumed":false,"schema_version":"1"}}`,
		`{"type":"feed.reset","timestamp":"2026-01-02T03:04:05Z","data":{"reason":"stale","oldest_id":1,"latest_id":2}}`,
	} {
		v, _ := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(bad)))
		if s.Validate(v) == nil {
			t.Errorf("schema accepted %s", bad)
		}
	}
}

func mustFrame(typ string, data any, now time.Time) []byte {
	return mustJSON(events.Event{ID: 9, Entry: events.Entry{SessionID: "s1", Turn: 1, Type: typ, Data: events.MustJSON(data)}, Time: now}.Frame())
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
