package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The GitHub Action's run step, run as a workflow would run it: the
// built meka on PATH, the prompt in the environment, outputs written to
// $GITHUB_OUTPUT; every output action.yml declares is one the step
// writes.
func TestGitHubAction(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil {
		if os.Getenv("MEKA_CI") != "" {
			t.Fatal("jq is missing")
		}
		t.Skip("jq is missing")
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var action struct {
		Inputs  map[string]struct{ Default string }
		Outputs map[string]struct{ Value string }
		Runs    struct {
			Using string
			Steps []struct {
				ID  string
				Run string
				Env map[string]string
			}
		}
	}
	if err := yaml.Unmarshal(b, &action); err != nil {
		t.Fatal(err)
	}
	if action.Runs.Using != "composite" || action.Inputs["permission"].Default != "workspace" {
		t.Fatalf("action: %+v", action)
	}

	srv := serve(t, `[{"text":"The build is green; nothing to fix.","usage":{"input_tokens":120,"output_tokens":9}}]`)
	env := configured(t, srv, "")
	bin := filepath.Dir(mekaBinary(t))
	work, tmp := t.TempDir(), t.TempDir()
	out := filepath.Join(tmp, "github_output")
	script, _ := filepath.Abs(filepath.Join("..", "..", ".github", "meka-action.sh"))
	cmd := exec.CommandContext(t.Context(), "bash", script)
	cmd.Dir = work
	cmd.Env = append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "RUNNER_TEMP="+tmp, "GITHUB_OUTPUT="+out,
		"MEKA_PROMPT=why is the build red? $(touch pwned)", "MEKA_PERMISSION=read", "MEKA_ACTION_PROFILE=test")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	written, _ := os.ReadFile(out)
	got := string(written)
	for _, want := range []string{"The build is green; nothing to fix.", `usage={"input_tokens":120,"output_tokens":9}`, "status=completed", "session-id="} {
		if !strings.Contains(got, want) {
			t.Errorf("outputs lack %q:\n%s", want, got)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "pwned")); err == nil {
		t.Fatal("the prompt went through a shell")
	}
	if reqs := srv.Requests(); len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), "$(touch pwned)") {
		t.Fatal("the prompt did not reach the model as words")
	}
	ref := regexp.MustCompile(`steps\.run\.outputs\.([a-z-]+)`)
	for name, o := range action.Outputs {
		m := ref.FindStringSubmatch(o.Value)
		if m == nil || !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(m[1])+`(=|<<)`).MatchString(got) {
			t.Errorf("output %s (%s) is not written by the run step", name, o.Value)
		}
	}
}
