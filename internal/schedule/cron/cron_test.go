package cron

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func mustParse(tb testing.TB, expr string) *Schedule {
	tb.Helper()
	s, err := Parse(expr)
	if err != nil {
		tb.Fatalf("Parse(%q): %v", expr, err)
	}
	return s
}

func TestParseNormalizes(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{"*/15 * * * *", "*/15 * * * *"},
		{"  0\t9  *  *   MON-fri ", "0 9 * * mon-fri"},
		{"00 05 01 01 *", "0 5 1 1 *"},
		{"10-40/15 0-23/1 1,15 JAN-Mar/2 7", "10-40/15 0-23 1,15 jan-mar/2 7"},
		{"*/1 * * * *", "* * * * *"},
		{"@daily", "@daily"},
		{"@annually", "@annually"},
	} {
		s := mustParse(t, c.expr)
		if got := s.String(); got != c.want {
			t.Errorf("Parse(%q).String() = %q, want %q", c.expr, got, c.want)
		}
		again := mustParse(t, s.String())
		if *again != *s {
			t.Errorf("Parse(%q) and Parse(%q) differ: %+v vs %+v", c.expr, s.String(), s, again)
		}
	}
}

func TestParseSets(t *testing.T) {
	for _, c := range []struct {
		expr             string
		minute           uint64
		hour, dom        uint32
		month            uint16
		dow              uint8
		domStar, dowStar bool
		wildcard         bool
	}{
		{"10-40/15 * * * *", 1<<10 | 1<<25 | 1<<40, 1<<24 - 1, 1<<32 - 2, 1<<13 - 2, 0x7f, true, true, true},
		{"0 0 * * 0", 1, 1, 1<<32 - 2, 1<<13 - 2, 1, true, false, false},
		{"0 0 * * 7", 1, 1, 1<<32 - 2, 1<<13 - 2, 1, true, false, false},
		{"0 0 * * 5-7", 1, 1, 1<<32 - 2, 1<<13 - 2, 1<<5 | 1<<6 | 1, true, false, false},
		{"0 0 * * 1-7/2", 1, 1, 1<<32 - 2, 1<<13 - 2, 1<<1 | 1<<3 | 1<<5 | 1, true, false, false},
		{"0 0 * * */7", 1, 1, 1<<32 - 2, 1<<13 - 2, 1, true, true, false},
		{"0 0 1-31/2 * 1", 1, 1, 0xAAAAAAAA, 1<<13 - 2, 1 << 1, false, false, false},
		{"0 0 *,15 * 1", 1, 1, 1<<32 - 2, 1<<13 - 2, 1 << 1, true, false, false},
		{"0 0 15,* * 1", 1, 1, 1<<32 - 2, 1<<13 - 2, 1 << 1, false, false, false},
		{"0 12 * FEB,mar,Dec *", 1, 1 << 12, 1<<32 - 2, 1<<2 | 1<<3 | 1<<12, 0x7f, true, true, false},
		{"@hourly", 1, 1<<24 - 1, 1<<32 - 2, 1<<13 - 2, 0x7f, true, true, true},
		{"@weekly", 1, 1, 1<<32 - 2, 1<<13 - 2, 1, true, false, false},
		{"@monthly", 1, 1, 1 << 1, 1<<13 - 2, 0x7f, false, true, false},
		{"@yearly", 1, 1, 1 << 1, 1 << 1, 0x7f, false, true, false},
		{"5 */6 * * *", 1 << 5, 1 | 1<<6 | 1<<12 | 1<<18, 1<<32 - 2, 1<<13 - 2, 0x7f, true, true, true},
	} {
		s := mustParse(t, c.expr)
		if s.minute != c.minute || s.hour != c.hour || s.dom != c.dom || s.month != c.month || s.dow != c.dow {
			t.Errorf("%q: sets min %x hour %x dom %x month %x dow %x, want %x %x %x %x %x",
				c.expr, s.minute, s.hour, s.dom, s.month, s.dow, c.minute, c.hour, c.dom, c.month, c.dow)
		}
		if s.domStar != c.domStar || s.dowStar != c.dowStar || s.Wildcard() != c.wildcard {
			t.Errorf("%q: domStar %v dowStar %v wildcard %v, want %v %v %v",
				c.expr, s.domStar, s.dowStar, s.Wildcard(), c.domStar, c.dowStar, c.wildcard)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, c := range []struct {
		expr  string
		field string
		err   error
		why   []string // substrings the message must contain
	}{
		{"", "", ErrSyntax, []string{"empty"}},
		{"* * * *", "", ErrSyntax, []string{"4 fields", "five"}},
		{"* * * * * * * *", "", ErrSyntax, []string{"8 fields", "five"}},
		{"*/10 * * * * *", "", ErrUnsupported, []string{"six fields", "seconds", "not supported"}},
		{"0 0 12 * * ? 2026", "", ErrUnsupported, []string{"seven fields", "Quartz"}},
		{"60 * * * *", "minute", ErrSyntax, []string{"60", "out of range 0-59"}},
		{"* 24 * * *", "hour", ErrSyntax, []string{"24", "out of range 0-23"}},
		{"* * 0 * *", "day-of-month", ErrSyntax, []string{"out of range 1-31"}},
		{"* * 32 * *", "day-of-month", ErrSyntax, []string{"out of range 1-31"}},
		{"* * * 13 *", "month", ErrSyntax, []string{"out of range 1-12"}},
		{"* * * * 8", "day-of-week", ErrSyntax, []string{"out of range 0-7"}},
		{"99999999999999999999 * * * *", "minute", ErrSyntax, []string{"out of range"}},
		{"5-1 * * * *", "minute", ErrSyntax, []string{"backwards", "5-1"}},
		{"0 0 * * fri-sun", "day-of-week", ErrSyntax, []string{"backwards", "Sunday is 0"}},
		{"0 0 * dec-jan *", "month", ErrSyntax, []string{"backwards"}},
		{"5/15 * * * *", "minute", ErrSyntax, []string{"needs a range", "5-59/15"}},
		{"0 0 * * mon/2", "day-of-week", ErrSyntax, []string{"needs a range"}},
		{"*/0 * * * *", "minute", ErrSyntax, []string{"step 0", "at least 1"}},
		{"*/60 * * * *", "minute", ErrSyntax, []string{"step 60", "larger than"}},
		{"0 */24 * * *", "hour", ErrSyntax, []string{"step 24", "larger than"}},
		{"0-5/6 * * * *", "minute", ErrSyntax, []string{"step 6", "larger than"}},
		{"0 0 * * */8", "day-of-week", ErrSyntax, []string{"step 8", "larger than"}},
		{"*/x * * * *", "minute", ErrSyntax, []string{"step", "decimal number"}},
		{"0 0 * */feb *", "month", ErrSyntax, []string{"step", "decimal number"}},
		{"*/ * * * *", "minute", ErrSyntax, []string{"step", "decimal number"}},
		{"0 0 L * *", "day-of-month", ErrUnsupported, []string{"Quartz"}},
		{"0 0 15W * *", "day-of-month", ErrUnsupported, []string{"Quartz"}},
		{"0 0 LW * *", "day-of-month", ErrUnsupported, []string{"Quartz"}},
		{"0 0 * * 5L", "day-of-week", ErrUnsupported, []string{"Quartz"}},
		{"0 0 ? * mon", "day-of-month", ErrUnsupported, []string{"Quartz"}},
		{"0 0 * * MON#2", "day-of-week", ErrUnsupported, []string{"Quartz"}},
		{"0 0 * * 1#2", "day-of-week", ErrUnsupported, []string{"Quartz"}},
		{"0~30 * * * *", "minute", ErrUnsupported, []string{"cronie", "~"}},
		{"0 0 $ * *", "day-of-month", ErrUnsupported, []string{"last day"}},
		{"@reboot", "", ErrUnsupported, []string{"@reboot", "not supported"}},
		{"@every 5m", "", ErrUnsupported, []string{"@every", "interval"}},
		{"@every", "", ErrUnsupported, []string{"@every"}},
		{"@DAILY", "", ErrSyntax, []string{"lower case"}},
		{"@fortnightly", "", ErrSyntax, []string{"unknown descriptor"}},
		{"@daily 0", "", ErrSyntax, []string{"stands alone"}},
		{"0 0 * * monday", "day-of-week", ErrSyntax, []string{"unknown day-of-week name", "three letters"}},
		{"0 0 * january *", "month", ErrSyntax, []string{"unknown month name"}},
		{"mon * * * *", "minute", ErrSyntax, []string{"names are allowed only in the month and day-of-week"}},
		{"1,,2 * * * *", "minute", ErrSyntax, []string{"empty list element"}},
		{"1, * * * *", "minute", ErrSyntax, []string{"empty list element"}},
		{"*x * * * *", "minute", ErrSyntax, []string{"unexpected"}},
		{"1-* * * * *", "minute", ErrSyntax, []string{"*"}},
		{"1- * * * *", "minute", ErrSyntax, []string{"no end"}},
		{"-1 * * * *", "minute", ErrSyntax, []string{"start and an end"}},
		{"0 0 1-2-3 * *", "day-of-month", ErrSyntax, []string{"unexpected"}},
		{"0x1 * * * *", "minute", ErrSyntax, []string{"not a number"}},
		{"* * * * *\n", "", ErrSyntax, []string{"control character"}},
		{"0 0 30 2 *", "", ErrNeverFires, []string{"never fires", `"30"`, "29 days"}},
		{"0 0 31 4 *", "", ErrNeverFires, []string{"never fires", "30 days"}},
		{"0 0 31 4,6,9,11 *", "", ErrNeverFires, []string{"never fires"}},
		{"0 0 30,31 feb *", "", ErrNeverFires, []string{"never fires"}},
		{"0 0 31 4 */2", "", ErrNeverFires, []string{"never fires", `"*/2" begins with "*"`, "both day fields"}},
		{"0 0 30,31 2 */2", "", ErrNeverFires, []string{"never fires"}},
		{"0 0 31 apr */7", "", ErrNeverFires, []string{"never fires", "both day fields"}},
	} {
		_, err := Parse(c.expr)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q) = %v, want a *ParseError", c.expr, err)
			continue
		}
		if !errors.Is(err, c.err) {
			t.Errorf("Parse(%q): %v is not %v", c.expr, err, c.err)
		}
		if pe.Field != c.field || pe.Expr != c.expr {
			t.Errorf("Parse(%q): Field %q Expr %q, want %q", c.expr, pe.Field, pe.Expr, c.field)
		}
		for _, w := range c.why {
			if !strings.Contains(pe.Msg, w) {
				t.Errorf("Parse(%q) message %q does not say %q", c.expr, pe.Msg, w)
			}
		}
		if !strings.HasPrefix(err.Error(), "parse cron ") {
			t.Errorf("Parse(%q): error %q lacks the verb prefix", c.expr, err)
		}
	}
}

