package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A profile's fallback list is composed into its provider: a 429 moves
// the turn to the next profile, and the switch is a row of the session.
func TestFallbackComposed(t *testing.T) {
	c := newCLIEnv(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.json"), []byte(`{"rounds":[{"error":{"status":429,"body":"slow down"}}]}`), 0o600)
	os.WriteFile(filepath.Join(dir, "b.json"), []byte(`{"rounds":[{"text":"From the fallback."}]}`), 0o600)
	cfg := filepath.Join(dir, "config.toml")
	os.WriteFile(cfg, []byte("default_profile = \"a\"\n[profiles.a]\nprovider = \"script\"\nscript = \"a.json\"\nfallback = [\"b\"]\n\n[profiles.b]\nprovider = \"script\"\nscript = \"b.json\"\n"), 0o600)
	out, errOut, code := c.meka("", "--config", cfg, "--oneshot", "hi")
	if code != 0 || !strings.Contains(out, "From the fallback.") {
		t.Fatalf("code %d stdout %q stderr %q", code, out, errOut)
	}
	list, _, _ := c.meka("", "--config", cfg, "sessions", "list")
	id := strings.Fields(strings.Split(list, "\n")[1])[0]
	js, _, _ := c.meka("", "--config", cfg, "sessions", "show", "--json", id)
	if !strings.Contains(js, `Switched to profile b: profile a failed (script returned HTTP 429: slow down)`) {
		t.Fatalf("no switch row:\n%s", js)
	}
}
