package host_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/tools/fstool"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// editor serves paths under dir from memory, answers ErrNotServed
// elsewhere, and fails with fail when set.
type editor struct {
	dir  string
	buf  map[string]string
	fail error
	// declines answers writes outside dir ErrNotServed.
	declines bool
}

func (e *editor) ReadFile(ctx context.Context, p string) ([]byte, error) {
	if e.fail != nil {
		return nil, e.fail
	}
	if filepath.Dir(p) != e.dir {
		return nil, host.ErrNotServed
	}
	s, ok := e.buf[p]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return []byte(s), nil
}

func (e *editor) WriteFile(ctx context.Context, p string, data []byte) error {
	if e.declines && filepath.Dir(p) != e.dir {
		return host.ErrNotServed
	}
	e.buf[p] = string(data)
	return nil
}

// filesOf opens a session and returns the FS its tools were built with.
func filesOf(t *testing.T, f *fixture) (*host.Session, fstool.FS) {
	t.Helper()
	var got fstool.FS
	f.opts.Tools = func(env host.Env) ([]tool.Tool, error) {
		got = env.Files
		return nil, nil
	}
	s, err := f.host(t).Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return s, got
}

func TestFilesRouteByRead(t *testing.T) {
	f := newFixture(t, `[]`)
	s, files := filesOf(t, f)
	router := files.(fstool.Router)
	dir := t.TempDir()
	onDisk := filepath.Join(dir, "disk.txt")
	if err := os.WriteFile(onDisk, []byte("disk\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// Nothing attached: the disk.
	data, r, err := router.Route(t.Context(), onDisk)
	if err != nil || string(data) != "disk\n" || r.Note != "" {
		t.Fatalf("detached: %q %+v %v", data, r, err)
	}

	ed := &editor{dir: filepath.Join(dir, "proj"), buf: map[string]string{filepath.Join(dir, "proj", "a.txt"): "buffer\n"}}
	s.SetFiles(ed)
	data, r, err = router.Route(t.Context(), filepath.Join(dir, "proj", "a.txt"))
	if err != nil || string(data) != "buffer\n" || r.Note != "" {
		t.Fatalf("served: %q %+v %v", data, r, err)
	}
	if err := r.FS.WriteFile(t.Context(), filepath.Join(dir, "proj", "a.txt"), []byte("edited\n")); err != nil || ed.buf[filepath.Join(dir, "proj", "a.txt")] != "edited\n" {
		t.Fatalf("the write did not go back through the editor: %v", err)
	}

	// Not served: the disk, with a note for the result.
	data, r, err = router.Route(t.Context(), onDisk)
	if err != nil || string(data) != "disk\n" || r.Note == "" {
		t.Fatalf("not served: %q %+v %v", data, r, err)
	}
	if _, ok := r.FS.(fstool.Disk); !ok {
		t.Fatalf("a file the editor does not serve is written through %T", r.FS)
	}

	// Another error fails the call, for a file on disk and for one that
	// is nowhere alike: the client may hold unsaved work either way.
	ed.fail = errors.New("internal error")
	if _, _, err := router.Route(t.Context(), onDisk); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("an editor error on an existing file: %v", err)
	}
	_, r, err = router.Route(t.Context(), filepath.Join(dir, "new.txt"))
	if err == nil || errors.Is(err, fs.ErrNotExist) || r.FS != nil {
		t.Fatalf("an editor error on a new file: %+v %v", r, err)
	}

	s.SetFiles(nil)
	if data, err := files.ReadFile(t.Context(), onDisk); err != nil || string(data) != "disk\n" {
		t.Fatalf("detached again: %q %v", data, err)
	}
}

// A file that exists nowhere yet, inside the session's roots, is created
// through the front door even though it answered the read ErrNotServed
// (ResourceNotFound); only ErrNotServed on the write puts it on disk, and
// the route's note then says so. Outside the roots it goes to the disk.
func TestNewFileThroughFrontDoor(t *testing.T) {
	f := newFixture(t, `[]`)
	s, files := filesOf(t, f)
	router := files.(fstool.Router)
	cwd := s.Meta().Cwd
	ed := &editor{dir: filepath.Join(cwd, "served"), buf: map[string]string{}}
	s.SetFiles(ed)

	created := filepath.Join(cwd, "new.txt")
	_, r, err := router.Route(t.Context(), created)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("route of a new file: %v", err)
	}
	if _, ok := r.FS.(fstool.Disk); ok {
		t.Fatal("a new file inside the roots is routed to the disk")
	}
	if err := r.FS.WriteFile(t.Context(), created, []byte("new\n")); err != nil || ed.buf[created] != "new\n" {
		t.Fatalf("not created through the front door: %v %q", err, ed.buf)
	}
	if _, err := os.Stat(created); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("the new file was also written on disk")
	}
	if n, ok := r.FS.(fstool.Noter); !ok || n.Note() != "" {
		t.Fatal("a write the front door took carries a note")
	}

	// The front door declines the write too: the disk, said in the note.
	ed.declines = true
	declined := filepath.Join(cwd, "declined.txt")
	_, r, _ = router.Route(t.Context(), declined)
	if err := r.FS.WriteFile(t.Context(), declined, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(declined); err != nil || string(data) != "x" {
		t.Fatalf("not on disk: %q %v", data, err)
	}
	if n, ok := r.FS.(fstool.Noter); !ok || !strings.Contains(n.Note(), "written on disk") {
		t.Fatal("the disk fallback is not said")
	}

	// Another error on the write fails it.
	ed.declines = false
	boom := errors.New("the editor is read-only")
	failing := &editor{dir: ed.dir, buf: map[string]string{}}
	s.SetFiles(writeFailer{failing, boom})
	other := filepath.Join(cwd, "other.txt")
	_, r, _ = router.Route(t.Context(), other)
	if err := r.FS.WriteFile(t.Context(), other, []byte("x")); !errors.Is(err, boom) {
		t.Fatalf("write error: %v", err)
	}
	if _, err := os.Stat(other); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("a failed write fell back to the disk")
	}

	// Outside the roots: the disk, as before.
	s.SetFiles(ed)
	outside := filepath.Join(t.TempDir(), "out.txt")
	_, r, _ = router.Route(t.Context(), outside)
	if _, ok := r.FS.(fstool.Disk); !ok || r.Note == "" {
		t.Fatalf("outside the roots: %T %q", r.FS, r.Note)
	}
}

