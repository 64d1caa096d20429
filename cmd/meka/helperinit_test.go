//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestHelperInitialisesFirst runs meka as the confining helper under
// GODEBUG=inittrace=1 and fails if package os, and so anything that needs
// it (net/http, the provider SDKs, SQLite, every meka package), was
// initialised before the helper executed the command: the helper's init
// must run before them, or every confined command pays for them again.
// An import that reorders initialisation shows here.
func TestHelperInitialisesFirst(t *testing.T) {
	if testing.Short() {
		t.Skip("links the whole binary")
	}
	exe := filepath.Join(t.TempDir(), "meka")
	if out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	// The helper without namespaces of its own: Landlock only.
	cmd := exec.Command(exe, "__meka_sandbox", "p="+sh, "--", "sh", "-c", "echo confined")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if strings.Contains(stderr.String(), "no Landlock") && os.Getenv("MEKA_CI") == "" {
			t.Skip("no Landlock here")
		}
		t.Fatalf("helper: %v\n%s", err, stderr.String())
	}
	if got := strings.TrimSpace(stdout.String()); got != "confined" {
		t.Fatalf("the helper's command printed %q, want %q", got, "confined")
	}
	var inited []string
	for line := range strings.Lines(stderr.String()) {
		if rest, ok := strings.CutPrefix(line, "init "); ok {
			pkg, _, _ := strings.Cut(rest, " ")
			inited = append(inited, pkg)
		}
	}
	if !slices.Contains(inited, "syscall") {
		t.Fatalf("no trace of syscall, which the helper needs, being initialised:\n%s", stderr.String())
	}
	// What needs os initialises after os, which traces its init: the
	// helper must have executed the command before that.
	for _, pkg := range inited {
		if pkg == "os" || strings.HasPrefix(pkg, "meka.dev/") {
			t.Fatalf("%s was initialised before the helper ran; initialised: %s", pkg, strings.Join(inited, " "))
		}
	}
}
