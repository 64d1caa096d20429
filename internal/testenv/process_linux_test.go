package testenv_test

import (
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"meka.dev/meka/internal/testenv"
)

// Exited answers at once for a running process, and as soon as a killed
// one is gone; AssertGone passes for a process already reaped.
func TestExited(t *testing.T) {
	cmd := exec.Command("sleep", "100")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	fd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if testenv.Exited(t, fd, 0) {
		t.Fatal("a running process reported exited")
	}
	cmd.Process.Kill()
	if !testenv.Exited(t, fd, time.Minute) {
		t.Fatal("a killed process not reported exited")
	}
	cmd.Wait()
	testenv.AssertGone(t, cmd.Process.Pid)
}
