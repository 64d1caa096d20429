package storerec

import "testing"

func TestIDRange(t *testing.T) {
	for _, tc := range []struct {
		prefix, lo, hi string
		ok             bool
	}{
		{"0f3A", "0f3a", "0f3b", true},
		{"9", "9", ":", true},
		{"f", "f", "g", true},
		{"0190c2a4-", "0190c2a4-", "0190c2a4.", true},
		{"", "", "", false},
		{"0f3g", "", "", false},
		{"0f%", "", "", false},
		{"é", "", "", false},
	} {
		lo, hi, ok := IDRange(tc.prefix)
		if lo != tc.lo || hi != tc.hi || ok != tc.ok {
			t.Errorf("IDRange(%q) = %q, %q, %v; want %q, %q, %v", tc.prefix, lo, hi, ok, tc.lo, tc.hi, tc.ok)
		}
	}
	// Every id with the prefix falls in the range, and a neighbour does not.
	lo, hi, _ := IDRange("0190c2a4")
	for _, id := range []string{"0190c2a4", "0190c2a4-7b3e-7000-8000-000000000000", "0190c2a4ffff"} {
		if id < lo || id >= hi {
			t.Errorf("%s is outside [%s, %s)", id, lo, hi)
		}
	}
	if id := "0190c2a5-0000"; id >= lo && id < hi {
		t.Errorf("%s is inside [%s, %s)", id, lo, hi)
	}
}
