package cron

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// This file holds a reference implementation written independently of the
// package: its own reading of an expression (sets of ints, no bit masks, no
// validation) and a minute-by-minute walk over real instants that applies
// the Vixie DST rules directly, keeping the daemon's high-water mark.

type refSched struct {
	sets                              [5][64]bool
	minStar, hrStar, domStar, dowStar bool
}

var refAliases = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
	"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

var refNames = [5][]string{
	3: strings.Fields("jan feb mar apr may jun jul aug sep oct nov dec"),
	4: strings.Fields("sun mon tue wed thu fri sat"),
}

// refParse reads an expression already known to be valid.
func refParse(tb testing.TB, expr string) *refSched {
	tb.Helper()
	expr = strings.TrimSpace(expr)
	if a, ok := refAliases[expr]; ok {
		expr = a
	}
	f := strings.Fields(expr)
	if len(f) != 5 {
		tb.Fatalf("refParse %q: %d fields", expr, len(f))
	}
	bounds := [5][2]int{{0, 59}, {0, 23}, {1, 31}, {1, 12}, {0, 7}}
	val := func(i int, s string) int {
		if n, err := strconv.Atoi(s); err == nil {
			return n
		}
		idx := slices.Index(refNames[i], strings.ToLower(s))
		if idx < 0 {
			tb.Fatalf("refParse %q: bad value %q", expr, s)
		}
		if i == 3 {
			return idx + 1
		}
		return idx
	}
	r := &refSched{}
	for i := range 5 {
		for part := range strings.SplitSeq(f[i], ",") {
			rng, stepText, hasStep := strings.Cut(part, "/")
			step := 1
			if hasStep {
				step, _ = strconv.Atoi(stepText)
			}
			lo, hi := bounds[i][0], bounds[i][1]
			if rng != "*" {
				a, b, isRange := strings.Cut(rng, "-")
				lo = val(i, a)
				hi = lo
				if isRange {
					hi = val(i, b)
				}
			}
			for v := lo; v <= hi; v += step {
				r.sets[i][v] = true
			}
		}
	}
	if r.sets[4][7] {
		r.sets[4][0] = true
	}
	r.minStar, r.hrStar = f[0][0] == '*', f[1][0] == '*'
	r.domStar, r.dowStar = f[2][0] == '*', f[4][0] == '*'
	return r
}

// match tests a civil wall time (a time.Time in UTC used as a calendar).
func (r *refSched) match(w time.Time) bool {
	if !r.sets[0][w.Minute()] || !r.sets[1][w.Hour()] || !r.sets[3][int(w.Month())] {
		return false
	}
	dom, dow := r.sets[2][w.Day()], r.sets[4][int(w.Weekday())]
	if r.domStar || r.dowStar {
		return dom && dow
	}
	return dom || dow
}

// bruteFires returns the fires in (from, to], stepping over every real
// minute. Wildcard jobs fire at each minute whose wall time matches. Fixed
// jobs fire at a minute when some matching wall minute lies above the
// highest wall minute shown so far and at or below the current one.
func bruteFires(r *refSched, loc *time.Location, from, to time.Time) []time.Time {
	wildcard := r.minStar || r.hrStar
	var out []time.Time
	var hwm time.Time
	// A day and a half of lead-in sets the mark well before any clock change
	// that could matter at from.
	for t := from.Truncate(time.Minute).Add(-36 * time.Hour); !t.After(to); t = t.Add(time.Minute) {
		lt := t.In(loc)
		wall := time.Date(lt.Year(), lt.Month(), lt.Day(), lt.Hour(), lt.Minute(), 0, 0, time.UTC)
		fire := false
		switch {
		case wildcard:
			fire = r.match(wall)
		case hwm.IsZero():
			// The first minute only establishes the mark, long before from.
		case wall.After(hwm):
			for w := hwm.Add(time.Minute); !w.After(wall); w = w.Add(time.Minute) {
				if r.match(w) {
					fire = true
					break
				}
			}
		}
		if hwm.IsZero() || wall.After(hwm) {
			hwm = wall
		}
		if fire && t.After(from) {
			out = append(out, t)
		}
	}
	return out
}

// nextFires chains Next from from until past to.
func nextFires(tb testing.TB, s *Schedule, loc *time.Location, from, to time.Time) []time.Time {
	tb.Helper()
	var out []time.Time
	for t := from; ; {
		n, ok := s.Next(t, loc)
		if !ok || n.After(to) {
			return out
		}
		if !n.After(t) {
			tb.Fatalf("%s: Next(%v) = %v, not strictly after", s, t, n)
		}
		out = append(out, n)
		t = n
	}
}

