package fstool

import (
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/internal/sandbox"
	"meka.dev/meka/permission"
)

// meka's data directory in the workspace, hidden (Roots.Hide): file_read
// and file_write refuse it with the reason, file_find and file_search
// pass it over, and only the session's scratchpad in it stays readable.
func TestHiddenDataDir(t *testing.T) {
	cwd := tempDir(t)
	data := filepath.Join(cwd, "data")
	scratch := filepath.Join(data, "sessions", "s1", "scratch")
	writeFiles(t, cwd, map[string]string{
		"main.go":                           "package main // needle\n",
		"data/serve.token":                  "needle-token\n",
		"data/sessions/s2/scratch/b.txt":    "needle other session\n",
		"data/sessions/s1/scratch/mine.txt": "needle mine\n",
	})
	roots, err := sandbox.NewRoots(cwd, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, cwd, Options{Roots: roots.Hide([]string{data}, []string{scratch}), ScratchDir: scratch})
	for _, level := range []permission.Level{permission.Read, permission.Workspace} {
		hl := h.at(level)
		if r := hl.run("file_read", M{"path": "data/serve.token"}); !r.IsError || !strings.Contains(text(r), "meka's own data") || strings.Contains(text(r), "needle-token") {
			t.Errorf("%s: file_read of the serve token: %s", level, text(r))
		}
		if r := hl.ok("file_read", M{"path": "data/sessions/s1/scratch/mine.txt"}); !strings.Contains(text(r), "needle mine") {
			t.Errorf("%s: the own scratchpad: %s", level, text(r))
		}
		found := text(hl.ok("file_find", M{"pattern": "**"}))
		searched := text(hl.ok("file_search", M{"pattern": "needle"}))
		for _, out := range []string{found, searched} {
			if strings.Contains(out, "serve.token") || strings.Contains(out, "s2") || !strings.Contains(out, "main.go") {
				t.Errorf("%s: a walk did not pass the data dir over:\n%s", level, out)
			}
		}
	}
	if r := h.run("file_write", M{"path": "data/serve.token", "content": "x"}); !r.IsError || !strings.Contains(text(r), "meka's own data") {
		t.Errorf("file_write of the serve token: %s", text(r))
	}
	// Started inside it, the user means it: nothing is hidden.
	inside, err := sandbox.NewRoots(data, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if inside.Hide([]string{data}, nil).Hidden(filepath.Join(data, "serve.token")) {
		t.Error("the data dir holding the cwd is hidden")
	}
}
