package writetodos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/model"
	"meka.dev/meka/model/script"
	"meka.dev/meka/plan"
	"meka.dev/meka/plan/writetodos"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// harness is one session on a real SQLite file whose clock the test sets.
type harness struct {
	t     *testing.T
	store session.Store
	id    string

	mu  sync.Mutex // guards now
	now time.Time
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, now: t0}
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "meka.db"), sqlite.Options{Now: h.clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	h.store = db.Sessions()
	m, err := h.store.Create(t.Context(), session.Meta{Cwd: t.TempDir(), Permission: "workspace"})
	if err != nil {
		t.Fatal(err)
	}
	h.id = m.ID
	return h
}

func (h *harness) clock() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.now
}

func (h *harness) set(t time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.now = t
}

func (h *harness) Append(ctx context.Context, rows []session.Row) ([]session.Row, error) {
	return h.store.Append(ctx, h.id, rows)
}

func (h *harness) rows() []session.Row {
	h.t.Helper()
	rows, err := h.store.Rows(context.Background(), h.id, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	return rows
}

type run struct {
	p    *writetodos.Plugin
	e    *agent.Engine
	prov *script.Provider

	mu     sync.Mutex // guards events
	events []plan.Changed
}

func (r *run) changes() []plan.Changed {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]plan.Changed(nil), r.events...)
}

func (h *harness) engine(opts writetodos.Options, rounds string) *run {
	h.t.Helper()
	s, err := script.Parse([]byte(`{"rounds":` + rounds + `}`))
	if err != nil {
		h.t.Fatal(err)
	}
	if opts.Now == nil {
		opts.Now = h.clock
	}
	r := &run{p: writetodos.New(opts), prov: script.New(s)}
	c := r.p.Compose()
	reg := tool.NewRegistry()
	if err := reg.Add(c.Tools...); err != nil {
		h.t.Fatal(err)
	}
	r.e, err = agent.New(agent.Options{Provider: r.prov, Log: h, SessionID: h.id, Tools: reg,
		Contributors: c.Contributors, Interceptors: c.Interceptors, Folds: c.Folds,
		Events: func(ev agent.Event) {
			if c, ok := ev.(plan.Changed); ok {
				r.mu.Lock()
				defer r.mu.Unlock()
				r.events = append(r.events, c)
			}
		}}, h.rows())
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

func userText(s string) session.UserMessage {
	return session.UserMessage{Parts: model.Parts{model.Text{Text: s}}}
}

func lastUser(req *model.Request) string {
	var s string
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == model.RoleUser {
			s = text(req.Messages[i].Parts)
			break
		}
	}
	// The per-request context follows the conversation.
	return s + text(req.Context)
}

// lastRead is the user's words of a request and then the plan, which
// must never be among them: it is the request's SystemContext.
func lastRead(t testing.TB, req *model.Request) string {
	t.Helper()
	if u := lastUser(req); strings.Contains(u, "[todo list]") {
		t.Fatalf("the plan reached the model as the user's words:\n%s", u)
	}
	return lastUser(req) + req.SystemContext
}

func summary(ts []writetodos.Todo) string {
	var s []string
	for _, t := range ts {
		done := "-"
		if t.CompletedAt != nil {
			done = t.CompletedAt.UTC().Format("15:04")
		}
		s = append(s, t.ID+" "+t.Content+" "+string(t.Status)+" at "+t.At.UTC().Format("15:04")+" done "+done+" af "+t.ActiveForm)
	}
	return strings.Join(s, "\n")
}

