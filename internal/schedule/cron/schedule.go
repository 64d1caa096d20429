package cron

import (
	"fmt"
	"math/bits"
	"time"
)

// Schedule is a parsed cron expression. It is immutable and safe for
// concurrent use.
type Schedule struct {
	minute uint64 // bits 0-59
	hour   uint32 // bits 0-23
	dom    uint32 // bits 1-31
	month  uint16 // bits 1-12
	dow    uint8  // bits 0-6, Sunday is 0 (a written 7 is folded onto 0)

	// Vixie's MIN_STAR, HR_STAR, DOM_STAR, DOW_STAR: the field's text
	// begins with "*". The first two make a wildcard job for DST; the day
	// pair chooses between AND and OR.
	minStar, hrStar, domStar, dowStar bool

	text string // normalized expression
}

// String returns the expression in normal form: fields separated by single
// spaces, numbers without leading zeros, names in lower case, a step of 1
// dropped, descriptors as written. Parse(s.String()) yields an equal
// Schedule.
func (s *Schedule) String() string { return s.text }

// Wildcard reports whether s is a wildcard job in Vixie's DST sense: its
// minute or hour field begins with "*". Wildcard jobs fire at every real
// minute whose wall time matches; the others fire once per wall time.
func (s *Schedule) Wildcard() bool { return s.minStar || s.hrStar }

// Matches reports whether the wall-clock minute of t, read in t's own
// location, matches every field. It ignores seconds, and it knows nothing
// of the DST rules Next applies: Next can fire a fixed-time job at an
// instant Matches rejects (03:00 for a 02:30 job on spring-forward day).
func (s *Schedule) Matches(t time.Time) bool {
	_, mo, d := t.Date()
	h, mi, _ := t.Clock()
	return s.minute&(1<<mi) != 0 && s.hour&(1<<h) != 0 && s.month&(1<<mo) != 0 &&
		s.dayMatches(d, int(t.Weekday()))
}

// dayMatches is find_jobs' day test: AND when either day field is star,
// OR when both are restricted. Month never takes part in the OR.
func (s *Schedule) dayMatches(d, wd int) bool {
	domOK := s.dom&(1<<d) != 0
	dowOK := s.dow&(1<<wd) != 0
	if s.domStar || s.dowStar {
		return domOK && dowOK
	}
	return domOK || dowOK
}

// maxDays is the longest each month gets, February counted as 29.
var maxDays = [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// neverFires returns why s can match no date, or "" if it can. Exact: with
// both day fields restricted the OR always finds days, since every weekday
// occurs in every month. Under AND a date fires iff some selected month has
// a selected day of month, because each month-day (Feb 29 included) falls
// on every weekday within a 400-year cycle.
func (s *Schedule) neverFires(domText, monthText, dowText string) string {
	if !s.domStar && !s.dowStar {
		return ""
	}
	longest := 0
	for m := 1; m <= 12; m++ {
		if s.month&(1<<m) == 0 {
			continue
		}
		if s.dom&(1<<(maxDays[m]+1)-1) != 0 {
			return ""
		}
		longest = max(longest, maxDays[m])
	}
	msg := fmt.Sprintf("never fires: day-of-month %q does not occur in month %q (the longest selected month has %d days)",
		domText, monthText, longest)
	if dowText != "*" {
		msg += fmt.Sprintf("; day-of-week %q begins with \"*\", so a day must match both day fields, not either", dowText)
	}
	return msg
}

// Minute arithmetic below works on wall minutes: minutes since
// 1970-01-01 00:00 on the local wall clock, as if the wall clock were UTC.

// nextMatch returns the smallest wall minute w with from <= w <= limit that
// matches every field, walking the calendar a day at a time at most.
func (s *Schedule) nextMatch(from, limit int64) (int64, bool) {
	if from > limit {
		return 0, false
	}
	day := floorDiv(from, 1440)
	mod := int(from - day*1440)
	hh, mm := mod/60, mod%60
	limitDay := floorDiv(limit, 1440)
	y, m, d := civil(day)
	and := s.domStar || s.dowStar
	for day <= limitDay {
		if s.month&(1<<m) == 0 {
			nm := nextBit(uint64(s.month), m+1)
			if nm < 0 {
				y++
				nm = nextBit(uint64(s.month), 1)
			}
			m, d = nm, 1
			day = daysFromCivil(y, m, 1)
			hh, mm = 0, 0
			continue
		}
		dim := daysIn(y, m)
		if and && s.dom&(1<<d) == 0 {
			// Under AND the day of month must match: jump to the next one.
			nd := nextBit(uint64(s.dom), d+1)
			if nd < 0 || nd > dim {
				nd = dim + 1
			}
			day += int64(nd - d)
			d = nd
			hh, mm = 0, 0
		} else if s.dayMatches(d, int(floorMod(day+4, 7))) {
			if h, mi, ok := s.timeFrom(hh, mm); ok {
				w := day*1440 + int64(h*60+mi)
				return w, w <= limit
			}
			day++
			d++
			hh, mm = 0, 0
		} else {
			day++
			d++
			hh, mm = 0, 0
		}
		if d > dim {
			d = 1
			if m++; m > 12 {
				m = 1
				y++
			}
		}
	}
	return 0, false
}

// timeFrom returns the first selected hour:minute at or after hh:mm.
func (s *Schedule) timeFrom(hh, mm int) (h, mi int, ok bool) {
	h = nextBit(uint64(s.hour), hh)
	if h < 0 {
		return 0, 0, false
	}
	if h == hh {
		if mi = nextBit(s.minute, mm); mi >= 0 {
			return h, mi, true
		}
		if h = nextBit(uint64(s.hour), hh+1); h < 0 {
			return 0, 0, false
		}
	}
	return h, bits.TrailingZeros64(s.minute), true
}

// nextBit returns the lowest set bit of mask at or above from, or -1.
func nextBit(mask uint64, from int) int {
	if from >= 64 {
		return -1
	}
	mask &^= 1<<from - 1
	if mask == 0 {
		return -1
	}
	return bits.TrailingZeros64(mask)
}

func daysIn(y int64, m int) int {
	if m == 2 && !(y%4 == 0 && (y%100 != 0 || y%400 == 0)) {
		return 28
	}
	return maxDays[m]
}

// daysFromCivil and civil convert between proleptic Gregorian dates and
// days since 1970-01-01 (Howard Hinnant's algorithms).
func daysFromCivil(y int64, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	mp := int64((m + 9) % 12)
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

func civil(days int64) (y int64, m, d int) {
	z := days + 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		m = int(mp + 3)
	} else {
		m = int(mp - 9)
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }
