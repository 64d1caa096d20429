package postgres

import (
	"context"
	"fmt"

	"meka.dev/meka/internal/storerec"
)

// spendSchema lets a spend query find the assistant rows of a period
// without reading the others.
const spendSchema = `CREATE INDEX rows_spend ON rows (time) WHERE kind = 'assistant';`

// spendKeys are the group keys of a spend query over the subquery u;
// $2 is the day offset.
var spendKeys = map[string]string{
	storerec.SpendBySession: `u.session_id`,
	storerec.SpendByProject: `u.project`,
	storerec.SpendByModel:   `coalesce(u.p->>'model', '')`,
	storerec.SpendByDay:     `floor((extract(epoch FROM u.time) + $2) / 86400)::bigint::text`,
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
	args := []any{q.Since}
	if q.By == storerec.SpendByDay {
		args = append(args, q.Offset)
	}
	rows, err := db.pool.Query(ctx, `
SELECT `+key+`, max(u.title), count(*),
	coalesce(sum((u.p#>>'{usage,input_tokens}')::bigint), 0)::bigint,
	coalesce(sum((u.p#>>'{usage,cache_read_tokens}')::bigint), 0)::bigint,
	coalesce(sum((u.p#>>'{usage,cache_write_tokens}')::bigint), 0)::bigint,
	coalesce(sum((u.p#>>'{usage,output_tokens}')::bigint), 0)::bigint,
	coalesce(sum((u.p#>>'{usage,cost}')::float8), 0)::float8
FROM (SELECT r.session_id, r.time, r.payload::jsonb AS p, s.title, s.project
	FROM rows r JOIN sessions s ON s.id = r.session_id
	WHERE r.kind = 'assistant' AND r.time >= $1 AND r.turn > s.forked_at) u
GROUP BY 1 ORDER BY 1`, args...)
	if err != nil {
		return nil, fmt.Errorf("spend: %w", err)
	}
	defer rows.Close()
	var out []storerec.SpendGroup
	for rows.Next() {
		var g storerec.SpendGroup
		if err := rows.Scan(&g.Key, &g.Label, &g.Calls, &g.Input, &g.CacheRead, &g.CacheWrite, &g.Output, &g.Cost); err != nil {
			return nil, fmt.Errorf("spend: %w", err)
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
