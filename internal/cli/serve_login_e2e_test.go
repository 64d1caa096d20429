package cli_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

// A browser signed in to the web app stays signed in when meka serve
// restarts: the cookie's hash is in the database (never the cookie), and
// a session signed out before the restart stays out.
func TestServeBrowserSessionSurvivesRestart(t *testing.T) {
	work, data := t.TempDir(), t.TempDir()
	sc, _ := script.Parse([]byte(`{"rounds":[]}`))
	model := modeltest.NewServer(t, sc)
	env := isolatedEnv(t, "OPENAI_API_KEY=k", "OPENAI_BASE_URL="+model.URL+"/v1", "MEKA_DATA_DIR="+data)
	first := startServe(t, work, env)
	login := func(srv *served) string {
		t.Helper()
		res := exchangeLink(t, http.DefaultClient, serveURL(t, work, env))
		if res.StatusCode != 204 || len(res.Cookies()) != 1 {
			t.Fatalf("log in: %d", res.StatusCode)
		}
		return res.Cookies()[0].Value
	}
	get := func(srv *served, cookie string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.url+"/v1/sessions", nil)
		req.AddCookie(&http.Cookie{Name: "meka_session", Value: cookie})
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	kept, out := login(first), login(first)
	req, _ := http.NewRequest("POST", first.url+"/v1/logout", nil)
	req.Header.Set("Origin", first.url)
	req.AddCookie(&http.Cookie{Name: "meka_session", Value: out})
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 204 {
		t.Fatalf("log out: %v %v", res, err)
	}
	if get(first, kept) != 200 || get(first, out) != 401 {
		t.Fatal("before the restart")
	}
	if err := first.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	first.cmd.Wait()

	second := startServe(t, work, env)
	if code := get(second, kept); code != 200 {
		t.Fatalf("a browser session after the restart: %d, want 200", code)
	}
	if code := get(second, out); code != 401 {
		t.Fatalf("a signed-out session after the restart: %d, want 401", code)
	}
	if code := get(second, "forged"); code != 401 {
		t.Fatalf("an unknown cookie: %d, want 401", code)
	}
	// The database and its journal hold hashes only.
	files, _ := filepath.Glob(filepath.Join(data, "meka.db*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(kept)) {
			t.Fatalf("%s holds a session cookie", filepath.Base(f))
		}
	}
}
