package cron

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// FuzzParse checks that Parse never panics, that every rejection is a
// *ParseError with a reason, and that every accepted expression normalizes
// stably, fires within one 400-year cycle in UTC, and agrees with the
// brute-force reference over a short window in UTC and, across a clock
// change, in America/New_York.
func FuzzParse(f *testing.F) {
	for _, e := range []string{
		"* * * * *", "*/15 2 * * *", "0-59/15 2 * * *", "0 0 29 2 */7",
		"0 0 1,15 * 1", "0 0 1-31/2 * 1", "30 8 * jan-mar/2 MON", "@hourly",
		"*/10 * * * * *", "0 0 30 2 *", "0 0 * * fri-sun", "5/15 * * * *",
	} {
		f.Add(e, int64(0))
	}
	ny := mustLoc(f, "America/New_York")
	const cycle = 146097 * 86400 // 400 Gregorian years in seconds
	base := time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC).Unix()

	f.Fuzz(func(t *testing.T, expr string, ref int64) {
		s, err := Parse(expr)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Msg == "" || pe.Err == nil {
				t.Fatalf("Parse(%q) error %v lacks a reason", expr, err)
			}
			return
		}
		again, err := Parse(s.String())
		if err != nil || *again != *s {
			t.Fatalf("Parse(%q).String() = %q does not round-trip: %v", expr, s.String(), err)
		}

		from := time.Unix(base+floorMod(ref, cycle), 0).UTC()
		next, ok := s.Next(from, time.UTC)
		if !ok || !next.After(from) || next.Unix()-from.Unix() > cycle {
			t.Fatalf("%q: Next(%v) = %v, %v: want a fire within 400 years", expr, from, next, ok)
		}
		if !s.Matches(next) {
			t.Fatalf("%q: Next(%v) = %v does not match", expr, from, next)
		}

		rs := refParse(t, expr)
		check := func(loc *time.Location, from time.Time) {
			to := from.Add(36 * time.Hour)
			want := bruteFires(rs, loc, from, to)
			got := nextFires(t, s, loc, from, to)
			if !slices.EqualFunc(got, want, time.Time.Equal) {
				t.Fatalf("%q in %v, (%v, %v]:\n got  %s\n want %s", expr, loc, from, to, fmtTimes(got, loc), fmtTimes(want, loc))
			}
		}
		check(time.UTC, from)
		// Start 12 hours before New York's next clock change.
		if _, end := from.In(ny).ZoneBounds(); !end.IsZero() && end.After(from) {
			check(ny, end.Add(-12*time.Hour))
		}
	})
}
