package cli_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

// soakSize reads a size from the environment: small by default (go test
// -race ./... runs it), large when asked. The full size is
// MEKA_SOAK_TURNS=10000 MEKA_SOAK_STREAMS=2000.
func soakSize(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 2 {
		t.Fatalf("%s=%q: want a number of at least 2", name, v)
	}
	return n
}

// soakSample is what a long-running meka serve holds at one moment.
type soakSample struct {
	phase                   string
	turns                   int
	fds, goroutines, stream int
	rssKiB                  int
}

func (s *served) sample(t *testing.T, phase string, turns int) soakSample {
	t.Helper()
	pid := s.cmd.Process.Pid
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := soakSample{phase: phase, turns: turns, fds: len(fds)}
	for line := range strings.Lines(string(st)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			out.rssKiB, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	var rt struct{ Goroutines, Streams int }
	if code := s.call(t, "GET", "/v1/runtime", nil, &rt); code != 200 {
		t.Fatalf("runtime: %d", code)
	}
	out.goroutines, out.stream = rt.Goroutines, rt.Streams
	return out
}

// A meka serve left running: many turns, and many feed clients of which
// half vanish without closing (they stop reading and never send a FIN).
// The vanished clients' streams are released, and the process's open
// files, goroutines and memory end where they started. The curve is
// logged; docs/benchmarks.md has the full-size figures.
func TestServeSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak test: skipped under -short")
	}
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("soak test reads /proc: not on this system")
	}
	turns := soakSize(t, "MEKA_SOAK_TURNS", 200)
	streams := soakSize(t, "MEKA_SOAK_STREAMS", 40)

	// Each answer is 4 KiB, so a client that stops reading fills its
	// socket's buffers within a few hundred turns.
	rounds := make([]string, turns)
	for i := range rounds {
		rounds[i] = `{"text":"` + strings.Repeat("done ", 800) + `"}`
	}
	sc, err := script.Parse([]byte(`{"rounds":[` + strings.Join(rounds, ",") + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	model := modeltest.NewServer(t, sc)
	work := t.TempDir()
	env := isolatedEnv(t, "OPENAI_API_KEY=k", "OPENAI_BASE_URL="+model.URL+"/v1")
	cfgDir := filepath.Join(strings.TrimPrefix(env[2], "XDG_CONFIG_HOME="), "meka")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	// Short stream timeouts, so vanished clients are found within the test.
	cfg := "[serve]\nstream_heartbeat = \"1s\"\nstream_write_timeout = \"1s\"\n"
	if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, work, env)
	var rec struct{ ID string }
	if code := srv.call(t, "POST", "/v1/sessions", map[string]any{"cwd": work}, &rec); code != 201 {
		t.Fatalf("create: %d", code)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer func() { cancel() }()
	feed := srv.events(t, ctx, rec.ID, "")
	done := 0
	turn := func() {
		// A new session every 50 turns, the last one closed: one session's
		// history grows with its turns, which is not what a daemon must keep
		// flat.
		if done > 0 && done%50 == 0 {
			cancel()
			for range feed {
			}
			if code := srv.call(t, "POST", "/v1/sessions/"+rec.ID+"/close", nil, nil); code/100 != 2 {
				t.Fatalf("close: %d", code)
			}
			if code := srv.call(t, "POST", "/v1/sessions", map[string]any{"cwd": work}, &rec); code != 201 {
				t.Fatalf("create: %d", code)
			}
			ctx, cancel = context.WithCancel(t.Context())
			feed = srv.events(t, ctx, rec.ID, "")
		}
		var tr struct {
			TurnID string `json:"turn_id"`
		}
		in := map[string]any{"input": []map[string]string{{"type": "text", "text": "go"}}}
		if code := srv.call(t, "POST", "/v1/sessions/"+rec.ID+"/turns", in, &tr); code != 202 {
			t.Fatalf("turn %d: %d", done, code)
		}
		for f := range feed {
			if f.typ == "turn.completed" && f.turnID == tr.TurnID {
				done++
				return
			}
		}
		t.Fatalf("turn %d: the feed ended", done)
	}
	warm := min(10, turns/2)
	for range warm {
		turn()
	}
	curve := []soakSample{srv.sample(t, "baseline", done)}

	// Feed clients on the global feed: the even ones read everything, the
	// odd ones stop reading with a small window and never close.
	u, _ := url.Parse(srv.url)
	live := 0
	for i := range streams {
		c, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if i%2 == 1 {
			c.(*net.TCPConn).SetReadBuffer(4096)
		}
		fmt.Fprintf(c, "GET /v1/events HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", u.Host, srv.token)
		br := bufio.NewReader(c)
		res, err := http.ReadResponse(br, nil)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("stream %d: %v %v", i, res, err)
		}
		if i%2 == 0 {
			live++
			go io.Copy(io.Discard, br)
		}
	}
	curve = append(curve, srv.sample(t, "streams open", done))
	for done < turns {
		turn()
		if done == warm+(turns-warm)/2 {
			curve = append(curve, srv.sample(t, "middle", done))
		}
	}
	// The vanished clients' writes time out (1s here) once their buffers
	// are full; wait for it, bounded.
	var end soakSample
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for range 600 {
		if end = srv.sample(t, "end", done); end.stream == live+1 {
			break
		}
		<-tick.C
	}
	curve = append(curve, end)
	t.Logf("soak: %d turns, %d feed clients (%d vanished without a FIN)", turns, streams, streams-live)
	t.Logf("%-13s %6s %5s %10s %7s %8s", "phase", "turns", "fds", "goroutines", "streams", "RSS KiB")
	for _, s := range curve {
		t.Logf("%-13s %6d %5d %10d %7d %8d", s.phase, s.turns, s.fds, s.goroutines, s.stream, s.rssKiB)
	}
	base, open := curve[0], curve[1]
	if end.stream != live+1 {
		t.Fatalf("%d streams still served at the end, want the %d clients still reading and the session's", end.stream, live+1)
	}
	// What the live clients hold, per client, from the open sample; the
	// rest must be back to the baseline (slack for the runtime's own).
	perFD := float64(open.fds-base.fds) / float64(streams)
	perG := float64(open.goroutines-base.goroutines) / float64(streams)
	if want := base.fds + int(perFD*float64(live)) + 8; end.fds > want {
		t.Errorf("open files grew: %d at the end, want at most %d", end.fds, want)
	}
	if want := base.goroutines + int(perG*float64(live)) + 16; end.goroutines > want {
		t.Errorf("goroutines grew: %d at the end, want at most %d", end.goroutines, want)
	}
	if want := 2*open.rssKiB + 32<<10; end.rssKiB > want {
		t.Errorf("memory grew: %d KiB at the end, want at most %d", end.rssKiB, want)
	}
}
