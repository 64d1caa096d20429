package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// docKeys reads the keys in the first column of docs/config.md's table.
func docKeys(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "config.md"))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, line := range strings.Split(string(data), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 6 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		keys = append(keys, strings.Trim(strings.TrimSpace(cells[1]), "`"))
	}
	return keys
}

// The reference lists every key the parser accepts, in the parser's
// order, and nothing else.
func TestDocsListEveryKey(t *testing.T) {
	var want []string
	for _, k := range Keys() {
		want = append(want, k.Path)
	}
	got := docKeys(t)
	for _, k := range want {
		if !slices.Contains(got, k) {
			t.Errorf("docs/config.md does not document %s (%s)", k, Keys()[slices.IndexFunc(Keys(), func(x Key) bool { return x.Path == k })].Type)
		}
	}
	for _, k := range got {
		if !slices.Contains(want, k) {
			t.Errorf("docs/config.md documents %s, which the parser does not accept", k)
		}
	}
	if !t.Failed() && !slices.Equal(got, want) {
		t.Errorf("docs/config.md lists the keys out of the parser's order:\n got %q\nwant %q", got, want)
	}
}

// Every key of Keys parses, and Settings names it as Keys does.
func TestSettingsUseSchemaPaths(t *testing.T) {
	cfg, err := Parse("c.toml", []byte(`default_profile = "a"
[profiles.a]
provider = "openai"
reasoning_effort = "high"
[serve]
listen = "127.0.0.1:9"
[mcp.servers.fs]
command = "mcp-fs"
`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range cfg.Settings {
		got = append(got, s.Key+"="+s.Schema+"@"+string(rune('0'+s.Line)))
	}
	want := []string{"default_profile=default_profile@1", "profiles=profiles@2", "profiles.a=profiles.NAME@2",
		"profiles.a.provider=profiles.NAME.provider@3", "profiles.a.reasoning_effort=profiles.NAME.reasoning_effort@4",
		"serve=serve@5", "serve.listen=serve.listen@6", "mcp=mcp@7", "mcp.servers=mcp.servers@7", "mcp.servers.fs=mcp.servers.NAME@7",
		"mcp.servers.fs.command=mcp.servers.NAME.command@8"}
	if !slices.Equal(got, want) {
		t.Errorf("settings:\n got %q\nwant %q", got, want)
	}
}