func TestListInEveryRequestAndReplay(t *testing.T) {
	h := newHarness(t)
	r := h.engine(writetodos.Options{}, `[
	 {"tool_calls":[{"id":"1","name":"write_todos","arguments":`+create+`}]},
	 {"tool_calls":[{"id":"2","name":"write_todos","arguments":{"updates":[{"id":"s9","status":"completed"}]}}]},
	 {"tool_calls":[{"id":"3","name":"write_todos","arguments":{"updates":[{"id":"s2","status":"completed"},{"id":"s3","status":"in_progress"}]}}]},
	 {"text":"tests next"}]`)
	if _, err := r.e.Run(t.Context(), userText("build it")); err != nil {
		t.Fatal(err)
	}
	reqs := r.prov.Requests()
	if strings.Contains(lastRead(t, reqs[0]), writetodos.ContextHeader) {
		t.Fatal("list carried before it exists")
	}
	want := writetodos.ContextHeader + "[x] 1. Research the endpoint (s1)\n[x] 2. Write the new tool module (s2)\n[>] 3. Add tests (s3)\n" + writetodos.Instruction
	if got := lastRead(t, reqs[3]); !strings.HasSuffix(got, want) || strings.Count(got, "[todo list]") != 1 {
		t.Fatalf("last request ends with:\n%s", got)
	}
	// The refused call left the list as it was.
	if got := lastRead(t, reqs[2]); !strings.HasSuffix(got, "[>] 2. Write the new tool module (s2)\n[ ] 3. Add tests (s3)\n"+writetodos.Instruction) {
		t.Fatalf("request after the refusal:\n%s", got)
	}
	for _, row := range h.rows() {
		if um, ok := row.Entry.(session.UserMessage); ok && strings.Contains(text(um.Parts), writetodos.Instruction) {
			t.Fatal("the list was persisted into the conversation")
		}
	}
	if cs := r.changes(); len(cs) != 2 || cs[1].Completed != 2 || cs[1].Total != 3 {
		t.Fatalf("changes %+v", cs)
	}
	// A fresh plugin replaying the log holds the same list, timestamps
	// included, and replay announces nothing.
	h.set(t0.Add(time.Hour))
	r2 := h.engine(writetodos.Options{}, `[{"text":"hello"}]`)
	if got, want := summary(r2.p.Todos()), summary(r.p.Todos()); got != want {
		t.Fatalf("replayed:\n%s\nwant:\n%s", got, want)
	}
	if len(r2.changes()) != 0 {
		t.Fatalf("replay announced %+v", r2.changes())
	}
}

// A new user turn marks the list stale for front doors until the agent
// writes it again; it changes no item, and neither does a cancel.
func TestNewUserTurnMarksStale(t *testing.T) {
	h := newHarness(t)
	r := h.engine(writetodos.Options{}, `[
	 {"tool_calls":[{"id":"1","name":"write_todos","arguments":`+create+`}]},
	 {"text":"paused"},
	 {"text":"what next?"},
	 {"tool_calls":[{"id":"2","name":"write_todos","arguments":{"updates":[{"id":"s2","status":"completed"}]}}]},
	 {"text":"ok"}]`)
	if _, err := r.e.Run(t.Context(), userText("one")); err != nil {
		t.Fatal(err)
	}
	before := summary(r.p.Todos())
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if res, _ := r.e.Run(ctx, userText("two")); res.Stop != agent.StopCanceled {
		t.Fatalf("res %+v", res)
	}
	if _, err := r.e.Run(t.Context(), userText("three")); err != nil {
		t.Fatal(err)
	}
	if got := summary(r.p.Todos()); got != before || !r.p.Stale() {
		t.Fatalf("after user turns (stale %v):\n%s", r.p.Stale(), got)
	}
	// Reopening the session keeps it stale: it is derived from the log.
	r2 := h.engine(writetodos.Options{}, `[{"tool_calls":[{"id":"2","name":"write_todos","arguments":{"updates":[{"id":"s2","status":"completed"}]}}]},{"text":"ok"}]`)
	if !r2.p.Stale() {
		t.Fatal("replay lost staleness")
	}
	cs := r.changes()
	if len(cs) != 2 || cs[0].Stale || !cs[1].Stale || summary(r.p.Todos()) != before {
		t.Fatalf("changes %+v", cs)
	}
	if _, err := r2.e.Run(t.Context(), userText("four")); err != nil {
		t.Fatal(err)
	}
	cs = r2.changes()
	if len(cs) != 1 || cs[0].Stale || r2.p.Stale() || cs[0].Completed != 2 {
		t.Fatalf("after the agent's write %+v", cs)
	}
}

