package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/internal/postgres"
	"meka.dev/meka/internal/postgres/pgtest"
	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/model"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
	"meka.dev/meka/session"
)

// TestMigrateToPostgres copies a data directory with a few thousand rows
// into PostgreSQL, checks every row arrived as it was, that a second copy
// is refused and a forced one copies nothing twice, then resumes a copied
// session on PostgreSQL.
func TestMigrateToPostgres(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := t.Context()
	s, err := script.Parse([]byte(`{"rounds":[{"text":"Resumed on PostgreSQL."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.NewServer(t, s)
	work := t.TempDir()
	env := isolatedEnv(t, "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+srv.URL+"/v1")
	var dataDir string
	for _, e := range env {
		if d, ok := strings.CutPrefix(e, "MEKA_DATA_DIR="); ok {
			dataDir = d
		}
	}
	cwd, err := filepath.EvalSymlinks(work)
	if err != nil {
		t.Fatal(err)
	}

	// The source: 30 sessions of 50 turns (100 rows each), a sub-agent's
	// session and a job.
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	src, err := sqlite.Open(ctx, filepath.Join(dataDir, "meka.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 30 {
		m, err := src.Sessions().Create(ctx, session.Meta{Cwd: cwd, Permission: "read"})
		if err != nil {
			t.Fatal(err)
		}
		var rows []session.Row
		for turn := int64(1); turn <= 50; turn++ {
			rows = append(rows,
				session.Row{Turn: turn, Entry: session.UserMessage{Parts: model.Parts{model.Text{Text: fmt.Sprintf("question %d.%d", i, turn)}}}},
				session.Row{Turn: turn, Entry: session.AssistantMessage{Parts: model.Parts{model.Text{Text: fmt.Sprintf("answer %d.%d", i, turn)}}, Stop: model.StopEndTurn}})
		}
		if _, err := src.Sessions().Append(ctx, m.ID, rows); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	child, err := src.Sessions().Create(ctx, session.Meta{Cwd: cwd, ParentID: ids[0], ParentCallID: "call_1", Agent: "explorer"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Schedules().Create(ctx, sqlite.Job{SessionID: ids[1], Prompt: "check", Kind: "every", Spec: "1h",
		Interval: time.Hour, NextAt: time.Now().Add(time.Hour)}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Projects().Add(ctx, "shop", cwd); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Memories().Put(ctx, "shop", "", "the shop's tests need a database"); err != nil {
		t.Fatal(err)
	}
	src.Close()

	out, errOut, code := run(t, work, env, "migrate", "--to", "postgres", url)
	if code != 0 || out != "Copied 31 sessions (3000 rows) and 1 jobs and 2 projects and memories.\n" {
		t.Fatalf("migrate: code %d %q %q", code, out, errOut)
	}
	if _, errOut, code := run(t, work, env, "migrate", "--to", "postgres", url); code != 1 || !strings.Contains(errOut, "not empty (31 sessions, 1 jobs)") {
		t.Fatalf("second migrate: code %d %q", code, errOut)
	}
	out, errOut, code = run(t, work, env, "migrate", "--to", "postgres", "--force", url)
	if code != 0 || !strings.Contains(out, "Copied 0 sessions (0 rows) and 0 jobs; 31 sessions and 1 jobs were there already") {
		t.Fatalf("forced migrate: code %d %q %q", code, out, errOut)
	}

	// Every session and row as it was.
	src, err = sqlite.Open(ctx, filepath.Join(dataDir, "meka.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	for _, id := range append(ids, child.ID) {
		want, _ := src.Sessions().Get(ctx, id)
		got, err := dst.Sessions().Get(ctx, id)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("session %s:\n got %+v %v\nwant %+v", id, got, err, want)
		}
		wantRows, _ := src.Sessions().Rows(ctx, id, 0)
		gotRows, _ := dst.Sessions().Rows(ctx, id, 0)
		if !reflect.DeepEqual(gotRows, wantRows) {
			t.Fatalf("rows of %s differ: %d copied of %d", id, len(gotRows), len(wantRows))
		}
	}
	if jobs, err := dst.Schedules().List(ctx, ""); err != nil || len(jobs) != 1 || jobs[0].SessionID != ids[1] {
		t.Fatalf("jobs %+v %v", jobs, err)
	}
	if ms, err := dst.Memories().List(ctx, "shop", 0); err != nil || len(ms) != 1 || ms[0].Text != "the shop's tests need a database" {
		t.Fatalf("memories %+v %v", ms, err)
	}
	if m, err := dst.Memories().Put(ctx, "shop", "", "a new one"); err != nil || m.ID == "m1" {
		t.Fatalf("a memory written after the copy: %+v %v, want a fresh id", m, err)
	}

	// Resume a copied session on PostgreSQL: the model sees its history and
	// the new turn's rows follow the copied ones.
	pgEnv := append(env, "MEKA_DATABASE_URL="+url)
	out, errOut, code = run(t, work, pgEnv, "--resume", ids[5], "--oneshot", "and now?")
	if code != 0 || out != "Resumed on PostgreSQL.\n" {
		t.Fatalf("resume: code %d %q %q", code, out, errOut)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), "answer 5.50") || !strings.Contains(string(reqs[0].Body), "and now?") {
		t.Fatalf("the resumed turn's request lacks the history: %d requests", len(reqs))
	}
	rows, err := dst.Sessions().Rows(ctx, ids[5], 101)
	if err != nil {
		t.Fatal(err)
	}
	last := rows[len(rows)-1]
	if a, ok := last.Entry.(session.AssistantMessage); !ok || last.Turn != 51 || a.Parts[0].(model.Text).Text != "Resumed on PostgreSQL." {
		t.Fatalf("the resumed turn's rows after the copied 100: %d rows ending %+v", len(rows), last)
	}
}
