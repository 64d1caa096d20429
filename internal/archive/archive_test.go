package archive_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"meka.dev/meka/internal/archive"
	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

func openStore(t testing.TB) *sqlite.Sessions {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "meka.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db.Sessions()
}

// rows is a session of every row kind: prompt, tools, a checklist call
// with its recorded list, a refused call, a notice, a compaction, a steer.
func rows() []session.Row {
	state := json.RawMessage(`{"Items":[{"id":"c1","text":"count the files","status":"in_progress"}]}`)
	return []session.Row{
		{Turn: 0, Entry: session.SystemPrompt{Text: "You are meka.", Cwd: "/w", Files: []string{"AGENTS.md"}}},
		{Turn: 0, Entry: session.ToolSet{Source: "builtin", Tools: []session.ToolDef{{Name: "shell_execute", Description: "Run", Schema: json.RawMessage(`{"type":"object"}`)}}}},
		{Turn: 1, Entry: session.UserMessage{Parts: model.Parts{model.Text{Text: "count the files"}}}},
		{Turn: 1, Entry: session.AssistantMessage{Parts: model.Parts{model.Thinking{Text: "plan", Provider: "anthropic", Signature: "s"}, model.Text{Text: "On it."},
			model.ToolCall{ID: "k1", Name: "checklist_add", Arguments: json.RawMessage(`{"items":["count the files"]}`)},
			model.ToolCall{ID: "k2", Name: "shell_execute", Arguments: json.RawMessage(`{"command":"rm -rf /"}`)}},
			Usage: model.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 50, CacheWriteTokens: 7, Cost: 0.0125}, Stop: model.StopToolUse, Model: "m1"}},
		{Turn: 1, Entry: session.ToolResult{CallID: "k1", Name: "checklist_add", Status: session.StatusOK, Content: model.Parts{model.Text{Text: "Added c1."}}, State: state}},
		{Turn: 1, Entry: session.ToolResult{CallID: "k2", Name: "shell_execute", Status: session.StatusRefused, Content: model.Parts{model.Text{Text: "refused"}}}},
		{Turn: 1, Entry: session.UserMessage{Parts: model.Parts{model.Text{Text: "also the tests"}}, Source: session.SourceSteer}},
		{Turn: 1, Entry: session.AssistantMessage{Parts: model.Parts{model.Text{Text: "There are 3."}}, Usage: model.Usage{InputTokens: 10, OutputTokens: 3}, Stop: model.StopEndTurn, Model: "m1"}},
		{Turn: 1, Entry: session.Notice{Severity: session.SeverityWarning, Title: "Checklist", Description: "1 open item"}},
		{Turn: 2, Entry: session.Compaction{Summary: "They counted files.", KeptFrom: 7, Checkpoint: map[string]json.RawMessage{"checklist": json.RawMessage(`{"items":[]}`)}}},
	}
}

