package cli_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
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
	rssKiB                  int64
}

func (s *served) sample(t *testing.T, phase string, turns int) soakSample {
	t.Helper()
	rt := s.runtime(t)
	return soakSample{phase: phase, turns: turns, fds: rt.OpenFiles, goroutines: rt.Goroutines, stream: rt.Streams, rssKiB: rt.RSSBytes >> 10}
}

// String is the sample as a row of the curve's table.
func (s soakSample) String() string {
	return fmt.Sprintf("%-13s %6d %5d %10d %7d %8d", s.phase, s.turns, s.fds, s.goroutines, s.stream, s.rssKiB)
}

// soakCurveHeader heads the curve's table.
const soakCurveHeader = "phase          turns   fds goroutines streams  RSS KiB"

// progress appends a sample to the file MEKA_SOAK_CURVE names, if any, as
// it is taken: a full-size run takes a while, and its log comes at the end.
func progress(t *testing.T, s soakSample) {
	t.Helper()
	name := os.Getenv("MEKA_SOAK_CURVE")
	if name == "" {
		return
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %s\n", time.Now().UTC().Format(time.TimeOnly), s)
}

// Where the soak test runs when it blackholes its vanished clients: this
// test binary again, inside a network namespace of its own.
const (
	envSoakNetns = "MEKA_SOAK_NETNS" // set in the re-run inside the namespace
	envNetnsReq  = "MEKA_TEST_NETNS_REQUIRED"
	envE2EBinary = "MEKA_E2E_BINARY" // the meka the outer run built
)

// vanishedAddr is where the clients that vanish connect from; inside the
// namespace, every packet to or from it is dropped once they are
// connected.
var vanishedAddr = net.IPv4(127, 0, 0, 2)

// vanish drops every packet to or from vanishedAddr, on arrival: what
// either side sends leaves as if onto a network that lost it (a drop on
// the way out would tell the sender at once).
func vanish(t *testing.T) {
	t.Helper()
	for _, rule := range [][]string{{"-A", "INPUT", "-s", vanishedAddr.String(), "-j", "DROP"}, {"-A", "INPUT", "-d", vanishedAddr.String(), "-j", "DROP"}} {
		if out, err := exec.Command("iptables", rule...).CombinedOutput(); err != nil {
			t.Fatalf("iptables %s: %v: %s", strings.Join(rule, " "), err, out)
		}
	}
}

// soakInNamespace runs TestServeSoak again in a network namespace of its
// own (unshare, as root or mapped to root), where it may drop packets
// without touching the machine's firewall, and reports whether it did;
// false means this run does the work, blackholing or not.
func soakInNamespace(t *testing.T) (ran, blackhole bool) {
	if os.Getenv(envSoakNetns) != "" {
		return false, true
	}
	unshare := []string{"unshare", "--net"}
	if os.Geteuid() != 0 {
		unshare = append(unshare, "--map-root-user")
	}
	usable := func() error {
		for _, tool := range []string{"unshare", "ip", "iptables"} {
			if _, err := exec.LookPath(tool); err != nil {
				return err
			}
		}
		probe := append(append([]string{}, unshare...), "sh", "-c", "ip link set lo up && iptables -A OUTPUT -d 127.0.0.2 -j DROP")
		if out, err := exec.Command(probe[0], probe[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}
	if err := usable(); err != nil {
		if os.Getenv(envNetnsReq) != "" {
			t.Fatalf("cannot make a network namespace to blackhole clients in: %v", err)
		}
		t.Logf("no network namespace (%v): vanished clients stop reading instead of being blackholed", err)
		return false, false
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := append(unshare, "sh", "-c", `ip link set lo up && exec "$@"`, "sh", self,
		"-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1", "-test.timeout="+flag.Lookup("test.timeout").Value.String())
	cmd := exec.CommandContext(t.Context(), args[0], args[1:]...)
	cmd.Env = append(os.Environ(), envSoakNetns+"=1", envE2EBinary+"="+mekaBinary(t))
	out, err := cmd.CombinedOutput()
	t.Logf("in a network namespace of its own:\n%s", out)
	if err != nil {
		t.Fatalf("the soak test in its namespace: %v", err)
	}
	return true, true
}

// A meka serve left running: many turns spread over sessions, each closed
// after ten, and many feed clients of which half vanish without a FIN.
// The vanished clients' streams are released, and the process's open
// files, goroutines and memory stay flat: the figures at the end are
// those of the middle, within a stated tolerance. The curve is logged.
//
// A vanished client is a peer that neither reads, acknowledges nor
// closes. Where a network namespace can be made (root, or user
// namespaces), the test runs itself in one and drops every packet to and
// from the address those clients connected from, as a peer that lost
// power or a NAT that forgot the connection would: the daemon's writes go
// unacknowledged until its send buffer fills and the write deadline ends
// the stream. Elsewhere the clients only stop reading with a small
// receive window, which the daemon meets the same way (the buffers fill,
// the write times out) but which acknowledges what it has room for.
func TestServeSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak test: skipped under -short")
	}
	ran, blackhole := soakInNamespace(t)
	if ran {
		return
	}
	turns := soakSize(t, "MEKA_SOAK_TURNS", 200)
	streams := soakSize(t, "MEKA_SOAK_STREAMS", 40)
	const perSession = 10

	// The first answers are 4 KiB, so the vanished clients' buffers fill
	// within a few dozen turns; the rest are short, so that at full size
	// the live clients' share of the work stays small.
	rounds := make([]string, turns)
	for i := range rounds {
		n := 4
		if i < 100 {
			n = 800
		}
		rounds[i] = `{"text":"` + strings.Repeat("done ", n) + `"}`
	}
	sc, err := script.Parse([]byte(`{"rounds":[` + strings.Join(rounds, ",") + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	model := modeltest.NewServer(t, sc)
	work := t.TempDir()
	env := isolatedEnv(t, "OPENAI_API_KEY=k", "OPENAI_BASE_URL="+model.URL+"/v1", "GOTRACEBACK=all")
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
	ctx, cancel := context.WithCancel(t.Context())
	defer func() { cancel() }()
	var feed <-chan feedFrame
	done := 0
	turn := func() {
		// Sessions of ten turns, each closed over HTTP before the next is
		// created: a daemon must keep flat across sessions, not while one
		// session's history grows.
		if done%perSession == 0 {
			if rec.ID != "" {
				cancel()
				for range feed {
				}
				if code := srv.call(t, "POST", "/v1/sessions/"+rec.ID+"/close", nil, nil); code != 200 {
					t.Fatalf("close: %d", code)
				}
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
	for range 2 * perSession {
		turn()
	}
	curve := []soakSample{srv.sample(t, "start", done)}
	progress(t, curve[0])

	// Feed clients on the global feed: the even ones read everything, the
	// odd ones vanish.
	u, _ := url.Parse(srv.url)
	live := 0
	var cut atomic.Int64
	reading := func() int { return live - int(cut.Load()) + 1 } // and the session's feed
	for i := range streams {
		d := net.Dialer{}
		if i%2 == 1 {
			d.LocalAddr = &net.TCPAddr{IP: vanishedAddr}
		}
		c, err := d.DialContext(t.Context(), "tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if i%2 == 1 && !blackhole {
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
			go func() {
				io.Copy(io.Discard, br)
				cut.Add(1) // a reader too slow for the daemon (1,024 frames behind) is cut off, by design
			}()
		}
	}
	if blackhole {
		vanish(t)
	}
	curve = append(curve, srv.sample(t, "streams open", done))
	progress(t, curve[len(curve)-1])
	// Ten samples along the way; the fifth is the middle.
	step := max(1, (turns-done)/10)
	first := done
	mid := 0
	for done < turns {
		turn()
		switch {
		case mid == 0 && done-first >= (turns-first)/2:
			// The middle is taken once the vanished clients' writes have
			// timed out (bounded): from there on nothing may grow.
			mid = len(curve)
			m := srv.waitSample(t, done, func(s soakSample) bool { return s.stream == reading() })
			m.phase = "middle"
			curve = append(curve, m)
			progress(t, m)
		case (done-first)%step == 0 || done == turns:
			curve = append(curve, srv.sample(t, fmt.Sprintf("%d%%", 100*(done-first)/(turns-first)), done))
			progress(t, curve[len(curve)-1])
		}
	}
	// The vanished clients' writes time out (1s here) once their buffers
	// are full; wait for what is left, bounded.
	end := srv.waitSample(t, done, func(s soakSample) bool { return s.stream == reading() })
	curve = append(curve, end)
	progress(t, end)
	how := "stopped reading"
	if blackhole {
		how = "blackholed"
	}
	t.Logf("soak: %d turns in %d sessions, %d feed clients (%d vanished without a FIN: %s)", turns, (turns+perSession-1)/perSession, streams, streams-live, how)
	t.Log(soakCurveHeader)
	for _, s := range curve {
		t.Log(s)
	}
	t.Logf("%d live clients cut off as too slow", cut.Load())
	if end.stream != reading() {
		t.Fatalf("%d streams still served at the end, want the %d clients still reading and the session's", end.stream, reading()-1)
	}
	// Flat: from the middle to the end, with the vanished clients gone by
	// then, the figures may not grow beyond a small slack (what
	// database/sql's pool and the runtime keep as they please), and
	// memory beyond a quarter of the middle's, at least 16 MiB (the
	// garbage collector's heap target moves with the live heap). A leak
	// of one file or goroutine a session would add hundreds here at full
	// size and tens at the reduced size.
	middle := curve[mid]
	if middle.stream > live+1 {
		t.Fatalf("%d streams served at the middle: the vanished clients' were not released", middle.stream)
	}
	{
		var bad []string
		if d := end.fds - middle.fds; d > 4 {
			bad = append(bad, fmt.Sprintf("open files grew by %d from the middle to the end (at most 4)", d))
		}
		if d := end.goroutines - middle.goroutines; d > 8 {
			bad = append(bad, fmt.Sprintf("goroutines grew by %d from the middle to the end (at most 8)", d))
		}
		if d, most := end.rssKiB-middle.rssKiB, max(middle.rssKiB/4, 16<<10); d > most {
			bad = append(bad, fmt.Sprintf("RSS grew by %d KiB from the middle to the end (at most %d)", d, most))
		}
		if len(bad) > 0 {
			t.Fatalf("%s; goroutines by creator:\n%s", strings.Join(bad, "; "), srv.goroutineDump(t))
		}
	}
	// And against the start: what the live clients hold, per client,
	// from the sample with every client connected; the rest is back.
	base, open := curve[0], curve[1]
	perFD := float64(open.fds-base.fds) / float64(streams)
	perG := float64(open.goroutines-base.goroutines) / float64(streams)
	if want := base.fds + int(perFD*float64(live)) + 8; end.fds > want {
		t.Errorf("open files grew: %d at the end, want at most %d", end.fds, want)
	}
	if want := base.goroutines + int(perG*float64(live)) + 16; end.goroutines > want {
		t.Errorf("goroutines grew: %d at the end, want at most %d", end.goroutines, want)
	}
}

// waitSample samples until settled says the figures have settled, at
// most 600 times 100 ms apart, and returns the last sample.
func (s *served) waitSample(t *testing.T, turns int, settled func(soakSample) bool) soakSample {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var end soakSample
	for range 600 {
		if end = s.sample(t, "end", turns); settled(end) {
			break
		}
		<-tick.C
	}
	return end
}
