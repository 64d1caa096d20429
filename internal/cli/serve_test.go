package cli

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/internal/config"
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

// A webhook's secret file is read as the token file is: missing, readable
// by others or not a whsec_ secret, it is refused naming the webhook.
func TestServeWebhookSecretFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	os.WriteFile(good, []byte("whsec_"+base64.StdEncoding.EncodeToString([]byte("0123456789abcdef01234567"))+"\n"), 0o600)
	open := filepath.Join(dir, "open")
	os.WriteFile(open, []byte("whsec_x"), 0o644)
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("whsec_"+base64.StdEncoding.EncodeToString([]byte("short"))), 0o600)
	hooks, err := webhooks([]config.Webhook{{Name: "ops", URL: "https://example.test/h", SecretFile: good, Events: []string{"*"}}})
	if err != nil || len(hooks) != 1 || string(hooks[0].Secret) != "0123456789abcdef01234567" {
		t.Fatalf("good secret: %+v %v", hooks, err)
	}
	for file, want := range map[string]string{filepath.Join(dir, "missing"): "no such file", open: "chmod 600", short: "at least 24 bytes"} {
		_, err := webhooks([]config.Webhook{{Name: "ops", URL: "https://example.test/h", SecretFile: file}})
		if err == nil || !strings.Contains(err.Error(), "webhook ops") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", filepath.Base(file), err, want)
		}
	}
}
