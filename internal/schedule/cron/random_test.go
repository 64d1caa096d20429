package cron

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// randField writes a random valid field: one to three list elements, each
// "*", "*/s", "n", "n-m" or "n-m/s", bounds sometimes as names.
func randField(r *rand.Rand, f int) string {
	lo, hi := specs[f].lo, specs[f].hi
	if f == fHour && r.IntN(2) == 0 {
		hi = 4 // crowd the hours where clocks change
	}
	bound := func(v int) string {
		if names := specs[f].names; names != nil && v < len(names) && names[v] != "" && r.IntN(3) == 0 {
			if r.IntN(2) == 0 {
				return strings.ToUpper(names[v])
			}
			return names[v]
		}
		return fmt.Sprint(v)
	}
	var parts []string
	for range 1 + r.IntN(3) {
		switch r.IntN(5) {
		case 0:
			parts = append(parts, "*")
		case 1:
			parts = append(parts, fmt.Sprintf("*/%d", 1+r.IntN(specs[f].hi-specs[f].lo)))
		case 2:
			parts = append(parts, bound(lo+r.IntN(hi-lo+1)))
		default:
			a := lo + r.IntN(hi-lo+1)
			b := a + r.IntN(hi-a+1)
			p := bound(a) + "-" + bound(b)
			if b > a && r.IntN(2) == 0 {
				p += fmt.Sprintf("/%d", 1+r.IntN(b-a))
			}
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ",")
}

func randExpr(r *rand.Rand) string {
	var f [nFields]string
	for i := range nFields {
		f[i] = randField(r, i)
	}
	return strings.Join(f[:], " ")
}

// Random expressions against the brute-force reference, over windows that
// straddle clock changes, including Lord Howe's half-hour shift and a
// southern-hemisphere zone.
func TestNextRandomAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	zones := []string{"America/New_York", "Europe/Berlin", "Australia/Sydney", "Australia/Lord_Howe", "UTC"}
	locs := make([]*time.Location, len(zones))
	for i, z := range zones {
		locs[i] = mustLoc(t, z)
	}
	n := 200
	if testing.Short() {
		n = 40
	}
	for i := 0; i < n; {
		expr := randExpr(r)
		s, err := Parse(expr)
		if errors.Is(err, ErrNeverFires) {
			continue
		}
		if err != nil {
			t.Fatalf("Parse(%q): %v", expr, err)
		}
		i++
		loc := locs[r.IntN(len(locs))]
		// Start up to a day before a clock change in some year 2000-2399.
		at := time.Date(2000+r.IntN(400), time.Month(1+r.IntN(12)), 1, 0, 0, 0, 0, loc)
		from := at
		if _, end := at.ZoneBounds(); !end.IsZero() {
			from = end.Add(-time.Duration(r.IntN(24*60)) * time.Minute)
		}
		to := from.Add(36 * time.Hour)
		want := bruteFires(refParse(t, expr), loc, from, to)
		got := nextFires(t, s, loc, from, to)
		if !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("%q in %v, (%v, %v]:\n got  %s\n want %s", expr, loc, from, to, fmtTimes(got, loc), fmtTimes(want, loc))
		}
	}
}

// The impossible-pattern rule against a walk over every day of a 400-year
// cycle, on expressions built to sit near the edge (few months, late days,
// both kinds of day-of-week field).
func TestNeverFiresRuleExact(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	dows := []string{"*", "*/2", "*/7", "1", "1-5", "0-6/3", "sat,sun"}
	seen := map[bool]int{}
	for range 120 {
		var months []string
		for range 1 + r.IntN(2) {
			months = append(months, fmt.Sprint([]int{2, 4, 6, 9, 11, 1}[r.IntN(6)]))
		}
		var doms []string
		for range 1 + r.IntN(2) {
			doms = append(doms, fmt.Sprint(27+r.IntN(5)))
		}
		dom := strings.Join(doms, ",")
		if r.IntN(4) == 0 {
			dom = "*/" + fmt.Sprint(20+r.IntN(10)) // star flag: AND, day 1 always possible
		}
		expr := fmt.Sprintf("0 0 %s %s %s", dom, strings.Join(months, ","), dows[r.IntN(len(dows))])
		_, err := Parse(expr)
		if err != nil && !errors.Is(err, ErrNeverFires) {
			t.Fatalf("Parse(%q): %v", expr, err)
		}
		possible := cycleHasDay(refParse(t, expr))
		seen[possible]++
		if possible != (err == nil) {
			t.Errorf("Parse(%q) = %v, but a 400-year walk says possible=%v", expr, err, possible)
		}
	}
	if seen[true] == 0 || seen[false] == 0 {
		t.Fatalf("generator produced only one kind: %v", seen)
	}
}

// cycleHasDay walks 2000-01-01 through 2399-12-31 for a matching day.
func cycleHasDay(rs *refSched) bool {
	wd := int(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Weekday())
	for y := 2000; y < 2400; y++ {
		for m := 1; m <= 12; m++ {
			n := time.Date(y, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC).Day()
			for d := 1; d <= n; d++ {
				if rs.sets[3][m] {
					dom, dow := rs.sets[2][d], rs.sets[4][wd]
					if (rs.domStar || rs.dowStar) && dom && dow || !(rs.domStar || rs.dowStar) && (dom || dow) {
						return true
					}
				}
				wd = (wd + 1) % 7
			}
		}
	}
	return false
}
