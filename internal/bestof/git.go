package bestof

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// git runs git in dir and returns its stdout without its last newlines
// (leading spaces are meaningful in --stat and --porcelain). A variable that
// points git at another repository (a hook's GIT_DIR) is dropped, so each
// command acts on dir's.
func (o Options) git(ctx context.Context, dir string, args ...string) (string, error) {
	g := o.Git
	if g == "" {
		g = "git"
	}
	cmd := exec.CommandContext(ctx, g, args...)
	cmd.Dir = dir
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_DIR=") && !strings.HasPrefix(kv, "GIT_WORK_TREE=") && !strings.HasPrefix(kv, "GIT_INDEX_FILE=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = strings.TrimSpace(out.String())
		}
		return "", &GitError{Args: args, Err: err, Stderr: msg}
	}
	return strings.TrimRight(out.String(), "\n"), nil
}

// GitError is a git command that failed.
type GitError struct {
	Args   []string
	Err    error
	Stderr string
}

func (e *GitError) Error() string {
	return fmt.Sprintf("git %s: %v: %s", strings.Join(e.Args, " "), e.Err, e.Stderr)
}
func (e *GitError) Unwrap() error { return e.Err }

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
