package cli_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/internal/postgres/pgtest"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

// TestPostgresEndToEnd runs the binary on a PostgreSQL store chosen by
// $MEKA_DATABASE_URL: a one-shot turn, then the listings read it back,
// and the SQLite file is never created.
func TestPostgresEndToEnd(t *testing.T) {
	url := pgtest.NewDatabase(t)
	s, err := script.Parse([]byte(`{"rounds":[{"text":"Hello from the model."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.NewServer(t, s)
	work := t.TempDir()
	env := isolatedEnv(t, "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+srv.URL+"/v1", "MEKA_DATABASE_URL="+url)

	out, errOut, code := run(t, work, env, "--oneshot", "say hello")
	if code != 0 || out != "Hello from the model.\n" {
		t.Fatalf("oneshot: code %d stdout %q stderr %q", code, out, errOut)
	}
	list, errOut, code := run(t, work, env, "sessions", "list")
	if code != 0 || !strings.Contains(list, "say hello") {
		t.Fatalf("sessions list: code %d %q %q", code, list, errOut)
	}
	id := strings.Fields(strings.Split(list, "\n")[1])[0]
	show, errOut, code := run(t, work, env, "sessions", "show", id)
	if code != 0 || !strings.Contains(show, "user: say hello") || !strings.Contains(show, "assistant: Hello from the model.") {
		t.Fatalf("sessions show: code %d %q %q", code, show, errOut)
	}
	if out, errOut, code := run(t, work, env, "schedule", "list"); code != 0 {
		t.Fatalf("schedule list: code %d %q %q", code, out, errOut)
	}
	if out, errOut, code := run(t, work, env, "projects", "add", "shop", "--dir", work); code != 0 || out != "added project shop\n" {
		t.Fatalf("projects add: code %d %q %q", code, out, errOut)
	}
	if _, errOut, code := run(t, work, env, "projects", "add", "shop"); code != 1 || !strings.Contains(errOut, "already exists") {
		t.Errorf("projects add twice: code %d %q", code, errOut)
	}
	if out, _, code := run(t, work, env, "projects", "list"); code != 0 || !strings.Contains(out, "shop") {
		t.Errorf("projects list: code %d %q", code, out)
	}
	if out, errOut, code := run(t, work, env, "memories", "list", "--project", "shop"); code != 0 || !strings.Contains(out, "no memories") {
		t.Errorf("memories list: code %d %q %q", code, out, errOut)
	}
	if _, errOut, code := run(t, work, env, "memories", "list", "--project", "nope"); code != 1 || !strings.Contains(errOut, "no such project") {
		t.Errorf("memories of an unknown project: code %d %q", code, errOut)
	}
	for _, e := range env {
		if dir, ok := strings.CutPrefix(e, "MEKA_DATA_DIR="); ok {
			if _, err := os.Stat(filepath.Join(dir, "meka.db")); !os.IsNotExist(err) {
				t.Errorf("the SQLite file exists beside a PostgreSQL store: %v", err)
			}
		}
	}

	bad := isolatedEnv(t, "MEKA_DATABASE_URL=mysql://nope")
	if _, errOut, code := run(t, work, bad, "sessions", "list"); code != 2 || !strings.Contains(errOut, "MEKA_DATABASE_URL") {
		t.Errorf("a bad database url: code %d %q", code, errOut)
	}
}

// TestPostgresGoneMidTurn cuts the database while the model answers: the
// one-shot fails saying the database is unreachable, and the prompt stored
// before the request is still there once the database is back.
func TestPostgresGoneMidTurn(t *testing.T) {
	proxy, url := pgtest.NewProxy(t, pgtest.NewDatabase(t))
	s, err := script.Parse([]byte(`{"rounds":[{"text":"An answer nobody stores."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	model := modeltest.NewHandler(s)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxy.Cut()
		model.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	work := t.TempDir()
	env := isolatedEnv(t, "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+srv.URL+"/v1", "MEKA_DATABASE_URL="+url)

	out, errOut, code := run(t, work, env, "--oneshot", "a question to keep")
	if code == 0 || !strings.Contains(errOut, "database server is unreachable") {
		t.Fatalf("oneshot with the database gone: code %d stdout %q stderr %q", code, out, errOut)
	}
	proxy.Restore()
	list, errOut, code := run(t, work, env, "sessions", "list")
	if code != 0 || !strings.Contains(list, "a question to keep") {
		t.Fatalf("sessions list: code %d %q %q", code, list, errOut)
	}
	id := strings.Fields(strings.Split(list, "\n")[1])[0]
	show, _, _ := run(t, work, env, "sessions", "show", id)
	if !strings.Contains(show, "user: a question to keep") || strings.Contains(show, "An answer nobody stores") {
		t.Errorf("after the outage the session shows %q, want the prompt and no answer", show)
	}
}

// TestServeOnPostgres runs meka serve on a PostgreSQL store: a turn
// started over HTTP reaches the durable feed, streamed back over SSE.
func TestServeOnPostgres(t *testing.T) {
	url := pgtest.NewDatabase(t)
	s, err := script.Parse([]byte(`{"rounds":[{"text":"Served from PostgreSQL."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.NewServer(t, s)
	work := t.TempDir()
	env := isolatedEnv(t, "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+srv.URL+"/v1", "MEKA_DATABASE_URL="+url)
	var dataDir string
	for _, e := range env {
		if d, ok := strings.CutPrefix(e, "MEKA_DATA_DIR="); ok {
			dataDir = d
		}
	}
	cmd := exec.Command(mekaBinary(t), "serve", "--listen", "127.0.0.1:0")
	cmd.Dir, cmd.Env = work, env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	sc := bufio.NewScanner(stderr)
	var base string
	for base == "" && sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "meka serve: listening on "); ok {
			base = u
		}
	}
	if base == "" {
		t.Fatalf("meka serve never said where it listens: %v", sc.Err())
	}
	go io.Copy(io.Discard, stderr)
	tok, err := os.ReadFile(filepath.Join(dataDir, "serve.token"))
	if err != nil {
		t.Fatal(err)
	}
	call := func(method, path, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := call("POST", "/v1/sessions", fmt.Sprintf(`{"cwd":%q}`, work))
	var created struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(res.Body).Decode(&created); err != nil || res.StatusCode != http.StatusCreated || created.ID == "" {
		t.Fatalf("create session: %d %v %+v", res.StatusCode, err, created)
	}
	res.Body.Close()
	if res := call("POST", "/v1/sessions/"+created.ID+"/turns", `{"input":[{"type":"text","text":"hello over http"}]}`); res.StatusCode/100 != 2 {
		t.Fatalf("start turn: %d", res.StatusCode)
	} else {
		res.Body.Close()
	}
	events := call("GET", "/v1/sessions/"+created.ID+"/events?after=0", "")
	defer events.Body.Close()
	lines := bufio.NewScanner(events.Body)
	for lines.Scan() {
		if strings.Contains(lines.Text(), "Served from PostgreSQL.") {
			return
		}
	}
	t.Fatalf("the feed ended without the answer: %v", lines.Err())
}
