package schedule_test

import (
	"testing"
	"time"

	"meka.dev/meka/internal/schedule"
)

// A table's cells: the schedule without its zone (a one-shot's instant
// in the job's zone), and the gate by its kind.
func TestJobBriefAndGateKind(t *testing.T) {
	at := time.Date(2026, 8, 11, 13, 22, 0, 0, time.UTC)
	for _, c := range []struct {
		job         schedule.Job
		brief, gate string
	}{
		{schedule.Job{Kind: schedule.KindEvery, Spec: "30m"}, "every 30m", "-"},
		{schedule.Job{Kind: schedule.KindCron, Spec: "0 9 * * 1-5", Zone: "Europe/Berlin",
			Gate: `{"check":{"command":"make test"},"when":"changed"}`}, "cron 0 9 * * 1-5", "shell"},
		{schedule.Job{Kind: schedule.KindOnce, NextAt: at, Zone: "Europe/Berlin",
			Gate: `{"check":{"tool":"file_read","arguments":{"path":"a"}},"when":"changed"}`}, "once 2026-08-11 15:22", "tool"},
		{schedule.Job{Kind: schedule.KindOnce, NextAt: at, Gate: "{"}, "once 2026-08-11 13:22", "?"},
	} {
		if got := c.job.Brief(); got != c.brief {
			t.Errorf("Brief = %q, want %q", got, c.brief)
		}
		if got := c.job.GateKind(); got != c.gate {
			t.Errorf("%s: GateKind = %q, want %q", c.brief, got, c.gate)
		}
	}
}
