package bestof_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"meka.dev/meka/internal/bestof"
	"meka.dev/meka/internal/testenv"
	"meka.dev/meka/internal/worktree"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// sh is testenv.Sh with its output trimmed, to compare with a literal.
func sh(t *testing.T, dir, script string) string {
	t.Helper()
	return strings.TrimSpace(testenv.Sh(t, dir, script))
}

func repo(t *testing.T) string {
	t.Helper()
	for _, kv := range testenv.GitEnv {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v) // for the git bestof runs
	}
	return testenv.GitRepo(t, map[string]string{"base.txt": "base\n"})
}

// fakeLog is sessions' rows by id.
type fakeLog struct {
	mu   sync.Mutex // guards rows
	rows map[string][]session.Row
}

func (l *fakeLog) Rows(_ context.Context, id string, _ int64) ([]session.Row, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rows[id], nil
}

func (l *fakeLog) put(id string, rows ...session.Entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range rows {
		l.rows[id] = append(l.rows[id], session.Row{Entry: e})
	}
}

func shellCall(id, command string) session.AssistantMessage {
	args, _ := json.Marshal(map[string]string{"command": command})
	return session.AssistantMessage{Parts: model.Parts{model.ToolCall{ID: id, Name: "shell_execute", Arguments: args}}}
}

func shellResult(id string, exit int) session.ToolResult {
	st, _ := json.Marshal(map[string]int{"exit_code": exit})
	return session.ToolResult{CallID: id, Name: "shell_execute", Status: session.StatusOK, State: st}
}

func candidateOf(dir string) int {
	var k int
	fmt.Sscanf(dir[strings.LastIndexByte(dir, '-')+1:], "%d", &k)
	return k
}

// Three candidates run at once in their own worktrees, each writing its
// own file; their diffs, test runs and summaries are read back; picking 2
// merges its file into main, and only 2's worktree is left.
func TestRunPickClean(t *testing.T) {
	ctx := context.Background()
	r := repo(t)
	log := &fakeLog{rows: map[string][]session.Row{}}
	var started sync.WaitGroup
	started.Add(3)
	o := bestof.Options{
		Worktrees: worktree.Options{Dir: filepath.Join(t.TempDir(), "wt")},
		Log:       log,
		NewID:     func() string { return "abc" },
		Runner: func(ctx context.Context, dir, task string) bestof.Outcome {
			// Each waits for all three: they run at once, not in turn.
			started.Done()
			started.Wait()
			k := candidateOf(dir)
			id := fmt.Sprintf("s%d", k)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("c%d.txt", k)), []byte(task+"\n"), 0o644); err != nil {
				return bestof.Outcome{SessionID: id, Err: err}
			}
			log.put(id, session.UserMessage{Parts: model.Parts{model.Text{Text: task}}},
				shellCall("a", "go vet ./..."), shellResult("a", 0),
				shellCall("b", "cd x && go test ./..."), shellResult("b", k-1),
				session.AssistantMessage{Parts: model.Parts{model.Text{Text: fmt.Sprintf("wrote c%d.txt", k)}}})
			return bestof.Outcome{SessionID: id}
		},
	}
	res, err := bestof.Run(ctx, o, r, "write a file", 3)
	if err != nil {
		t.Fatal(err)
	}
	if res.Branch != "main" || res.ID != "abc" || len(res.Candidates) != 3 {
		t.Fatalf("result %+v", res)
	}
	for _, c := range res.Candidates {
		want := fmt.Sprintf("c%d.txt", c.ID)
		if c.Status != bestof.StatusOK || c.SessionID != fmt.Sprintf("s%d", c.ID) || c.Worktree != fmt.Sprintf("best-of-abc-%d", c.ID) ||
			c.Branch != "meka/best-of-abc-"+fmt.Sprint(c.ID) {
			t.Errorf("candidate %+v", c)
		}
		if len(c.Files) != 1 || c.Files[0].Path != want || c.Files[0].Added != 1 || !strings.Contains(c.DiffStat, want) {
			t.Errorf("candidate %d changes %+v %q", c.ID, c.Files, c.DiffStat)
		}
		if len(c.Tests) != 1 || c.Tests[0].Command != "cd x && go test ./..." || *c.Tests[0].ExitCode != c.ID-1 {
			t.Errorf("candidate %d tests %+v", c.ID, c.Tests)
		}
		if c.Summary != "wrote "+want {
			t.Errorf("candidate %d summary %q", c.ID, c.Summary)
		}
	}
	if d, err := bestof.Diff(ctx, o, res, 3); err != nil || !strings.Contains(d, "+++ b/c3.txt") {
		t.Fatalf("diff: %q %v", d, err)
	}
	if err := bestof.Pick(ctx, o, res, 2, bestof.ModeMerge); err != nil {
		t.Fatal(err)
	}
	if err := bestof.Clean(ctx, o, res, 2); err != nil {
		t.Fatal(err)
	}
	if got := sh(t, r, "git ls-files"); got != "base.txt\nc2.txt" {
		t.Fatalf("main has %q", got)
	}
	if got := sh(t, r, "git log -1 --format=%P | wc -w"); got != "2" {
		t.Fatalf("not a merge commit: %s parents", got)
	}
	if got := sh(t, r, "git branch --list 'meka/*' --format='%(refname:short)'"); got != "meka/best-of-abc-2" {
		t.Fatalf("branches left: %q", got)
	}
	wts, _ := o.Worktrees.List(ctx, r)
	if len(wts) != 1 || wts[0].Name != "best-of-abc-2" {
		t.Fatalf("worktrees left: %+v", wts)
	}
	if strings.Join(res.Removed, " ") != "best-of-abc-1 best-of-abc-3" || res.Picked != 2 || res.MergedHead == "" {
		t.Fatalf("result after the pick: %+v", res)
	}
}