func TestCompletionCheck(t *testing.T) {
	h := newHarness(t)
	write := `{"tool_calls":[{"id":"1","name":"write_todos","arguments":` + create + `}]}`
	r := h.engine(writetodos.Options{CheckCompletion: true, MaxCompletionNudges: 2}, `[`+write+`,{"text":"done"},{"text":"done!"},{"text":"done!!"}]`)
	res, err := r.e.Run(t.Context(), userText("go"))
	if err != nil || res.Stop != writetodos.StopIncomplete || res.Stop.Normal() {
		t.Fatalf("res %+v err %v", res, err)
	}
	var nudges []string
	var warning *session.Notice
	for _, row := range h.rows() {
		switch e := row.Entry.(type) {
		case session.UserMessage:
			if e.Source == session.SourceReminder {
				nudges = append(nudges, text(e.Parts))
			}
		case session.Notice:
			if e.Severity == session.SeverityWarning {
				warning = &e
			}
		}
	}
	if len(nudges) != 2 || warning == nil || !strings.Contains(warning.Title, "2 open items") {
		t.Fatalf("nudges %d warning %+v", len(nudges), warning)
	}
	if !strings.Contains(nudges[0], "[>] 2. Write the new tool module (s2)\n[ ] 3. Add tests (s3)") || !strings.Contains(nudges[0], "without evidence") || strings.Contains(nudges[0], "(s1)") {
		t.Fatalf("nudge:\n%s", nudges[0])
	}

	// Completed and cancelled items are resolved.
	h2 := newHarness(t)
	r2 := h2.engine(writetodos.Options{CheckCompletion: true}, `[`+write+`,{"text":"done"},{"tool_calls":[{"id":"2","name":"write_todos","arguments":{"updates":[{"id":"s2","status":"completed"},{"id":"s3","status":"cancelled"}]}}]},{"text":"done, tests dropped as agreed"}]`)
	if res, err := r2.e.Run(t.Context(), userText("go")); err != nil || res.Stop != agent.StopEndTurn {
		t.Fatalf("res %+v err %v", res, err)
	}
}

// meka's default caps (nine a turn) end a model that answers three
// reminders in a row without a tool call as incomplete, on the fourth
// reply, rather than after a hundred; tool calls between reminders start
// the run over until the turn's nine are spent. Every reminder says what
// ends the turn normally and what leaving an item open leads to.
func TestCompletionCaps(t *testing.T) {
	write := `{"tool_calls":[{"id":"1","name":"write_todos","arguments":` + create + `}]}`
	reminders := func(h *harness) (nudges []string, warning *session.Notice) {
		for _, row := range h.rows() {
			switch e := row.Entry.(type) {
			case session.UserMessage:
				if e.Source == session.SourceReminder {
					nudges = append(nudges, text(e.Parts))
				}
			case session.Notice:
				if e.Severity == session.SeverityWarning {
					warning = &e
				}
			}
		}
		return nudges, warning
	}

	h := newHarness(t)
	r := h.engine(writetodos.Options{CheckCompletion: true, MaxCompletionNudges: plan.NudgesPerTurn},
		`[`+write+`,{"text":"done"},{"text":"done!"},{"text":"done!!"},{"text":"done!!!"},{"text":"never asked for"}]`)
	res, err := r.e.Run(t.Context(), userText("go"))
	if err != nil || res.Stop != writetodos.StopIncomplete || res.Reply != "done!!!" {
		t.Fatalf("res %+v err %v", res, err)
	}
	nudges, warning := reminders(h)
	if len(nudges) != plan.NudgesInARow || warning == nil || !strings.Contains(warning.Title, "3 completion reminders in a row without a tool call") {
		t.Fatalf("nudges %d warning %+v", len(nudges), warning)
	}
	for _, lie := range []string{"leave it pending"} {
		if strings.Contains(nudges[0], lie) {
			t.Errorf("the nudge still says %q:\n%s", lie, nudges[0])
		}
	}
	for _, want := range []string{"mark it cancelled", "say why in your reply", "the turn ends normally", "at most 2 more times in a row", "todo_incomplete"} {
		if !strings.Contains(nudges[0], want) {
			t.Errorf("first nudge lacks %q:\n%s", want, nudges[0])
		}
	}
	if !strings.Contains(nudges[2], "This is the last reminder") || !strings.Contains(nudges[2], "todo_incomplete") {
		t.Errorf("last nudge:\n%s", nudges[2])
	}

	// A tool call between reminders starts the run over; the turn's
	// ceiling still ends it.
	rounds := []string{write, `{"text":"done"}`}
	for i := range plan.NudgesPerTurn {
		rounds = append(rounds, `{"tool_calls":[{"id":"u`+fmt.Sprint(i)+`","name":"write_todos","arguments":{"updates":[{"id":"s2","status":"in_progress"}]}}]}`, `{"text":"r`+fmt.Sprint(i)+`"}`)
	}
	h2 := newHarness(t)
	r2 := h2.engine(writetodos.Options{CheckCompletion: true, MaxCompletionNudges: plan.NudgesPerTurn}, `[`+strings.Join(rounds, ",")+`]`)
	res, err = r2.e.Run(t.Context(), userText("go"))
	if err != nil || res.Stop != writetodos.StopIncomplete || res.Reply != "r8" {
		t.Fatalf("res %+v err %v", res, err)
	}
	nudges, warning = reminders(h2)
	if len(nudges) != plan.NudgesPerTurn || warning == nil || !strings.Contains(warning.Title, "after 9 completion reminders this turn") {
		t.Fatalf("nudges %d warning %+v", len(nudges), warning)
	}

	// Zero is no ceiling.
	h3 := newHarness(t)
	r3 := h3.engine(writetodos.Options{CheckCompletion: true},
		`[`+write+`,{"text":"1"},{"text":"2"},{"text":"3"},{"text":"4"},{"tool_calls":[{"id":"2","name":"write_todos","arguments":{"updates":[{"id":"s2","status":"completed"},{"id":"s3","status":"cancelled"}]}}]},{"text":"ok"}]`)
	if res, err := r3.e.Run(t.Context(), userText("go")); err != nil || res.Stop != agent.StopEndTurn {
		t.Fatalf("res %+v err %v", res, err)
	}
}

