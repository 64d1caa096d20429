package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// cliEnv runs the command line in-process over a data directory.
type cliEnv struct {
	t       *testing.T
	dataDir string
	env     map[string]string
	tty     bool
}

func newCLIEnv(t *testing.T) *cliEnv {
	home := t.TempDir()
	return &cliEnv{t: t, dataDir: filepath.Join(home, "data"), env: map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "config")}}
}

func (c *cliEnv) meka(stdin string, args ...string) (stdout, stderr string, code int) {
	c.t.Helper()
	var o, e bytes.Buffer
	g := &globals{stdin: strings.NewReader(stdin), stdout: &o, stderr: &e,
		getenv: func(k string) string { return c.env[k] }, now: func() time.Time { return fixtureNow },
		isTerminal: func() bool { return c.tty }}
	root := newRoot(g)
	root.SetArgs(append([]string{"--data-dir", c.dataDir}, args...))
	root.SetOut(&o)
	root.SetErr(&e)
	code = exitCode(root.ExecuteContext(c.t.Context()), &e)
	return o.String(), e.String(), code
}

func (c *cliEnv) db() *sqlite.DB {
	c.t.Helper()
	if err := os.MkdirAll(c.dataDir, 0o700); err != nil {
		c.t.Fatal(err)
	}
	db, err := sqlite.Open(c.t.Context(), filepath.Join(c.dataDir, "meka.db"), sqlite.Options{})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { db.Close() })
	return db
}

