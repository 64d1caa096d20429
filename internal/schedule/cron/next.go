package cron

import "time"

const (
	// horizonDays is one Gregorian cycle (146 097 days) plus slack for UTC
	// offsets: every possible expression fires within it.
	horizonDays = 146097 + 2
	// maxUnix bounds reference times so minute arithmetic cannot overflow
	// (about ±35 million years).
	maxUnix = 1 << 50
	// maxOffset bounds |UTC offset| of zones that have transitions; every
	// IANA zone stays within ±16h (historical local mean time included).
	maxOffset = 26 * 3600
)

// Next returns the first fire strictly after the instant after, evaluating
// the schedule in loc (nil means UTC), and false if there is none within a
// 400-year Gregorian cycle. The result is in loc and falls on a whole local
// minute.
//
// Clock changes follow the Vixie daemon. A wildcard job (minute or hour
// field begins with "*") fires at every real minute whose wall time
// matches: never inside a spring-forward gap, in both passes of a repeated
// hour. Any other job fires once for each matching wall time, at the first
// real minute at which the local clock has reached it: a time inside a gap
// fires when the gap ends, a repeated time does not fire again, and
// several wall times reached at once are one fire.
//
// Only a wildcard job can lack a fire in a zone (every match inside a
// recurring gap, such as "* 2 8-14 3 */7" in America/New_York); in UTC
// every expression Parse accepts has one.
func (s *Schedule) Next(after time.Time, loc *time.Location) (time.Time, bool) {
	if loc == nil {
		loc = time.UTC
	}
	a := after.Unix() // floor: ticks are whole seconds, so t > after iff t >= a+1
	if a > maxUnix || a < -maxUnix {
		return time.Time{}, false
	}
	var t int64
	var ok bool
	if s.Wildcard() {
		t, ok = s.nextWildcard(a, loc)
	} else {
		t, ok = s.nextFixed(a, loc)
	}
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(t, 0).In(loc), true
}

// A tick is a real instant (Unix seconds) at which the local wall clock
// shows a whole minute; with offset o that is t+o ≡ 0 mod 60. W(t), the
// tick's wall minute, is (t+o)/60.

// segment is a stretch of real time with one UTC offset: [start, end).
type segment struct {
	start, end       int64
	hasStart, hasEnd bool
	off              int64
}

func segmentAt(sec int64, loc *time.Location) segment {
	t := time.Unix(sec, 0).In(loc)
	_, off := t.Zone()
	st, en := t.ZoneBounds()
	seg := segment{
		start: st.Unix(), hasStart: !st.IsZero(),
		end: en.Unix(), hasEnd: !en.IsZero(),
		off: int64(off),
	}
	// Beyond a zone's last explicit transition Go derives bounds from the
	// TZ footer rule and ends the year after 365 days, so in the last UTC
	// day of a leap year ZoneBounds reports an end at or before t
	// (golang/go#81583). The offset is right and holds to the next UTC
	// midnight at least (rules never change on Dec 31), so end it there.
	if seg.hasEnd && seg.end <= sec {
		seg.end = (floorDiv(sec, 86400) + 1) * 86400
	}
	if seg.hasStart && seg.start > sec {
		seg.start = sec
	}
	return seg
}

// ceilTick returns the first tick at or after x under offset off.
func ceilTick(x, off int64) int64 {
	return -floorDiv(-(x+off), 60)*60 - off
}

// nextWildcard returns the first tick after a whose wall minute matches,
// walking the offset segments forward.
func (s *Schedule) nextWildcard(a int64, loc *time.Location) (int64, bool) {
	limit := floorDiv(a, 60) + horizonDays*1440
	cur := a + 1
	for {
		seg := segmentAt(cur, loc)
		t0 := ceilTick(cur, seg.off)
		if seg.hasEnd && t0 >= seg.end {
			cur = seg.end
			continue
		}
		lo := (t0 + seg.off) / 60
		if lo > limit {
			return 0, false
		}
		hi := limit
		if seg.hasEnd {
			hi = min(hi, floorDiv(seg.end-1+seg.off, 60))
		}
		if w, ok := s.nextMatch(lo, hi); ok {
			return w*60 - seg.off, true
		}
		if !seg.hasEnd {
			return 0, false
		}
		cur = seg.end
	}
}

// nextFixed implements Vixie's high-water mark (virtualTime): the job fires
// for wall minute w at the first tick whose wall minute is at least w, if
// no earlier tick's was. So the next fire is for the first match above the
// highest wall minute already shown, at the first tick that reaches it.
func (s *Schedule) nextFixed(a int64, loc *time.Location) (int64, bool) {
	h := highWater(a, loc)
	w, ok := s.nextMatch(h+1, h+1+horizonDays*1440)
	if !ok {
		return 0, false
	}
	return firstTickReaching(w, a+1, loc), true
}

// highWater returns the highest wall minute of any tick at or before a.
// Ticks more than two maximal offsets before a cannot exceed the wall
// minute at a, so only the segments since then are read.
func highWater(a int64, loc *time.Location) int64 {
	found := false
	var best int64
	cur := a
	for {
		seg := segmentAt(cur, loc)
		m := floorDiv(cur+seg.off, 60)
		if !seg.hasStart || m*60-seg.off >= seg.start {
			if !found || m > best {
				best, found = m, true
			}
		}
		if !seg.hasStart || seg.start <= a-2*maxOffset {
			break
		}
		cur = seg.start - 1
	}
	if !found {
		// Unreachable for real zones (segments shorter than a minute for two days).
		best = floorDiv(a+segmentAt(a, loc).off, 60)
	}
	return best
}

// firstTickReaching returns the first tick at or after from whose wall
// minute is at least w.
func firstTickReaching(w, from int64, loc *time.Location) int64 {
	target := w * 60
	// No tick before target-maxOffset shows wall minute w or later.
	cur := max(from, target-maxOffset)
	seg := segmentAt(cur, loc)
	if !seg.hasStart || seg.start <= from {
		// from lies in the same segment: exact whatever the offset.
		cur = from
	}
	for {
		t := ceilTick(max(cur, target-seg.off), seg.off)
		if !seg.hasEnd || t < seg.end {
			return t
		}
		cur = seg.end
		seg = segmentAt(cur, loc)
	}
}
