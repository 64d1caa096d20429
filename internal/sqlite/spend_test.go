package sqlite

import (
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/internal/storerec"
)

// The spend query of every grouping reads the covering index alone,
// never the rows' JSON, however large the log.
func TestSpendReadsTheIndexOnly(t *testing.T) {
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "meka.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for by := range spendKeys {
		q, args := spendQuery(storerec.SpendQuery{By: by})
		rows, err := db.reader.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		if p := strings.Join(plan, "; "); !strings.Contains(p, "SEARCH r USING COVERING INDEX rows_spend") {
			t.Errorf("by %s: %s", by, p)
		}
	}
}
