package task

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{900 * time.Millisecond, "0s"},
		{45 * time.Second, "45s"},
		{time.Minute, "1m"},
		{12*time.Minute + 4*time.Second + 700*time.Millisecond, "12m 4s"},
		{time.Hour + 2*time.Minute + 59*time.Second, "1h 2m"},
		{2 * time.Hour, "2h"},
		{26*time.Hour + 3*time.Minute, "26h 3m"},
		{-time.Second, "0s"},
	}
	for _, tt := range tests {
		if got := FormatDuration(tt.d); got != tt.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 4096: "4.0 KiB", 1536 * 1024: "1.5 MiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestDefaultLabel(t *testing.T) {
	tests := map[string]string{
		"go test ./...":             "go test ./...",
		"  cd x\n  make all\n":      "cd x…",
		strings.Repeat("é", 100):    strings.Repeat("é", 79) + "…",
		"echo 'one line'   \n\n   ": "echo 'one line'",
	}
	for in, want := range tests {
		if got := defaultLabel(in); got != want {
			t.Errorf("defaultLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReport(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	long := filepath.Join(dir, "a.out")
	var lines []string
	for i := range 200 {
		lines = append(lines, strings.Repeat("x", 30)+" line "+string(rune('a'+i%26)))
	}
	if err := os.WriteFile(long, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "b.out")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tasks := []Task{
		{ID: "7f3a1c22", Label: "the tests", Command: "go test ./...", Started: start, Ended: start.Add(12*time.Minute + 4*time.Second),
			State: Exited, ExitCode: 1, Output: long},
		{ID: "0badf00d", Label: "sleep 100", Command: "sleep 100", Started: start, Ended: start.Add(3 * time.Second),
			State: Killed, ExitCode: -1, Reason: "killed on request", Output: empty},
		{ID: "deadbeef", Label: "gone", Command: "true", Started: start, Ended: start.Add(time.Hour),
			State: Failed, ExitCode: -1, Signal: "SIGSEGV", Output: filepath.Join(dir, "missing.out")},
	}
	got := Report(tasks, 100)
	head, rest, _ := strings.Cut(got, "\n\n")
	wantHead := "Background task 7f3a1c22 finished after 12m 4s: exited with code 1.\n" +
		"Label: the tests\n" +
		"Command: go test ./...\n" +
		"Output (the last 76 B of 7.4 KiB; the whole output is in " + long + "):\n" +
		lines[198] + "\n" + lines[199] + "\n"
	if head+"\n" != wantHead {
		t.Errorf("first task:\n%s\nwant:\n%s", head, wantHead)
	}
	wantRest := "Background task 0badf00d finished after 3s: killed: killed on request.\n" +
		"Command: sleep 100\n" +
		"Output: none.\n" +
		"\n" +
		"Background task deadbeef finished after 1h: failed: terminated by signal SIGSEGV.\n" +
		"Label: gone\n" +
		"Command: true\n" +
		"Output: unavailable ("
	if !strings.HasPrefix(rest, wantRest) {
		t.Errorf("other tasks:\n%s\nwant prefix:\n%s", rest, wantRest)
	}
}