func seed(t testing.TB, store session.Store, rs []session.Row) session.Meta {
	t.Helper()
	ctx := context.Background()
	m, err := store.Create(ctx, session.Meta{Cwd: "/w", Permission: "workspace", Profile: "p", Project: "proj", Approvals: true, AdditionalDirs: []string{"/x"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Append(ctx, m.ID, rs); err != nil {
		t.Fatal(err)
	}
	m, _ = store.Get(ctx, m.ID)
	return m
}

// entries is rows as their seq, turn, kind and entry JSON: all a row is
// but the time its store gave it.
func entries(t testing.TB, rs []session.Row) []string {
	t.Helper()
	var out []string
	for _, r := range rs {
		kind, payload, err := session.EncodeEntry(r.Entry)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d %d %s %s", r.Seq, r.Turn, kind, payload))
	}
	return out
}

// An exported archive imports as a new session with the same meta and
// every row as it was, and says which checklist the rows add up to.
func TestArchiveRoundTrip(t *testing.T) {
	ctx := context.Background()
	from := openStore(t)
	orig := seed(t, from, rows())
	s, err := archive.Load(ctx, from, orig.ID)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := archive.WriteJSON(&buf, s, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	h, back, err := archive.ReadJSON(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(h.Checklist), `"count the files"`) || back.Origin != orig.ID {
		t.Fatalf("header %+v origin %q", h, back.Origin)
	}

	to := openStore(t) // another machine's database
	m, err := archive.Import(ctx, to, back)
	if err != nil {
		t.Fatal(err)
	}
	if m.ID == orig.ID {
		t.Fatal("the import kept the id")
	}
	got, _ := to.Rows(ctx, m.ID, 0)
	if a, b := strings.Join(entries(t, got), "\n"), strings.Join(entries(t, s.Rows), "\n"); a != b {
		t.Fatalf("rows differ\n got %s\nwant %s", a, b)
	}
	for i := range got {
		if !got[i].Time.Equal(s.Rows[i].Time) {
			t.Errorf("row %d: time %v, want %v", i, got[i].Time, s.Rows[i].Time)
		}
	}
	want := orig
	want.ID, want.UpdatedAt = m.ID, m.UpdatedAt
	if a, b := mustJSON(m), mustJSON(want); a != b {
		t.Fatalf("meta\n got %s\nwant %s", a, b)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// A file that cannot be read whole is refused with its line and reason,
// and nothing is written.
func TestImportRefusesMalformedArchives(t *testing.T) {
	ctx := context.Background()
	from := openStore(t)
	orig := seed(t, from, rows())
	s, _ := archive.Load(ctx, from, orig.ID)
	var buf bytes.Buffer
	archive.WriteJSON(&buf, s, time.Now())
	good := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	join := func(ls ...string) string { return strings.Join(ls, "\n") + "\n" }
	swapped := append([]string{good[0], good[1], good[3], good[2]}, good[4:]...)
	cases := []struct {
		name, file string
		line       int
		reason     string
	}{
		{"empty", "", 1, "empty"},
		{"not JSON", "hello\n", 1, "not a meka archive header"},
		{"another format", `{"format":"other","version":1,"meta":{},"rows":0}` + "\n", 1, `format "other"`},
		{"newer version", strings.Replace(good[0], `"version":1`, `"version":9`, 1) + "\n", 1, "version 9"},
		{"a broken row", join(append(good[:4:4], `{"seq":5,"turn":1,"kind":"user","entry":{"parts":`)...), 5, "not a row"},
		{"an unknown kind", join(append(good[:3:3], `{"seq":4,"turn":1,"kind":"telepathy","entry":{}}`)...), 4, "unknown kind"},
		{"rows out of order", join(swapped...), 4, "in order"},
		{"cut short", join(good[:len(good)-2]...), len(good) - 1, "cut short"},
	}
	to := openStore(t)
	for _, c := range cases {
		_, _, err := archive.ReadJSON(strings.NewReader(c.file))
		var le *archive.LineError
		if !errors.As(err, &le) || le.Line != c.line || !strings.Contains(err.Error(), c.reason) {
			t.Errorf("%s: %v, want line %d: …%s…", c.name, err, c.line, c.reason)
		}
	}
	page, err := to.List(ctx, session.ListOptions{})
	if err != nil || len(page.Sessions) != 0 {
		t.Fatalf("sessions after refusals: %v %v", page.Sessions, err)
	}
}

func readFixture(t *testing.T, from, name string) archive.Session {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := archive.ReadFrom(from, f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// summary renders rows compactly: kind, turn and what matters of each.
func summary(rs []session.Row) string {
	var b strings.Builder
	for _, r := range rs {
		switch e := r.Entry.(type) {
		case session.UserMessage:
			fmt.Fprintf(&b, "%d user %q\n", r.Turn, model.Message{Parts: e.Parts}.Text())
		case session.AssistantMessage:
			fmt.Fprintf(&b, "%d assistant %q", r.Turn, model.Message{Parts: e.Parts}.Text())
			for _, p := range e.Parts {
				if c, ok := p.(model.ToolCall); ok {
					fmt.Fprintf(&b, " call %s %s %s", c.ID, c.Name, c.Arguments)
				}
			}
			fmt.Fprintf(&b, " model %s in %d out %d\n", e.Model, e.Usage.InputTokens, e.Usage.OutputTokens)
		case session.ToolResult:
			fmt.Fprintf(&b, "%d result %s %s %s %q\n", r.Turn, e.CallID, e.Name, e.Status, model.Message{Parts: e.Content}.Text())
		}
	}
	return b.String()
}

// A Claude Code session: the branch ending at the last message (not the
// abandoned reply, not the side chain), one assistant row per API
// message, tool names as Claude called them, results as text.
func TestImportClaudeCode(t *testing.T) {
	s := readFixture(t, "claude", "claude-session.jsonl")
	want := `1 user "How many Go files are in this repository?"
1 assistant "I'll count them." call toolu_01 Bash {"command":"find . -name '*.go' | wc -l","description":"Count Go files"} model claude-sonnet-4-20250514 in 4 out 60
1 result toolu_01 Bash ok "42"
1 assistant "There are 42 Go files." model claude-sonnet-4-20250514 in 4 out 10
2 user "And the test files?"
2 assistant "" call toolu_02 Grep {"pattern":"_test.go$","output_mode":"count"} model claude-sonnet-4-20250514 in 4 out 40
2 result toolu_02 Grep error "Error: pattern matched nothing"
2 assistant "None of them are test files." model claude-sonnet-4-20250514 in 4 out 8
`
	if got := summary(s.Rows); got != want {
		t.Fatalf("rows\n%s\nwant\n%s", got, want)
	}
	if s.Origin != "5b1f9c2e-7d40-4c1a-9e0b-2f6a1d3c8e11" || s.Meta.Cwd != "/home/dev/proj" || s.Meta.CreatedAt.IsZero() {
		t.Fatalf("meta %+v origin %q", s.Meta, s.Origin)
	}
}

// A Codex rollout: response items only, Codex's injected context left
// out, function and custom tool calls with their outputs.
func TestImportCodex(t *testing.T) {
	s := readFixture(t, "codex", "codex-rollout.jsonl")
	want := `1 user "Which Go version does go.mod ask for?"
1 assistant "" call call_A1 shell {"command":["bash","-lc","head -5 go.mod"],"workdir":"/home/dev/proj"} model gpt-5-codex in 0 out 0
1 result call_A1 shell ok "{\"output\":\"module example.com/proj\\n\\ngo 1.23\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.1}}"
1 assistant "go.mod asks for Go 1.23." model gpt-5-codex in 0 out 0
2 user "Bump it to 1.24."
2 assistant "" call call_B1 apply_patch {"input":"*** Begin Patch\n*** Update File: go.mod\n@@\n-go 1.23\n+go 1.24\n*** End Patch\n"} model gpt-5-codex in 0 out 0
2 result call_B1 apply_patch ok "Success. Updated the following files:\nM go.mod\n"
2 assistant "Done: go.mod now asks for Go 1.24." model gpt-5-codex in 0 out 0
`
	if got := summary(s.Rows); got != want {
		t.Fatalf("rows\n%s\nwant\n%s", got, want)
	}
	if s.Origin != "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5" || s.Meta.Cwd != "/home/dev/proj" {
		t.Fatalf("meta %+v origin %q", s.Meta, s.Origin)
	}
}

// Another agent's file that is not what --from says is refused with the
// line; a call without a result is closed as interrupted.
func TestImportForeignRefusals(t *testing.T) {
	_, err := archive.ReadFrom("claude", strings.NewReader(`{"type":"user","message":{"role":"user","content":"hi"},"uuid":"u1"}`+"\nnot json\n"))
	var le *archive.LineError
	if !errors.As(err, &le) || le.Line != 2 {
		t.Fatalf("claude: %v", err)
	}
	_, err = archive.ReadFrom("codex", strings.NewReader(`{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{}"}}`+"\n"))
	if !errors.As(err, &le) || le.Line != 1 || !strings.Contains(err.Error(), "call_id") {
		t.Fatalf("codex: %v", err)
	}
	s, err := archive.ReadFrom("codex", strings.NewReader(`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}}
{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{}","call_id":"c9"}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(s.Rows); !strings.Contains(got, "result c9 shell interrupted") {
		t.Fatalf("rows %s", got)
	}
}

func compileATIF(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "atif-v1.4.schema.json"))
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
	c.AddResource("atif.json", doc)
	s, err := c.Compile("atif.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// An ATIF export is valid against the RFC's schema and its rules beyond
// a schema: step ids 1, 2, 3…; each observation's source_call_id names a
// call of its step; prompt tokens include the cached ones.
func TestATIFIsValid(t *testing.T) {
	schema := compileATIF(t)
	store := openStore(t)
	for name, rs := range map[string][]session.Row{"meka": rows(), "claude": readFixture(t, "claude", "claude-session.jsonl").Rows,
		"codex": readFixture(t, "codex", "codex-rollout.jsonl").Rows} {
		m := seed(t, store, rs)
		s, err := archive.Load(context.Background(), store, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := archive.WriteATIF(&buf, s, "1.2.3"); err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(doc); err != nil {
			t.Errorf("%s: %v\n%s", name, err, buf.String())
		}
		var traj struct {
			Steps []struct {
				StepID    int `json:"step_id"`
				ToolCalls []struct {
					ID string `json:"tool_call_id"`
				} `json:"tool_calls"`
				Observation *struct {
					Results []struct {
						SourceCallID string `json:"source_call_id"`
					} `json:"results"`
				} `json:"observation"`
				Metrics *struct {
					Prompt int `json:"prompt_tokens"`
					Cached int `json:"cached_tokens"`
				} `json:"metrics"`
			} `json:"steps"`
			Final struct {
				Steps int     `json:"total_steps"`
				Cost  float64 `json:"total_cost_usd"`
			} `json:"final_metrics"`
		}
		json.Unmarshal(buf.Bytes(), &traj)
		for i, st := range traj.Steps {
			if st.StepID != i+1 {
				t.Errorf("%s: step %d has id %d", name, i+1, st.StepID)
			}
			if st.Observation != nil {
				for _, r := range st.Observation.Results {
					found := r.SourceCallID == ""
					for _, c := range st.ToolCalls {
						found = found || c.ID == r.SourceCallID
					}
					if !found {
						t.Errorf("%s: step %d: source_call_id %q names no call of the step", name, st.StepID, r.SourceCallID)
					}
				}
			}
		}
		if traj.Final.Steps != len(traj.Steps) {
			t.Errorf("%s: total_steps %d of %d", name, traj.Final.Steps, len(traj.Steps))
		}
		if name == "meka" {
			// System, user, agent (two calls, both results), user (steer),
			// agent, notice, compaction.
			if len(traj.Steps) != 7 || traj.Steps[2].Metrics == nil || traj.Steps[2].Metrics.Prompt != 157 || traj.Steps[2].Metrics.Cached != 50 ||
				traj.Steps[2].Observation == nil || len(traj.Steps[2].Observation.Results) != 2 || traj.Final.Cost != 0.0125 {
				t.Errorf("meka trajectory:\n%s", buf.String())
			}
		}
	}
}

func TestMarkdownTranscript(t *testing.T) {
	store := openStore(t)
	m := seed(t, store, rows())
	s, _ := archive.Load(context.Background(), store, m.ID)
	var buf bytes.Buffer
	if err := archive.WriteMarkdown(&buf, s); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	for _, want := range []string{"# count the files", "## Turn 1", "**User**\n\ncount the files", "**Assistant**\n\nOn it.",
		"→ `checklist_add` (k1)", "← `shell_execute` refused", "**User (steer)**", "> **warning** Checklist: 1 open item", "They counted files."} {
		if !strings.Contains(md, want) {
			t.Errorf("transcript lacks %q:\n%s", want, md)
		}
	}
}
