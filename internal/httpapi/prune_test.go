package httpapi

import (
	"fmt"
	"testing"
)

// A long-lived session forgets its oldest finished entries, never the
// pending ones.
func TestPruneDone(t *testing.T) {
	m := map[string]bool{} // id → done
	for i := range keepResolved + 10 {
		m[fmt.Sprintf("id-%04d", i)] = i != 3 // id-0003 is still pending
	}
	pruneDone(m, func(done bool) bool { return done })
	if len(m) != keepResolved/2 {
		t.Fatalf("%d entries kept, want %d", len(m), keepResolved/2)
	}
	if _, ok := m["id-0003"]; !ok {
		t.Fatal("a pending entry was forgotten")
	}
	if _, ok := m["id-0004"]; ok {
		t.Fatal("an old finished entry was kept over newer ones")
	}
	if _, ok := m[fmt.Sprintf("id-%04d", keepResolved+9)]; !ok {
		t.Fatal("the newest entry was forgotten")
	}
	small := map[string]bool{"a": true}
	pruneDone(small, func(done bool) bool { return done })
	if len(small) != 1 {
		t.Fatal("a small map was pruned")
	}
}
