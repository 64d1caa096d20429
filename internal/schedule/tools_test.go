package schedule_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/internal/schedule"
	"meka.dev/meka/internal/schedule/sqlitestore"
	"meka.dev/meka/permission"
	"meka.dev/meka/tool"
)

func TestCreateReplies(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.session(permission.Read)
	for _, tc := range []struct {
		args string
		want string // with ID standing for the short id
	}{
		// The spec's own example: "remind me in 20 minutes" at 15:02 CEST.
		{`{"prompt": "check the deploy", "in": "20m"}`, `Created job ID (once at 2026-08-11 15:22 CEST).`},
		{`{"prompt": "p", "at": "2026-08-12T09:30:00+02:00"}`, `Created job ID (once at 2026-08-12 09:30 CEST).`},
		{`{"prompt": "p", "at": "2026-12-24 18:00"}`, `Created job ID (once at 2026-12-24 18:00 CET).`},
		{`{"prompt": "p", "every": "1h 30m"}`, `Created job ID (every 1h 30m, next at 2026-08-11 16:32 CEST).`},
		{`{"prompt": "p", "every": "1.5h"}`, `Created job ID (every 1.5h, next at 2026-08-11 16:32 CEST).`},
		{`{"prompt": "p", "cron": "0 9 * * MON-fri"}`, `Created job ID (cron "0 9 * * mon-fri" in Europe/Berlin, next at 2026-08-12 09:00 CEST).`},
		{`{"prompt": "p", "cron": "0 0 29 2 *"}`, `Created job ID (cron "0 0 29 2 *" in Europe/Berlin, next at 2028-02-29 00:00 CET).`},
		{`{"prompt": "p", "cron": "@weekly"}`, `Created job ID (cron "@weekly" in Europe/Berlin, next at 2026-08-16 00:00 CEST).`},
	} {
		res := e.call(schedule.CreateToolName, sid, permission.Read, tc.args)
		got := text(res)
		re := regexp.MustCompile(`^Created job ([0-9a-f]{8}) `)
		m := re.FindStringSubmatch(got)
		if res.IsError || m == nil {
			t.Errorf("%s: %q", tc.args, got)
			continue
		}
		if want := strings.Replace(tc.want, "ID", m[1], 1); got != want {
			t.Errorf("%s:\n got %q\nwant %q", tc.args, got, want)
		}
	}
	jobs, err := e.store.List(t.Context(), sid)
	if err != nil || len(jobs) != 8 {
		t.Fatalf("stored %d jobs, %v", len(jobs), err)
	}
	for _, j := range jobs {
		if j.SessionID != sid || j.Level != "read" || j.Cwd != e.cwd || j.Zone != "Europe/Berlin" {
			t.Errorf("stored %+v", j)
		}
	}
}

