package acp

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/internal/acp/jsonrpc"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/plan"
	"meka.dev/meka/session"
)

// lastResult is the newest tool result of a session's log.
func (h *harness) lastResult(id string) session.ToolResult {
	h.t.Helper()
	var res session.ToolResult
	for _, r := range h.lookup(id).session().Engine().Rows() {
		if tr, ok := r.Entry.(session.ToolResult); ok {
			res = tr
		}
	}
	return res
}

// A client that reads through the editor but leaves writes to meka: the
// edit is computed from the disk and lands there, and its result says
// the editor's buffer now differs.
func TestReadsOnlyClientDivergenceNote(t *testing.T) {
	rounds := `[{"tool_calls":[{"id":"c1","name":"file_edit","arguments":{"path":"a.txt","old":"disk","new":"edited"}}]},{"text":"1"}]`
	h := newHarness(t, harnessOptions{rounds: rounds, fileTools: true,
		init: &InitializeRequest{ProtocolVersion: 1, ClientCapabilities: ClientCapabilities{FS: FileSystemCapabilities{ReadTextFile: true}}}})
	p := filepath.Join(h.cwd, "a.txt")
	os.WriteFile(p, []byte("disk\n"), 0o644)
	h.buffers[p] = "buffer\n"
	id := h.newSession()
	h.prompt(id, "edit")
	if b, _ := os.ReadFile(p); string(b) != "edited\n" {
		t.Fatalf("the disk holds %q", b)
	}
	res := h.lastResult(id)
	if res.Status != session.StatusOK || !strings.Contains(resultText(res), "buffer of this file now differs") {
		t.Fatalf("result %s %q", res.Status, resultText(res))
	}
	if len(h.reads) != 0 || len(h.writes) != 0 {
		t.Fatalf("fs/* went to a client that takes no writes: %d reads, %d writes", len(h.reads), len(h.writes))
	}
}

// An error other than ResourceNotFound on the read that picks a call's
// route fails the call: nothing is written, through the editor or on
// disk, for a file that exists and for a new one alike.
func TestGenericRoutingReadErrorFailsTheCall(t *testing.T) {
	rounds := `[{"tool_calls":[{"id":"c1","name":"file_write","arguments":{"path":"new.txt","content":"x\n"}}]},{"text":"1"},
	 {"tool_calls":[{"id":"c2","name":"file_edit","arguments":{"path":"old.txt","old":"disk","new":"edited"}}]},{"text":"2"}]`
	h := newHarness(t, harnessOptions{rounds: rounds, fileTools: true,
		init: &InitializeRequest{ProtocolVersion: 1, ClientCapabilities: ClientCapabilities{FS: FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}}}})
	os.WriteFile(filepath.Join(h.cwd, "old.txt"), []byte("disk\n"), 0o644)
	h.readErr = jsonrpc.NewError(jsonrpc.InternalError, "Internal error", nil)
	id := h.newSession()
	for _, name := range []string{"new.txt", "old.txt"} {
		h.prompt(id, "write")
		if res := h.lastResult(id); res.Status == session.StatusOK {
			t.Fatalf("%s: the call went through: %q", name, resultText(res))
		}
	}
	if _, err := os.Stat(filepath.Join(h.cwd, "new.txt")); err == nil {
		t.Error("new.txt was written on disk")
	}
	if b, _ := os.ReadFile(filepath.Join(h.cwd, "old.txt")); string(b) != "disk\n" {
		t.Errorf("old.txt holds %q", b)
	}
	if len(h.writes) != 0 {
		t.Errorf("written through the editor: %+v", h.writes)
	}
}

// file_read of a range asks the editor for that range (one line more, to
// know whether more remain), and shows it numbered from where it starts.
func TestReadRangeThroughTheEditor(t *testing.T) {
	rounds := `[{"tool_calls":[{"id":"c1","name":"file_read","arguments":{"path":"a.txt","line":3,"limit":2}}]},{"text":"1"},
	 {"tool_calls":[{"id":"c2","name":"file_read","arguments":{"path":"a.txt"}}]},{"text":"2"}]`
	h := newHarness(t, harnessOptions{rounds: rounds, fileTools: true,
		init: &InitializeRequest{ProtocolVersion: 1, ClientCapabilities: ClientCapabilities{FS: FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}}}})
	p := filepath.Join(h.cwd, "a.txt")
	os.WriteFile(p, []byte("l1\nl2\nl3\nl4\nl5\nl6\n"), 0o644)
	h.buffers[p] = "b1\nb2\nb3\nb4\nb5\nb6\n"
	id := h.newSession()
	h.prompt(id, "read a range")
	if len(h.reads) != 1 || h.reads[0].Line == nil || *h.reads[0].Line != 3 || h.reads[0].Limit == nil || *h.reads[0].Limit != 3 {
		t.Fatalf("reads %+v", h.reads)
	}
	got := resultText(h.lastResult(id))
	if !strings.Contains(got, "     3\tb3\n     4\tb4\n") || strings.Contains(got, "b5") || !strings.Contains(got, "Continue with line=5") {
		t.Fatalf("result %q", got)
	}
	h.prompt(id, "read it whole")
	if len(h.reads) != 2 || h.reads[1].Line != nil || h.reads[1].Limit != nil {
		t.Fatalf("a whole read asked a range: %+v", h.reads[1])
	}
}