// A session recorded before results carried the list is rebuilt from its
// calls, down to the rendered result of a call whose arguments no longer
// parse; refused and failed calls change nothing.
func TestLegacyReconstruction(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "legacy_session.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []session.Row
	if err := json.Unmarshal(raw, &rows); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	for _, row := range rows {
		if tr, ok := row.Entry.(session.ToolResult); ok && len(tr.State) > 0 {
			t.Fatalf("legacy row %d has a recorded state", row.Seq)
		}
		h.set(row.Time)
		if _, err := h.store.Append(t.Context(), h.id, []session.Row{{Turn: row.Turn, Entry: row.Entry}}); err != nil {
			t.Fatal(err)
		}
	}
	h.set(time.Date(2024, 5, 2, 8, 0, 0, 0, time.UTC))
	r := h.engine(writetodos.Options{}, `[{"tool_calls":[{"id":"n1","name":"write_todos","arguments":{"updates":[{"id":"s4","status":"completed"}]}}]},{"text":"documented"}]`)
	want := `s1 Research the endpoint completed at 10:03 done 10:05 af Researching the endpoint
s2 Write the new tool module completed at 10:03 done 10:11 af 
s3 Add tests cancelled at 10:03 done - af 
s4 Document it in_progress at 10:11 done - af Documenting it`
	if got := summary(r.p.Todos()); got != want {
		t.Fatalf("reconstructed:\n%s\nwant:\n%s", got, want)
	}
	// The agent continues the reconstructed list in the current format.
	if _, err := r.e.Run(t.Context(), userText("finish")); err != nil {
		t.Fatal(err)
	}
	if got := lastRead(t, r.prov.Requests()[0]); !strings.Contains(got, "[-] 3. Add tests (s3)\n[>] 4. Document it (s4)\n") {
		t.Fatalf("request:\n%s", got)
	}
	r2 := h.engine(writetodos.Options{}, `[]`)
	final := summary(r2.p.Todos())
	if !strings.HasSuffix(final, "s4 Document it completed at 10:11 done 08:00 af Documenting it") || summary(r.p.Todos()) != final {
		t.Fatalf("after a current-format call:\n%s", final)
	}
}

func TestCompactionCheckpoint(t *testing.T) {
	h := newHarness(t)
	r := h.engine(writetodos.Options{}, `[
	 {"tool_calls":[{"id":"1","name":"write_todos","arguments":`+create+`}]},{"text":"a"},{"text":"b"},{"text":"summary"},
	 {"tool_calls":[{"id":"2","name":"write_todos","arguments":{"updates":[{"id":"s3","status":"in_progress"},{"id":"s2","status":"completed"}]}}]},{"text":"c"}]`)
	for _, in := range []string{"one", "two"} {
		if _, err := r.e.Run(t.Context(), userText(in)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.e.Compact(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.e.Run(t.Context(), userText("three")); err != nil {
		t.Fatal(err)
	}
	rows := h.rows()
	i := session.LatestCompaction(rows)
	// From the boundary on, with the results' recorded lists stripped:
	// the checkpoint and the call's arguments must carry the list.
	var tail []session.Row
	for _, row := range rows[i:] {
		if tr, ok := row.Entry.(session.ToolResult); ok {
			tr.State = nil
			row.Entry = tr
		}
		tail = append(tail, row)
	}
	p := writetodos.New(writetodos.Options{})
	if err := session.NewFolder(p.Fold()).Replay(tail); err != nil {
		t.Fatal(err)
	}
	if got, want := writetodos.Render(p.Todos()), writetodos.Render(r.p.Todos()); got != want || !strings.Contains(got, "[>] 3. Add tests (s3)") {
		t.Fatalf("replayed:\n%s\nwant:\n%s", got, want)
	}
}
