package repl

import (
	"context"
	"strings"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/permission"
	"meka.dev/meka/plan"
	"meka.dev/meka/session"
)

// richFake is a session with skills and a plan, as the host's is.
type richFake struct {
	*fakeSession
	skills []string
	plan   plan.Changed
}

func (r *richFake) SkillNames() []string                    { return r.skills }
func (r *richFake) Plan() (plan.Changed, bool)              { return r.plan, len(r.plan.Items) > 0 }
func (r *richFake) Reopen(context.Context) (Session, error) { return r, nil }

func newRichHarness(t *testing.T, r *richFake) (*harness, *[]session.UserMessage) {
	t.Helper()
	clk := newClock()
	m := newScreen(t.Context(), r, Options{Width: 100, Height: 20, Now: clk.now,
		Levels: []permission.Level{permission.Read, permission.Workspace, permission.Unrestricted}})
	m.hold(r)
	var sent []session.UserMessage
	r.run = func(_ context.Context, msg session.UserMessage) (agent.Result, error) {
		sent = append(sent, msg)
		return agent.Result{Stop: agent.StopEndTurn}, nil
	}
	return &harness{t: t, m: m, f: r.fakeSession, clk: clk}, &sent
}

// /skill NAME words runs the skill as /NAME words does: the host reads
// its body after the words (seed 002). /NAME is a skill's invocation, not
// an unknown command; /skill alone lists them, an unknown name is
// refused here.
func TestSkillCommand(t *testing.T) {
	h, sent := newRichHarness(t, &richFake{fakeSession: newFake(), skills: []string{"release-notes"}})
	h.submitText("/skill release-notes for v2")
	h.submitText("/release-notes again")
	if len(*sent) != 2 || messageText((*sent)[0].Parts) != "/release-notes for v2" || messageText((*sent)[1].Parts) != "/release-notes again" {
		t.Fatalf("sent %+v", *sent)
	}
	h.submitText("/skill")
	h.wantCommitted("Skills: release-notes. /skill NAME [words] runs one")
	h.submitText("/skill nope words")
	h.wantCommitted("no skill is called nope; /skill lists them")
	if len(*sent) != 2 {
		t.Fatalf("an unknown skill was sent: %+v", *sent)
	}
}

// /plan offers the deferred items, and /plan pick ID [words] picks one up
// without asking the agent: the message carries the item to reopen.
func TestPlanPicksUpDeferred(t *testing.T) {
	c := plan.Changed{Dialect: "checklist", Total: 2, Items: []plan.Item{
		{ID: "c1", Text: "Write the note", Status: plan.InProgress},
		{ID: "c2", Text: "Ask Ana about the date", Status: plan.Deferred, Reason: "waits on Ana"},
	}}
	h, sent := newRichHarness(t, &richFake{fakeSession: newFake(), plan: c})
	h.submitText("/plan")
	h.wantCommitted("Ask Ana about the date — waits on Ana", "Deferred: c2. /plan pick ID [words] picks one up")
	h.submitText("/plan pick c1")
	h.wantCommitted("c1 is not deferred (deferred: c2); nothing was sent")
	h.submitText("/plan pick c2 Ana said Tuesday")
	h.submitText("/plan pick c2")
	if len(*sent) != 2 {
		t.Fatalf("sent %+v", *sent)
	}
	if m := (*sent)[0]; messageText(m.Parts) != "Ana said Tuesday" || len(m.Reopen) != 1 || m.Reopen[0] != "c2" {
		t.Errorf("pick with words: %+v", m)
	}
	if m := (*sent)[1]; !strings.Contains(messageText(m.Parts), "I picked up c2 (Ask Ana about the date)") || len(m.Reopen) != 1 {
		t.Errorf("pick without words: %+v", m)
	}
}

// A write_todos list a new user turn made stale is shown as stale: one
// line pinned until the agent updates it, and marked on /plan.
func TestStalePlanShown(t *testing.T) {
	st := styles{}
	c := plan.Changed{Dialect: "write_todos", Total: 2, Stale: true, Items: []plan.Item{
		{ID: "s1", Text: "Research", Status: plan.Completed},
		{ID: "s2", Text: "Write it", Status: plan.InProgress},
	}}
	pinned := strings.Join(planBlock(st, c, 100, false), "\n")
	if !strings.Contains(pinned, "from your earlier request, not updated since") || strings.Contains(pinned, "Write it") {
		t.Errorf("pinned:\n%s", pinned)
	}
	full := strings.Join(planFull(st, c, 100), "\n")
	if !strings.Contains(full, staleNote) || !strings.Contains(full, "Write it") {
		t.Errorf("/plan:\n%s", full)
	}
	c.Stale = false
	if pinned := strings.Join(planBlock(st, c, 100, false), "\n"); !strings.Contains(pinned, "Write it") {
		t.Errorf("a fresh list:\n%s", pinned)
	}
}