// With no max_request_bytes set the bound is finite: a prompt over it is
// refused before anything is decoded, and nothing reaches the log.
func TestPromptOverTheDefaultBound(t *testing.T) {
	h := newHarness(t, harnessOptions{rounds: `[{"text":"fine"}]`})
	id := h.newSession()
	big := strings.Repeat("x", host.DefaultMaxRequestBytes+1)
	e := h.callErr("session/prompt", PromptRequest{SessionID: id, Prompt: []ContentBlock{TextBlock(big)}})
	if e.Code != jsonrpc.InvalidParams || !strings.Contains(e.Message, "max_request_bytes") {
		t.Fatalf("error %+v", e)
	}
	// An image too large is refused for its size, before it is decoded
	// (this one is not even base64).
	junk := strings.Repeat("!", base64.StdEncoding.EncodedLen(host.DefaultMaxRequestBytes+1))
	e = h.callErr("session/prompt", PromptRequest{SessionID: id, Prompt: []ContentBlock{{Type: "image", MimeType: "image/png", Data: junk}}})
	if e.Code != jsonrpc.InvalidParams || !strings.Contains(e.Message, "max_request_bytes") {
		t.Fatalf("image: error %+v", e)
	}
	// Nothing at all: the system prompt is recorded with the first turn.
	if rows, _ := h.host.Store().Rows(t.Context(), id, 0); len(rows) != 0 {
		t.Fatalf("%d rows stored", len(rows))
	}
	if r := h.prompt(id, "short"); r.StopReason != "end_turn" {
		t.Fatalf("a prompt within the bound: %+v", r)
	}
}

// A compaction's card carries meka's facts: _meta.compaction from the
// start (trigger, the estimate before), and on the completed card the
// fields of the HTTP API's context.compacted event, in _meta and as its
// rawOutput; a client that renders compactions gets them in _meta.
func TestCompactionFacts(t *testing.T) {
	rounds := `[{"text":"one","usage":{"input_tokens":950,"output_tokens":10}},
	 {"text":"the summary","usage":{"input_tokens":900,"output_tokens":100}},
	 {"text":"two","usage":{"input_tokens":30,"output_tokens":5}}]`
	for _, native := range []bool{false, true} {
		caps := &ClientSessionCapabilities{Notices: &Empty{}}
		if native {
			caps.Compaction = &Empty{}
		}
		h := newHarness(t, harnessOptions{window: 1000, rounds: rounds,
			init: &InitializeRequest{ProtocolVersion: 1, ClientCapabilities: ClientCapabilities{Session: caps}}})
		id := h.newSession()
		h.prompt(id, "first")
		h.sync()
		h.take()
		h.prompt(id, "second")
		var started, done Meta
		var raw json.RawMessage
		for _, n := range h.take() {
			switch u := n.Update.(type) {
			case ToolCall:
				if u.Title == compactingTitle {
					started = u.Meta
				}
			case ToolCallUpdate:
				if u.Status == "completed" {
					done, raw = u.Meta, u.RawOutput
				}
			case CompactionUpdate:
				if u.Status == "in_progress" {
					started = u.Meta
				} else {
					done = u.Meta
				}
			}
		}
		facts := func(m Meta) map[string]any {
			f, _ := m["compaction"].(map[string]any)
			return f
		}
		s := facts(started)
		if s["trigger"] != "auto" || s["compaction_id"] != "compaction-1" || s["tokens_before"] == nil {
			t.Fatalf("native %v: started with %v", native, started)
		}
		d := facts(done)
		for _, k := range []string{"trigger", "status", "kept_from_row", "rows_summarized", "kept_turns", "tokens_before", "tokens_after", "checklist_carried"} {
			if _, ok := d[k]; !ok {
				t.Errorf("native %v: completed _meta.compaction lacks %s: %v", native, k, d)
			}
		}
		if d["status"] != "completed" || d["rows_summarized"].(float64) < 2 || d["kept_turns"].(float64) != 1 {
			t.Errorf("native %v: facts %v", native, d)
		}
		if !native {
			var r map[string]any
			if err := json.Unmarshal(raw, &r); err != nil || r["trigger"] != "auto" || r["kept_from_row"] != d["kept_from_row"] || r["tokens_after"] != d["tokens_after"] {
				t.Errorf("rawOutput %s, want the facts %v", raw, d)
			}
		}
	}
}

