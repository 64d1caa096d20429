package lsp_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"meka.dev/meka/internal/lsp"
)

// Servers names each language's server as the configuration has it and
// finds its program on the servers' PATH; only a default program is
// asked its version the Language's way.
func TestServers(t *testing.T) {
	bin := t.TempDir()
	for _, name := range []string{"gopls", "clangd"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Not executable: not a server.
	if err := os.WriteFile(filepath.Join(bin, "rust-analyzer"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(bin, "clangd")
	m := lsp.New(lsp.Options{
		Servers: map[string][]string{"python": {}, "c": {own, "--log=error"}, "typescript": {"/nowhere/tsls"}},
		Env:     []string{"PATH=" + bin},
	})
	got := m.Servers()
	if len(got) != len(lsp.Languages) {
		t.Fatalf("%d servers, want one per language", len(got))
	}
	by := map[string]lsp.Server{}
	for _, s := range got {
		by[s.Language] = s
	}
	if s := by["go"]; s.Err != nil || s.Path != filepath.Join(bin, "gopls") || s.Configured || !slices.Equal(s.Version, []string{"version"}) {
		t.Errorf("go: %+v", s)
	}
	if s := by["c"]; s.Err != nil || s.Path != own || !s.Configured || !slices.Equal(s.Command, []string{own, "--log=error"}) ||
		!slices.Equal(s.Version, []string{"--version"}) {
		t.Errorf("c, configured by path: %+v", s)
	}
	if s := by["rust"]; s.Err == nil || s.Path != "" {
		t.Errorf("rust, not executable: %+v", s)
	}
	if s := by["typescript"]; s.Err == nil || !s.Configured || s.Version != nil {
		t.Errorf("typescript, configured and missing: %+v", s)
	}
	if s := by["python"]; len(s.Command) != 0 || !s.Configured {
		t.Errorf("python, turned off: %+v", s)
	}
}
