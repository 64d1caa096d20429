package writetodos

import (
	"testing"
	"time"

	"meka.dev/meka/plan"
)

// The old format's calls replay as they applied then: updates by ID (the
// first item's too; blank content left alone), and a resubmitted list of
// the same length changing statuses by position when its IDs agree.
func TestLegacyApplyEdges(t *testing.T) {
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	cur := state{Items: []Todo{
		{ID: "s1", Content: "first", Status: plan.Pending},
		{ID: "s2", Content: "second", Status: plan.Pending},
	}}
	str := func(s string) *string { return &s }

	next, ok := cur.legacyApply(writeArgs{Updates: []updateArg{{ID: "s1", Status: str("completed"), Content: str("first, reworded")}}}, at)
	if !ok || next.Items[0].Status != plan.Completed || next.Items[0].Content != "first, reworded" {
		t.Errorf("update of s1: ok %v, %+v", ok, next.Items[0])
	}
	next, ok = cur.legacyApply(writeArgs{Updates: []updateArg{{ID: "s2", Content: str("   ")}}}, at)
	if !ok || next.Items[1].Content != "second" {
		t.Errorf("blank content: ok %v, %+v", ok, next.Items[1])
	}
	if _, ok := cur.legacyApply(writeArgs{Updates: []updateArg{{ID: "s9", Status: str("completed")}}}, at); ok {
		t.Error("an update of an unknown ID applied")
	}

	same := []todoArg{{Content: "first", Status: "pending", ID: "s1"}, {Content: "second", Status: "completed", ID: "s2"}}
	next, ok = cur.legacyApply(writeArgs{Todos: same}, at)
	if !ok || len(next.Items) != 2 || next.Items[1].Status != plan.Completed {
		t.Errorf("resubmitted list: ok %v, %+v", ok, next.Items)
	}
	same[1].ID = "s7"
	if _, ok := cur.legacyApply(writeArgs{Todos: same}, at); ok {
		t.Error("a resubmitted item with another item's ID applied")
	}
}
