package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/internal/testenv"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

// served is a `meka serve` process on 127.0.0.1.
type served struct {
	cmd   *exec.Cmd
	url   string
	token string
	// stderr is the tail of what the process wrote to stderr after it
	// started listening; stderrDone is closed when it closed stderr.
	stderr     tailBuffer
	stderrDone chan struct{}
}

// tailBuffer keeps the last tailMax bytes written to it.
type tailBuffer struct {
	mu sync.Mutex // guards b
	b  []byte
}

const tailMax = 16 << 20

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > tailMax {
		t.b = append(t.b[:0], t.b[len(t.b)-tailMax:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

func startServe(t testing.TB, dir string, env []string) *served {
	t.Helper()
	cmd := exec.Command(mekaBinary(t), "serve", "--listen", "127.0.0.1:0")
	cmd.Dir, cmd.Env = dir, env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	s := &served{cmd: cmd}
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "meka serve: listening on "); ok {
			s.url = u
			break
		}
	}
	if s.url == "" {
		t.Fatal("meka serve did not start")
	}
	s.stderrDone = make(chan struct{})
	go func() {
		defer close(s.stderrDone)
		io.Copy(&s.stderr, stderr)
	}()
	var data string
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "MEKA_DATA_DIR="); ok {
			data = v
		}
	}
	b, err := os.ReadFile(filepath.Join(data, "serve.token"))
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(filepath.Join(data, "serve.token"))
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v", fi.Mode().Perm())
	}
	s.token = strings.TrimSpace(string(b))
	return s
}

func (s *served) call(t testing.TB, method, path string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+s.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if out != nil {
		json.Unmarshal(b, out)
	}
	return res.StatusCode
}

// feedFrame is a durable frame: its id, type and, for turn events, the
// turn it belongs to.
type feedFrame struct{ id, typ, turnID string }

// events opens the session's feed from lastID and sends its durable
// frames on a channel until the stream ends.
func (s *served) events(t testing.TB, ctx context.Context, sessionID, lastID string) <-chan feedFrame {
	t.Helper()
	path := "/v1/events" // every session's, for an empty sessionID
	if sessionID != "" {
		path = "/v1/sessions/" + sessionID + "/events"
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Last-Event-ID", lastID)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("feed: %v %v", res, err)
	}
	ch := make(chan feedFrame, 1024)
	go func() {
		defer close(ch)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 64<<10), 8<<20)
		var f feedFrame
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if f.id != "" {
					ch <- f
				}
				f = feedFrame{}
			case strings.HasPrefix(line, "id: "):
				f.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				f.typ = line[7:]
			case strings.HasPrefix(line, "data: "):
				var env struct {
					Data struct {
						TurnID string `json:"turn_id"`
					} `json:"data"`
				}
				json.Unmarshal([]byte(line[6:]), &env)
				f.turnID = env.Data.TurnID
			}
		}
	}()
	return ch
}

// A server killed with SIGKILL at random points, restarted on the same
// data directory each time: a client resuming with its last event id
// misses nothing and sees nothing twice, against the feed as stored.
func TestServeKilledResumesExactly(t *testing.T) {
	const runs = 100
	rnd := rand.New(rand.NewPCG(testenv.Seed(t), 1))
	work, data := t.TempDir(), t.TempDir()
	var sessionID, lastID string
	var seen []string
	for i := range runs {
		// Each start: a turn that checks the session reopens, then a turn
		// of several rounds of writes, killed somewhere inside.
		rounds := []string{`{"text":"reopened"}`}
		for r := range 4 {
			rounds = append(rounds, fmt.Sprintf(`{"tool_calls":[{"id":"i%dr%d","name":"file_write","arguments":{"path":"f%d-%d.txt","content":"x"}}]}`, i, r, i, r))
		}
		rounds = append(rounds, `{"text":"written"}`)
		sc, err := script.Parse([]byte(`{"rounds":[` + strings.Join(rounds, ",") + `]}`))
		if err != nil {
			t.Fatal(err)
		}
		model := modeltest.NewServer(t, sc)
		env := isolatedEnv(t, "OPENAI_API_KEY=k", "OPENAI_BASE_URL="+model.URL+"/v1", "MEKA_DATA_DIR="+data)
		srv := startServe(t, work, env)
		if sessionID == "" {
			var rec struct{ ID string }
			if code := srv.call(t, "POST", "/v1/sessions", map[string]any{"cwd": work}, &rec); code != 201 {
				t.Fatalf("create: %d", code)
			}
			sessionID, lastID = rec.ID, "0"
		}
		ctx, cancel := context.WithCancel(t.Context())
		feed := srv.events(t, ctx, sessionID, lastID)
		take := func(stop func(feedFrame) bool) {
			for f := range feed {
				seen = append(seen, f.id)
				lastID = f.id
				if stop(f) {
					return
				}
			}
			t.Fatalf("run %d: the feed ended", i)
		}
		input := func(text string) map[string]any {
			return map[string]any{"input": []map[string]string{{"type": "text", "text": text}}}
		}
		var check struct {
			TurnID string `json:"turn_id"`
		}
		if code := srv.call(t, "POST", "/v1/sessions/"+sessionID+"/turns", input("check"), &check); code != 202 {
			t.Fatalf("run %d: check turn: %d", i, code)
		}
		// The stream resumes where the client stopped, so frames the killed
		// server committed after that (up to the last turn's own end) come
		// first: wait for this turn's end, not any.
		take(func(f feedFrame) bool { return f.typ == "turn.completed" && f.turnID == check.TurnID })
		if code := srv.call(t, "POST", "/v1/sessions/"+sessionID+"/turns", input("write"), nil); code != 202 {
			t.Fatalf("run %d: work turn: %d", i, code)
		}
		k := 1 + rnd.IntN(12)
		n := 0
		take(func(feedFrame) bool { n++; return n >= k })
		srv.cmd.Process.Signal(syscall.SIGKILL)
		srv.cmd.Wait()
		cancel()
		for f := range feed { // what was already on the wire before the kill
			seen = append(seen, f.id)
			lastID = f.id
		}
	}
	// What the client saw is the stored feed of the session, in order,
	// each id once, up to the last id it saw.
	db, err := sqlite.Open(t.Context(), filepath.Join(data, "meka.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stored, err := db.Feed().After(t.Context(), 0, sessionID, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range stored {
		id := fmt.Sprint(e.ID)
		want = append(want, id)
		if id == lastID {
			break
		}
	}
	if strings.Join(seen, " ") != strings.Join(want, " ") {
		t.Fatalf("client saw %d ids, the feed holds %d up to %s:\nseen %v\nwant %v", len(seen), len(want), lastID, seen, want)
	}
}