// threeTurns stores a session of three turns, two rows each.
func threeTurns(t *testing.T, st session.Store) string {
	t.Helper()
	m, err := st.Create(t.Context(), session.Meta{Cwd: "/w", Title: "three turns"})
	if err != nil {
		t.Fatal(err)
	}
	for turn := int64(1); turn <= 3; turn++ {
		_, err := st.Append(t.Context(), m.ID, []session.Row{
			{Turn: turn, Entry: session.UserMessage{Parts: model.Parts{model.Text{Text: "question"}}}},
			{Turn: turn, Entry: session.AssistantMessage{Parts: model.Parts{model.Text{Text: "answer"}}}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return m.ID
}

func turnsOf(t *testing.T, st session.Store, id string) []int64 {
	t.Helper()
	rows, err := st.Rows(t.Context(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var turns []int64
	for _, r := range rows {
		turns = append(turns, r.Turn)
	}
	return turns
}

func TestSessionsFork(t *testing.T) {
	c := newCLIEnv(t)
	st := c.db().Sessions()
	id := threeTurns(t, st)

	out, errOut, code := c.meka("", "sessions", "fork", id[:8], "--turn", "2")
	fork := strings.TrimSpace(out)
	if code != 0 || fork == id || !strings.Contains(errOut, "meka -r "+fork[:8]) {
		t.Fatalf("fork: code %d stdout %q stderr %q", code, out, errOut)
	}
	if got := turnsOf(t, st, fork); !slices.Equal(got, []int64{1, 1, 2, 2}) {
		t.Errorf("fork through turn 2 has turns %v", got)
	}
	out, _, code = c.meka("", "sessions", "fork", id)
	if whole := strings.TrimSpace(out); code != 0 || len(turnsOf(t, st, whole)) != 6 {
		t.Errorf("whole fork: code %d %q", code, out)
	}
	if len(turnsOf(t, st, id)) != 6 {
		t.Error("forking changed the original")
	}
	if _, errOut, code := c.meka("", "sessions", "fork", id, "--turn", "4"); code != 2 || !strings.Contains(errOut, "has turns 1 to 3") {
		t.Errorf("fork past the end: code %d %q", code, errOut)
	}
}

func TestSessionsRewind(t *testing.T) {
	c := newCLIEnv(t)
	st := c.db().Sessions()
	id := threeTurns(t, st)

	// Not a terminal and no --yes: refused, nothing dropped.
	if _, errOut, code := c.meka("y\n", "sessions", "rewind", id, "--turn", "1"); code != 2 || !strings.Contains(errOut, "--yes") {
		t.Fatalf("without --yes: code %d %q", code, errOut)
	}
	if _, errOut, code := c.meka("", "sessions", "rewind", id); code != 2 || !strings.Contains(errOut, "needs --turn") {
		t.Fatalf("without --turn: code %d %q", code, errOut)
	}
	// A terminal asks; anything but yes keeps the turns.
	c.tty = true
	if _, errOut, code := c.meka("n\n", "sessions", "rewind", id, "--turn", "2"); code != 1 || !strings.Contains(errOut, "Drop turns 3 to 3 (2 rows)") {
		t.Fatalf("declined: code %d %q", code, errOut)
	}
	if got := turnsOf(t, st, id); len(got) != 6 {
		t.Fatalf("a declined rewind dropped rows: %v", got)
	}
	if out, errOut, code := c.meka("y\n", "sessions", "rewind", id, "--turn", "2"); code != 0 || !strings.Contains(out, "dropped turns 3 to 3") {
		t.Fatalf("confirmed: code %d %q %q", code, out, errOut)
	}
	if got := turnsOf(t, st, id); !slices.Equal(got, []int64{1, 1, 2, 2}) {
		t.Fatalf("after rewind to 2: %v", got)
	}
	c.tty = false
	if _, _, code := c.meka("", "sessions", "rewind", id, "--turn", "1", "--yes"); code != 0 {
		t.Fatalf("--yes: code %d", code)
	}
	if got := turnsOf(t, st, id); !slices.Equal(got, []int64{1, 1}) {
		t.Fatalf("after rewind to 1: %v", got)
	}
	if _, errOut, code := c.meka("", "sessions", "rewind", id, "--turn", "1", "--yes"); code != 2 || !strings.Contains(errOut, "has turns 1 to 1") {
		t.Fatalf("nothing to rewind: code %d %q", code, errOut)
	}

	// A session another meka holds is refused, and keeps its rows.
	held := threeTurns(t, st)
	lock, err := st.Lock(t.Context(), held, session.Holder{Token: "other"})
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(t.Context())
	if _, errOut, code := c.meka("", "sessions", "rewind", held, "--turn", "1", "--yes"); code != 1 || !strings.Contains(errOut, "held by") {
		t.Fatalf("held: code %d %q", code, errOut)
	}
	if len(turnsOf(t, st, held)) != 6 {
		t.Fatal("a held session was rewound")
	}
}

func TestCompletion(t *testing.T) {
	c := newCLIEnv(t)
	// Without a database there is nothing to offer, and none is created.
	if out, _, code := c.meka("", "__complete", "sessions", "show", ""); code != 0 || !strings.HasPrefix(out, ":") {
		t.Fatalf("completion without a database: code %d %q", code, out)
	}
	if _, err := os.Stat(c.dataDir); !os.IsNotExist(err) {
		t.Fatalf("completion created the data directory: %v", err)
	}
	st := c.db().Sessions()
	id := threeTurns(t, st)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"sessions", "show", ""}, []string{id + "\tthree turns"}},
		{[]string{"sessions", "rewind", id[:4]}, []string{id + "\tthree turns"}},
		{[]string{"-r", ""}, []string{id + "\tthree turns"}},
		{[]string{"--permission", ""}, []string{"none", "read", "workspace", "unrestricted"}},
		{[]string{"--provider", ""}, []string{"openai", "anthropic"}},
	} {
		out, errOut, code := c.meka("", append([]string{"__complete"}, tc.args...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || !slices.Equal(lines[:len(lines)-1], tc.want) {
			t.Errorf("complete %q: code %d %q %q", tc.args, code, out, errOut)
		}
	}
	c.env["ANTHROPIC_API_KEY"] = "k"
	out, _, _ := c.meka("", "__complete", "--profile", "")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); !slices.Equal(lines[:len(lines)-1], []string{"anthropic"}) {
		t.Errorf("profiles: %q", out)
	}
}
