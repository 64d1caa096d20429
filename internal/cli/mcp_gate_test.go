package cli

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/internal/config"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/mcp"
	"meka.dev/meka/model"
	"meka.dev/meka/model/script"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
)

// A schedule gate may call an MCP tool that resolves to read: the job
// fires on the tool's answer, which reaches the turn; a tool that
// resolves higher is refused; once the server is gone the gate cannot
// run, so the occurrence is declined and, after two, the job is marked
// NOT FIRING with the reason.
func TestMCPToolGate(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "mcptestserver")
	if out, err := exec.Command("go", "build", "-o", bin, "meka.dev/meka/internal/mcp/mcptest/mcptestserver").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	m := mcp.New(mcp.Options{Servers: []mcp.Server{{Name: "t", Command: bin, EnabledTools: []string{"echo", "write"}}},
		Env: []string{"PATH=" + os.Getenv("PATH")}, MinBackoff: time.Hour})
	m.Start(t.Context())
	defer m.Close()
	if err := m.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}

	f := newScheduleFixture(t)
	g := &globals{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
	sc, err := g.newScheduling(config.Default(), sqliteDatabase(f.db))
	if err != nil {
		t.Fatal(err)
	}
	prov := script.New(&script.Script{Rounds: []script.Round{
		{ToolCalls: []script.ToolCall{
			{ID: "c1", Name: "schedule_create", Arguments: []byte(`{"prompt": "look at the echo", "every": "1m",
				"gate": {"check": {"tool": "mcp__t__echo", "arguments": {"text": "x"}}, "when": "changed"}}`)},
			{ID: "c2", Name: "schedule_create", Arguments: []byte(`{"prompt": "never", "every": "1m",
				"gate": {"check": {"tool": "mcp__t__write", "arguments": {"path": "p"}}, "when": "changed"}}`)},
		}},
		{Text: "Scheduled."},
		{Text: "Seen."},
	}})
	h, err := host.New(host.Options{
		Store:       f.db.Sessions(),
		Profiles:    func(string) (host.Profile, error) { return host.Profile{Name: "test", Provider: prov}, nil },
		Extensions:  sc.extension(),
		Permissions: host.Permissions{Default: permission.Read},
		MCP:         m,
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
	if _, err := s.Prompt(t.Context(), model.Text{Text: "watch the echo"}); err != nil {
		t.Fatal(err)
	}
	reqs := prov.Requests()
	if got := lastText(reqs[1]); !strings.Contains(got, "mcp__t__write needs the unrestricted level; a gate asks a question") {
		t.Errorf("a gate on a tool above read was not refused:\n%s", got)
	}
	jobs, err := f.db.Schedules().List(t.Context(), s.ID())
	if err != nil || len(jobs) != 1 {
		t.Fatalf("jobs %v %v", jobs, err)
	}

	// The gate runs the tool; changed fires the first time, and the turn
	// sees what the tool said.
	res, err := sc.sched.Sweep(t.Context(), jobs[0].NextAt.Add(time.Second))
	if err != nil || res.Fired != 1 {
		t.Fatalf("sweep: %+v %v", res, err)
	}
	rows, _ := f.db.Sessions().Rows(t.Context(), s.ID(), 0)
	var fired string
	for _, r := range rows {
		if u, ok := r.Entry.(session.UserMessage); ok && u.Source == session.SourceSchedule {
			for _, p := range u.Parts {
				if x, ok := p.(model.Text); ok {
					fired += x.Text
				}
			}
		}
	}
	if !strings.Contains(fired, "echo: x") {
		t.Fatalf("the fired turn lacks the gate's output: %q", fired)
	}

	// The server goes away: the gate cannot run, which declines the
	// occurrence; the second failure marks the job.
	m.Close()
	for i := range 2 {
		j, _ := f.db.Schedules().Get(t.Context(), jobs[0].ID)
		res, err := sc.sched.Sweep(t.Context(), j.NextAt.Add(time.Second))
		if err != nil || res.Fired != 0 || res.Declined != 1 {
			t.Fatalf("sweep %d with the server gone: %+v %v", i, res, err)
		}
	}
	sj, err := sc.sched.Jobs(t.Context(), s.ID())
	if err != nil || len(sj) != 1 {
		t.Fatalf("jobs: %v %v", sj, err)
	}
	if why := sc.sched.NotFiring(sj[0], permission.Read); !strings.Contains(why, "the MCP server t is not connected") {
		t.Errorf("NOT FIRING reason = %q", why)
	}
}
