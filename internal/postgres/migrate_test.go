package postgres_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"meka.dev/meka/internal/postgres"
	"meka.dev/meka/internal/postgres/pgtest"
)

// TestConcurrentMigrate opens one new database from several hosts at once:
// every open succeeds and each step is applied once.
func TestConcurrentMigrate(t *testing.T) {
	url := pgtest.NewDatabase(t)
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			db, err := postgres.Open(t.Context(), url, postgres.Options{})
			if err != nil {
				t.Error(err)
				return
			}
			db.Close()
		})
	}
	wg.Wait()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var n, top int
	if err := conn.QueryRow(t.Context(), `SELECT count(*), max(version) FROM schema_version`).Scan(&n, &top); err != nil {
		t.Fatal(err)
	}
	if n != postgres.SchemaVersion() || top != postgres.SchemaVersion() {
		t.Errorf("schema_version has %d steps up to %d, want %d", n, top, postgres.SchemaVersion())
	}
	// A newer meka's step is refused rather than written past.
	if _, err := conn.Exec(t.Context(), `INSERT INTO schema_version (version, name) VALUES ($1, 'future')`, postgres.SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.Open(t.Context(), url, postgres.Options{}); !errors.Is(err, postgres.ErrSchemaTooNew) {
		t.Errorf("open of a database a newer meka migrated: %v, want ErrSchemaTooNew", err)
	}
}