// Expressions that look impossible but are not: Feb 29, the OR rescue, and
// day fields that begin with "*".
func TestParseAcceptsRareButPossible(t *testing.T) {
	for _, e := range []string{
		"0 0 29 2 *", "0 0 29 2 */7", "0 0 30 2 1", "0 0 31 2,3 *", "0 0 29,30 2 */2 ",
		"0 0 31 4 1-7/2", "0 0 */30 2 *", "0 0 * 2 */7", "0 0 28-31 2 *",
	} {
		if _, err := Parse(e); err != nil {
			t.Errorf("Parse(%q): %v", e, err)
		}
	}
}

func TestMatches(t *testing.T) {
	ny := mustLoc(t, "America/New_York")
	for _, c := range []struct {
		expr string
		at   time.Time
		want bool
	}{
		{"0 0 1,15 * 1", time.Date(2026, 6, 15, 0, 0, 0, 0, time.UTC), true}, // 15th
		{"0 0 1,15 * 1", time.Date(2026, 6, 8, 0, 0, 0, 0, time.UTC), true},  // a Monday
		{"0 0 1,15 * 1", time.Date(2026, 6, 9, 0, 0, 0, 0, time.UTC), false},
		{"0 0 */2 * 1", time.Date(2026, 6, 8, 0, 0, 0, 0, time.UTC), false}, // Monday, even day
		{"0 0 */2 * 1", time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), true},  // Monday the 1st
		{"0 0 1-31/2 * 1", time.Date(2026, 6, 8, 0, 0, 0, 0, time.UTC), true},
		{"0 0 1-31/2 * 1", time.Date(2026, 6, 3, 0, 0, 0, 0, time.UTC), true},
		{"0 0 1-31/2 * 1", time.Date(2026, 6, 4, 0, 0, 0, 0, time.UTC), false},
		{"30 2 * * *", time.Date(2026, 3, 8, 2, 30, 59, 0, ny), false}, // Date normalizes the gap to 03:30
		{"30 2 * * *", time.Date(2026, 3, 9, 2, 30, 59, 0, ny), true},
		{"0 0 * * 7", time.Date(2026, 6, 7, 0, 0, 0, 0, time.UTC), true},
	} {
		if got := mustParse(t, c.expr).Matches(c.at); got != c.want {
			t.Errorf("%q.Matches(%v) = %v, want %v", c.expr, c.at, got, c.want)
		}
	}
}

