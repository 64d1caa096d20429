//go:build unix

package schedule

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// setGroup puts cmd in a process group of its own, so that a gate that
// times out is killed with everything it started.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
}