func TestCreateRejects(t *testing.T) {
	e := newEnv(t, func(o *schedule.Options) { o.MaxJobs = 3 })
	sid := e.session(permission.Workspace)
	probe := &fakeTool{name: "probe"}
	probe.returns("{}", false)
	e.firer.addTool(probe, permission.Read)
	e.firer.addTool(&fakeTool{name: "writer"}, permission.Workspace)
	e.firer.addTool(&fakeTool{name: schedule.ShellToolName}, permission.Read)

	for _, tc := range []struct {
		level permission.Level
		args  string
		want  string
	}{
		{permission.Read, `{"prompt": "p"}`, "give one of every, cron, at or in"},
		{permission.Read, `{"prompt": "p", "every": "1m", "in": "2m"}`, "give only one of every, cron, at or in, not every and in"},
		{permission.Read, `{"prompt": "  ", "in": "2m"}`, "prompt is empty"},
		{permission.Read, `{"prompt": "p", "every": "5"}`, "every:"},
		{permission.Read, `{"prompt": "p", "every": "1H"}`, "every:"},
		{permission.Read, `{"prompt": "p", "in": "0s"}`, "in:"},
		{permission.Read, `{"prompt": "p", "at": "2026-08-11T15:00:00+02:00"}`, "is not in the future"},
		{permission.Read, `{"prompt": "p", "at": "tomorrow"}`, "not an RFC 3339 time"},
		{permission.Read, `{"prompt": "p", "cron": "*/10 * * * * *"}`, "seconds"},
		{permission.Read, `{"prompt": "p", "cron": "0 0 30 2 *"}`, "never fires"},
		{permission.Read, `{"prompt": "p", "cron": "@reboot"}`, "@reboot"},
		{permission.None, `{"prompt": "p", "in": "2m"}`, "none level"},
		{permission.Workspace, `{"prompt": "p", "every": "1m", "gate": {"check": {"command": "true"}, "when": "succeeded"}}`,
			"needs the unrestricted level and this session has workspace"},
		{permission.Read, `{"prompt": "p", "every": "1m", "gate": {"check": {"tool": "writer"}, "when": "changed"}}`,
			"writer needs the workspace level"},
		{permission.Read, `{"prompt": "p", "every": "1m", "gate": {"check": {"tool": "nosuch"}, "when": "changed"}}`,
			"no tool nosuch"},
		{permission.Read, `{"prompt": "p", "every": "1m", "gate": {"check": {"tool": "probe", "arguments": {"q": 3}}, "when": "changed"}}`,
			"gate.check.arguments for probe"},
		{permission.Read, `{"prompt": "p", "every": "1m", "gate": {"check": {"tool": "probe", "command": "x"}, "when": "changed"}}`,
			"not both"},
		{permission.Read, `{"prompt": "p", "every": "1m", "gate": {"check": {}, "when": "changed"}}`,
			"give a command or a tool"},
		{permission.Read, `{"prompt": "p", "every": "1m", "gate": {"check": {"tool": "probe"}, "when": {"matches": "("}}}`,
			"gate.when.matches"},
		{permission.Read, `{"prompt": "p", "every": "1m", "gate": {"check": {"tool": "probe"}, "when": {"at": "chats", "is": "empty"}}}`,
			"must be empty or begin with /"},
	} {
		res := e.call(schedule.CreateToolName, sid, tc.level, tc.args)
		if !res.IsError || !strings.Contains(text(res), tc.want) {
			t.Errorf("%s at %s: got %q (error %v), want an error containing %q", tc.args, tc.level, text(res), res.IsError, tc.want)
		}
	}

	// shell_execute is a gate only where it can be confined.
	unconfined := newEnv(t, func(o *schedule.Options) { o.Confined = func() bool { return false } })
	usid := unconfined.session(permission.Read)
	unconfined.firer.addTool(&fakeTool{name: schedule.ShellToolName}, permission.Read)
	res := unconfined.call(schedule.CreateToolName, usid, permission.Read,
		`{"prompt": "p", "every": "1m", "gate": {"check": {"tool": "shell_execute", "arguments": {"q": "ls"}}, "when": "changed"}}`)
	if !res.IsError || !strings.Contains(text(res), "cannot be confined") {
		t.Errorf("shell_execute gate without confinement: %q", text(res))
	}
	res = e.call(schedule.CreateToolName, sid, permission.Read,
		`{"prompt": "p", "every": "1m", "gate": {"check": {"tool": "shell_execute", "arguments": {"q": "ls"}}, "when": "changed"}}`)
	if res.IsError {
		t.Errorf("shell_execute gate with confinement refused: %q", text(res))
	}

	// max_jobs is per session: the fourth is refused, another session's
	// first is not.
	for i := 0; i < 2; i++ {
		e.create(sid, permission.Read, fmt.Sprintf(`{"prompt": "p%d", "in": "5m"}`, i))
	}
	res = e.call(schedule.CreateToolName, sid, permission.Read, `{"prompt": "one too many", "in": "5m"}`)
	if !res.IsError || !strings.Contains(text(res), "already has 3 jobs") {
		t.Errorf("fourth job: %q", text(res))
	}
	e.create(e.session(permission.Read), permission.Read, `{"prompt": "other session", "in": "5m"}`)
}

