package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A session exported from one data directory and imported into another
// shows the same, continues with its history, and has its checklist back:
// the resumed model can complete an item the original left deferred.
func TestExportImportRoundTrip(t *testing.T) {
	work := t.TempDir()
	before := serve(t, `[
	 {"tool_calls":[{"id":"a","name":"checklist_add","arguments":{"items":["draft the notes","send them"]}}]},
	 {"tool_calls":[{"id":"b","name":"checklist_edit","arguments":{"id":"c1","status":"completed"}},{"id":"c","name":"checklist_edit","arguments":{"id":"c2","status":"deferred","reason":"waits on the review"}}]},
	 {"text":"Drafted; sending waits on the review."}]`)
	env := configured(t, before, "")
	if out, errOut, code := run(t, work, env, "--oneshot", "-v", "write the release notes"); code != 0 {
		t.Fatalf("first turn: %d %q %q", code, out, errOut)
	}
	list, _, _ := run(t, work, env, "sessions", "list")
	orig := strings.Fields(strings.Split(list, "\n")[1])[0]
	file := filepath.Join(t.TempDir(), "s.jsonl")
	if out, errOut, code := run(t, work, env, "sessions", "export", orig, "-o", file); code != 0 {
		t.Fatalf("export: %d %q %q", code, out, errOut)
	}
	md, _, code := run(t, work, env, "sessions", "export", orig, "--format", "markdown")
	if code != 0 || !strings.Contains(md, "Drafted; sending waits on the review.") {
		t.Fatalf("markdown: %d %s", code, md)
	}

	after := serve(t, `[
	 {"tool_calls":[{"id":"d","name":"checklist_edit","arguments":{"id":"c2","status":"completed"}}]},
	 {"text":"Sent."}]`)
	env2 := configured(t, after, "")
	out, errOut, code := run(t, work, env2, "sessions", "import", file)
	if code != 0 || !strings.Contains(out, "imported meka session "+orig) {
		t.Fatalf("import: %d %q %q", code, out, errOut)
	}
	list2, _, _ := run(t, work, env2, "sessions", "list")
	imported := strings.Fields(strings.Split(list2, "\n")[1])[0]
	if strings.HasPrefix(orig, imported) || strings.HasPrefix(imported, orig) {
		t.Fatalf("same id: %s %s", orig, imported)
	}
	show1, _, _ := run(t, work, env, "sessions", "show", orig)
	show2, _, _ := run(t, work, env2, "sessions", "show", imported)
	drop := func(s string) string { _, rest, _ := strings.Cut(s, "\n"); return rest }
	if drop(show1) != drop(show2) || !strings.Contains(show1, "waits on the review") {
		t.Fatalf("sessions show differs\n%s\n---\n%s", show1, show2)
	}

	out, errOut, code = run(t, work, env2, "-r", imported, "--oneshot", "--json", "the review passed; send them")
	if code != 0 {
		t.Fatalf("resume: %d %q %q", code, out, errOut)
	}
	lines := jsonLines(t, eventSchema(t), out)
	var finished, emptied bool
	for _, l := range lines {
		finished = finished || (l.Type == "tool.finished" && strings.Contains(l.raw, `"status":"completed"`))
		emptied = emptied || (l.Type == "checklist.updated" && strings.Contains(l.raw, `"open":0`))
	}
	if !finished || !emptied {
		t.Fatalf("the deferred item was not there to complete:\n%s", out)
	}
	reqs := after.Requests()
	if len(reqs) == 0 || !bytes.Contains(reqs[0].Body, []byte("write the release notes")) || !bytes.Contains(reqs[0].Body, []byte("Drafted; sending waits on the review.")) {
		t.Fatalf("the resumed request lacks the history")
	}
}

// A broken archive is refused with its line and reason; nothing is
// written.
func TestImportRefusesABrokenArchive(t *testing.T) {
	srv := serve(t, `[]`)
	env := configured(t, srv, "")
	work := t.TempDir()
	file := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(file, []byte(`{"format":"meka.session","version":1,"exported_at":"2026-01-01T00:00:00Z","meta":{"id":"x","title":"t","cwd":"/","permission":"read","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"},"rows":2}
{"seq":1,"turn":1,"time":"2026-01-01T00:00:00Z","kind":"user","entry":{"parts":[{"type":"text","text":"hi"}]}}
{"seq":2,"turn":1,"time":"2026-01-01T00:00:00Z","kind":"assistant","entry":{"parts":
`), 0o600)
	_, errOut, code := run(t, work, env, "sessions", "import", file)
	if code != 1 || !strings.Contains(errOut, "bad.jsonl:3: not a row") || !strings.Contains(errOut, "nothing was imported") {
		t.Fatalf("code %d %q", code, errOut)
	}
	list, _, _ := run(t, work, env, "sessions", "list", "--all")
	if strings.Count(strings.TrimSpace(list), "\n") != 0 {
		t.Fatalf("a session was written: %q", list)
	}
}

// A Claude Code session file and a Codex rollout become sessions that
// meka -r continues with their history, the other agent's tool names kept.
func TestImportFromClaudeAndCodex(t *testing.T) {
	for _, c := range []struct{ from, file, want string }{
		{"claude", "claude-session.jsonl", "There are 42 Go files."},
		{"codex", "codex-rollout.jsonl", "go.mod asks for Go 1.23."},
	} {
		t.Run(c.from, func(t *testing.T) {
			srv := serve(t, `[{"text":"Continuing."}]`)
			env := configured(t, srv, "")
			work := t.TempDir()
			path, _ := filepath.Abs(filepath.Join("..", "archive", "testdata", c.file))
			out, errOut, code := run(t, work, env, "sessions", "import", "--from", c.from, path)
			if code != 0 {
				t.Fatalf("import: %d %q %q", code, out, errOut)
			}
			id := strings.TrimSpace(out[strings.LastIndex(out, "meka -r ")+len("meka -r "):])
			if out, errOut, code = run(t, work, env, "-r", id, "--oneshot", "go on"); code != 0 || out != "Continuing.\n" {
				t.Fatalf("resume: %d %q %q", code, out, errOut)
			}
			body := string(srv.Requests()[0].Body)
			if !strings.Contains(body, c.want) {
				t.Fatalf("the request lacks the imported history: %s", body)
			}
		})
	}
}
