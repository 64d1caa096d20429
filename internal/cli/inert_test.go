package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/internal/config"
)

func TestInertKeysWarnAtLoad(t *testing.T) {
	c := newCLIEnv(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "demo.json"), []byte(`{"rounds":[{"text":"Hello."}]}`), 0o600)
	cfg := filepath.Join(dir, "config.toml")
	os.WriteFile(cfg, []byte(`[profiles.demo]
provider = "script"
script = "demo.json"

[tools]
max_completion_nudges = 4
`), 0o600)
	out, errOut, code := c.meka("", "--config", cfg, "--oneshot", "hi")
	if code != 0 || out != "Hello.\n" {
		t.Fatalf("code %d stdout %q stderr %q", code, out, errOut)
	}
	if strings.Contains(errOut, "serve.listen") {
		t.Errorf("serve.listen is used by meka serve, yet warned about:\n%s", errOut)
	}
	for _, want := range []string{
		cfg + ":6: tools.max_completion_nudges does nothing yet",
	} {
		if strings.Count(errOut, want) != 1 {
			t.Errorf("stderr lacks %q once:\n%s", want, errOut)
		}
	}

	// The nudge cap is live for the other dialects: no warning then.
	os.WriteFile(cfg, []byte("[profiles.demo]\nprovider = \"script\"\nscript = \"demo.json\"\n[tools]\nplan = \"update_plan\"\nmax_completion_nudges = 4\n"), 0o600)
	if _, errOut, code := c.meka("", "--config", cfg, "--oneshot", "hi"); code != 0 || strings.Contains(errOut, "warning") {
		t.Errorf("update_plan: code %d stderr %q", code, errOut)
	}
}

// Each inert key is one the parser accepts and the reference marks as
// not used yet, so neither list outlives the other.
func TestInertKeysAreDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "config.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(doc), "\n") {
		if cells := strings.Split(line, "|"); len(cells) >= 6 {
			rows[strings.Trim(strings.TrimSpace(cells[1]), "`")] = cells[4]
		}
	}
	for _, k := range inertKeys {
		matched := 0
		for _, key := range config.Keys() {
			if key.Path == k.key || strings.HasPrefix(key.Path, k.key+".") {
				matched++
				if k.applies == nil && !strings.Contains(rows[key.Path], "Not used yet") {
					t.Errorf("docs/config.md does not mark %s as not used yet", key.Path)
				}
			}
		}
		if matched == 0 {
			t.Errorf("inert key %s is no key of the parser", k.key)
		}
	}
}
