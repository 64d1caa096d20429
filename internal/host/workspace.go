package host

import (
	"errors"
	"fmt"
	"path/filepath"

	"meka.dev/meka/permission"
)

// ErrWideWorkspace is what every *WideWorkspaceError matches: a session at
// the workspace level asked to work in / or the user's home directory,
// where its commands and file tools could change every file below (shell
// startup files and ssh keys included), without Options.WorkspaceHome.
var ErrWideWorkspace = errors.New("the workspace is the root or home directory")

// WideWorkspaceError names the directory refused and what it is.
type WideWorkspaceError struct {
	Dir  string // canonical
	What string // "the root directory" or "your home directory"
}

func (e *WideWorkspaceError) Error() string {
	return fmt.Sprintf("%s (%s) cannot be the workspace of a session at the workspace level: commands and file tools could change every file below it, your shell startup files, ssh keys and other projects included. Work in a project directory, use the read level, or start meka with --workspace-home if you mean it", e.What, e.Dir)
}

// Is makes errors.Is(err, ErrWideWorkspace) true.
func (e *WideWorkspaceError) Is(target error) bool { return target == ErrWideWorkspace }

// WideWorkspace says what the canonical directory dir is when it is / or
// home (the user's home directory, "" for none): "the root directory" or
// "your home directory"; "" for any other.
func WideWorkspace(dir, home string) string {
	if dir == string(filepath.Separator) {
		return "the root directory"
	}
	if home == "" {
		return ""
	}
	if h, err := Canonical(home); err == nil && h == dir {
		return "your home directory"
	}
	return ""
}

// checkWorkspace refuses cwd (canonical) as the workspace of a session at
// level when it is / or the home directory, unless the host allows them.
// Every door that creates, opens in a new directory, forks, moves or
// raises a session to workspace passes here.
func (h *Host) checkWorkspace(cwd string, level permission.Level) error {
	return h.admission.checkWorkspace(cwd, level)
}

func (a Admission) checkWorkspace(cwd string, level permission.Level) error {
	if level != permission.Workspace || a.WorkspaceHome {
		return nil
	}
	if what := WideWorkspace(cwd, a.Home); what != "" {
		return &WideWorkspaceError{Dir: cwd, What: what}
	}
	return nil
}

// recordedLevel is the level a stored session holds, the policy's default
// when it records none.
func (h *Host) recordedLevel(s string) permission.Level {
	l, err := permission.ParseLevel(s)
	if err != nil {
		return h.opts.Permissions.Default
	}
	return l
}
