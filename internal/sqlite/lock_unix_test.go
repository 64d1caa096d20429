//go:build unix

// Taking over from a dead holder needs processAlive, which only unix has.

package sqlite_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/session"
)

// Environment of the helper process TestLockAcrossProcesses starts.
const (
	helperDB      = "MEKA_SQLITE_TEST_HELPER_DB"
	helperSession = "MEKA_SQLITE_TEST_HELPER_SESSION"
)

// TestHelperProcess is not a test: re-executed by TestLockAcrossProcesses
// with helperDB set, it locks a session, says "locked", and holds it until
// its standard input closes or it is killed.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv(helperDB)
	if path == "" {
		t.Skip("helper process of TestLockAcrossProcesses")
	}
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	l, err := db.Sessions().Lock(ctx, os.Getenv(helperSession), session.Holder{})
	if err != nil {
		fmt.Println("lock:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	io.Copy(io.Discard, os.Stdin)
	l.Release(ctx)
	db.Close()
	os.Exit(0)
}

func TestLockAcrossProcesses(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "meka.db")
	s := open(t, path, sqlite.Options{}).Sessions()
	m, err := s.Create(ctx, session.Meta{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperDB+"="+path, helperSession+"="+m.ID)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "locked" {
		t.Fatalf("helper said %q (%v), want locked", line, err)
	}

	_, err = s.Lock(ctx, m.ID, session.Holder{})
	var held *session.HeldError
	if !errors.As(err, &held) {
		t.Fatalf("Lock while the helper holds it: %v, want a *session.HeldError", err)
	}
	host, _ := os.Hostname()
	if held.Holder.PID != cmd.Process.Pid || held.Holder.Host != host {
		t.Errorf("held by %v, want pid %d on %s", held.Holder, cmd.Process.Pid, host)
	}

	// Its lease has most of 30s to run, but the process is gone: take over.
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait() // reaped, or the pid would still answer as a zombie
	l, err := s.Lock(ctx, m.ID, session.Holder{})
	if err != nil {
		t.Fatalf("Lock after the helper was killed: %v", err)
	}
	if l.Holder().PID != os.Getpid() {
		t.Errorf("lock holder %v, want this process", l.Holder())
	}
}

// TestLockDeadHolderSameHost takes over from a holder on this host whose
// pid no process has, but not from one on another host.
func TestLockDeadHolderSameHost(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "meka.db")
	const deadPID = 1 << 30 // above any pid_max
	dead := open(t, path, sqlite.Options{Host: "here", PID: deadPID}).Sessions()
	here := open(t, path, sqlite.Options{Host: "here"}).Sessions()
	there := open(t, path, sqlite.Options{Host: "there"}).Sessions()

	m, err := dead.Create(ctx, session.Meta{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dead.Lock(ctx, m.ID, session.Holder{}); err != nil {
		t.Fatal(err)
	}
	_, err = there.Lock(ctx, m.ID, session.Holder{})
	var held *session.HeldError
	if !errors.As(err, &held) || held.Holder.PID != deadPID {
		t.Fatalf("Lock from another host: %v, want held by pid %d (it cannot see that process)", err, deadPID)
	}
	l, err := here.Lock(ctx, m.ID, session.Holder{})
	if err != nil {
		t.Fatalf("Lock from the dead holder's host: %v", err)
	}
	if l.Holder().PID != os.Getpid() {
		t.Errorf("holder %v, want this process", l.Holder())
	}
}
