package worktree

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// A meka killed with SIGKILL (its process group with it) while a git
// command ran in one of its worktrees leaves that command's lock files
// (index.lock, HEAD.lock, the branch's ref lock) behind, and git then
// refuses to work there until someone deletes them. Git's own advice is to
// delete them once no git process runs; clearLocks does that for meka's
// worktrees, when no process on this machine works in the worktree or
// holds the lock open. That is known from /proc, so only on Linux; other
// systems keep the locks (git names them in its error).

// clearLocks removes the stale lock files of w.
func (o Options) clearLocks(ctx context.Context, w Worktree) {
	if runtime.GOOS != "linux" {
		return
	}
	var locks []string
	if common, err := o.RunGit(ctx, w.Repo, "rev-parse", "--path-format=absolute", "--git-common-dir"); err == nil && w.Branch != "" {
		locks = append(locks, filepath.Join(common, "refs", "heads", filepath.FromSlash(w.Branch)+".lock"))
	}
	// The worktree's own administrative directory (.git/worktrees/X).
	if admin, err := o.RunGit(ctx, w.Path, "rev-parse", "--absolute-git-dir"); err == nil {
		entries, _ := os.ReadDir(admin)
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".lock") {
				locks = append(locks, filepath.Join(admin, e.Name()))
			}
		}
	}
	var present []string
	for _, l := range locks {
		if _, err := os.Lstat(l); err == nil {
			present = append(present, l)
		}
	}
	if len(present) == 0 || busy(w.Path, present) {
		return
	}
	for _, l := range present {
		os.Remove(l)
	}
}

// busy reports whether a process works in dir (its cwd there) or has one
// of files open, or whether that cannot be established.
func busy(dir string, files []string) bool {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	dir = resolved(dir)
	for _, p := range procs {
		if p.Name()[0] < '0' || p.Name()[0] > '9' {
			continue
		}
		base := filepath.Join("/proc", p.Name())
		if dying(base) {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join(base, "cwd")); err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+"/")) {
			return true
		}
		fds, _ := os.ReadDir(filepath.Join(base, "fd"))
		for _, fd := range fds {
			if target, err := os.Readlink(filepath.Join(base, "fd", fd.Name())); err == nil {
				for _, f := range files {
					if target == f {
						return true
					}
				}
			}
		}
	}
	return false
}

// dying reports whether the process at base (/proc/PID) has exited (a
// zombie) or has a SIGKILL pending: one just killed, whose files are as
// good as closed.
func dying(base string) bool {
	b, err := os.ReadFile(filepath.Join(base, "status"))
	if err != nil {
		return true
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "State":
			if strings.HasPrefix(v, "Z") || strings.HasPrefix(v, "X") {
				return true
			}
		case "SigPnd", "ShdPnd":
			if mask, err := strconv.ParseUint(v, 16, 64); err == nil && mask&(1<<(9-1)) != 0 {
				return true
			}
		}
	}
	return false
}