// The examples of the scheduling notes, America/New_York 2026 (gap
// 02:00-02:59 on Mar 8, repeat 01:00-01:59 on Nov 1).
func TestNextDSTExamples(t *testing.T) {
	ny := mustLoc(t, "America/New_York")
	be := mustLoc(t, "Europe/Berlin")
	for _, c := range []struct {
		expr string
		loc  *time.Location
		from time.Time
		want []string // RFC 3339 with offset
	}{
		{"30 2 * * *", ny, time.Date(2026, 3, 7, 12, 0, 0, 0, ny),
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"}},
		{"*/15 2 * * *", ny, time.Date(2026, 3, 7, 2, 50, 0, 0, ny),
			[]string{"2026-03-09T02:00:00-04:00"}},
		{"0-59/15 2 * * *", ny, time.Date(2026, 3, 7, 2, 50, 0, 0, ny),
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:00:00-04:00"}},
		{"0 2,3 * * *", ny, time.Date(2026, 3, 7, 12, 0, 0, 0, ny),
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:00:00-04:00", "2026-03-09T03:00:00-04:00"}},
		{"30 1 * * *", ny, time.Date(2026, 10, 31, 12, 0, 0, 0, ny),
			[]string{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
		{"*/30 1 * * *", ny, time.Date(2026, 10, 31, 12, 0, 0, 0, ny),
			[]string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-01T01:00:00-05:00", "2026-11-01T01:30:00-05:00", "2026-11-02T01:00:00-05:00"}},
		{"0 * * * *", ny, time.Date(2026, 11, 1, 0, 30, 0, 0, ny),
			[]string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00", "2026-11-01T02:00:00-05:00"}},
		{"0 * * * *", ny, time.Date(2026, 3, 8, 0, 30, 0, 0, ny),
			[]string{"2026-03-08T01:00:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-08T04:00:00-04:00"}},
		{"0 2 * * *", ny, time.Date(2026, 10, 31, 12, 0, 0, 0, ny),
			[]string{"2026-11-01T02:00:00-05:00"}},
		{"30 2 * * *", be, time.Date(2026, 10, 24, 12, 0, 0, 0, be),
			[]string{"2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"}},
		{"15 2 * * *", be, time.Date(2026, 3, 28, 12, 0, 0, 0, be),
			[]string{"2026-03-29T03:00:00+02:00", "2026-03-30T02:15:00+02:00"}},
	} {
		s := mustParse(t, c.expr)
		from := c.from
		for i, w := range c.want {
			got, ok := s.Next(from, c.loc)
			if !ok || got.Format(time.RFC3339) != w {
				t.Errorf("%q fire %d after %v = %v, %v; want %s", c.expr, i, from, got.Format(time.RFC3339), ok, w)
				break
			}
			from = got
		}
	}
}

func TestNextLeapDay(t *testing.T) {
	for _, c := range []struct {
		expr string
		from time.Time
		want []string
	}{
		// Waits 8 years across the non-leap 2100.
		{"0 0 29 2 *", time.Date(2096, 2, 29, 0, 0, 0, 0, time.UTC), []string{"2104-02-29", "2108-02-29"}},
		// Feb 29 on a Sunday: 28 years, then 40 across 2100.
		{"0 0 29 2 */7", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), []string{"2032-02-29", "2060-02-29", "2088-02-29", "2128-02-29"}},
		{"0 0 29 2 0", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), []string{"2026-02-01", "2026-02-08"}}, // OR: Sundays in Feb
		{"0 0 29 2 *", time.Date(2399, 3, 1, 0, 0, 0, 0, time.UTC), []string{"2400-02-29", "2404-02-29"}},
	} {
		s := mustParse(t, c.expr)
		from := c.from
		for _, w := range c.want {
			got, ok := s.Next(from, time.UTC)
			if !ok || got.Format("2006-01-02") != w || got.Hour() != 0 || got.Minute() != 0 {
				t.Fatalf("%q after %v = %v, %v; want %s", c.expr, from, got, ok, w)
			}
			from = got
		}
	}
}

// Feb 29 schedules in a DST zone: the walk over offset segments must not
// lose years.
func TestNextLeapDayInZone(t *testing.T) {
	ny := mustLoc(t, "America/New_York")
	s := mustParse(t, "* 12 29 2 */7") // wildcard job
	got, ok := s.Next(time.Date(2060, 3, 1, 0, 0, 0, 0, ny), ny)
	if !ok || got.Format(time.RFC3339) != "2088-02-29T12:00:00-05:00" {
		t.Fatalf("Next = %v, %v", got, ok)
	}
}

func TestNextStrictlyAfterAndMinuteResolution(t *testing.T) {
	s := mustParse(t, "*/5 * * * *")
	base := time.Date(2026, 6, 1, 10, 5, 0, 0, time.UTC)
	for _, c := range []struct {
		from time.Time
		want time.Time
	}{
		{base, base.Add(5 * time.Minute)},
		{base.Add(-time.Nanosecond), base},
		{base.Add(time.Nanosecond), base.Add(5 * time.Minute)},
		{base.Add(59 * time.Second), base.Add(5 * time.Minute)},
	} {
		if got, ok := s.Next(c.from, time.UTC); !ok || !got.Equal(c.want) {
			t.Errorf("Next(%v) = %v, want %v", c.from, got, c.want)
		}
	}
	if got, _ := s.Next(base, nil); got.Location() != time.UTC {
		t.Errorf("nil location gave %v", got.Location())
	}
	// Before 1970 the floor of the reference matters.
	old := time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)
	if got, _ := s.Next(old.Add(-time.Nanosecond), time.UTC); !got.Equal(old) {
		t.Errorf("Next before 1970 = %v, want %v", got, old)
	}
}

// Offsets that are not whole minutes (local mean time) still fire on whole
// local minutes.
func TestNextOddOffset(t *testing.T) {
	loc := time.FixedZone("LMT", -(4*3600 + 56*60 + 2))
	s := mustParse(t, "*/5 * * * *")
	got, ok := s.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), loc)
	if !ok || got.Second() != 0 || got.Minute()%5 != 0 {
		t.Fatalf("Next = %v, %v", got, ok)
	}
	fixed := mustParse(t, "30 7 * * *")
	got, ok = fixed.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), loc)
	if !ok || got.Format("15:04:05") != "07:30:00" {
		t.Fatalf("Next = %v, %v", got, ok)
	}
}

