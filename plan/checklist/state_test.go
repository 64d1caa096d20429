package checklist

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/model"
	"meka.dev/meka/plan"
	"meka.dev/meka/session"
)

func base() state {
	return state{Added: 3, Items: []plan.Item{
		{ID: "c1", Text: "one", Status: plan.Pending},
		{ID: "c2", Text: "two", Status: plan.InProgress},
		{ID: "c3", Text: "three", Status: plan.Deferred, Reason: "the build", Task: "t1"},
	}}
}

func TestEdit(t *testing.T) {
	cases := []struct {
		name string
		args string
		want string // the item after, or "removed"; "" with err
		kept string
		err  string
	}{
		{"complete", `{"id":"c1","status":"completed"}`, "removed", "", ""},
		{"cancel", `{"id":"c2","status":"canceled","reason":"not needed"}`, "removed", "", ""},
		{"cancel without reason", `{"id":"c2","status":"canceled","reason":"  "}`, "", "", "needs a reason"},
		{"defer", `{"id":"c1","status":"deferred","reason":"Ana","task":"t2"}`, "c1 deferred one Ana t2", "", ""},
		{"defer without reason", `{"id":"c1","status":"deferred","task":"t2"}`, "", "", "needs a reason"},
		{"re-defer with a new reason drops the task", `{"id":"c3","status":"deferred","reason":"Ana"}`, "c3 deferred three Ana ", "", ""},
		{"re-defer with a new reason and task", `{"id":"c3","status":"deferred","reason":"Ana","task":"t2"}`, "c3 deferred three Ana t2", "", ""},
		{"re-defer with a task keeps the reason", `{"id":"c3","status":"deferred","task":"t2"}`, "c3 deferred three the build t2", "", ""},
		{"re-defer with neither keeps both", `{"id":"c3","status":"deferred"}`, "c3 deferred three the build t1", "t1", ""},
		{"a reason alone restates a deferral", `{"id":"c3","reason":"Ana"}`, "c3 deferred three Ana ", "", ""},
		{"text alone keeps a deferral", `{"id":"c3","text":"3"}`, "c3 deferred 3 the build t1", "", ""},
		{"reopen", `{"id":"c3","status":"in_progress"}`, "c3 in_progress three  ", "", ""},
		{"task on a pending item", `{"id":"c1","task":"t2"}`, "", "", "a task is what a deferred item waits on"},
		{"unknown id", `{"id":"c4","status":"completed"}`, "", "", `no item "c4" on the checklist; the ids on it are c1, c2, c3`},
		{"nothing to change", `{"id":"c1"}`, "", "", "give c1 a status"},
		{"unknown status", `{"id":"c1","status":"done"}`, "", "", `unknown status "done"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := base()
			a, err := parseEdit(json.RawMessage(tc.args))
			if err != nil {
				t.Fatal(err)
			}
			next, e, err := st.edit(a)
			if !reflect.DeepEqual(st, base()) {
				t.Fatalf("edit changed its input: %+v", st)
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				if !reflect.DeepEqual(next, base()) {
					t.Fatalf("a refused edit returned a changed list: %+v", next)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := fmt.Sprintf("%s %s %s %s %s", e.Item.ID, e.Item.Status, e.Item.Text, e.Item.Reason, e.Item.Task)
			if e.Removed {
				got = "removed"
				if next.index(e.Item.ID) >= 0 || len(next.Items) != 2 {
					t.Fatalf("removed item still listed: %+v", next.Items)
				}
			} else if next.Items[next.index(e.Item.ID)] != e.Item {
				t.Fatalf("list holds %+v, edit reports %+v", next.Items, e.Item)
			}
			if got != tc.want || e.KeptTask != tc.kept {
				t.Fatalf("got %q kept %q, want %q kept %q", got, e.KeptTask, tc.want, tc.kept)
			}
			if next.Added != 3 {
				t.Fatalf("added %d", next.Added)
			}
		})
	}
}

func TestAdd(t *testing.T) {
	st := base()
	a, err := parseAdd(json.RawMessage(`{"items":["four",{"text":" five ","status":"in_progress"},{"text":"six"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	next, ids, err := st.add(a)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(ids, ",") != "c4,c5,c6" || next.Added != 6 || len(next.Items) != 6 || len(st.Items) != 3 {
		t.Fatalf("ids %v state %+v", ids, next)
	}
	if it := next.Items[4]; it.Text != "five" || it.Status != plan.InProgress {
		t.Fatalf("item %+v", it)
	}
	for _, bad := range []string{`{"items":[]}`, `{"items":[""]}`, `{"items":[{"text":"x","status":"deferred"}]}`} {
		a, err := parseAdd(json.RawMessage(bad))
		if err == nil {
			_, _, err = st.add(a)
		}
		if err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

func TestReportedTasks(t *testing.T) {
	msg := func(source string, parts ...model.Part) session.UserMessage {
		return session.UserMessage{Source: source, Parts: parts}
	}
	cases := []struct {
		m    session.UserMessage
		want []string
	}{
		{msg(session.SourceTask, model.Text{Text: "a report naming no task"}), nil},
		{session.UserMessage{Source: session.SourceTask, Tasks: []string{"t4"}, Parts: model.Parts{model.Text{Text: "Task t4 exited."}}}, []string{"t4"}},
		{session.UserMessage{Source: session.SourceSteer, Tasks: []string{"t4"}}, nil},
	}
	for i, tc := range cases {
		if got := ReportedTasks(tc.m); !slices.Equal(got, tc.want) {
			t.Errorf("case %d: %v, want %v", i, got, tc.want)
		}
	}
}

func TestReopen(t *testing.T) {
	st := base()
	st.Items = append(st.Items, plan.Item{ID: "c4", Text: "four", Status: plan.Deferred, Reason: "Ana"})
	next, ok := st.reopen([]string{"t9"})
	if ok || !reflect.DeepEqual(next, st) {
		t.Fatalf("reopened on another task: %+v", next)
	}
	next, ok = st.reopen([]string{"t9", "t1"})
	if !ok || next.Items[2] != (plan.Item{ID: "c3", Text: "three", Status: plan.Pending}) || next.Items[3].Status != plan.Deferred {
		t.Fatalf("reopen: %v %+v", ok, next.Items)
	}
	if st.Items[2].Status != plan.Deferred {
		t.Fatal("reopen changed its input")
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	f := &Fold{}
	f.Reset()
	f.st = base()
	f.st.Completed, f.st.Canceled = 4, 1
	raw, err := f.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	g := &Fold{}
	if err := g.Restore(raw); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g.st, f.st) {
		t.Fatalf("restored %+v, want %+v", g.st, f.st)
	}
	if err := g.Restore(json.RawMessage(`[`)); err == nil {
		t.Fatal("restored garbage")
	}
}

// FuzzEdit checks that no edit, however malformed, panics, changes its
// input, loses the id counter or leaves a list that breaks the rules.
func FuzzEdit(f *testing.F) {
	f.Add(`{"id":"c3","status":"deferred"}`)
	f.Add(`{"id":"c1","status":"canceled","reason":"x"}`)
	f.Add(`{"id":"c2","text":"new","task":"t1"}`)
	f.Fuzz(func(t *testing.T, args string) {
		a, err := parseEdit(json.RawMessage(args))
		if err != nil {
			return
		}
		st := base()
		next, _, err := st.edit(a)
		if !reflect.DeepEqual(st, base()) {
			t.Fatal("edit changed its input")
		}
		if err != nil {
			return
		}
		if next.Added != 3 || len(next.Items) < 2 || len(next.Items)+next.Completed+next.Canceled != 3 {
			t.Fatalf("counts: %+v", next)
		}
		for _, it := range next.Items {
			switch it.Status {
			case plan.Pending, plan.InProgress:
				if it.Task != "" || it.Reason != "" {
					t.Fatalf("open item with a reason or task: %+v", it)
				}
			case plan.Deferred:
				if it.Reason == "" {
					t.Fatalf("deferred without a reason: %+v", it)
				}
			default:
				t.Fatalf("item in state %s on the list", it.Status)
			}
		}
	})
}

func TestInterceptorCounts(t *testing.T) {
	p := New(Options{})
	p.fold.st = base()
	type ask struct {
		turn          int64
		rounds, calls int
		want          string
	}
	asks := []ask{
		{1, 2, 1, "nudge 1 of 3"},
		{1, 3, 1, "nudge 2 of 3"},
		{1, 5, 2, "nudge 1 of 3"}, // a tool call since the last nudge
		{1, 6, 2, "nudge 2 of 3"},
		{1, 7, 2, "nudge 3 of 3"},
		{1, 8, 2, "after 3 nudges in a row"},
		{2, 1, 0, "nudge 1 of 3"}, // the next turn asks again
		{2, 2, 0, "nudge 2 of 3"},
		{2, 1, 0, "nudge 1 of 3"}, // turn 2 again, after a rewind
	}
	for i, a := range asks {
		d := p.Interceptor().BeforeStop(t.Context(), agent.StopInfo{Turn: a.turn, Rounds: a.rounds, ToolCalls: a.calls})
		if d.Notice == nil || !strings.Contains(d.Notice.Title, a.want) || d.Continue != strings.HasPrefix(a.want, "nudge") {
			t.Fatalf("ask %d: %+v", i+1, d)
		}
	}
	p.fold.st = state{Added: 1, Items: []plan.Item{{ID: "c1", Text: "x", Status: plan.Deferred, Reason: "Ana"}}}
	if d := p.Interceptor().BeforeStop(t.Context(), agent.StopInfo{Turn: 3, Rounds: 1}); d.Continue || d.Notice != nil {
		t.Fatalf("a deferred item held the turn: %+v", d)
	}
}