func mustLoc(tb testing.TB, name string) *time.Location {
	tb.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		tb.Fatalf("load location: %v", err)
	}
	return loc
}

type scenario struct {
	zone string
	from string // local wall time, 2006-01-02 15:04
	days int
}

var (
	nySpring = scenario{"America/New_York", "2026-03-06 12:00", 4}  // gap 02:00-02:59 on Mar 8
	nyFall   = scenario{"America/New_York", "2026-10-30 12:00", 4}  // 01:00-01:59 twice on Nov 1
	beSpring = scenario{"Europe/Berlin", "2026-03-27 12:00", 4}     // gap 02:00-02:59 on Mar 29
	beFall   = scenario{"Europe/Berlin", "2026-10-23 12:00", 4}     // 02:00-02:59 twice on Oct 25
	utcLeap  = scenario{"UTC", "2028-02-10 00:00", 25}              // Feb 29 2028, Mar 1
	nyLeap   = scenario{"America/New_York", "2024-02-20 00:00", 25} // Feb 29 2024, Mar 1, gap on Mar 10
	beSummer = scenario{"Europe/Berlin", "2026-06-20 00:00", 21}    // Jul 1
)

// dstExprs exercise the wildcard/fixed split around clock changes.
var dstExprs = []string{
	"30 2 * * *", "*/15 2 * * *", "0-59/15 2 * * *", "0 2,3 * * *",
	"30 1 * * *", "*/30 1 * * *", "0 * * * *", "15 */2 * * *",
	"0 1-3 * * *", "* 2 * * *", "59 1 * * *", "0 3 * * *",
	"30 2 * * 0", "*/20 2-3 * * sun", "0,30 1,2 * * *", "*/7 1-3 * * *",
	"@hourly", "@daily", "45 2 8 3 *", "45 2 29 3 *", "7 2,3 25 10 *",
	"0 2 1 11 *", "* * * * *", "59 23 * * *", "0 0 * * *",
}

// calendarExprs exercise names, steps, lists, the day rule and Feb 29.
var calendarExprs = []string{
	"0 0 29 2 *", "0 12 29 2 *", "0 0 1,15 * 1", "0 0 */2 * 1",
	"0 0 1-31/2 * 1", "0 0 1-7 * */7", "0 0 30 2 1", "0 9 * * mon-fri",
	"30 8 * jan-mar/2 MON", "0 0 * * 7", "0 0 * * 0", "0 0 * * 5-7",
	"0 0 * * 1-7/2", "0 0 *,15 * 1", "0 0 15,* * 1", "0 0 1 * *",
	"@weekly", "@monthly", "@yearly", "0 6 13 * fri",
	"10-40/15 */5 * * *", "0 0 1 * */2", "5 4 * Feb,MAR *", "0 0 31 * *",
	"0 0 29 2 */7", "0 0 29 * thu", "0 0 */10 * *", "0 0 8-14 * */7",
	"0 22 * * Sat,SUN", "0 0 28-31 2 *",
}

func TestNextAgainstBruteForce(t *testing.T) {
	type bcase struct {
		expr string
		sc   scenario
	}
	var cases []bcase
	for _, e := range dstExprs {
		for _, sc := range []scenario{nySpring, nyFall, beSpring, beFall} {
			cases = append(cases, bcase{e, sc})
		}
	}
	for _, e := range calendarExprs {
		for _, sc := range []scenario{utcLeap, nyLeap, beSummer} {
			cases = append(cases, bcase{e, sc})
		}
	}
	if len(cases) < 100 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.sc.zone+"/"+c.sc.from+"/"+c.expr, func(t *testing.T) {
			t.Parallel()
			loc := mustLoc(t, c.sc.zone)
			from, err := time.ParseInLocation("2006-01-02 15:04", c.sc.from, loc)
			if err != nil {
				t.Fatal(err)
			}
			to := from.AddDate(0, 0, c.sc.days)
			s, err := Parse(c.expr)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want := bruteFires(refParse(t, c.expr), loc, from, to)
			got := nextFires(t, s, loc, from, to)
			if !slices.EqualFunc(got, want, time.Time.Equal) {
				t.Errorf("fires in (%v, %v]:\n got  %s\n want %s", from, to, fmtTimes(got, loc), fmtTimes(want, loc))
			}
		})
	}
}

func fmtTimes(ts []time.Time, loc *time.Location) string {
	var b strings.Builder
	for i, t := range ts {
		if i == 20 {
			b.WriteString(" ... (" + strconv.Itoa(len(ts)) + " in all)")
			break
		}
		b.WriteString(" " + t.In(loc).Format("01-02 15:04 MST"))
	}
	return b.String()
}
