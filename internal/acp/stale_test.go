package acp

import (
	"encoding/json"
	"testing"

	"meka.dev/meka/plan"
)

// A write_todos list a new user turn made stale empties the plan panel,
// saying so in _meta, until the agent updates it (seed 003).
func TestStalePlanClearsThePanel(t *testing.T) {
	c := plan.Changed{Dialect: "write_todos", Total: 1, Stale: true, Items: []plan.Item{{ID: "s1", Text: "Write it", Status: plan.InProgress}}}
	b, err := json.Marshal(planUpdate(c))
	if err != nil || string(b) != `{"entries":[],"_meta":{"stale":true}}` {
		t.Fatalf("stale: %s %v", b, err)
	}
	c.Stale = false
	if u := planUpdate(c); len(u.Entries) != 1 || u.Meta != nil {
		t.Fatalf("fresh: %+v", u)
	}
}
