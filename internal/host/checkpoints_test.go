package host_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/internal/checkpoint"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/testenv"
	"meka.dev/meka/internal/tools/fstool"
	"meka.dev/meka/internal/tools/shelltool"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/tool"
)

// checkpointFixture is a host with the real file and shell tools, a real
// SQLite store and checkpoints on; turn 2 of its script writes a file with
// file_write, edits one with sed -i and deletes one with rm.
func checkpointFixture(t *testing.T) (*fixture, *host.Host, string, string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		testenv.Skip(t, "git is not installed")
	}
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("keep me\n"), 0o644)
	rounds := fmt.Sprintf(`[{"text":"looked"},
	 {"tool_calls":[{"id":"w","name":"file_write","arguments":{"path":%q,"content":"created\n"}}]},
	 {"tool_calls":[{"id":"s","name":"shell_execute","arguments":{"command":"sed -i s/hello/bye/ a.txt && rm b.txt"}}]},
	 {"text":"done"}]`, filepath.Join(dir, "new.txt"))
	f := newFixture(t, rounds)
	f.opts.Permissions = host.Permissions{Default: permission.Unrestricted}
	f.opts.Tools = func(env host.Env) ([]tool.Tool, error) {
		ts := fstool.New(fstool.Options{FS: env.Files})
		return append(ts, shelltool.New(shelltool.Options{Env: os.Environ()})), nil
	}
	cpDir := filepath.Join(t.TempDir(), "checkpoints")
	f.opts.Checkpoints = &host.CheckpointOptions{Dir: cpDir}
	h := f.host(t)
	s, err := h.Create(t.Context(), host.CreateOptions{Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"look around", "change things"} {
		if _, err := s.Prompt(t.Context(), model.Text{Text: p}); err != nil {
			t.Fatal(err)
		}
	}
	id := s.ID()
	if err := h.CloseSession(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dir, "a.txt")); got != "bye\n" {
		t.Fatalf("the turn did not run: a.txt = %q", got)
	}
	return f, h, dir, id
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func lastTurn(t *testing.T, f *fixture, id string) int64 {
	t.Helper()
	tail, err := f.db.Sessions().Tail(context.Background(), id, 1)
	if err != nil || len(tail) == 0 {
		t.Fatalf("tail: %v", err)
	}
	return tail[0].Turn
}

func checkRestored(t *testing.T, dir string) {
	t.Helper()
	if readFile(t, filepath.Join(dir, "a.txt")) != "hello\n" || readFile(t, filepath.Join(dir, "b.txt")) != "keep me\n" {
		t.Fatal("the sed -i edit or the rm was not put back")
	}
	if _, err := os.Stat(filepath.Join(dir, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the file_write's file was not removed: %v", err)
	}
}

func TestRewindModes(t *testing.T) {
	t.Run("both", func(t *testing.T) {
		f, h, dir, id := checkpointFixture(t)
		turns, err := h.TurnFiles(t.Context(), id)
		if err != nil || len(turns) != 1 || turns[0].Turn != 2 || len(turns[0].Changes) != 3 {
			t.Fatalf("turn files = %+v, %v", turns, err)
		}
		res, err := h.RewindSession(t.Context(), id, 1, host.RewindOptions{Code: true, Conversation: true})
		if err != nil {
			t.Fatal(err)
		}
		checkRestored(t, dir)
		if len(res.Files) != 3 || lastTurn(t, f, id) != 1 {
			t.Fatalf("files %+v, last turn %d", res.Files, lastTurn(t, f, id))
		}
		// The rewind is recorded: undone, the turn's files are back.
		if _, err := h.UndoRewind(t.Context(), id, res.Undo, false); err != nil {
			t.Fatal(err)
		}
		if readFile(t, filepath.Join(dir, "a.txt")) != "bye\n" || readFile(t, filepath.Join(dir, "new.txt")) != "created\n" {
			t.Fatal("undo did not put the turn's files back")
		}
	})
	t.Run("code", func(t *testing.T) {
		f, h, dir, id := checkpointFixture(t)
		if _, err := h.RewindSession(t.Context(), id, 1, host.RewindOptions{Code: true}); err != nil {
			t.Fatal(err)
		}
		checkRestored(t, dir)
		if lastTurn(t, f, id) != 2 {
			t.Fatal("a code rewind dropped turns")
		}
	})
	t.Run("conversation", func(t *testing.T) {
		f, h, dir, id := checkpointFixture(t)
		if _, err := h.RewindSession(t.Context(), id, 1, host.RewindOptions{Conversation: true}); err != nil {
			t.Fatal(err)
		}
		if lastTurn(t, f, id) != 1 || readFile(t, filepath.Join(dir, "a.txt")) != "bye\n" {
			t.Fatal("a conversation rewind must drop turn 2 and leave the files")
		}
	})
}

// A file edited outside meka since its last checkpoint refuses the rewind,
// naming the file, and leaves the log as it is; forced, it goes through.
func TestRewindRefusesOutsideEditThenForced(t *testing.T) {
	f, h, dir, id := checkpointFixture(t)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("my own edit\n"), 0o644)
	_, err := h.RewindSession(t.Context(), id, 1, host.RewindOptions{Code: true, Conversation: true})
	var ce *checkpoint.ConflictError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), filepath.Join(dir, "a.txt")) {
		t.Fatalf("err = %v, want a refusal naming a.txt", err)
	}
	if lastTurn(t, f, id) != 2 || readFile(t, filepath.Join(dir, "a.txt")) != "my own edit\n" {
		t.Fatal("a refused rewind changed something")
	}
	if _, err := h.RewindSession(t.Context(), id, 1, host.RewindOptions{Code: true, Conversation: true, Force: true}); err != nil {
		t.Fatal(err)
	}
	checkRestored(t, dir)
}

