package schedule_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/internal/schedule"
	"meka.dev/meka/permission"
	"meka.dev/meka/tool"
)

// gated inserts a recurring job every minute with gate g, due at t0.
func (e *env) gated(sid, gate string) schedule.Job {
	e.t.Helper()
	return e.insert(schedule.Job{SessionID: sid, Kind: schedule.KindEvery, Spec: "1m", Interval: time.Minute,
		NextAt: t0, Gate: gate})
}

func (e *env) write(name, content string) {
	e.t.Helper()
	if err := os.WriteFile(filepath.Join(e.cwd, name), []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// step sweeps at the job's next occurrence and reports whether it fired,
// checking that it moved on either way.
func (e *env) step(id string) (bool, string) {
	e.t.Helper()
	j, ok := e.job(id)
	if !ok {
		e.t.Fatalf("job %s is gone", id)
	}
	e.sweep(j.NextAt)
	after, ok := e.job(id)
	if ok && !after.NextAt.After(j.NextAt) {
		e.t.Fatalf("job %s did not move past %v", id, j.NextAt)
	}
	f := e.firer.take()
	switch len(f) {
	case 0:
		return false, ""
	case 1:
		return true, f[0].Text()
	}
	e.t.Fatalf("one occurrence fired %d turns", len(f))
	return false, ""
}

func TestCommandGatePredicates(t *testing.T) {
	type step struct {
		file, content string // written before the sweep
		fire          bool
	}
	for _, tc := range []struct {
		name, gate string
		steps      []step
	}{
		{"changed fires first, then on change only", `{"check":{"command":"cat state"},"when":"changed"}`, []step{
			{"state", "a", true}, {"state", "a", false}, {"state", "b", true}, {"state", "b", false}, {"state", "a", true},
		}},
		{"succeeded reads the exit status", `{"check":{"command":"test -f flag"},"when":"succeeded"}`, []step{
			{"other", "", false}, {"flag", "", true}, {"flag", "", true},
		}},
		{"matches", `{"check":{"command":"cat log"},"when":{"matches":"ERROR [0-9]+"}}`, []step{
			{"log", "all quiet\n", false}, {"log", "all quiet\nERROR 42\n", true}, {"log", "ERROR x", false},
		}},
		{"matches judges output whatever the exit status", `{"check":{"command":"grep ERROR log"},"when":{"matches":"ERROR"}}`, []step{
			{"log", "fine\n", false}, {"log", "ERROR\n", true},
		}},
		{"at is not-empty", `{"check":{"command":"cat doc.json"},"when":{"at":"/chats","is":"not-empty"}}`, []step{
			{"doc.json", `{"chats": [], "checked_at": 1}`, false}, {"doc.json", `{"chats": [{"id": 1}]}`, true},
			{"doc.json", `{"chats": ""}`, false}, {"doc.json", `{"chats": 0}`, true},
		}},
		{"at is empty", `{"check":{"command":"cat doc.json"},"when":{"at":"/a/0","is":"empty"}}`, []step{
			{"doc.json", `{"a": [{"x": 1}]}`, false}, {"doc.json", `{"a": [{}]}`, true}, {"doc.json", `{"a": [null]}`, true},
		}},
		{"at is true and escapes", `{"check":{"command":"cat doc.json"},"when":{"at":"/a~1b/c~0d","is":"true"}}`, []step{
			{"doc.json", `{"a/b": {"c~d": false}}`, false}, {"doc.json", `{"a/b": {"c~d": true}}`, true}, {"doc.json", `{"a/b": {"c~d": "true"}}`, false},
		}},
		{"at is false", `{"check":{"command":"cat doc.json"},"when":{"at":"/ok","is":"false"}}`, []step{
			{"doc.json", `{"ok": true}`, false}, {"doc.json", `{"ok": false}`, true},
		}},
		{"at equals compares values", `{"check":{"command":"cat doc.json"},"when":{"at":"/state","is":{"equals":{"n":1,"s":["x"]}}}}`, []step{
			{"doc.json", `{"state": {"n": 2, "s": ["x"]}}`, false}, {"doc.json", `{"state": {"s": ["x"], "n": 1.0}}`, true},
		}},
		{"at changed watches one field", `{"check":{"command":"cat doc.json"},"when":{"at":"/chats","is":"changed"}}`, []step{
			{"doc.json", `{"chats": [1], "checked_at": 1}`, true}, {"doc.json", `{"checked_at": 2, "chats": [1]}`, false},
			{"doc.json", `{"chats": [1, 2], "checked_at": 3}`, true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			sid := e.session(permission.Unrestricted)
			j := e.gated(sid, tc.gate)
			for i, s := range tc.steps {
				e.write(s.file, s.content)
				got, turn := e.step(j.ID)
				if got != s.fire {
					t.Fatalf("step %d (%s=%q): fired %v, want %v\nlog:\n%s", i, s.file, s.content, got, s.fire, e.log)
				}
				if got && !strings.Contains(turn, "Its gate fired") {
					t.Errorf("step %d: turn lacks the gate's note:\n%s", i, turn)
				}
			}
		})
	}
}

func TestGateOutputReachesTurn(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.session(permission.Unrestricted)
	// The pointer narrows what is judged, not what the turn sees.
	e.write("doc.json", `{"chats": [{"from": "ana"}], "checked_at": "12:00"}`)
	j := e.gated(sid, `{"check":{"command":"cat doc.json; echo oops >&2"},"when":{"at":"/chats","is":"not-empty"}}`)
	fired, turn := e.step(j.ID)
	if !fired || !strings.Contains(turn, `{"chats": [{"from": "ana"}], "checked_at": "12:00"}`) || !strings.Contains(turn, "stderr:\noops") {
		t.Fatalf("turn:\n%s", turn)
	}

	// At most 8 KiB of the result reaches the turn.
	big := strings.Repeat("é", 6000) // 12,000 bytes
	e.write("big", big)
	k := e.gated(sid, `{"check":{"command":"cat big"},"when":"changed"}`)
	fired, turn = e.step(k.ID)
	if !fired {
		t.Fatal("big output did not fire")
	}
	if !strings.Contains(turn, "[… cut: the turn sees the first 8192 bytes]") || strings.Count(turn, "é") != 4096 {
		t.Errorf("turn of a 12,000-byte result has %d é; tail %q", strings.Count(turn, "é"), turn[len(turn)-80:])
	}
}

func TestToolGate(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.session(permission.Read)
	probe := &fakeTool{name: "mcp__bridge__unseen"}
	e.firer.addTool(probe, permission.Read)
	id := e.create(sid, permission.Read, `{"prompt": "read the chats", "every": "1m",
		"gate": {"check": {"tool": "mcp__bridge__unseen", "arguments": {"q": "all"}}, "when": {"at": "/chats", "is": "not-empty"}}}`)

	probe.returns(`{"chats": []}`, false)
	if fired, _ := e.step(id); fired {
		t.Fatal("fired on an empty list")
	}
	probe.returns(`{"chats": ["hi"]}`, false)
	fired, turn := e.step(id)
	if !fired || !strings.HasPrefix(turn, "read the chats\n[Scheduled job ") || !strings.Contains(turn, `{"chats": ["hi"]}`) {
		t.Fatalf("fired %v:\n%s", fired, turn)
	}
	probe.mu.Lock()
	call := probe.seen[0]
	probe.mu.Unlock()
	if call.Level != permission.Read || string(call.Arguments) != `{"q":"all"}` || call.SessionID != sid || call.Cwd != e.cwd {
		t.Errorf("gate call %+v", call)
	}

	// succeeded reads the tool's error flag.
	id2 := e.create(sid, permission.Read, `{"prompt": "p", "every": "1m", "gate": {"check": {"tool": "mcp__bridge__unseen"}, "when": "succeeded"}}`)
	probe.returns("nope", true)
	if fired, _ := e.step(id2); fired {
		t.Error("succeeded fired on an error result")
	}
	probe.returns("fine", false)
	if fired, _ := e.step(id2); !fired {
		t.Error("succeeded did not fire on a good result")
	}
}

func TestBrokenGateDeclinesAndIsReportedAfterTwo(t *testing.T) {
	// The default gate timeout: a loaded machine can take 200 ms to run
	// cat (the test failed so), and no gate here hangs.
	e := newEnv(t, nil)
	sid := e.session(permission.Unrestricted)
	e.write("state", "v1")
	j := e.gated(sid, `{"check":{"command":"cat state"},"when":"changed"}`)
	if fired, _ := e.step(j.ID); !fired {
		t.Fatal("first evaluation of changed did not fire")
	}
	base, _ := e.job(j.ID)
	list := func() string { return text(e.call(schedule.ListToolName, sid, permission.Unrestricted, `{}`)) }

	// The file goes away: cat fails, but that is an answer (exit 1), and
	// changed judges output, so it fires on the change to empty output.
	// A missing command is a broken check instead.
	if err := os.WriteFile(filepath.Join(e.cwd, "state"), []byte("v2"), 0o644); err != nil {
		t.Fatal(err)
	}
	brokenGate := `{"check":{"command":"no-such-command-meka state"},"when":"changed"}`
	// Swap the gate for a broken one by recreating the job with the stored
	// baseline, as an edited server or an uninstalled command would leave
	// it.
	if _, err := e.store.Delete(t.Context(), j.ID); err != nil {
		t.Fatal(err)
	}
	k := e.insert(schedule.Job{SessionID: sid, Kind: schedule.KindEvery, Spec: "1m", Interval: time.Minute,
		NextAt: base.NextAt, Gate: brokenGate, Baseline: base.Baseline, HasBaseline: true})

	if fired, _ := e.step(k.ID); fired {
		t.Fatal("a broken gate fired")
	}
	if !strings.Contains(e.log.String(), "gate could not be evaluated") || !strings.Contains(e.log.String(), "exit 127, not found") {
		t.Errorf("first failure not logged:\n%s", e.log)
	}
	if strings.Contains(list(), "NOT FIRING") {
		t.Errorf("one failure is reported:\n%s", list())
	}
	if fired, _ := e.step(k.ID); fired {
		t.Fatal("a broken gate fired")
	}
	const notFiring = "NOT FIRING: its gate keeps failing: the shell could not run the command (exit 127, not found)"
	if got := list(); !strings.Contains(got, notFiring) {
		t.Errorf("two failures not reported:\n%s", got)
	}
	// A third failure with the same cause leaves the reason as it was: the
	// [Scheduled] index announces no change and reads the same.
	c := e.sched.Contributor(sid, func() permission.Level { return permission.Unrestricted })
	index := func() string { return text(tool.Result{Content: c.Contribute(t.Context(), agentInfo())}) }
	before := index()
	if fired, _ := e.step(k.ID); fired {
		t.Fatal("a broken gate fired")
	}
	after := index()
	if !strings.Contains(after, notFiring) || strings.Contains(after, "Changed since") {
		t.Errorf("a third failure changed the index:\n%s", after)
	}
	if reason := func(s string) string { _, r, _ := strings.Cut(s, "NOT FIRING"); return r }; reason(after) != reason(before) {
		t.Errorf("the NOT FIRING reason changed with the count:\n%s\n---\n%s", before, after)
	}
	stored, _ := e.job(k.ID)
	if stored.Baseline != base.Baseline {
		t.Error("a failure replaced the baseline")
	}

	// Mended, the gate compares against the last value it really saw:
	// the change made while it was broken is reported.
	if _, err := e.store.Delete(t.Context(), k.ID); err != nil {
		t.Fatal(err)
	}
	m := e.insert(schedule.Job{ID: k.ID, SessionID: sid, Kind: schedule.KindEvery, Spec: "1m", Interval: time.Minute,
		NextAt: stored.NextAt, Gate: `{"check":{"command":"cat state"},"when":"changed"}`, Baseline: stored.Baseline, HasBaseline: true})
	if fired, turn := e.step(m.ID); !fired || !strings.Contains(turn, "v2") {
		t.Fatalf("mended gate: fired %v\n%s", fired, turn)
	}
	if got := list(); strings.Contains(got, "NOT FIRING") {
		t.Errorf("mended gate still reported:\n%s", got)
	}
}

func TestGateFailures(t *testing.T) {
	for _, tc := range []struct {
		name  string
		gate  string
		setup func(e *env)
		want  string
	}{
		{"timeout", `{"check":{"command":"sleep 10"},"when":"changed"}`, nil, "timed out after"},
		{"not json", `{"check":{"command":"echo hello"},"when":{"at":"/a","is":"empty"}}`, nil, "the probe did not return JSON"},
		{"pointer missing", `{"check":{"command":"echo '{\"b\": 1}'"},"when":{"at":"/a","is":"empty"}}`, nil, "the result has no /a"},
		{"json over 1 MiB", `{"check":{"command":"head -c 1100000 /dev/zero | tr '\\0' ' '; echo '{}'"},"when":{"at":"","is":"empty"}}`, nil, "over 1048576 bytes"},
		{"tool unavailable", `{"check":{"tool":"gone"},"when":"changed"}`, nil, "the tool gone is not available"},
		{"tool error", `{"check":{"tool":"boom"},"when":"changed"}`, func(e *env) {
			b := &fakeTool{name: "boom"}
			b.set(func(context.Context, tool.Call) (tool.Result, error) { return tool.Result{}, errors.New("server gone") })
			e.firer.addTool(b, permission.Read)
		}, "the tool boom failed: server gone"},
		{"tool panic", `{"check":{"tool":"boom"},"when":"changed"}`, func(e *env) {
			b := &fakeTool{name: "boom"}
			b.set(func(context.Context, tool.Call) (tool.Result, error) { panic("kaboom") })
			e.firer.addTool(b, permission.Read)
		}, "panic: kaboom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Only the hanging gate gets a short timeout: under load the
			// others' commands could overrun one and fail for the wrong reason.
			var tweak func(*schedule.Options)
			if tc.name == "timeout" {
				tweak = func(o *schedule.Options) { o.GateTimeout = 300 * time.Millisecond }
			}
			e := newEnv(t, tweak)
			sid := e.session(permission.Unrestricted)
			if tc.setup != nil {
				tc.setup(e)
			}
			j := e.gated(sid, tc.gate)
			if fired, _ := e.step(j.ID); fired {
				t.Fatal("fired")
			}
			if !strings.Contains(e.log.String(), tc.want) {
				t.Errorf("log lacks %q:\n%s", tc.want, e.log)
			}
		})
	}
}

// A one-shot whose gate cannot run keeps its claim: it is retried once
// the lease runs out, and three such claims park it.
func TestOneShotGateFailureKeepsClaim(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.session(permission.Unrestricted)
	j := e.insert(schedule.Job{SessionID: sid, Kind: schedule.KindOnce, NextAt: t0,
		Gate: `{"check":{"command":"no-such-command-meka"},"when":"succeeded"}`})
	now := t0
	for attempt := 1; attempt <= 3; attempt++ {
		if res := e.sweep(now); res.Declined != 1 {
			t.Fatalf("attempt %d: %+v\n%s", attempt, res, e.log)
		}
		if res := e.sweep(now.Add(30 * time.Minute)); res.Due != 0 {
			t.Fatalf("attempt %d: the claim did not hold: %+v", attempt, res)
		}
		now = now.Add(time.Hour + time.Second)
	}
	res := e.sweep(now)
	if res.Parked != 1 {
		t.Fatalf("fourth sweep: %+v", res)
	}
	got, ok := e.job(j.ID)
	if !ok || !strings.Contains(got.Held, "last 3 claims ended in neither") {
		t.Fatalf("job after three failed claims: %+v (stored %v)", got, ok)
	}
	if list := text(e.call(schedule.ListToolName, sid, permission.Unrestricted, `{}`)); !strings.Contains(list, "NOT FIRING: parked: its last 3 claims") {
		t.Errorf("parked job listing:\n%s", list)
	}
	if len(e.firer.take()) != 0 {
		t.Error("a job whose gate never ran fired")
	}
}

func TestWithholdingAndRestoring(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.session(permission.Unrestricted)
	e.write("state", "x")
	recurring := e.create(sid, permission.Unrestricted, `{"prompt": "recurring", "every": "1m", "gate": {"check": {"command": "cat state"}, "when": "changed"}}`)
	once := e.create(sid, permission.Unrestricted, `{"prompt": "once", "in": "1m", "gate": {"check": {"command": "cat state"}, "when": "changed"}}`)
	e.create(sid, permission.Unrestricted, `{"prompt": "plain", "in": "1m"}`)

	// Drop the session to workspace: the gates stop, the ungated job
	// does not.
	e.firer.setLevel(sid, permission.Workspace)
	now := t0.Add(time.Minute)
	res := e.sweep(now)
	if res.Withheld != 2 || res.Fired != 1 {
		t.Fatalf("sweep at workspace: %+v\n%s", res, e.log)
	}
	if f := e.firer.take(); len(f) != 1 || !strings.HasPrefix(f[0].Text(), "plain") {
		t.Fatalf("fired %v", f)
	}
	for _, id := range []string{recurring, once} {
		if !strings.Contains(e.log.String(), "job="+schedule.ShortID(id)) || !strings.Contains(e.log.String(), "job withheld: NOT FIRING") {
			t.Errorf("no warning names job %s:\n%s", schedule.ShortID(id), e.log)
		}
	}
	r, _ := e.job(recurring)
	o, ok := e.job(once)
	if !r.NextAt.After(now) {
		t.Error("a withheld recurring occurrence was not spent")
	}
	if !ok || !o.NextAt.Equal(t0.Add(time.Minute)) || o.LeaseOwner != "" {
		t.Errorf("a withheld one-shot was not kept as it was: %+v", o)
	}
	list := text(e.call(schedule.ListToolName, sid, permission.Workspace, `{}`))
	if strings.Count(list, "NOT FIRING: its command gate needs the unrestricted level and the session has workspace") != 2 {
		t.Errorf("list at workspace:\n%s", list)
	}
	// Warned once, not every tick.
	before := strings.Count(e.log.String(), "job withheld")
	e.sweep(now.Add(10 * time.Second))
	if after := strings.Count(e.log.String(), "job withheld"); after != before {
		t.Errorf("withheld warnings repeat: %d then %d", before, after)
	}

	// Raise it again: both fire, the one-shot told how late it is.
	e.firer.setLevel(sid, permission.Unrestricted)
	later := now.Add(5 * time.Minute)
	if res := e.sweep(later); res.Fired != 2 {
		t.Fatalf("sweep restored: %+v\n%s", res, e.log)
	}
	for _, f := range e.firer.take() {
		if strings.HasPrefix(f.Text(), "once") && !strings.Contains(f.Text(), "It is 5m late: it was due at 2026-08-11 15:03 CEST") {
			t.Errorf("late one-shot turn:\n%s", f.Text())
		}
	}
	if !strings.Contains(e.log.String(), "job restored") {
		t.Errorf("restoration not logged:\n%s", e.log)
	}
}

func TestWithheldByRecordedLevelAndTool(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.session(permission.Unrestricted)
	probe := &fakeTool{name: "probe"}
	probe.returns("{}", false)
	e.firer.addTool(probe, permission.Read)
	cmd := `{"check":{"command":"true"},"when":"succeeded"}`
	for _, tc := range []struct {
		job  schedule.Job
		want string
	}{
		{schedule.Job{Level: "read", Gate: cmd}, "its command gate needs the unrestricted level and the job was created at the read level"},
		{schedule.Job{Level: "none", Gate: `{"check":{"tool":"probe"},"when":"changed"}`}, "its tool gate needs the read level and the job was created at the none level"},
	} {
		j := tc.job
		j.SessionID, j.Kind, j.NextAt = sid, schedule.KindOnce, t0
		j = e.insert(j)
		if got := e.sched.NotFiring(j, permission.Unrestricted); got != tc.want {
			t.Errorf("NotFiring = %q, want %q", got, tc.want)
		}
	}
	// A job stored before levels were recorded reads as no authority.
	if v := schedule.Withheld(schedule.Job{Gate: cmd}, permission.Unrestricted, nil, true); !strings.Contains(v.Reason, "created before levels were recorded") {
		t.Errorf("Withheld with no recorded level: %+v", v)
	}

	// A tool retuned above read stops being a gate at the next fire.
	id := e.create(sid, permission.Read, `{"prompt": "p", "every": "1m", "gate": {"check": {"tool": "probe"}, "when": "changed"}}`)
	e.firer.addTool(probe, permission.Workspace)
	if res := e.sweep(t0.Add(time.Minute)); res.Fired != 0 {
		t.Fatalf("a retuned tool gate ran: %+v", res)
	}
	j, _ := e.job(id)
	if got := e.sched.NotFiring(j, permission.Unrestricted); !strings.Contains(got, "its gate calls probe, which now needs the workspace level") {
		t.Errorf("NotFiring = %q", got)
	}
	probe.mu.Lock()
	n := len(probe.seen)
	probe.mu.Unlock()
	if n != 0 {
		t.Errorf("a withheld tool gate was called %d times", n)
	}
	// Outside a host a tool gate cannot be resolved: unknown, not fine.
	if v := schedule.Withheld(j, permission.Read, nil, true); v.Known {
		t.Errorf("Withheld without tools = %+v, want unknown", v)
	}
}

func TestNothingFiresAtNone(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.session(permission.Read)
	rec := e.create(sid, permission.Read, `{"prompt": "tick", "every": "5s"}`)
	once := e.create(sid, permission.Read, `{"prompt": "remind", "in": "5s"}`)
	e.firer.setLevel(sid, permission.None)
	res := e.sweep(t0.Add(5 * time.Second))
	if res.Fired != 0 || res.Withheld != 2 {
		t.Fatalf("sweep at none: %+v", res)
	}
	if r, _ := e.job(rec); !r.NextAt.After(t0.Add(5 * time.Second)) {
		t.Error("recurring occurrence at none not spent")
	}
	if o, ok := e.job(once); !ok || !o.NextAt.Equal(t0.Add(5*time.Second)) {
		t.Error("one-shot at none not kept")
	}
	e.firer.setLevel(sid, permission.Read)
	if res := e.sweep(t0.Add(20 * time.Second)); res.Fired != 2 {
		t.Errorf("restored: %+v", res)
	}
}
