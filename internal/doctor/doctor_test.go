package doctor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/internal/lsp"
	"meka.dev/meka/model"
)

// The table lists every row with its fix, and the verdict names each
// failure; nothing failing says so.
func TestRunVerdict(t *testing.T) {
	var b strings.Builder
	failed := Run(context.Background(), &b,
		ConfigCheck(Config{File: "/etc/meka.toml", Found: true, Profile: "main", Provider: "openai", Model: "m",
			BaseURL: "http://127.0.0.1:9/v1", BaseURLFrom: "config", KeyEnv: "K", KeyNeeded: true}),
		func(context.Context) []Result {
			return []Result{{Check: "database", Status: Fail, Detail: "locked", Fix: "close the other meka"}}
		},
	)
	out := b.String()
	if len(failed) != 2 || failed[0].Check != "api key" || failed[1].Check != "database" {
		t.Fatalf("failed %+v", failed)
	}
	for _, want := range []string{"config    ok      /etc/meka.toml", "profile   ok      main: openai, model m, http://127.0.0.1:9/v1 (config)",
		"api key   FAIL    $K is empty", "→ export K=... (or name another variable in profiles.main.api_key_env)",
		"database  FAIL    locked", "→ close the other meka", "2 checks failed: api key, database. Fix them and run meka doctor again."} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}

	b.Reset()
	if failed := Run(context.Background(), &b, ConfigCheck(Config{File: "/x", Err: errors.New("/x:3: profiles.a.modle: unknown key")})); len(failed) != 1 ||
		!strings.Contains(b.String(), "config  FAIL    /x:3: profiles.a.modle: unknown key") {
		t.Fatalf("config error: %+v\n%s", failed, b.String())
	}

	b.Reset()
	if failed := Run(context.Background(), &b, EndpointCheck(nil, model.Where{}, 0)); failed != nil || !strings.Contains(b.String(), "All checks passed") {
		t.Fatalf("nothing failing: %+v\n%s", failed, b.String())
	}
}

// The data directory is made and written; one that cannot be is a
// failure with what to do.
func TestDataCheck(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	rows := DataCheck(dir, func(context.Context) (string, error) { return "SQLite x: opened", nil })(context.Background())
	if rows[0].Status != Pass || rows[1].Status != Pass {
		t.Fatalf("%+v", rows)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	rows = DataCheck(filepath.Join(file, "data"), func(context.Context) (string, error) { return "", errors.New("no database") })(context.Background())
	if rows[0].Status != Fail || rows[0].Fix == "" || rows[1].Status != Fail || rows[1].Detail != "no database" {
		t.Fatalf("%+v", rows)
	}
}

// Each language's server is listed: found with the first line it prints
// asked its version, found with no way to ask, off, not on PATH (no
// problem), configured and not found, or failing asked its version (both
// warnings). [lsp] off is one row.
func TestLSPCheck(t *testing.T) {
	bin := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(bin, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gopls := script("gopls", `[ "$1" = version ] && printf 'golang.org/x/tools/gopls v0.99.0\n    build info\n'`)
	proxy := script("rust-analyzer", "echo \"error: Unknown binary 'rust-analyzer'\" >&2; exit 1\n")
	pyright := script("pyright-langserver", "exit 1\n")
	servers := []lsp.Server{
		{Language: "go", Command: []string{"gopls"}, Path: gopls, Version: []string{"version"}},
		{Language: "typescript", Command: []string{"/opt/tsls"}, Configured: true, Err: errors.New("/opt/tsls: not found")},
		{Language: "python", Command: []string{"pyright-langserver", "--stdio"}, Path: pyright},
		{Language: "rust", Command: []string{"rust-analyzer"}, Path: proxy, Version: []string{"--version"}},
		{Language: "c", Command: []string{"clangd"}, Err: errors.New("clangd: not on PATH")},
	}
	var b strings.Builder
	if failed := Run(context.Background(), &b, LSPCheck(servers, time.Minute)); failed != nil {
		t.Fatalf("failed %+v", failed)
	}
	out := b.String()
	for _, want := range []string{
		"lsp    ok      go: " + gopls + ", golang.org/x/tools/gopls v0.99.0\n",
		"lsp    warn    typescript: /opt/tsls: not found\n", "→ check lsp.servers.typescript.command; meka runs without it\n",
		"lsp    ok      python: " + pyright + "\n",
		"lsp    warn    rust: " + proxy + ": asked its version, exit status 1: error: Unknown binary 'rust-analyzer'\n",
		"→ it may not start either: repair it, or set lsp.servers.rust.enabled = false\n",
		"lsp    skip    c: clangd: not on PATH; no diagnostics for its files\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}

	// Off in the config; a server that answers nothing is not waited for
	// past the timeout.
	hangs := script("hangs", "exec sleep 600\n")
	rows := LSPCheck([]lsp.Server{{Language: "python", Configured: true},
		{Language: "go", Command: []string{"gopls"}, Path: hangs, Version: []string{"version"}}}, 50*time.Millisecond)(context.Background())
	if len(rows) != 2 || rows[0].Status != Skip || rows[0].Detail != "python: off in the config" ||
		rows[1].Status != Warn || !strings.HasSuffix(rows[1].Detail, "asked its version, no answer within 50ms") {
		t.Errorf("off, and a hung version: %+v", rows)
	}

	rows = LSPCheck(nil, time.Minute)(context.Background())
	if len(rows) != 1 || rows[0].Status != Skip || !strings.Contains(rows[0].Detail, "[lsp] enabled = false") {
		t.Errorf("[lsp] off: %+v", rows)
	}
}