// With prices known, usage_update carries what the session has cost so
// far, across turns, and a reopened session's first gauge says it too.
func TestUsageUpdateCarriesTheCost(t *testing.T) {
	rounds := `[{"text":"one","usage":{"input_tokens":10,"output_tokens":5,"cost":0.25}},
	 {"text":"two","usage":{"input_tokens":20,"output_tokens":5,"cost":0.5}}]`
	h := newHarness(t, harnessOptions{window: 1000, rounds: rounds})
	id := h.newSession()
	costs := func() []float64 {
		var out []float64
		for _, n := range h.take() {
			if u, ok := n.Update.(UsageUpdate); ok && u.Cost != nil {
				if u.Cost.Currency != "USD" {
					t.Fatalf("currency %q", u.Cost.Currency)
				}
				out = append(out, u.Cost.Amount)
			}
		}
		return out
	}
	h.sync()
	h.take()
	h.prompt(id, "first")
	// The prompt's response carries the turn's own cost in usage._meta.
	resp := h.prompt(id, "second")
	if c, ok := resp.Usage.Meta["cost"].(map[string]any); !ok || c["amount"] != 0.5 || c["currency"] != "USD" {
		t.Fatalf("prompt response usage %+v, want _meta.cost 0.5 USD", resp.Usage)
	}
	if got := costs(); len(got) != 2 || got[0] != 0.25 || got[1] != 0.75 {
		t.Fatalf("costs %v, want [0.25 0.75]", got)
	}
	h.call("session/close", SessionIDRequest{SessionID: id}, nil)
	h.call("session/resume", LoadSessionRequest{SessionID: id, Cwd: h.cwd}, nil)
	h.sync()
	if got := costs(); len(got) != 1 || got[0] != 0.75 {
		t.Fatalf("after resume: costs %v, want [0.75]", got)
	}
}

// Chunks carry their message's id: a reply's chunks share one, the next
// reply has another, and a load replays each message under its row's.
func TestMessageIDs(t *testing.T) {
	h := newHarness(t, harnessOptions{rounds: `[{"thinking":"hmm","text":"Hello there, friend."},{"text":"Again."}]`})
	id := h.newSession()
	h.prompt(id, "hi")
	h.prompt(id, "again")
	ids := map[string][]string{}
	var order []string
	for _, n := range h.take() {
		if c, ok := n.Update.(ContentChunk); ok {
			if c.MessageID == "" {
				t.Fatalf("a %s without a messageId", c.Tag)
			}
			if len(ids[c.MessageID]) == 0 {
				order = append(order, c.MessageID)
			}
			ids[c.MessageID] = append(ids[c.MessageID], c.Tag)
		}
	}
	if len(order) != 3 {
		t.Fatalf("messages %v", ids)
	}
	for _, m := range order {
		for _, tag := range ids[m] {
			if tag != ids[m][0] {
				t.Fatalf("one message id over two kinds of chunk: %v", ids)
			}
		}
	}
	h.call("session/close", SessionIDRequest{SessionID: id}, nil)
	h.call("session/load", LoadSessionRequest{SessionID: id, Cwd: h.cwd}, nil)
	for _, n := range h.take() {
		if c, ok := n.Update.(ContentChunk); ok && !strings.HasPrefix(c.MessageID, "row_") {
			t.Fatalf("replayed %s with messageId %q", c.Tag, c.MessageID)
		}
	}
}

// Plan operations: a plan by its dialect's id, whole; an emptied list or
// a stale write_todos list (seed 003) removes it.
func TestPlanOps(t *testing.T) {
	items := []plan.Item{{ID: "t1", Text: "Write the tests", Status: plan.InProgress}}
	u, ok := planOp(plan.Changed{Dialect: "write_todos", Items: items}).(PlanOpUpdate)
	if !ok || u.Plan.Type != "items" || u.Plan.PlanID != "write_todos" || len(u.Plan.Entries) != 1 || u.Plan.Entries[0].Status != "in_progress" {
		t.Fatalf("plan_update %+v", u)
	}
	if r, ok := planOp(plan.Changed{Dialect: "write_todos"}).(PlanRemovedUpdate); !ok || r.PlanID != "write_todos" || r.Meta != nil {
		t.Fatalf("emptied: %+v", r)
	}
	if r, ok := planOp(plan.Changed{Dialect: "write_todos", Items: items, Stale: true}).(PlanRemovedUpdate); !ok || r.Meta["stale"] != true {
		t.Fatalf("stale: %+v", r)
	}
}
