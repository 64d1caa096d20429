package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"meka.dev/meka/internal/testenv"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

// candidateModel is an OpenAI-compatible server that answers each best-of
// candidate from a script of its own: candidates run at once, so one
// script's rounds would go to whichever asks first. A request names its
// candidate in its system prompt (the working directory, the branch).
type candidateModel struct {
	handlers map[int]*modeltest.Handler
}

var candidateRe = regexp.MustCompile(`best-of-[0-9a-f]+-([0-9]+)`)

func (m candidateModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	match := candidateRe.FindSubmatch(body)
	if match == nil {
		http.Error(w, "no best-of candidate in the request", http.StatusBadRequest)
		return
	}
	k, _ := strconv.Atoi(string(match[1]))
	h, ok := m.handlers[k]
	if !ok {
		http.Error(w, "no script for candidate "+string(match[1]), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	h.ServeHTTP(w, r)
}

func candidateServer(t *testing.T, scripts map[int]string) (url string, handlers map[int]*modeltest.Handler) {
	t.Helper()
	handlers = map[int]*modeltest.Handler{}
	for k, src := range scripts {
		s, err := script.Parse([]byte(src))
		if err != nil {
			t.Fatalf("candidate %d: %v", k, err)
		}
		handlers[k] = modeltest.NewHandler(s)
	}
	srv := httptest.NewServer(candidateModel{handlers: handlers})
	t.Cleanup(srv.Close)
	return srv.URL, handlers
}

// writes is a candidate's script: write its file, maybe run a test
// command, and say what it did; then the rounds of later turns.
func writes(k int, test string, later ...string) string {
	rounds := []string{fmt.Sprintf(`{"tool_calls":[{"id":"w","name":"file_write","arguments":{"path":"c%d.txt","content":"from %d\n"}}]}`, k, k)}
	if test != "" {
		args, _ := json.Marshal(map[string]string{"command": test})
		rounds = append(rounds, fmt.Sprintf(`{"tool_calls":[{"id":"t","name":"shell_execute","arguments":%s}]}`, args))
	}
	rounds = append(rounds, fmt.Sprintf(`{"text":"candidate %d wrote c%d.txt"}`, k, k))
	rounds = append(rounds, later...)
	return `{"rounds":[` + strings.Join(rounds, ",") + `]}`
}

const failing = `{"rounds":[{"error":{"status":400,"body":"{\"error\":{\"message\":\"candidate rejected\"}}"}}]}`

// bestOfRepo is a git repository with one commit, and the environment
// meka runs in: a private home, the model at url, a git identity and no
// git config of the machine's.
func bestOfRepo(t *testing.T, url string) (repo string, env []string, git func(string) string) {
	t.Helper()
	repo = testenv.GitRepo(t, map[string]string{"base.txt": "base\n"})
	env = isolatedEnv(t, append([]string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + url + "/v1"}, testenv.GitEnv...)...)
	git = func(script string) string {
		t.Helper()
		return strings.TrimSpace(testenv.Sh(t, repo, script))
	}
	return repo, env, git
}

// meka best-of 3 on a real repository against a model speaking OpenAI's
// wire format: each candidate, a session of its own in its own worktree,
// writes a different file; the report shows each one's diff stat, test
// runs and summary; answering 2 merges candidate 2's file into main with a
// merge commit and removes the other worktrees and branches; candidate
// 2's session is recorded and resumes with meka -r.
func TestBestOfPickEndToEnd(t *testing.T) {
	url, handlers := candidateServer(t, map[int]string{
		1: writes(1, ""),
		2: writes(2, "go test ./... 2>/dev/null; exit 0", `{"text":"resumed"}`),
		3: writes(3, "go test ./..."),
	})
	repo, env, git := bestOfRepo(t, url)

	out, errOut, code := runIn(t, repo, env, "2\n", "--permission", "unrestricted", "best-of", "3", "write", "your", "file")
	if code != 0 {
		t.Fatalf("best-of: code %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	for _, want := range []string{
		"[1] ok", "[2] ok", "[3] ok",
		"c1.txt | 1 +", "c2.txt | 1 +", "c3.txt | 1 +",
		"tests     none run",
		"go test ./... 2>/dev/null; exit 0 (passed)",
		"go test ./... (failed, exit 1)",
		"candidate 2 wrote c2.txt",
		"Keep which candidate?",
		"Candidate 2 (merge) is in main",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if got := git("git ls-files"); got != "base.txt\nc2.txt" {
		t.Fatalf("main holds %q", got)
	}
	if got := git("git log -1 --format=%P | wc -w"); got != "2" {
		t.Fatalf("the head is not a merge commit (%s parents)", got)
	}
	branches := git("git branch --list 'meka/*' --format='%(refname:short)'")
	if !regexp.MustCompile(`^meka/best-of-[0-9a-f]+-2$`).MatchString(branches) {
		t.Fatalf("branches left: %q", branches)
	}
	list, _, _ := run(t, repo, env, "worktrees", "list")
	fields := strings.Fields(list)
	if len(fields) != 3 || !strings.HasSuffix(fields[0], "-2") {
		t.Fatalf("worktrees left: %q", list)
	}
	if git("git worktree list | wc -l") != "2" {
		t.Fatalf("git still has the removed worktrees: %s", git("git worktree list"))
	}

	id := regexp.MustCompile(`\[2\] ok\n    session   (\S+)`).FindStringSubmatch(out)
	if id == nil {
		t.Fatalf("no session for candidate 2 in:\n%s", out)
	}
	again, errOut, code := run(t, repo, env, "-r", id[1], "--permission", "unrestricted", "--oneshot", "anything else?")
	if code != 0 || again != "resumed\n" {
		t.Fatalf("meka -r on candidate 2's session: code %d %q %q", code, again, errOut)
	}
	if handlers[1].Remaining() != 0 || handlers[3].Remaining() != 0 {
		t.Fatal("a candidate did not play its script through")
	}
}

// best-of --json prints one object and merges nothing without --pick; a
// candidate whose model fails is reported as failed and the others are
// not; every worktree is kept.
func TestBestOfJSONFailedCandidate(t *testing.T) {
	url, _ := candidateServer(t, map[int]string{1: writes(1, "make test"), 2: failing, 3: writes(3, "")})
	repo, env, git := bestOfRepo(t, url)

	out, errOut, code := runIn(t, repo, env, "", "--permission", "unrestricted", "best-of", "3", "--json", "write your file")
	if code != 0 {
		t.Fatalf("best-of --json: code %d\n%s\n%s", code, out, errOut)
	}
	var res struct {
		ID, Task, Branch, Base string
		Picked                 int
		Removed                []string
		Candidates             []struct {
			ID        int    `json:"id"`
			SessionID string `json:"session_id"`
			Worktree  string `json:"worktree"`
			Path      string `json:"path"`
			Branch    string `json:"branch"`
			Status    string `json:"status"`
			Error     string `json:"error"`
			DiffStat  string `json:"diff_stat"`
			Files     []struct {
				Path  string `json:"path"`
				Added int    `json:"added"`
			} `json:"files"`
			Tests []struct {
				Command  string `json:"command"`
				ExitCode *int   `json:"exit_code"`
				Status   string `json:"status"`
			} `json:"tests"`
			Summary string `json:"summary"`
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
	}
	if res.Task != "write your file" || res.Branch != "main" || res.Picked != 0 || len(res.Removed) != 0 || len(res.Candidates) != 3 {
		t.Fatalf("result %+v", res)
	}
	for _, c := range res.Candidates {
		if c.SessionID == "" || c.Worktree != fmt.Sprintf("best-of-%s-%d", res.ID, c.ID) || c.Branch != "meka/"+c.Worktree || c.Path == "" {
			t.Errorf("candidate %+v", c)
		}
		switch c.ID {
		case 2:
			if c.Status != "failed" || !strings.Contains(c.Error, "400") || len(c.Files) != 0 || c.DiffStat != "" {
				t.Errorf("the failing candidate: %+v", c)
			}
		default:
			file := fmt.Sprintf("c%d.txt", c.ID)
			if c.Status != "ok" || len(c.Files) != 1 || c.Files[0].Path != file || c.Files[0].Added != 1 ||
				!strings.Contains(c.DiffStat, file) || c.Summary != fmt.Sprintf("candidate %d wrote %s", c.ID, file) {
				t.Errorf("candidate %d: %+v", c.ID, c)
			}
		}
	}
	if t1 := res.Candidates[0].Tests; len(t1) != 1 || t1[0].Command != "make test" || t1[0].Status == "" {
		t.Errorf("candidate 1's make test: %+v", t1)
	}
	if len(res.Candidates[2].Tests) != 0 {
		t.Errorf("candidate 3 ran no test: %+v", res.Candidates[2].Tests)
	}
	if got := git("git ls-files"); got != "base.txt" {
		t.Fatalf("--json without --pick merged: %q", got)
	}
	if list, _, _ := run(t, repo, env, "worktrees", "list"); strings.Count(list, "\n") != 3 {
		t.Fatalf("worktrees kept: %q", list)
	}
}

// Every candidate failing is exit 1, their empty worktrees removed;
// outside a git repository, or with uncommitted changes, best-of is
// refused (exit 2) saying what to do, before any model request.
func TestBestOfRefusedAndAllFailed(t *testing.T) {
	url, handlers := candidateServer(t, map[int]string{1: failing, 2: failing})
	repo, env, git := bestOfRepo(t, url)

	out, errOut, code := runIn(t, repo, env, "", "--permission", "unrestricted", "best-of", "2", "do it")
	if code != 1 || !strings.Contains(errOut, "every candidate failed") || !strings.Contains(out, "[2] failed") {
		t.Fatalf("all failed: code %d\n%s\n%s", code, out, errOut)
	}
	if list, _, _ := run(t, repo, env, "worktrees", "list"); list != "" {
		t.Fatalf("worktrees left: %q", list)
	}
	if got := git("git branch --list 'meka/*'"); got != "" {
		t.Fatalf("branches left: %q", got)
	}

	_, errOut, code = runIn(t, t.TempDir(), env, "", "best-of", "2", "do it")
	if code != 2 || !strings.Contains(errOut, "not in a git repository") {
		t.Fatalf("outside git: code %d %q", code, errOut)
	}
	git("echo changed > base.txt")
	_, errOut, code = runIn(t, repo, env, "", "best-of", "2", "do it")
	if code != 2 || !strings.Contains(errOut, "git stash") {
		t.Fatalf("dirty tree: code %d %q", code, errOut)
	}
	_, errOut, code = runIn(t, repo, env, "", "best-of", "9", "do it")
	if code != 2 || !strings.Contains(errOut, "at most 8") {
		t.Fatalf("nine: code %d %q", code, errOut)
	}
	if n := len(handlers[1].Requests()) + len(handlers[2].Requests()); n != 2 {
		t.Fatalf("%d model requests; the refusals sent some", n)
	}
}
