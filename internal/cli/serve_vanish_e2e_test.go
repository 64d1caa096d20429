package cli_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/internal/testenv"
)

// A client of a quiet feed that vanishes without a FIN (blackholed: it
// neither acknowledges nor closes) is released within a few heartbeats.
// Its keepalives never fill the socket's send buffer, so no write blocks
// and the write deadline never fires; the kernel's own retransmissions
// would take about 15 minutes to give up. TCP_USER_TIMEOUT ends it.
func TestServeQuietStreamVanished(t *testing.T) {
	ran, blackhole := soakInNamespace(t)
	if ran {
		return
	}
	if !blackhole {
		testenv.Skip(t, "needs a network namespace to blackhole a client in")
	}
	work := t.TempDir()
	env := isolatedEnv(t, "OPENAI_API_KEY=k", "OPENAI_BASE_URL=http://127.0.0.1:1/v1")
	cfgDir := filepath.Join(strings.TrimPrefix(env[2], "XDG_CONFIG_HOME="), "meka")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := "[serve]\nstream_heartbeat = \"1s\"\nstream_write_timeout = \"1s\"\n"
	if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, work, env)
	var rec struct{ ID string }
	if code := srv.call(t, "POST", "/v1/sessions", map[string]any{"cwd": work}, &rec); code != 201 {
		t.Fatalf("create: %d", code)
	}
	u, _ := url.Parse(srv.url)
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: vanishedAddr}}
	c, err := d.DialContext(t.Context(), "tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /v1/sessions/%s/events HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", rec.ID, u.Host, srv.token)
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("stream: %v %v", res, err)
	}
	if rt := srv.runtime(t); rt.Streams != 1 {
		t.Fatalf("%d streams served, want 1", rt.Streams)
	}
	vanish(t)
	// Heartbeat 1 s, then 1 s unacknowledged, then the next heartbeat
	// fails: polled for up to 10 s.
	if rt := srv.waitRuntime(t, func(rt runtimeStats) bool { return rt.Streams == 0 }); rt.Streams != 0 {
		t.Fatalf("the vanished client's stream is still served")
	}
}
