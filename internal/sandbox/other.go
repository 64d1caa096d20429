//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"time"
)

// errUnsupported is what the checked file operations return off Linux,
// where the opened file's real path cannot be verified.
var errUnsupported = errors.New("checked file operations need Linux")

func landlockABI() int { return 0 }

// kernelID is the system's name: no probe here depends on more.
func kernelID() (string, error) { return runtime.GOOS, nil }

type nsKind int

const (
	nsNone nsKind = iota
	nsAll
	nsNoNet
)

func setGroup(cmd *exec.Cmd, waitDelay time.Duration, ns nsKind) { cmd.WaitDelay = waitDelay }

func probeNamespaces() error { return errors.New("namespaces need Linux") }

func outsideSockets(writable []string) []string { return nil }

// LandlockABI returns 0: Landlock is Linux-only.
func LandlockABI() int { return 0 }

func killGroup(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return os.ErrProcessDone
	}
	return p.Kill()
}

func Open(path string, roots *Roots) (*os.File, error)   { return nil, errUnsupported }
func ReadFile(path string, roots *Roots) ([]byte, error) { return nil, errUnsupported }
func OpenForWrite(path string, flag int, perm fs.FileMode, roots *Roots) (*os.File, error) {
	return nil, errUnsupported
}
func WriteFileAtomic(path string, data []byte, roots *Roots) error { return errUnsupported }

// HideEnv unsets names and returns their values; off Linux the initial
// environment block is left as it is.
func HideEnv(names []string) (map[string]string, error) {
	values := map[string]string{}
	for _, n := range names {
		if v, ok := os.LookupEnv(n); ok {
			values[n] = v
			os.Unsetenv(n)
		}
	}
	return values, nil
}

func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	return err == nil && p != nil
}

// Stamp is empty off Linux, where paths cannot be stamped.
type Stamp struct{}

func StampPath(p, root string) (Stamp, error) { return Stamp{}, errUnsupported }

func (s Stamp) Same(o Stamp) bool { return false }

func signalCarrying(entry []byte, signalled map[int]bool) int { return 0 }

// Undumpable does nothing off Linux.
func Undumpable() error { return nil }

// launched is a command a launcher runs; there are none off Linux.
type launched struct{}

func (*launched) wait() (Status, error) { return Status{}, errLauncherGone }

func (probe) launch(context.Context, confinement, Spec, string, io.Writer, io.Writer) (*Running, bool, error) {
	return nil, false, nil
}