// A wildcard job whose every match lies in a recurring gap never fires in
// that zone, and Next says so instead of looping.
func TestNextNoFireInZone(t *testing.T) {
	ny := mustLoc(t, "America/New_York")
	s := mustParse(t, "* 2 8-14 3 */7") // second Sunday of March, 02:xx
	if got, ok := s.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, ny), ny); ok {
		t.Fatalf("Next in New York = %v, want none", got)
	}
	if _, ok := s.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, ny), time.UTC); !ok {
		t.Fatal("Next in UTC found nothing")
	}
	// The fixed-time variant fires at 03:00 after each gap.
	f := mustParse(t, "30 2 8-14 3 */7")
	got, ok := f.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, ny), ny)
	if !ok || got.Format(time.RFC3339) != "2026-03-08T03:00:00-04:00" {
		t.Fatalf("fixed Next = %v, %v", got, ok)
	}
}

func TestNextExtremeReference(t *testing.T) {
	s := mustParse(t, "* * * * *")
	if _, ok := s.Next(time.Date(1<<40, 1, 1, 0, 0, 0, 0, time.UTC), time.UTC); ok {
		t.Error("Next beyond the supported range reported a fire")
	}
	if _, ok := s.Next(time.Time{}, time.UTC); !ok {
		t.Error("Next after year 1 found nothing")
	}
}

// Errors stay readable when the input is enormous.
func TestParseErrorBounded(t *testing.T) {
	expr := strings.Repeat("7", 100000) + " * * * *"
	_, err := Parse(expr)
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Expr != expr {
		t.Fatalf("Parse = %v", err)
	}
	if len(pe.Msg) > 310 || len(err.Error()) > 500 {
		t.Fatalf("message of %d bytes, error of %d", len(pe.Msg), len(err.Error()))
	}
	if !strings.Contains(pe.Msg, "out of range") {
		t.Fatalf("message %q does not say why", pe.Msg)
	}
}
