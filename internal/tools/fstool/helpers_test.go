package fstool

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/internal/sandbox"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/tool"
)

// tempDir is t.TempDir with symlinks resolved, as roots hold it.
func tempDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func writeFiles(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readString(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func newRoots(t testing.TB, cwd string, writable, readOnly []string) *sandbox.Roots {
	t.Helper()
	r, err := sandbox.NewRoots(cwd, writable, readOnly)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var fixedNow = func() time.Time { return time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC) }

// toolset builds the tools by name.
func toolset(o Options) map[string]tool.Tool {
	if o.Now == nil {
		o.Now = fixedNow
	}
	m := make(map[string]tool.Tool)
	for _, tl := range New(o) {
		m[tl.Spec().Name] = tl
	}
	return m
}

type harness struct {
	t     testing.TB
	tools map[string]tool.Tool
	cwd   string
	level permission.Level
}

func newHarness(t testing.TB, cwd string, o Options) *harness {
	return &harness{t: t, tools: toolset(o), cwd: cwd, level: permission.Workspace}
}

func (h *harness) at(l permission.Level) *harness {
	c := *h
	c.level = l
	return &c
}

// run calls the tool name with args and fails the test on a Go error.
func (h *harness) run(name string, args any) tool.Result {
	h.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		h.t.Fatal(err)
	}
	tl, ok := h.tools[name]
	if !ok {
		h.t.Fatalf("no tool %s", name)
	}
	v, err := tool.NewValidator([]tool.Tool{tl})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := v.Validate(name, raw); err != nil {
		h.t.Fatalf("%s %s: %v", name, raw, err)
	}
	res, err := tl.Run(h.t.Context(), tool.Call{
		ID: "call_1", Name: name, Arguments: raw, SessionID: "s1", Cwd: h.cwd, Level: h.level,
	})
	if err != nil {
		h.t.Fatalf("%s: %v", name, err)
	}
	return res
}

// ok runs and fails the test on an error result.
func (h *harness) ok(name string, args any) tool.Result {
	h.t.Helper()
	r := h.run(name, args)
	if r.IsError {
		h.t.Fatalf("%s %v: error result: %s", name, args, text(r))
	}
	return r
}

// refused runs and fails the test unless the result is an error.
func (h *harness) refused(name string, args any) string {
	h.t.Helper()
	r := h.run(name, args)
	if !r.IsError {
		h.t.Fatalf("%s %v: want an error result, got: %s", name, args, text(r))
	}
	return text(r)
}

func text(r tool.Result) string {
	var sb strings.Builder
	for _, p := range r.Content {
		if t, ok := p.(model.Text); ok {
			sb.WriteString(t.Text)
		}
	}
	return sb.String()
}

type M = map[string]any
