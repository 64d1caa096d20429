//go:build linux

package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"meka.dev/meka/internal/testenv"
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
	tr := Track(dir, cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	tr.Started(pgid)
	if n, err := KillRecorded(dir); n != 0 || err != nil {
		t.Fatalf("KillRecorded by its own holder = %d, %v; want it left alone", n, err)
	}
	tr.Forget()
	dead := deadPid(t)
	// A note of meka before Track, named by the group.
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

// holderMarker makes the test binary a holder that tracks and starts a
// command leaving a background child, then waits to be killed before it
// notes the command's process group: meka dying in that window.
const holderMarker = "__meka_track_holder"

func runHolder(dir string) {
	cmd, err := Command(context.Background(), Spec{
		Args: []string{"sh", "-c", "sleep 300 & echo $!; exec sleep 300"},
		Env:  []string{testPath}, Mode: Unrestricted,
	})
	if err == nil {
		Track(dir, cmd)
		cmd.Stdout = os.Stdout
		err = cmd.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	select {} // Started is never called
}

func TestKillTrackedBeforeStarted(t *testing.T) {
	dir := canonTemp(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	holder := exec.Command(exe, holderMarker, dir)
	holder.Stderr = os.Stderr
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		holder.Process.Kill()
		holder.Wait()
		t.Fatalf("read the child's pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	t.Cleanup(func() { unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) })
	// Its holder's own pid marks the note as held: it is left alone.
	if n, err := KillRecorded(dir); n != 0 || err != nil {
		t.Fatalf("KillRecorded while the holder runs = %d, %v; want 0", n, err)
	}
	holder.Process.Kill()
	holder.Wait()
	if testenv.Exited(t, fd, 0) {
		t.Fatal("the background child died with its holder; nothing left to test")
	}

	if n, err := KillRecorded(dir); n != 1 || err != nil {
		t.Fatalf("KillRecorded = %d, %v; want 1", n, err)
	}
	// SIGKILL is delivered by the time kill returns; the exit follows at
	// once, but on another CPU.
	if !testenv.Exited(t, fd, 10*time.Second) {
		t.Error("the child of a command whose group was never noted survived")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("%d notes left", len(ents))
	}
}

// MkShellTemp's directory, removed under it (a temp cleaner), is made
// again, named for this process as CleanStale expects.
func TestMkShellTempRemade(t *testing.T) {
	first := shellTemp(t)
	root := filepath.Dir(first)
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	second := shellTemp(t)
	newRoot := filepath.Dir(second)
	if newRoot == root {
		t.Fatal("the removed directory was used again")
	}
	if !strings.HasPrefix(filepath.Base(newRoot), ShellDirPrefix+strconv.Itoa(os.Getpid())+"-") {
		t.Errorf("new directory %s is not named for this process", newRoot)
	}
	if fi, err := os.Stat(second); err != nil || !fi.IsDir() {
		t.Errorf("temp dir %s: %v", second, err)
	}
}
