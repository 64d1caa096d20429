package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"meka.dev/meka/internal/cli"
	"meka.dev/meka/internal/postgres/pgtest"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// mekaBinary builds cmd/meka once per test run.
func mekaBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(envE2EBinary); p != "" {
		return p // built by the run that started this one
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "meka-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "meka")
		out, err := exec.Command("go", "build", "-o", binPath, "meka.dev/meka/cmd/meka").CombinedOutput()
		if err != nil {
			buildErr = &buildError{out: string(out), err: err}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return "build meka: " + e.err.Error() + "\n" + e.out }

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// isolatedEnv is an environment with no config, no keys and private dirs.
// Go's telemetry is off in it: a Go tool meka runs (meka doctor asks
// gopls its version) would otherwise leave a process behind that writes
// into home while the test removes it.
func isolatedEnv(t testing.TB, extra ...string) []string {
	home := t.TempDir()
	config := filepath.Join(home, "config")
	telemetry := filepath.Join(config, "go", "telemetry")
	if err := os.MkdirAll(telemetry, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(telemetry, "mode"), []byte("off\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "XDG_CONFIG_HOME=" + config,
		"MEKA_DATA_DIR=" + filepath.Join(home, "data")}
	return append(env, extra...)
}

func run(t testing.TB, dir string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), mekaBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = env
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return o.String(), e.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), 0
}

func TestOneshotEndToEnd(t *testing.T) {
	s, err := script.Parse([]byte(`{"rounds":[
	 {"text":"Hello from the model.","usage":{"input_tokens":12,"output_tokens":5}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.NewServer(t, s)
	work := t.TempDir()
	env := isolatedEnv(t, "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+srv.URL+"/v1")

	out, errOut, code := run(t, work, env, "--oneshot", "say hello")
	if code != 0 || out != "Hello from the model.\n" {
		t.Fatalf("oneshot: code %d stdout %q stderr %q", code, out, errOut)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || !bytes.Contains(reqs[0].Body, []byte("say hello")) {
		t.Fatalf("requests %+v", reqs)
	}
	if bytes.Contains(reqs[0].Body, []byte("sk-test")) {
		t.Fatal("API key in the request body")
	}

	list, _, code := run(t, work, env, "sessions", "list")
	if code != 0 || !strings.Contains(list, "say hello") {
		t.Fatalf("sessions list: code %d %q", code, list)
	}
	id := strings.Fields(strings.Split(list, "\n")[1])[0]
	show, errOut, code := run(t, work, env, "sessions", "show", id)
	if code != 0 || !strings.Contains(show, "user: say hello") || !strings.Contains(show, "assistant: Hello from the model.") {
		t.Fatalf("sessions show: code %d %q %q", code, show, errOut)
	}
	js, _, code := run(t, work, env, "sessions", "show", "--json", id)
	lines := strings.Split(strings.TrimSpace(js), "\n")
	var first struct {
		Kind string `json:"kind"`
		Turn int    `json:"turn"`
	}
	// The system prompt recorded at creation, then the turn.
	if code != 0 || len(lines) != 3 || json.Unmarshal([]byte(lines[1]), &first) != nil || first.Kind != "user" || first.Turn != 1 {
		t.Fatalf("show --json: %q", js)
	}
}

func TestOneshotExitStatus(t *testing.T) {
	cases := []struct {
		name   string
		rounds string
		code   int
		stderr string
	}{
		{"max_tokens", `[{"text":"cut","stop":"max_tokens"}]`, 3, "max_tokens"},
		{"refusal", `[{"text":"no","stop":"refusal"}]`, 3, "refusal"},
		{"provider error", `[{"error":{"status":400,"body":"model not found"}}]`, 1, "model not found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := script.Parse([]byte(`{"rounds":` + tc.rounds + `}`))
			if err != nil {
				t.Fatal(err)
			}
			srv := modeltest.NewServer(t, s)
			env := isolatedEnv(t, "OPENAI_API_KEY=k", "OPENAI_BASE_URL="+srv.URL+"/v1")
			_, errOut, code := run(t, t.TempDir(), env, "--oneshot", "x")
			if code != tc.code || !strings.Contains(errOut, tc.stderr) {
				t.Fatalf("code %d stderr %q", code, errOut)
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		env := isolatedEnv(t, "OPENAI_API_KEY=k", "OPENAI_BASE_URL=http://127.0.0.1:1/v1")
		_, errOut, code := run(t, t.TempDir(), env, "--oneshot", "x")
		if code != 1 || errOut == "" {
			t.Fatalf("code %d stderr %q", code, errOut)
		}
	})
}

func TestNoProfileExplainsHowToConfigure(t *testing.T) {
	env := isolatedEnv(t)
	_, errOut, code := run(t, t.TempDir(), env, "--oneshot", "x")
	if code != 2 || !strings.Contains(errOut, "OPENAI_API_KEY") || !strings.Contains(errOut, "[profiles.") {
		t.Fatalf("code %d stderr %q", code, errOut)
	}
}

// Main runs in-process too: a bad config names file, line and key, exits
// 2, and writes nothing.
func TestBadConfigWritesNothing(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	os.WriteFile(cfg, []byte("[profiles.local]\nprovider = \"openai\"\nmodle = \"x\"\n"), 0o600)
	data := filepath.Join(dir, "data")
	var out, errOut bytes.Buffer
	code := cli.Main(context.Background(), []string{"--config", cfg, "--data-dir", data, "--oneshot", "hi"}, strings.NewReader(""), &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), "config.toml:3") || !strings.Contains(errOut.String(), "profiles.local.modle") {
		t.Fatalf("code %d stderr %q", code, errOut.String())
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatalf("data dir was created: %v", err)
	}
}

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if code := cli.Main(context.Background(), []string{"--version"}, strings.NewReader(""), &out, &out); code != 0 || !strings.HasPrefix(out.String(), "meka ") {
		t.Fatalf("code %d out %q", code, out.String())
	}
}

// An empty --resume is refused, not taken for a new session, before
// anything is read or written.
func TestEmptyResumeRefused(t *testing.T) {
	for _, args := range [][]string{{"-r", ""}, {"--resume="}, {"--oneshot", "-r", " ", "hi"}} {
		data := filepath.Join(t.TempDir(), "data")
		var out, errOut bytes.Buffer
		code := cli.Main(context.Background(), append([]string{"--data-dir", data}, args...), strings.NewReader(""), &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), "--resume needs a session id") {
			t.Errorf("%q: code %d stderr %q", args, code, errOut.String())
		}
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Errorf("%q: the data dir was created: %v", args, err)
		}
	}
}
