package bestof

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
)

// git runs git in dir as the worktrees do (worktree.Options.RunGit).
func (o Options) git(ctx context.Context, dir string, args ...string) (string, error) {
	return o.Worktrees.RunGit(ctx, dir, args...)
}

// exitStatus is a failed git command's exit status, -1 if it did not run.
func exitStatus(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// commitAll commits whatever the candidate left uncommitted in its
// worktree, so that its branch holds all of its work for a merge. It
// reports whether there was anything.
func (o Options) commitAll(ctx context.Context, dir, msg string) (bool, error) {
	if _, err := o.git(ctx, dir, "add", "-A"); err != nil {
		return false, err
	}
	_, err := o.git(ctx, dir, "diff", "--cached", "--quiet")
	if err == nil {
		return false, nil
	}
	if exitStatus(err) != 1 {
		return false, err
	}
	// meka's bookkeeping commit: the person's hooks judge the merge, not
	// this.
	if _, err := o.git(ctx, dir, "commit", "-q", "--no-verify", "-m", msg); err != nil {
		return false, err
	}
	return true, nil
}

// FileStat is one file a candidate changed.
type FileStat struct {
	Path string `json:"path"`
	// Added and Deleted count lines; both are -1 for a binary file.
	Added   int `json:"added"`
	Deleted int `json:"deleted"`
}

// diffStat is git's --stat of base..head, and the same per file.
func (o Options) diffStat(ctx context.Context, dir, base, head string) (string, []FileStat, error) {
	stat, err := o.git(ctx, dir, "diff", "--stat", base, head, "--")
	if err != nil {
		return "", nil, err
	}
	num, err := o.git(ctx, dir, "diff", "--numstat", "-z", base, head, "--")
	if err != nil {
		return "", nil, err
	}
	return stat, parseNumstat(num), nil
}

// parseNumstat reads git diff --numstat -z: "ADDED\tDELETED\tPATH\0", a
// rename as "ADDED\tDELETED\t\0FROM\0TO\0".
func parseNumstat(s string) []FileStat {
	var files []FileStat
	fields := strings.Split(s, "\x00")
	for i := 0; i < len(fields); i++ {
		parts := strings.SplitN(fields[i], "\t", 3)
		if len(parts) != 3 {
			continue
		}
		f := FileStat{Path: parts[2], Added: count(parts[0]), Deleted: count(parts[1])}
		if f.Path == "" && i+2 < len(fields) {
			f.Path = fields[i+2] // a rename: where it went
			i += 2
		}
		files = append(files, f)
	}
	return files
}

func count(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1 // "-": binary
	}
	return n
}