func TestCreateToolGateWarnsAboutSucceeded(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.session(permission.Read)
	e.firer.addTool(&fakeTool{name: "probe"}, permission.Read)
	res := e.call(schedule.CreateToolName, sid, permission.Read,
		`{"prompt": "p", "every": "1m", "gate": {"check": {"tool": "probe"}, "when": "succeeded"}}`)
	if res.IsError || !strings.Contains(text(res), "most tools never report an error") {
		t.Errorf("reply %q", text(res))
	}
}

func TestListAndCancel(t *testing.T) {
	e := newEnv(t, nil)
	a := e.session(permission.Unrestricted)
	b := e.session(permission.Read)
	j1 := e.create(a, permission.Unrestricted, `{"prompt": "watch CI", "every": "30s", "gate": {"check": {"command": "gh pr checks 123"}, "when": "changed"}}`)
	j2 := e.create(a, permission.Unrestricted, `{"prompt": "standup", "in": "20m"}`)
	jb := e.create(b, permission.Read, `{"prompt": "other", "in": "20m"}`)

	got := text(e.call(schedule.ListToolName, a, permission.Unrestricted, `{}`))
	for _, want := range []string{
		"2 jobs:",
		schedule.ShortID(j1) + "  every 30s, next at 2026-08-11 15:02 CEST (in 30s)",
		`gate: command "gh pr checks 123", fires when changed`,
		"prompt: watch CI",
		schedule.ShortID(j2) + "  once at 2026-08-11 15:22 CEST (in 20m)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("schedule_list lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "other") || strings.Contains(got, "NOT FIRING") {
		t.Errorf("schedule_list shows another session's job or a false NOT FIRING:\n%s", got)
	}

	// Cancel takes any unique prefix, but only among the session's jobs.
	res := e.call(schedule.CancelToolName, a, permission.Read, fmt.Sprintf(`{"id": %q}`, jb[:6]))
	if !res.IsError || !strings.Contains(text(res), "no job of this session") {
		t.Errorf("cancel of another session's job: %q", text(res))
	}
	res = e.call(schedule.CancelToolName, a, permission.Read, fmt.Sprintf(`{"id": %q}`, strings.ToUpper(j2[:5])))
	if res.IsError || text(res) != fmt.Sprintf("Cancelled job %s (once at 2026-08-11 15:22 CEST).", schedule.ShortID(j2)) {
		t.Errorf("cancel: %q", text(res))
	}
	if _, ok := e.job(j2); ok {
		t.Error("cancelled job still stored")
	}
	if got := text(e.call(schedule.ListToolName, b, permission.Read, `{}`)); !strings.Contains(got, "1 job:") {
		t.Errorf("other session's list: %s", got)
	}
	if got := text(e.call(schedule.ListToolName, e.session(permission.Read), permission.Read, `{}`)); got != "This session has no scheduled jobs." {
		t.Errorf("empty list: %q", got)
	}
}

func TestCancelAmbiguousPrefix(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.session(permission.Read)
	for _, id := range []string{"7f3a1b2c-0000-4000-8000-000000000001", "7f3a1b2c-0000-4000-8000-000000000002"} {
		e.insert(schedule.Job{ID: id, SessionID: sid, Kind: schedule.KindOnce, NextAt: t0.Add(time.Hour)})
	}
	res := e.call(schedule.CancelToolName, sid, permission.Read, `{"id": "7f3a"}`)
	if !res.IsError || !strings.Contains(text(res), "several jobs") {
		t.Errorf("ambiguous cancel: %q", text(res))
	}
	// The listing widens both ids until they differ.
	got := text(e.call(schedule.ListToolName, sid, permission.Read, `{}`))
	if !strings.Contains(got, "7f3a1b2c-0000-4000-8000-000000000001  once") || !strings.Contains(got, "7f3a1b2c-0000-4000-8000-000000000002  once") {
		t.Errorf("list of colliding ids:\n%s", got)
	}
}

