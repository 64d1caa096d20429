package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The token file is made 0600 once and read back after; one others can
// read is refused, as ssh refuses a key.
func TestServeTokenFile(t *testing.T) {
	dir := t.TempDir()
	tok, err := serveToken(dir)
	if err != nil || len(tok) < 32 {
		t.Fatalf("token %q: %v", tok, err)
	}
	fi, err := os.Stat(filepath.Join(dir, "serve.token"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v", fi.Mode().Perm(), err)
	}
	if again, err := serveToken(dir); err != nil || again != tok {
		t.Fatalf("second read %q %v", again, err)
	}
	os.Chmod(filepath.Join(dir, "serve.token"), 0o644)
	if _, err := serveToken(dir); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a readable token file: %v", err)
	}
}
