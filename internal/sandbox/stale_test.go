//go:build linux

package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// deadPid returns the id of a process that has exited and been reaped.
func deadPid(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestCleanStale(t *testing.T) {
	ws, journal, tmp := canonTemp(t), canonTemp(t), canonTemp(t)
	roots, err := NewRoots(ws, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	roots = roots.Journal(journal)
	if err := WriteFileAtomic(ws+"/a.txt", []byte("x"), roots); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(journal); len(ents) != 0 {
		t.Errorf("a finished write left %d journal notes", len(ents))
	}

	// What a write killed mid-way leaves: its temp file and its note, by
	// a process now dead; and a live process's note and file, kept.
	dead, live := strconv.Itoa(deadPid(t)), strconv.Itoa(os.Getpid())
	leftover, inUse, notMine := ws+"/.a.txt.meka-0a1b.tmp", ws+"/.b.txt.meka-2c3d.tmp", ws+"/precious.txt"
	for _, p := range []string{leftover, inUse, notMine} {
		mustWrite(t, p, "partial")
	}
	mustWrite(t, journal+"/"+dead+"-1", leftover)
	mustWrite(t, journal+"/"+live+"-2", inUse)
	mustWrite(t, journal+"/"+dead+"-3", notMine) // not a temp file's name

	// Shell temp dirs: a dead process's, a live one's, an old and a new
	// one from before names carried the pid.
	for _, d := range []string{"meka-shell-" + dead + "-1", "meka-shell-" + live + "-2", "meka-shell-old", "meka-shell-new"} {
		mustMkdir(t, filepath.Join(tmp, d))
	}
	now := time.Now()
	old := now.Add(-48 * time.Hour)
	if err := os.Chtimes(filepath.Join(tmp, "meka-shell-old"), old, old); err != nil {
		t.Fatal(err)
	}

	n, err := CleanStale(journal, tmp, now)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("removed %d, want 3 (the leftover file, the dead shell dir, the old one)", n)
	}
	for p, want := range map[string]bool{
		leftover: false, inUse: true, notMine: true,
		filepath.Join(tmp, "meka-shell-"+dead+"-1"): false, filepath.Join(tmp, "meka-shell-"+live+"-2"): true,
		filepath.Join(tmp, "meka-shell-old"): false, filepath.Join(tmp, "meka-shell-new"): true,
	} {
		if _, err := os.Lstat(p); (err == nil) != want {
			t.Errorf("%s exists %v, want %v", p, err == nil, want)
		}
	}
}

func TestKillRecorded(t *testing.T) {
	dir := canonTemp(t)
	// A group left running by a holder that died: what a reopened session
	// finds.
	cmd, err := Command(t.Context(), Spec{Args: []string{"sleep", "100"}, Env: []string{testPath}, Mode: Unrestricted})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	forget := RecordGroup(dir, pgid)
	if n, err := KillRecorded(dir); n != 0 || err != nil {
		t.Fatalf("KillRecorded by its own holder = %d, %v; want it left alone", n, err)
	}
	forget()
	dead := deadPid(t)
	mustWrite(t, filepath.Join(dir, strconv.Itoa(pgid)), strconv.Itoa(dead)+" "+startTime(pgid))
	// A note whose pid is another process now: forgotten, not killed.
	other := exec.Command("sleep", "100")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	mustWrite(t, filepath.Join(dir, strconv.Itoa(other.Process.Pid)), strconv.Itoa(dead)+" 1")

	n, err := KillRecorded(dir)
	if err != nil || n != 1 {
		t.Fatalf("KillRecorded = %d, %v; want 1", n, err)
	}
	if err := cmd.Wait(); err == nil {
		t.Error("the recorded group was not killed")
	}
	if err := unix.Kill(other.Process.Pid, 0); err != nil {
		t.Errorf("a reused pid was killed: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("%d notes left", len(ents))
	}
}
