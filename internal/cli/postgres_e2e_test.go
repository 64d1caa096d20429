package cli_test

import (
	"net/http"
	"net/http/httptest"
	"os"
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
