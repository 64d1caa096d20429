package cli

import (
	"bytes"
	"context"
	"io"
	"meka.dev/meka/agent"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/internal/config"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/schedule"
	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/model"
	"meka.dev/meka/model/script"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
)

// scheduleFixture is a data directory with a database the schedule
// commands read.
type scheduleFixture struct {
	t       *testing.T
	dataDir string
	db      *sqlite.DB
	now     time.Time // the clock the commands read
}

// fixtureNow is the fixture's wall clock: the tables' relative columns
// are computed from it, never from the day the test runs.
var fixtureNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func newScheduleFixture(t *testing.T) *scheduleFixture {
	t.Helper()
	dir := t.TempDir()
	db, err := sqlite.Open(t.Context(), filepath.Join(dir, "meka.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &scheduleFixture{t: t, dataDir: dir, db: db, now: fixtureNow}
}

func (f *scheduleFixture) session(id, level string) string {
	f.t.Helper()
	m, err := f.db.Sessions().Create(f.t.Context(), session.Meta{ID: id, Cwd: "/w", Permission: level})
	if err != nil {
		f.t.Fatal(err)
	}
	return m.ID
}

func (f *scheduleFixture) job(j sqlite.Job) sqlite.Job {
	f.t.Helper()
	if j.Zone == "" {
		j.Zone = "Europe/Berlin"
	}
	if j.Kind == "" {
		j.Kind, j.Spec, j.Interval = "every", "30m", 30*time.Minute
	}
	if j.NextAt.IsZero() {
		j.NextAt = f.now.Add(12*time.Minute + 30*time.Second)
	}
	out, err := f.db.Schedules().Create(f.t.Context(), j, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

// meka runs the command line in-process against the fixture's data
// directory, with no config file.
func (f *scheduleFixture) meka(args ...string) (stdout, stderr string, code int) {
	f.t.Helper()
	home := f.t.TempDir()
	env := map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "config")}
	var o, e bytes.Buffer
	g := &globals{stdin: strings.NewReader(""), stdout: &o, stderr: &e, getenv: func(k string) string { return env[k] }, now: func() time.Time { return f.now }}
	root := newRoot(g)
	root.SetArgs(append([]string{"--data-dir", f.dataDir}, args...))
	root.SetOut(&o)
	root.SetErr(&e)
	code = exitCode(root.ExecuteContext(f.t.Context()), &e)
	return o.String(), e.String(), code
}

// exitCode maps an error as Main does.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exitError); ok {
		if ee.err != nil {
			io.WriteString(stderr, "meka: "+ee.err.Error()+"\n")
		}
		return ee.code
	}
	io.WriteString(stderr, "meka: "+err.Error()+"\n")
	return 2
}

const (
	sessA = "0b5c1d2e-1111-4000-8000-000000000001"
	sessB = "0b5c1d2e-2222-4000-8000-000000000002"
	sessC = "9a9a9a9a-3333-4000-8000-000000000003"
)