// An open session is not rewound under itself.
func TestRewindRefusesOpenSession(t *testing.T) {
	f := newFixture(t, `[{"text":"hi"}]`)
	h := f.host(t)
	s, err := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s.Prompt(t.Context(), model.Text{Text: "hi"})
	if _, err := h.RewindSession(t.Context(), s.ID(), 0, host.RewindOptions{Conversation: true}); err == nil {
		t.Fatal("rewound an open session")
	}
	h.CloseSession(t.Context(), s.ID())
	if _, err := h.RewindSession(t.Context(), s.ID(), 0, host.RewindOptions{Code: true}); !errors.Is(err, host.ErrNoCheckpoints) {
		t.Fatalf("err = %v, want checkpoints off", err)
	}
}

// An open session's last turn is taken back with its files (the screen's
// /rewind), and the turn number, used again, is recorded again.
func TestRewindFilesOfOpenSession(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		testenv.Skip(t, "git is not installed")
	}
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	f := newFixture(t, fmt.Sprintf(`[
	 {"tool_calls":[{"id":"1","name":"file_write","arguments":{"path":%q,"content":"one"}}]},{"text":"done"},
	 {"tool_calls":[{"id":"2","name":"file_write","arguments":{"path":%q,"content":"two"}}]},{"text":"done"}]`, a, b))
	f.opts.Permissions = host.Permissions{Default: permission.Workspace}
	f.opts.Tools = func(env host.Env) ([]tool.Tool, error) { return fstool.New(fstool.Options{FS: env.Files}), nil }
	f.opts.Checkpoints = &host.CheckpointOptions{Dir: filepath.Join(t.TempDir(), "cp")}
	h := f.host(t)
	s, err := h.Create(t.Context(), host.CreateOptions{Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(t.Context(), model.Text{Text: "write a"}); err != nil {
		t.Fatal(err)
	}
	res, err := s.RewindFiles(t.Context(), 0, false)
	if err != nil || len(res.Files) != 1 {
		t.Fatalf("rewind files: %+v %v", res, err)
	}
	if err := s.Withdraw(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(a); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a.txt still there: %v", err)
	}
	if _, err := s.Prompt(t.Context(), model.Text{Text: "write b"}); err != nil {
		t.Fatal(err)
	}
	if res, err := s.RewindFiles(t.Context(), 0, false); err != nil || len(res.Files) != 1 || res.Files[0].Path != b {
		t.Fatalf("the turn used again was not recorded again: %+v %v", res, err)
	}
	if _, err := os.Stat(b); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("b.txt still there: %v", err)
	}
}
