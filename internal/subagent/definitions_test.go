package subagent_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"meka.dev/meka/internal/subagent"
	"meka.dev/meka/permission"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDefinitions(t *testing.T) {
	cwd, user := t.TempDir(), t.TempDir()
	write(t, filepath.Join(cwd, ".meka", "agents", "reviewer.md"), "---\ndescription: Reviews a change\ntools: [file_read, \"file_*\"]\npermission: read\nmax_turns: 7\nprofile: fast\n---\nBe terse.\n")
	write(t, filepath.Join(cwd, ".claude", "agents", "explorer.md"), "---\nname: explorer\ndescription: Finds things\ntools: Read, Grep, Bash\nmodel: sonnet\ncolor: blue\n---\nExplore.\n")
	write(t, filepath.Join(cwd, ".claude", "agents", "broken.md"), "---\ndescription: [unclosed\n---\n")
	write(t, filepath.Join(user, "reviewer.md"), "---\ndescription: the user's, shadowed\n---\n")
	write(t, filepath.Join(user, "plain.md"), "Just a prompt.\n")
	defs := subagent.Sources{UserDir: user}.Load(cwd)
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	if !slices.Equal(names, []string{"explorer", "plain", "reviewer"}) {
		t.Fatalf("definitions = %v, want explorer, plain, reviewer (the broken one skipped)", names)
	}
	r := defs[2]
	if r.Description != "Reviews a change" || !slices.Equal(r.Tools, []string{"file_read", "file_*"}) || r.Permission == nil ||
		*r.Permission != permission.Read || r.MaxTurns != 7 || r.Profile != "fast" || r.Prompt != "Be terse." {
		t.Errorf("project reviewer = %+v", r)
	}
	if e := defs[0]; !slices.Equal(e.Tools, []string{"file_read", "file_search", "shell_execute"}) || e.Prompt != "Explore." {
		t.Errorf("claude explorer = %+v, want its tool names mapped", e)
	}
	if p := defs[1]; p.Prompt != "Just a prompt." || p.Description != "" {
		t.Errorf("plain = %+v", p)
	}
	if _, err := (subagent.Sources{}).Find(cwd, "nobody"); err == nil {
		t.Errorf("Find of an unknown name succeeded")
	}
	var unknown []string
	if _, err := subagent.ParseDefinition([]byte("---\nname: x\ncolor: red\n---\nbody"), true, func(f string) { unknown = append(unknown, f) }); err != nil || !slices.Equal(unknown, []string{"color"}) {
		t.Errorf("unknown fields = %v, %v", unknown, err)
	}
	for _, bad := range []string{"---\npermission: root\n---\n", "---\nmax_turns: -1\n---\n", "---\nname: a b\n---\n"} {
		if _, err := subagent.ParseDefinition([]byte(bad), false, nil); err == nil {
			t.Errorf("ParseDefinition(%q) succeeded", bad)
		}
	}
}

func TestSpawnDescriptionListsDefinitionsBounded(t *testing.T) {
	var defs []subagent.Definition
	for i := range 100 {
		defs = append(defs, subagent.Definition{Name: "agent" + strings.Repeat("x", i%5) + string(rune('a'+i%26)), Description: strings.Repeat("does things ", 40)})
	}
	f := newFixture(t, `[]`, nil)
	p := f.parent()
	tools := subagent.Tools(subagent.Options{Spawner: p.Spawner(), Definitions: defs})
	d := tools[0].Spec().Description
	if !strings.Contains(d, "- agenta: does things") || !strings.Contains(d, "more, not listed here") || len(d) > 6<<10 {
		t.Errorf("description (%d bytes) does not list a bounded few:\n%s", len(d), d)
	}
}