// writeFailer is an editor whose writes fail with err.
type writeFailer struct {
	*editor
	err error
}

func (w writeFailer) WriteFile(context.Context, string, []byte) error { return w.err }

func TestSweepIdle(t *testing.T) {
	f := newFixture(t, `[{"text":"hi"}]`)
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	f.opts.Now = func() time.Time { return time.Unix(0, now.Load()) }
	h := f.host(t)
	s, err := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.SweepIdle(t.Context(), time.Hour); len(got) != 0 {
		t.Fatalf("swept a fresh session: %v", got)
	}
	now.Add(int64(2 * time.Hour))
	if got := h.SweepIdle(t.Context(), time.Hour); len(got) != 1 || got[0] != s.ID() {
		t.Fatalf("swept %v, want %s", got, s.ID())
	}
	if _, ok := h.Get(s.ID()); ok {
		t.Fatal("a swept session is still open")
	}
	// Released, so this host (or another) can take it again.
	again, err := h.Open(t.Context(), s.ID())
	if err != nil || again == s {
		t.Fatalf("reopen after the sweep: %v", err)
	}
}

func TestApprovalsSwitch(t *testing.T) {
	f := newFixture(t, `[{"tool_calls":[{"id":"c1","name":"write"}]},{"text":"done"},{"tool_calls":[{"id":"c2","name":"write"}]},{"text":"done"}]`)
	f.opts.Permissions.Approvals = true
	h := f.host(t)
	s, err := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int32
	s.SetAsker(permission.AskerFunc(func(context.Context, permission.Request) (permission.Decision, error) {
		asked.Add(1)
		return permission.Allow, nil
	}))
	if !s.Approvals() {
		t.Fatal("approvals should start from the policy")
	}
	if _, err := s.Prompt(t.Context()); err != nil {
		t.Fatal(err)
	}
	if asked.Load() != 1 || lastResult(t, s).Status != "ok" {
		t.Fatalf("with approvals on: asked %d, %+v", asked.Load(), lastResult(t, s))
	}
	if err := s.SetApprovals(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	if m, _ := f.db.Sessions().Get(t.Context(), s.ID()); m.Approvals {
		t.Fatal("the switch was not stored")
	}
	if _, err := s.Prompt(t.Context()); err != nil {
		t.Fatal(err)
	}
	if asked.Load() != 1 || lastResult(t, s).Status != "refused" {
		t.Fatalf("with approvals off: asked %d, %+v", asked.Load(), lastResult(t, s))
	}
}

func TestAddRoots(t *testing.T) {
	f := newFixture(t, `[]`)
	var env host.Env
	f.opts.Tools = func(e host.Env) ([]tool.Tool, error) { env = e; return nil, nil }
	h := f.host(t)
	extra, readable := t.TempDir(), t.TempDir()
	if err := h.AddRoots([]string{extra}, []string{readable}); err != nil {
		t.Fatal(err)
	}
	if err := h.AddRoots([]string{filepath.Join(extra, "missing")}, nil); err == nil {
		t.Fatal("a missing directory was added")
	}
	s, err := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cx, _ := host.Canonical(extra)
	cr, _ := host.Canonical(readable)
	if len(env.Meta.AdditionalDirs) != 1 || env.Meta.AdditionalDirs[0] != cx || len(env.ReadableDirs) != 1 || env.ReadableDirs[0] != cr {
		t.Fatalf("env roots: %v %v", env.Meta.AdditionalDirs, env.ReadableDirs)
	}
	if len(s.Meta().AdditionalDirs) != 0 {
		t.Fatalf("host-wide roots were recorded on the session: %v", s.Meta().AdditionalDirs)
	}
}

// updateCounter is a store that counts Update calls.
type updateCounter struct {
	session.Store
	updates atomic.Int32
}

func (u *updateCounter) Update(ctx context.Context, m session.Meta) error {
	u.updates.Add(1)
	return u.Store.Update(ctx, m)
}

// The first message titles the session in the transaction that appends
// it: no write of the title on its own.
func TestTitleStoredWithTheFirstMessage(t *testing.T) {
	f := newFixture(t, `[{"text":"hi"}]`)
	store := &updateCounter{Store: f.opts.Store}
	f.opts.Store = store
	h := f.host(t)
	s, err := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(t.Context(), model.Text{Text: "fix the build"}); err != nil {
		t.Fatal(err)
	}
	if got := s.Meta().Title; got != "fix the build" {
		t.Fatalf("title %q", got)
	}
	stored, err := store.Get(t.Context(), s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if stored.Title != "fix the build" {
		t.Fatalf("stored title %q", stored.Title)
	}
	if n := store.updates.Load(); n != 0 {
		t.Fatalf("%d Update calls for the title", n)
	}
}

func TestTitleAndUpdate(t *testing.T) {
	f := newFixture(t, `[{"text":"hi"},{"text":"again"}]`)
	h := f.host(t)
	s, err := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(t.Context(), model.Text{Text: "  fix   the\nbuild "}, model.Resource{URI: "file:///a/b.go", Name: "b.go", Text: "package b"}); err != nil {
		t.Fatal(err)
	}
	if got := s.Meta().Title; got != "fix the build @b.go" {
		t.Fatalf("title %q", got)
	}
	if err := s.SetLevel(t.Context(), permission.Workspace); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(t.Context(), func(m *session.Meta) { m.Cwd = "/elsewhere/missing" }); err == nil {
		t.Fatal("updated the cwd to a missing directory")
	}
	moved := t.TempDir()
	if err := s.Update(t.Context(), func(m *session.Meta) { m.Profile = "other"; m.Cwd = moved }); err != nil {
		t.Fatal(err)
	}
	stored, err := h.Store().Get(t.Context(), s.ID())
	if err != nil {
		t.Fatal(err)
	}
	canon, _ := filepath.EvalSymlinks(moved)
	if stored.Title != "fix the build @b.go" || stored.Permission != "workspace" || stored.Profile != "other" || stored.Cwd != canon {
		t.Fatalf("stored %+v", stored)
	}
	if _, err := s.Prompt(t.Context(), model.Text{Text: "second"}); err != nil {
		t.Fatal(err)
	}
	if got := s.Meta().Title; got != "fix the build @b.go" {
		t.Fatalf("a later message retitled the session: %q", got)
	}
	again, err := h.Reopen(t.Context(), s.ID())
	if err != nil || again == s || again.Meta().Profile != "other" {
		t.Fatalf("reopen: %v", err)
	}
}

// A front door whose client reads files but leaves writing to meka: the
// tools read and write the disk, and a write's result says the editor's
// buffer now differs.
func TestFilesDivergeNote(t *testing.T) {
	f := newFixture(t, `[]`)
	s, files := filesOf(t, f)
	router := files.(fstool.Router)
	p := filepath.Join(t.TempDir(), "a.txt")
	if err := os.WriteFile(p, []byte("disk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.SetFilesDiverge(true)
	data, r, err := router.Route(t.Context(), p)
	if err != nil || string(data) != "disk\n" || !strings.Contains(r.Note, "buffer of this file now differs") {
		t.Fatalf("diverging: %q %+v %v", data, r, err)
	}
	if _, ok := r.FS.(fstool.Disk); !ok {
		t.Fatalf("written through %T", r.FS)
	}
	s.SetFilesDiverge(false)
	if _, r, _ := router.Route(t.Context(), p); r.Note != "" {
		t.Fatalf("note after the client left: %q", r.Note)
	}
}
