package sqlite

import (
	"context"
	"fmt"
	"strconv"

	"meka.dev/meka/internal/storerec"
)

// spendSchema was the first spend index; spendCovering replaces it.
const spendSchema = `
CREATE INDEX rows_spend ON rows (time, session_id, turn,
	json_extract(payload, '$.model'),
	json_extract(payload, '$.usage.input_tokens'),
	json_extract(payload, '$.usage.cache_read_tokens'),
	json_extract(payload, '$.usage.cache_write_tokens'),
	json_extract(payload, '$.usage.output_tokens'),
	json_extract(payload, '$.usage.cost'))
WHERE kind = 'assistant';
`

// spendCovering indexes the usage of assistant rows by time, the usage
// itself and every other column the spend query names among the index's
// columns, so the query reads the index and never the rows' JSON (EXPLAIN
// QUERY PLAN: USING COVERING INDEX). The expressions are the query's to
// the byte: SQLite uses an indexed expression only where it is spelled
// alike.
const spendCovering = `
DROP INDEX rows_spend;
CREATE INDEX rows_spend ON rows (time, session_id, turn, kind,
	json_extract(payload, '$.model'),
	json_extract(payload, '$.usage.input_tokens'),
	json_extract(payload, '$.usage.cache_read_tokens'),
	json_extract(payload, '$.usage.cache_write_tokens'),
	json_extract(payload, '$.usage.output_tokens'),
	json_extract(payload, '$.usage.cost'))
WHERE kind = 'assistant';
`

// spendKeys are the group keys of a spend query; ?2 is the day offset.
var spendKeys = map[string]string{
	storerec.SpendBySession: `r.session_id`,
	storerec.SpendByProject: `s.project`,
	storerec.SpendByModel:   `json_extract(payload, '$.model')`, // NULL read as ""
	storerec.SpendByDay:     `(r.time / 1000000 + ?2) / 86400`,
}

// Spend adds up the tokens and cost of the model calls recorded since
// q.Since, by q.By. A fork's rows up to its fork point are its source's,
// counted there.
func (db *DB) Spend(ctx context.Context, q storerec.SpendQuery) ([]storerec.SpendGroup, error) {
	if err := db.checkOpen(); err != nil {
		return nil, fmt.Errorf("spend: %w", err)
	}
	if _, ok := spendKeys[q.By]; !ok {
		return nil, fmt.Errorf("spend: cannot group by %q", q.By)
	}
	query, args := spendQuery(q)
	rows, err := db.reader.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("spend: %w", err)
	}
	defer rows.Close()
	var out []storerec.SpendGroup
	for rows.Next() {
		var g storerec.SpendGroup
		var k any
		if err := rows.Scan(&k, &g.Label, &g.Calls, &g.Input, &g.CacheRead, &g.CacheWrite, &g.Output, &g.Cost); err != nil {
			return nil, fmt.Errorf("spend: %w", err)
		}
		switch k := k.(type) {
		case int64:
			g.Key = strconv.FormatInt(k, 10)
		case string:
			g.Key = k
		case []byte:
			g.Key = string(k)
		}
		if q.By != storerec.SpendBySession {
			g.Label = ""
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("spend: %w", err)
	}
	return out, nil
}

// spendQuery is the query of q and its arguments.
func spendQuery(q storerec.SpendQuery) (string, []any) {
	var since int64
	if !q.Since.IsZero() {
		since = toMicro(q.Since)
	}
	args := []any{since}
	if q.By == storerec.SpendByDay {
		args = append(args, q.Offset)
	}
	// The inner query names only what the index holds; grouping by an
	// indexed expression in the same query would read the row.
	return `
SELECT k, max(title), count(*), sum(input), sum(cache_read), sum(cache_write), sum(output), sum(cost)
FROM (SELECT ` + spendKeys[q.By] + ` AS k, s.title AS title,
	coalesce(json_extract(payload, '$.usage.input_tokens'), 0) AS input,
	coalesce(json_extract(payload, '$.usage.cache_read_tokens'), 0) AS cache_read,
	coalesce(json_extract(payload, '$.usage.cache_write_tokens'), 0) AS cache_write,
	coalesce(json_extract(payload, '$.usage.output_tokens'), 0) AS output,
	coalesce(json_extract(payload, '$.usage.cost'), 0.0) AS cost
	FROM rows r INDEXED BY rows_spend JOIN sessions s ON s.id = r.session_id
	WHERE r.kind = 'assistant' AND r.time >= ?1 AND r.turn > s.forked_at
	LIMIT -1)
GROUP BY k ORDER BY k`, args
}