// A candidate whose turn fails is reported and cannot be picked; the
// others can, here by cherry-pick (no merge commit).
func TestFailedCandidate(t *testing.T) {
	ctx := context.Background()
	r := repo(t)
	o := bestof.Options{
		Worktrees: worktree.Options{Dir: filepath.Join(t.TempDir(), "wt")},
		Log:       &fakeLog{rows: map[string][]session.Row{}},
		Runner: func(ctx context.Context, dir, task string) bestof.Outcome {
			if candidateOf(dir) == 1 {
				return bestof.Outcome{SessionID: "s1", Err: errors.New("openai returned HTTP 400")}
			}
			os.WriteFile(filepath.Join(dir, "ok.txt"), []byte("ok\n"), 0o644)
			return bestof.Outcome{SessionID: "s2"}
		},
	}
	res, err := bestof.Run(ctx, o, r, "task", 2)
	if err != nil {
		t.Fatal(err)
	}
	c1, _ := res.Candidate(1)
	if c1.Status != bestof.StatusFailed || !strings.Contains(c1.Error, "HTTP 400") || c1.Changed() || res.AllFailed() {
		t.Fatalf("candidate 1 %+v", c1)
	}
	if err := bestof.Pick(ctx, o, res, 1, bestof.ModeMerge); err == nil || !strings.Contains(err.Error(), "failed") {
		t.Fatalf("picking the failed candidate: %v", err)
	}
	if err := bestof.Pick(ctx, o, res, 2, bestof.ModeCherryPick); err != nil {
		t.Fatal(err)
	}
	if got := sh(t, r, "git log -1 --format=%P | wc -w"); got != "1" {
		t.Fatalf("cherry-pick made a merge commit")
	}
	if got := sh(t, r, "cat ok.txt"); got != "ok" {
		t.Fatalf("ok.txt %q", got)
	}
}

