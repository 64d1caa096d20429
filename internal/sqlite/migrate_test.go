package sqlite

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"meka.dev/meka/session"
)

type appliedStep struct {
	version   int
	name      string
	appliedAt int64
}

func applied(t *testing.T, db *DB) []appliedStep {
	t.Helper()
	rows, err := db.reader.QueryContext(t.Context(), `SELECT version, name, applied_at FROM schema_version ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []appliedStep
	for rows.Next() {
		var s appliedStep
		if err := rows.Scan(&s.version, &s.name, &s.appliedAt); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustOpen(t *testing.T, path string, opts Options) *DB {
	t.Helper()
	db, err := Open(t.Context(), path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestMigrationsAreOrdered(t *testing.T) {
	for i, m := range migrations {
		if m.version != i+1 || m.name == "" || m.sql == "" {
			t.Errorf("migration %d is version %d %q: versions must count from 1 and every step needs a name and SQL", i, m.version, m.name)
		}
	}
}

func TestOpenRecordsVersionOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meka.db")
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	db := mustOpen(t, path, Options{Now: func() time.Time { return t0 }})
	first := applied(t, db)
	if len(first) != len(migrations) || first[len(first)-1].version != SchemaVersion() {
		t.Fatalf("applied %+v, want every migration up to %d", first, SchemaVersion())
	}
	if first[0].appliedAt != t0.UnixMicro() || first[0].name != migrations[0].name {
		t.Errorf("first step recorded as %+v, want %q at %v", first[0], migrations[0].name, t0)
	}
	db.Close()

	// Reopening applies nothing again and keeps what was stored.
	db = mustOpen(t, path, Options{Now: func() time.Time { return t0.Add(time.Hour) }})
	if again := applied(t, db); len(again) != len(first) || again[0] != first[0] {
		t.Errorf("after reopening, applied %+v, want %+v", again, first)
	}
	if _, err := db.Sessions().Create(t.Context(), session.Meta{Cwd: "/w"}); err != nil {
		t.Errorf("Create after reopening: %v", err)
	}
}

func TestOpenConcurrently(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meka.db")
	const n = 4
	dbs := make([]*DB, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { dbs[i], errs[i] = Open(context.Background(), path, Options{}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
			continue
		}
		t.Cleanup(func() { dbs[i].Close() })
	}
	if t.Failed() {
		return
	}
	if got := applied(t, dbs[0]); len(got) != len(migrations) {
		t.Errorf("applied %+v after concurrent opens, want each migration once", got)
	}
}

// TestMigrateUpgrade adds a step to an existing database: only that step
// runs, and a step that fails leaves nothing of itself behind.
func TestMigrateUpgrade(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meka.db")
	mustOpen(t, path, Options{}).Close()

	saved := migrations
	t.Cleanup(func() { migrations = saved })
	next := len(saved) + 1
	migrations = append(saved[:len(saved):len(saved)], migration{next, "broken", `
CREATE TABLE half_done (x INTEGER);
CREATE TABLE sessions (x INTEGER); -- already exists: the step fails here`})
	if _, err := Open(t.Context(), path, Options{}); err == nil {
		t.Fatal("Open with a failing migration succeeded")
	}
	migrations = saved
	db := mustOpen(t, path, Options{})
	var n int
	if err := db.reader.QueryRowContext(t.Context(), `SELECT count(*) FROM sqlite_schema WHERE name = 'half_done'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("a failed step left its first table behind (count %d, %v)", n, err)
	}
	if got := applied(t, db); len(got) != len(saved) {
		t.Errorf("applied %+v, want the failed step unrecorded", got)
	}
	db.Close()

	migrations = append(saved[:len(saved):len(saved)], migration{next, "schedules", `CREATE TABLE later (x INTEGER)`})
	db = mustOpen(t, path, Options{})
	got := applied(t, db)
	if len(got) != next || got[next-1].name != "schedules" {
		t.Errorf("applied %+v, want the new step recorded as version %d", got, next)
	}
	if err := db.reader.QueryRowContext(t.Context(), `SELECT count(*) FROM later`).Scan(&n); err != nil {
		t.Errorf("the new step's table: %v", err)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meka.db")
	db := mustOpen(t, path, Options{})
	if _, err := db.writer.ExecContext(t.Context(), `INSERT INTO schema_version (version, name, applied_at) VALUES (?, 'future', 0)`, SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(t.Context(), path, Options{}); !errors.Is(err, ErrSchemaTooNew) {
		t.Errorf("Open of a newer schema: %v, want ErrSchemaTooNew", err)
	}
}

func TestDBSettings(t *testing.T) {
	db := mustOpen(t, filepath.Join(t.TempDir(), "meka.db"), Options{})
	for _, tc := range []struct {
		pragma string
		want   string
	}{
		{"journal_mode", "wal"},
		{"foreign_keys", "1"},
		{"busy_timeout", "5000"},
	} {
		var got string
		if err := db.writer.QueryRowContext(t.Context(), "PRAGMA "+tc.pragma).Scan(&got); err != nil || got != tc.want {
			t.Errorf("writer PRAGMA %s = %q, %v; want %q", tc.pragma, got, err, tc.want)
		}
		if err := db.reader.QueryRowContext(t.Context(), "PRAGMA "+tc.pragma).Scan(&got); err != nil || got != tc.want {
			t.Errorf("reader PRAGMA %s = %q, %v; want %q", tc.pragma, got, err, tc.want)
		}
	}
}

// TestOpenRefusesForeignFile checks that a file that is no SQLite database
// (a config saved under the wrong name, a truncated copy) is refused with
// an error naming it, and is left as it was.
func TestOpenRefusesForeignFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meka.db")
	want := bytes.Repeat([]byte("this is not a database\n"), 400)
	if err := os.WriteFile(path, want, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := Open(t.Context(), path, Options{})
	if err == nil {
		db.Close()
		t.Fatal("Open of a foreign file succeeded")
	}
	if !strings.Contains(err.Error(), "open database "+path) {
		t.Errorf("Open of a foreign file: %v, want an error naming the file", err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Open changed the foreign file: %d bytes, want %d unchanged", len(got), len(want))
	}
}
