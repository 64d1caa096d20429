package sqlite

import (
	"context"
	"fmt"
	"strconv"

	"meka.dev/meka/internal/storerec"
)

// spendSchema indexes the usage of assistant rows by time, the usage
// itself among the index's columns, so a spend query reads the index and
// never the rows' JSON. The expressions are spendColumns' to the byte:
// SQLite uses an indexed expression only where the query spells it alike.
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

// spendKeys are the group keys of a spend query; ?2 is the day offset.
var spendKeys = map[string]string{
	storerec.SpendBySession: `r.session_id`,
	storerec.SpendByProject: `s.project`,
	storerec.SpendByModel:   `coalesce(json_extract(payload, '$.model'), '')`,
	storerec.SpendByDay:     `(r.time / 1000000 + ?2) / 86400`,
}

// Spend adds up the tokens and cost of the model calls recorded since
// q.Since, by q.By. A fork's rows up to its fork point are its source's,
// counted there.
func (db *DB) Spend(ctx context.Context, q storerec.SpendQuery) ([]storerec.SpendGroup, error) {
	if err := db.checkOpen(); err != nil {
		return nil, fmt.Errorf("spend: %w", err)
	}
	key, ok := spendKeys[q.By]
	if !ok {
		return nil, fmt.Errorf("spend: cannot group by %q", q.By)
	}
	var since int64
	if !q.Since.IsZero() {
		since = toMicro(q.Since)
	}
	args := []any{since}
	if q.By == storerec.SpendByDay {
		args = append(args, q.Offset)
	}
	rows, err := db.reader.QueryContext(ctx, `
SELECT `+key+`, max(s.title), count(*),
	sum(coalesce(json_extract(payload, '$.usage.input_tokens'), 0)),
	sum(coalesce(json_extract(payload, '$.usage.cache_read_tokens'), 0)),
	sum(coalesce(json_extract(payload, '$.usage.cache_write_tokens'), 0)),
	sum(coalesce(json_extract(payload, '$.usage.output_tokens'), 0)),
	sum(coalesce(json_extract(payload, '$.usage.cost'), 0.0))
FROM rows r INDEXED BY rows_spend JOIN sessions s ON s.id = r.session_id
WHERE r.kind = 'assistant' AND r.time >= ?1 AND r.turn > s.forked_at
GROUP BY 1 ORDER BY 1`, args...)
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