// Refusals: outside git, a dirty tree, a count out of range; nothing is
// run and no worktree is made.
func TestRefusals(t *testing.T) {
	ctx := context.Background()
	r := repo(t)
	var ran atomic.Bool
	o := bestof.Options{
		Worktrees: worktree.Options{Dir: filepath.Join(t.TempDir(), "wt")},
		Runner:    func(context.Context, string, string) bestof.Outcome { ran.Store(true); return bestof.Outcome{} },
	}
	for _, tc := range []struct {
		name, dir, want string
		n               int
	}{
		{"outside git", t.TempDir(), "not in a git repository", 2},
		{"too many", r, "at most 8", 9},
		{"one", r, "at least 2", 1},
	} {
		if _, err := bestof.Run(ctx, o, tc.dir, "task", tc.n); !errors.Is(err, bestof.ErrRefused) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	sh(t, r, "echo changed > base.txt")
	if _, err := bestof.Run(ctx, o, r, "task", 2); !errors.Is(err, bestof.ErrRefused) || !strings.Contains(err.Error(), "git stash") {
		t.Errorf("dirty tree: %v", err)
	}
	if ran.Load() {
		t.Fatal("a refused run ran a candidate")
	}
	// An untracked file does not conflict with anything: it runs.
	sh(t, r, "git checkout -q base.txt && echo x > untracked.txt")
	o.Log = &fakeLog{rows: map[string][]session.Row{}}
	if _, err := bestof.Run(ctx, o, r, "task", 2); err != nil || !ran.Load() {
		t.Errorf("untracked file: %v (ran %v)", err, ran.Load())
	}
}

// Choose reads answers until one picks a usable candidate: a diff on
// request, refusals for a failed or empty candidate.
func TestChoose(t *testing.T) {
	ctx := context.Background()
	r := repo(t)
	o := bestof.Options{
		Worktrees: worktree.Options{Dir: filepath.Join(t.TempDir(), "wt")},
		Log:       &fakeLog{rows: map[string][]session.Row{}},
		Runner: func(ctx context.Context, dir, task string) bestof.Outcome {
			switch candidateOf(dir) {
			case 1:
				return bestof.Outcome{Err: errors.New("boom")}
			case 3:
				os.WriteFile(filepath.Join(dir, "three.txt"), []byte("3\n"), 0o644)
			}
			return bestof.Outcome{}
		},
	}
	res, err := bestof.Run(ctx, o, r, "task", 3)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	k, err := bestof.Choose(ctx, o, strings.NewReader("x\n1\n2\nd 3\n3\n"), &out, res)
	if err != nil || k != 3 {
		t.Fatalf("chose %d %v\n%s", k, err, out.String())
	}
	for _, want := range []string{"answer a number", "candidate 1 failed", "candidate 2 changed nothing", "+++ b/three.txt"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
	if k, err := bestof.Choose(ctx, o, strings.NewReader(""), &out, res); k != 0 || err != nil {
		t.Fatalf("end of input: %d %v", k, err)
	}
}

func TestIsTestCommand(t *testing.T) {
	for cmd, want := range map[string]bool{
		"go test ./...":                    true,
		"cd pkg && go test -run X .":       true,
		"CGO_ENABLED=0 go test ./internal": true,
		"npm test":                         true,
		"npm run test -- --watch=false":    true,
		"python -m pytest -q":              true,
		"pytest tests/":                    true,
		"cargo test --all":                 true,
		"make -C sub test":                 true,
		"go build ./... | tee log":         false,
		"echo go test":                     false,
		"make build":                       false,
		"grep -r pytest .":                 false,
		"go vet ./... && go test ./x":      true,
	} {
		if got := bestof.IsTestCommand(cmd); got != want {
			t.Errorf("IsTestCommand(%q) = %v", cmd, got)
		}
	}
}

// A candidate whose work cannot be committed (it left git's index
// locked) is reported failed with git's reason; the run goes on.
func TestCandidateLeftLock(t *testing.T) {
	ctx := context.Background()
	r := repo(t)
	o := bestof.Options{
		Worktrees: worktree.Options{Dir: filepath.Join(t.TempDir(), "wt")},
		Log:       &fakeLog{rows: map[string][]session.Row{}},
		Runner: func(ctx context.Context, dir, task string) bestof.Outcome {
			os.WriteFile(filepath.Join(dir, "f.txt"), []byte("f\n"), 0o644)
			if candidateOf(dir) == 2 {
				out, err := exec.Command("git", "-C", dir, "rev-parse", "--git-path", "index.lock").Output()
				if err != nil {
					return bestof.Outcome{Err: err}
				}
				p := strings.TrimSpace(string(out))
				if !filepath.IsAbs(p) {
					p = filepath.Join(dir, p)
				}
				os.WriteFile(p, nil, 0o644)
			}
			return bestof.Outcome{}
		},
	}
	res, err := bestof.Run(ctx, o, r, "task", 2)
	if err != nil {
		t.Fatal(err)
	}
	c1, _ := res.Candidate(1)
	c2, _ := res.Candidate(2)
	if c1.Status != bestof.StatusOK || !c1.Changed() {
		t.Fatalf("candidate 1 %+v", c1)
	}
	if c2.Status != bestof.StatusFailed || !strings.Contains(c2.Error, "index.lock") {
		t.Fatalf("candidate 2 %+v", c2)
	}
}
