package prompt

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// DefaultGitTimeout bounds all the git commands of one prompt.
const DefaultGitTimeout = 200 * time.Millisecond

// Bounds of what git adds.
const (
	gitStatusLines = 20
	gitCommits     = 3
)

// GitOptions bound what the prompt asks git.
type GitOptions struct {
	// Off leaves git out entirely (benchmarks, sessions outside a repository).
	Off bool
	// Path is the git binary; default "git" from PATH.
	Path string
	// Timeout bounds every command together; default DefaultGitTimeout.
	Timeout time.Duration
}

// gitBlock describes cwd's repository: whether it is one, and, when git
// answers in time, the branch, a short status and the last commit
// subjects. A repository that is slow or broken adds nothing past whether
// it is one.
func gitBlock(ctx context.Context, cwd string, o GitOptions) string {
	if o.Off {
		return ""
	}
	if !inRepository(cwd) {
		return "Git repository: no\n"
	}
	if o.Path == "" {
		o.Path = "git"
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultGitTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	type answer struct {
		out string
		err error
	}
	status, log := make(chan answer, 1), make(chan answer, 1)
	go func() {
		out, err := git(ctx, o.Path, cwd, "status", "--short", "--branch")
		status <- answer{out, err}
	}()
	go func() {
		out, err := git(ctx, o.Path, cwd, "log", fmt.Sprintf("-%d", gitCommits), "--format=%s")
		log <- answer{out, err}
	}()
	st, lg := <-status, <-log
	if st.err != nil {
		return "Git repository: yes\n"
	}
	var b strings.Builder
	lines := strings.Split(strings.TrimRight(st.out, "\n"), "\n")
	branch := strings.TrimPrefix(lines[0], "## ")
	if b2, _, ok := strings.Cut(branch, "..."); ok {
		branch = b2
	}
	fmt.Fprintf(&b, "Git repository: yes, branch %s\n", branch)
	changes := lines[1:]
	switch {
	case len(changes) == 0:
		b.WriteString("Git status: clean\n")
	default:
		b.WriteString("Git status (short):\n")
		for i, l := range changes {
			if i == gitStatusLines {
				fmt.Fprintf(&b, "  ... and %d more\n", len(changes)-gitStatusLines)
				break
			}
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	// A repository with no commit yet has no log: that is not a failure.
	if lg.err == nil && strings.TrimSpace(lg.out) != "" {
		b.WriteString("Recent commits:\n")
		for l := range strings.Lines(strings.TrimRight(lg.out, "\n")) {
			fmt.Fprintf(&b, "  %s\n", strings.TrimRight(l, "\n"))
		}
	}
	return b.String()
}

func inRepository(cwd string) bool {
	for d := cwd; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return true
		}
		parent := filepath.Dir(d)
		if parent == d {
			return false
		}
		d = parent
	}
}

func git(ctx context.Context, bin, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, append([]string{"--no-optional-locks", "-c", "core.quotepath=off"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	// A child that keeps the pipe open must not hold the prompt past the
	// deadline.
	cmd.WaitDelay = 20 * time.Millisecond
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("run git %s: %w", args[0], err)
	}
	return string(out), nil
}