func TestScheduleListShowCancel(t *testing.T) {
	f := newScheduleFixture(t)
	a := f.session(sessA, "workspace")
	b := f.session(sessB, "unrestricted")
	long := "Check the CI state for PR 123 and, if it changed, investigate the failing jobs and report back\nwith links."
	cmdGate := `{"check":{"command":"gh pr checks 123 --json state -q '.[].state' | sort -u"},"when":"changed"}`
	j1 := f.job(sqlite.Job{ID: "7f3a1b2c-aaaa-4000-8000-000000000001", SessionID: a, Prompt: long, Gate: cmdGate, Level: "unrestricted"})
	j2 := f.job(sqlite.Job{ID: "7f3a1b2c-bbbb-4000-8000-000000000002", SessionID: b, Prompt: "standup", Kind: "once",
		NextAt: time.Date(2026, 12, 24, 17, 0, 0, 0, time.UTC)})
	j3 := f.job(sqlite.Job{ID: "c0ffee00-0000-4000-8000-000000000003", SessionID: b, Prompt: "read the chats", Kind: "cron", Spec: "0 9 * * 1-5",
		Gate: `{"check":{"tool":"mcp__bridge__unseen","arguments":{}},"when":{"at":"/chats","is":"not-empty"}}`, Level: "read"})

	out, errOut, code := f.meka("schedule", "list")
	if code != 0 {
		t.Fatalf("list: %d %s", code, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "ID") {
		t.Fatalf("list:\n%s", out)
	}
	// Ids widen only where needed: the two 7f3a1b2c jobs to 7f3a1b2c-a and
	// -b, the two sessions sharing 0b5c1d2e likewise.
	for _, want := range []string{
		"7f3a1b2c-a  0b5c1d2e-1  every 30m",
		"7f3a1b2c-b  0b5c1d2e-2  once 2026-12-24 18:00",
		"c0ffee00    0b5c1d2e-2  cron 0 9 * * 1-5",
		"shell  Check the CI state for PR 123 and, if it change…",
		"tool   read the chats",
		"in 12m  ",
		"in 24d ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("list lacks %q:\n%s", want, out)
		}
	}
	for _, l := range lines {
		if len([]rune(l)) > 140 {
			t.Errorf("unbounded row (%d chars): %s", len([]rune(l)), l)
		}
	}

	// --session narrows the table; a prefix that another session's job
	// makes ambiguous fails closed, naming the ids.
	out, errOut, code = f.meka("schedule", "list", "--session", "0b5c1d2e-1")
	if code != 1 || out != "" || !strings.Contains(errOut, j2.ID) || !strings.Contains(errOut, "7f3a1b2c") {
		t.Errorf("list --session with a colliding prefix: %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = f.meka("schedule", "list", "--session", "0b5c1d2e-2")
	if code != 1 || !strings.Contains(errOut, j1.ID) {
		t.Errorf("list --session b: %d\n%s%s", code, out, errOut)
	}
	c := f.session(sessC, "read")
	f.job(sqlite.Job{SessionID: c, Prompt: "only one"})
	out, errOut, code = f.meka("schedule", "list", "--session", "9a9a")
	if code != 0 || !strings.Contains(out, "  9a9a9a9a  every 30m") || strings.Contains(out, "7f3a") {
		t.Errorf("list --session c: %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := f.meka("schedule", "list", "--session", "0b5c"); code != 1 || !strings.Contains(errOut, "several sessions") {
		t.Errorf("list --session with an ambiguous session: %d %s", code, errOut)
	}

	// show prints everything, untruncated, with the withheld verdict.
	out, errOut, code = f.meka("schedule", "show", "7f3a1b2c-a")
	if code != 0 {
		t.Fatalf("show: %d %s", code, errOut)
	}
	for _, want := range []string{
		"job:              " + j1.ID,
		"session:          " + a,
		"schedule:         every 30m",
		"zone:             Europe/Berlin",
		"last fired:       never",
		"gate:             command gh pr checks 123 --json state -q '.[].state' | sort -u",
		"when:             changed",
		"withheld:         NOT FIRING: its command gate needs the unrestricted level and the session has workspace",
		"prompt:\n  Check the CI state for PR 123 and, if it changed, investigate the failing jobs and report back\n  with links.\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	if out, _, _ := f.meka("schedule", "show", j3.ID[:4]); !strings.Contains(out, "withheld:         unknown: its tool gate can be resolved only by a host") ||
		!strings.Contains(out, `gate:             tool mcp__bridge__unseen {}`) || !strings.Contains(out, "when:             at /chats is not-empty") {
		t.Errorf("show of a tool-gated job:\n%s", out)
	}
	if out, _, _ := f.meka("schedule", "show", j2.ID); !strings.Contains(out, "withheld:         no\n") || !strings.Contains(out, "next fire:        2026-12-24T18:00:00+01:00") {
		t.Errorf("show of an ungated job:\n%s", out)
	}
	if _, errOut, code := f.meka("schedule", "show", "7f3a"); code != 1 || !strings.Contains(errOut, j1.ID) || !strings.Contains(errOut, j2.ID) {
		t.Errorf("show of an ambiguous prefix: %d %s", code, errOut)
	}
	if _, errOut, code := f.meka("schedule", "show", "ffff"); code != 1 || !strings.Contains(errOut, `no job has an id beginning "ffff"`) {
		t.Errorf("show of a missing job: %d %s", code, errOut)
	}

	// cancel by any unique prefix.
	out, errOut, code = f.meka("schedule", "cancel", "C0FFEE")
	if code != 0 || out != "Cancelled job c0ffee00 (cron \"0 9 * * 1-5\" (Europe/Berlin)).\n" {
		t.Errorf("cancel: %d %q %s", code, out, errOut)
	}
	if _, err := f.db.Schedules().Get(t.Context(), j3.ID); err == nil {
		t.Error("cancelled job still stored")
	}
	if _, _, code := f.meka("schedule", "cancel", "7f3a1b2c"); code != 1 {
		t.Errorf("cancel of an ambiguous prefix: %d", code)
	}
}

func TestScheduleShowAppliesEnabledLevels(t *testing.T) {
	f := newScheduleFixture(t)
	// A session recorded at unrestricted, under a config that no longer
	// enables it, cannot run a command gate.
	sid := f.session("", "unrestricted")
	j := f.job(sqlite.Job{SessionID: sid, Prompt: "p", Level: "unrestricted", Gate: `{"check":{"command":"true"},"when":"succeeded"}`})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	writeFile(t, cfg, "[permissions]\nenabled = [\"none\", \"read\", \"workspace\"]\ndefault = \"read\"\n")
	out, errOut, code := f.meka("--config", cfg, "schedule", "show", j.ID)
	if code != 0 || !strings.Contains(out, "withheld:         NOT FIRING: its command gate needs the unrestricted level and the session has workspace") {
		t.Errorf("show: %d\n%s%s", code, out, errOut)
	}
	// A session that records no level falls back to --permission.
	none := f.session("", "")
	k := f.job(sqlite.Job{SessionID: none, Prompt: "p"})
	if out, _, _ := f.meka("--permission", "none", "schedule", "show", k.ID); !strings.Contains(out, "withheld:         NOT FIRING: the session's permission level is none") {
		t.Errorf("show with --permission none:\n%s", out)
	}
}

func TestScheduleListEmpty(t *testing.T) {
	f := newScheduleFixture(t)
	if out, _, code := f.meka("schedule", "list"); code != 0 || out != "No scheduled jobs.\n" {
		t.Errorf("list: %d %q", code, out)
	}
}

func TestScheduleNext(t *testing.T) {
	f := newScheduleFixture(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cron", "0 9 * * 1-5", "--from", "2026-08-07T12:00:00+02:00", "--count", "3", "--tz", "Europe/Berlin"},
			"2026-08-10T09:00:00+02:00\n2026-08-11T09:00:00+02:00\n2026-08-12T09:00:00+02:00\n"},
		// Feb 29 across the non-leap 2100 waits eight years.
		{[]string{"--cron", "0 0 29 2 *", "--from", "2092-03-01T00:00:00Z", "--count", "3", "--tz", "UTC"},
			"2096-02-29T00:00:00Z\n2104-02-29T00:00:00Z\n2108-02-29T00:00:00Z\n"},
		// A fixed-time job inside the spring-forward gap fires when it ends.
		{[]string{"--cron", "30 2 * * *", "--from", "2026-03-07T12:00:00-05:00", "--count", "2", "--tz", "America/New_York"},
			"2026-03-08T03:00:00-04:00\n2026-03-09T02:30:00-04:00\n"},
		{[]string{"--every", "1h 30m", "--from", "2026-08-11T15:00:00Z", "--count", "2", "--tz", "Europe/Berlin"},
			"2026-08-11T18:30:00+02:00\n2026-08-11T20:00:00+02:00\n"},
		{[]string{"--cron", "@daily", "--from", "2026-08-11T23:59:00+02:00", "--count", "1", "--tz", "Europe/Berlin"},
			"2026-08-12T00:00:00+02:00\n"},
	} {
		out, errOut, code := f.meka(append([]string{"schedule", "next"}, tc.args...)...)
		if code != 0 || out != tc.want {
			t.Errorf("next %v: %d\n%s%s\nwant\n%s", tc.args, code, out, errOut, tc.want)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cron", "*/10 * * * * *"}, "seconds"},
		{[]string{"--cron", "0 0 30 2 *"}, "never fires"},
		{[]string{"--cron", "5/15 * * * *"}, "5/15"},
		{[]string{"--every", "5"}, "--every"},
		{[]string{"--cron", "@hourly", "--every", "1h"}, "give one of --cron and --every"},
		{[]string{}, "give one of --cron and --every"},
		{[]string{"--cron", "@hourly", "--from", "yesterday"}, "not an RFC 3339 time"},
		{[]string{"--cron", "@hourly", "--tz", "Mars/Olympus"}, "--tz"},
		{[]string{"--cron", "@hourly", "--count", "0"}, "--count"},
	} {
		args := append([]string{"schedule", "next"}, tc.args...)
		if !slices.Contains(tc.args, "--tz") {
			args = append(args, "--tz", "UTC")
		}
		out, errOut, code := f.meka(args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("next %v: %d %q %q, want exit 2 saying %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

// BenchmarkScheduleNext is `meka schedule next --cron "0 0 29 2 *"
// --count 1000`, in-process, flags to output.
func BenchmarkScheduleNext(b *testing.B) {
	for b.Loop() {
		var o, e bytes.Buffer
		g := &globals{stdin: strings.NewReader(""), stdout: &o, stderr: &e, getenv: func(string) string { return "" }}
		root := newRoot(g)
		root.SetArgs([]string{"schedule", "next", "--cron", "0 0 29 2 *", "--count", "1000", "--tz", "UTC", "--from", "2026-01-01T00:00:00Z"})
		if err := root.Execute(); err != nil {
			b.Fatal(err)
		}
		if n := strings.Count(o.String(), "\n"); n != 1000 {
			b.Fatalf("%d lines", n)
		}
	}
}

// The wiring a long-lived host uses: the tools and index in a session,
// and a sweep firing the job into the session the host holds.
func TestSchedulingFiresIntoHost(t *testing.T) {
	f := newScheduleFixture(t)
	cfg := config.Default()
	g := &globals{stdout: io.Discard, stderr: io.Discard, getenv: func(k string) string {
		if k == "TZ" {
			return "Europe/Berlin"
		}
		return ""
	}}
	sc, err := g.newScheduling(cfg, sqliteDatabase(f.db))
	if err != nil || sc == nil {
		t.Fatalf("newScheduling: %v %v", sc, err)
	}
	sc2 := *cfg
	sc2.Schedule.Enabled = false
	if off, err := g.newScheduling(&sc2, sqliteDatabase(f.db)); off != nil || err != nil || off.extension() != nil {
		t.Errorf("disabled scheduling: %v %v", off, err)
	}

	// A sub-agent is offered none of it: a job on its session could never
	// fire.
	for _, ext := range sc.extension() {
		if x, err := ext(host.Env{SessionID: "child", Depth: 1}); err != nil || len(x.Tools) != 0 || len(x.Contributors) != 0 {
			t.Errorf("a sub-agent's session gets %d schedule tools, %d contributors (%v)", len(x.Tools), len(x.Contributors), err)
		}
	}

	prov := script.New(&script.Script{Rounds: []script.Round{
		{ToolCalls: []script.ToolCall{{ID: "c1", Name: "schedule_create", Arguments: []byte(`{"prompt": "check the deploy", "in": "20m"}`)}}},
		{Text: "Scheduled."},
		{Text: "The deploy is fine."},
	}})
	h, err := host.New(host.Options{
		Store:       f.db.Sessions(),
		Profiles:    func(string) (host.Profile, error) { return host.Profile{Name: "test", Provider: prov}, nil },
		Extensions:  sc.extension(),
		Permissions: host.Permissions{Default: permission.Read},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	sc.attach(h)
	s, err := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(t.Context(), model.Text{Text: "remind me in 20 minutes to check the deploy"}); err != nil {
		t.Fatal(err)
	}
	jobs, err := f.db.Schedules().List(t.Context(), s.ID())
	if err != nil || len(jobs) != 1 {
		t.Fatalf("jobs %v %v", jobs, err)
	}
	reqs := prov.Requests()
	if last := lastText(reqs[len(reqs)-1]); !strings.Contains(last, "[Scheduled]") || !strings.Contains(last, schedule.ShortID(jobs[0].ID)+" once at") {
		t.Errorf("the request after schedule_create lacks the index:\n%s", last)
	}

	res, err := sc.sched.Sweep(t.Context(), jobs[0].NextAt.Add(time.Second))
	if err != nil || res.Fired != 1 {
		t.Fatalf("sweep: %+v %v", res, err)
	}
	rows, err := f.db.Sessions().Rows(t.Context(), s.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var fired *session.UserMessage
	for _, r := range rows {
		if u, ok := r.Entry.(session.UserMessage); ok && u.Source == session.SourceSchedule {
			fired = &u
		}
	}
	if fired == nil || fired.Parts[0].(model.Text).Text != "check the deploy" {
		t.Fatalf("no scheduled turn in the log: %+v", fired)
	}
	if left, _ := f.db.Schedules().List(t.Context(), s.ID()); len(left) != 0 {
		t.Errorf("the delivered one-shot is still stored: %v", left)
	}
	// A session this host does not hold is not its to fire.
	if sc.firer.Holds(t.Context(), "00000000-0000-4000-8000-000000000000") {
		t.Error("holds a session it never opened")
	}
}

// lastText is the text a request ends with: its last message and the
// per-request context after it.
func lastText(req *model.Request) string {
	var b strings.Builder
	m := req.Messages[len(req.Messages)-1]
	for _, p := range append(slices.Clone(m.Parts), req.Context...) {
		switch p := p.(type) {
		case model.Text:
			b.WriteString(p.Text + "\n")
		case model.ToolResult:
			for _, c := range p.Content {
				if t, ok := c.(model.Text); ok {
					b.WriteString(t.Text + "\n")
				}
			}
		}
	}
	return b.String()
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A recurring job's turn that fails before any tool ran leaves nothing in
// the conversation; a one-shot's keeps its prompt.
func TestFailedScheduledTurnWithdrawsRecurringPrompt(t *testing.T) {
	f := newScheduleFixture(t)
	g := &globals{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
	sc, err := g.newScheduling(config.Default(), sqliteDatabase(f.db))
	if err != nil {
		t.Fatal(err)
	}
	down := script.Round{Error: &script.Error{Status: 503, Body: "provider down"}}
	prov := script.New(&script.Script{Rounds: []script.Round{down, down}})
	h, err := host.New(host.Options{
		Store:       f.db.Sessions(),
		Profiles:    func(string) (host.Profile, error) { return host.Profile{Name: "test", Provider: prov}, nil },
		Extensions:  sc.extension(),
		Permissions: host.Permissions{Default: permission.Read},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	sc.attach(h)
	s, err := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var warnings []string
	defer s.Subscribe(func(ev agent.Event) {
		if n, ok := ev.(agent.Notice); ok && n.Notice.Severity == session.SeverityWarning {
			warnings = append(warnings, n.Notice.Title+": "+n.Notice.Description)
		}
	})()
	now := time.Now()
	for _, j := range []sqlite.Job{
		{SessionID: s.ID(), Prompt: "recurring prompt", Kind: "every", Spec: "1h", Interval: time.Hour, NextAt: now.Add(-time.Minute), Level: "read"},
		{SessionID: s.ID(), Prompt: "one-shot prompt", Kind: "once", NextAt: now, Level: "read"},
	} {
		f.job(j)
	}
	res, err := sc.sched.Sweep(t.Context(), now.Add(time.Second))
	if err != nil || res.Fired != 2 {
		t.Fatalf("sweep: %+v %v", res, err)
	}
	rows, err := f.db.Sessions().Rows(t.Context(), s.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var prompts []string
	for _, r := range rows {
		if u, ok := r.Entry.(session.UserMessage); ok {
			prompts = append(prompts, u.Parts[0].(model.Text).Text)
		}
	}
	if len(prompts) != 1 || prompts[0] != "one-shot prompt" {
		t.Errorf("prompts left in the log: %q", prompts)
	}
	if left, _ := f.db.Schedules().List(t.Context(), s.ID()); len(left) != 1 || !left[0].NextAt.After(now) {
		t.Errorf("jobs after the failed turns: %+v", left)
	}
	// Each failure reached the front doors as a warning naming its job.
	if len(warnings) != 2 || !strings.Contains(warnings[0], "Scheduled job ") || !strings.Contains(warnings[0], "provider down") ||
		!strings.Contains(strings.Join(warnings, "\n"), "withdrawn") {
		t.Errorf("warnings: %q", warnings)
	}
}