func TestUniquePrefixes(t *testing.T) {
	ids := []string{
		"7f3a1b2c-aaaa-4000-8000-000000000001",
		"7f3a1b2c-abbb-4000-8000-000000000002",
		"0b5c1d2e-0000-4000-8000-000000000003",
		"7f3a1b2c-aaaa-4000-8000-000000000001", // repeated: same prefix
	}
	got := schedule.UniquePrefixes(ids)
	want := []string{"7f3a1b2c-aa", "7f3a1b2c-ab", "0b5c1d2e", "7f3a1b2c-aa"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("UniquePrefixes = %v, want %v", got, want)
	}
}

func TestScheduledIndex(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.session(permission.Unrestricted)
	level := permission.Unrestricted
	c := e.sched.Contributor(sid, func() permission.Level { return level })
	if parts := c.Contribute(t.Context(), agentInfo()); parts != nil {
		t.Errorf("index of a session without jobs: %v", parts)
	}
	gated := e.create(sid, permission.Unrestricted, `{"prompt": "watch", "every": "1m", "gate": {"check": {"command": "date"}, "when": "changed"}}`)
	plain := e.create(sid, permission.Unrestricted, `{"prompt": "remind", "in": "20m"}`)

	index := func() string {
		parts := c.Contribute(t.Context(), agentInfo())
		if len(parts) != 1 {
			t.Fatalf("index parts %v", parts)
		}
		return text(tool.Result{Content: parts})
	}
	got := index()
	for _, want := range []string{
		"[Scheduled]",
		"- " + schedule.ShortID(gated) + " every 1m, next 2026-08-11 15:03 CEST (in 1m), gated (command)",
		"- " + schedule.ShortID(plain) + " once at 2026-08-11 15:22 CEST (in 20m), ungated",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("index lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "NOT FIRING") || strings.Contains(got, "Changed") {
		t.Errorf("healthy index:\n%s", got)
	}

	// Dropping the session below the gate's bar is announced once and
	// then shown on the job.
	level = permission.Workspace
	got = index()
	notFiring := "NOT FIRING: its command gate needs the unrestricted level and the session has workspace"
	if !strings.Contains(got, schedule.ShortID(gated)+" every 1m") || !strings.Contains(got, notFiring) {
		t.Errorf("withheld index:\n%s", got)
	}
	if !strings.Contains(got, "Changed since the last request: job "+schedule.ShortID(gated)+" is now NOT FIRING") {
		t.Errorf("withdrawal not announced:\n%s", got)
	}
	if strings.Contains(index(), "Changed since") {
		t.Error("a change is announced more than once")
	}
	level = permission.Unrestricted
	if got := index(); !strings.Contains(got, "job "+schedule.ShortID(gated)+" can fire again") || strings.Contains(got, "NOT FIRING") {
		t.Errorf("restored index:\n%s", got)
	}
	// At none nothing fires, gated or not.
	level = permission.None
	if got := index(); strings.Count(got, "— NOT FIRING: the session's permission level is none") != 2 {
		t.Errorf("index at none:\n%s", got)
	}
}

func TestNewRefusesShortLease(t *testing.T) {
	_, err := schedule.New(schedule.Options{Store: sqlitestore.New(nil), GateTimeout: time.Minute, ClaimLease: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "claim_lease must be longer than gate_timeout") {
		t.Errorf("New with claim_lease = gate_timeout: %v", err)
	}
}

// The tools declare read, so that dispatch refuses them at none.
func TestToolSpecs(t *testing.T) {
	e := newEnv(t, nil)
	names := map[string]bool{}
	for _, tl := range e.sched.Tools() {
		s := tl.Spec()
		names[s.Name] = true
		if s.Level != permission.Read {
			t.Errorf("%s needs %s, want read", s.Name, s.Level)
		}
		if _, err := tool.NewValidator([]tool.Tool{tl}); err != nil {
			t.Errorf("%s schema: %v", s.Name, err)
		}
		g := &tool.Gate{Level: func() permission.Level { return permission.None }}
		if g.Check(context.Background(), tl, tool.Call{}).Allowed {
			t.Errorf("%s dispatched at none", s.Name)
		}
	}
	if len(names) != 3 || !names["schedule_create"] || !names["schedule_list"] || !names["schedule_cancel"] {
		t.Errorf("tools %v", names)
	}
}
