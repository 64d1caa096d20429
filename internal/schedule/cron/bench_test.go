package cron

import (
	"testing"
	"time"
)

// BenchmarkNextFeb29 computes 1,000 successive fires of "0 0 29 2 *" per
// iteration (about 4,000 years of leap days); the target is under 10 ms.
func BenchmarkNextFeb29(b *testing.B) {
	s := mustParse(b, "0 0 29 2 *")
	for _, zone := range []string{"UTC", "America/New_York"} {
		b.Run(zone, func(b *testing.B) {
			loc := mustLoc(b, zone)
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
			for b.Loop() {
				t := start
				for range 1000 {
					var ok bool
					if t, ok = s.Next(t, loc); !ok {
						b.Fatal("no fire")
					}
				}
			}
		})
	}
}

func BenchmarkNextEveryMinuteNewYork(b *testing.B) {
	s := mustParse(b, "* * * * *")
	loc := mustLoc(b, "America/New_York")
	t := time.Date(2026, 3, 8, 0, 0, 0, 0, loc)
	for b.Loop() {
		t, _ = s.Next(t, loc)
	}
}

func BenchmarkParse(b *testing.B) {
	for b.Loop() {
		if _, err := Parse("10-40/15 */2 1,15 jan-mar/2 mon-fri"); err != nil {
			b.Fatal(err)
		}
	}
}

// The 1,000 leap days the benchmark walks are each Feb 29 of the next leap
// year in turn, 2100, 2200, 2300 skipped and 2400 kept.
func TestNextFeb29Sequence(t *testing.T) {
	s := mustParse(t, "0 0 29 2 *")
	for _, zone := range []string{"UTC", "America/New_York", "Australia/Sydney"} {
		loc := mustLoc(t, zone)
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
		year := 2024
		for range 1000 {
			next, ok := s.Next(at, loc)
			year += 4
			for year%4 != 0 || year%100 == 0 && year%400 != 0 {
				year += 4
			}
			want := time.Date(year, 2, 29, 0, 0, 0, 0, loc)
			if !ok || !next.Equal(want) {
				t.Fatalf("%s: Next(%v) = %v, %v; want %v", zone, at, next, ok, want)
			}
			at = next
		}
	}
}
