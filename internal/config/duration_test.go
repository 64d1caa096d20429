package config

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		secs int64
	}{
		// every unit name
		{"1s", 1}, {"2sec", 2}, {"3secs", 3}, {"1second", 1}, {"4seconds", 4},
		{"1m", 60}, {"1min", 60}, {"2mins", 120}, {"1minute", 60}, {"3minutes", 180},
		{"1h", 3600}, {"1hr", 3600}, {"2hrs", 7200}, {"1hour", 3600}, {"2hours", 7200},
		{"1d", 86400}, {"1day", 86400}, {"2days", 172800},
		{"1w", 604800}, {"1wk", 604800}, {"2wks", 1209600}, {"1week", 604800}, {"2weeks", 1209600},
		{"1M", 2630016}, {"1month", 2630016}, {"2months", 5260032},
		{"1y", 31557600}, {"1yr", 31557600}, {"2yrs", 63115200}, {"1year", 31557600}, {"2years", 63115200},
		{"12M", 31560192}, // not a year: M is 30.44 days
		// terms add up, any order, blanks optional
		{"1h30m", 5400}, {"1h 30m", 5400}, {"1 hour 30 minutes", 5400}, {"30m 1h", 5400},
		{"1h 1h", 7200}, {"1h30m15s", 5415}, {"2 days 4 hours", 187200},
		{"  1h\t", 3600}, {"1\th", 3600}, {"1 h", 3600},
		{"0h 30m", 1800}, // a zero term inside a positive total
		{"01h", 3600},
		// decimals, exact
		{"1.5h", 5400}, {"1.5m", 90}, {"0.25h", 900}, {"1.000h", 3600}, {"0.5M", 1315008},
		{"1.5y", 47336400}, {"2.5d", 216000}, {"0.1d", 8640},
		// the largest whole number of seconds a time.Duration holds
		{"9223372036s", 9223372036}, {"292y", 9214819200},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if err != nil {
			t.Errorf("ParseDuration(%q): %v", tt.in, err)
			continue
		}
		if want := time.Duration(tt.secs) * time.Second; got != want {
			t.Errorf("ParseDuration(%q) = %v, want %v", tt.in, got, want)
		}
	}
}

func TestParseDurationErrors(t *testing.T) {
	tests := []struct {
		in     string
		reason string // substring of DurationError.Reason
	}{
		{"", "empty"},
		{"  ", "blank"},
		{"1", "needs a unit"},
		{"0", "needs a unit"},
		{"1.5", "needs a unit"},
		{"1h30", `number "30" has no unit`},
		{"0s", "greater than zero"},
		{"0m 0s", "greater than zero"},
		{"0.0h", "greater than zero"},
		{"-1h", "signs"},
		{"+1h", "signs"},
		{"1h-30m", "signs"},
		{"1h +30m", "signs"},
		{"1H", `unknown unit "H" (units are case-sensitive; did you mean "h"?)`},
		{"1S", `did you mean "s"`},
		{"1Min", `did you mean "min"`},
		{"1m30X", `unknown unit "X"`},
		{"1hh", `unknown unit "hh"`},
		{"1fortnight", `unknown unit "fortnight"`},
		{"500ms", `sub-second unit "ms"`},
		{"1us", "sub-second"},
		{"1µs", "sub-second"},
		{"10ns", "sub-second"},
		{"1 0m", "split by blanks"},
		{"1h 2 3m", "split by blanks"},
		{"1e3s", "exponents"},
		{"1E+3s", "exponents"},
		{"1.5e2h", "exponents"},
		{"1h,30m", "separators"},
		{"1h, 30m", "separators"},
		{"1h;30m", "separators"},
		{",1h", "separators"},
		{"1h and 30m", `got "and"`},
		{"one hour", `got "one"`},
		{"P1D", `got "P1D"`},
		{"1_000s", "digit separators"},
		{"1,000s", "digit separators"},
		{"1.5s", "whole number of seconds"},
		{"0.7M", "whole number of seconds"},
		{"0.01m", "whole number of seconds"},
		{"1.0000000000000000000000000000000001h", "whole number of seconds"},
		{".5h", "digit before"},
		{"1.h", "digit after"},
		{"1h.", `unexpected "." after "1h"`},
		{"1h\n30m", "unexpected"},
		{"1%", "expected a unit"},
		{"9223372037s", "too long"},
		{"300y", "too long"},
		{"9223372036s 1s", "too long"},
		{"99999999999999999999999h", "too long"},
	}
	for _, tt := range tests {
		d, err := ParseDuration(tt.in)
		var de *DurationError
		if !errors.As(err, &de) {
			t.Errorf("ParseDuration(%q) = %v, %v; want a *DurationError", tt.in, d, err)
			continue
		}
		if de.Input != tt.in || !strings.Contains(err.Error(), strconv.Quote(tt.in)) {
			t.Errorf("ParseDuration(%q): error %q does not name the input", tt.in, err)
		}
		if !strings.Contains(de.Reason, tt.reason) {
			t.Errorf("ParseDuration(%q): reason %q, want it to contain %q", tt.in, de.Reason, tt.reason)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{time.Second, "1s"},
		{12*time.Minute + 4*time.Second, "12m 4s"},
		{90 * time.Minute, "1h 30m"},
		{time.Hour + 5*time.Second, "1h 5s"},
		{25 * time.Hour, "1d 1h"},
		{250 * time.Millisecond, "250ms"},
		{1500 * time.Millisecond, "2s"},
		{1499 * time.Millisecond, "1s"},
		{-90 * time.Second, "-1m 30s"},
		{math.MaxInt64, "106751d 23h 47m 17s"},
		{math.MinInt64, "-106751d 23h 47m 17s"},
	}
	for _, tt := range tests {
		if got := FormatDuration(tt.d); got != tt.want {
			t.Errorf("FormatDuration(%d) = %q, want %q", int64(tt.d), got, tt.want)
		}
	}
}

func TestFormatDurationRoundTrip(t *testing.T) {
	for _, secs := range []int64{1, 59, 60, 61, 3599, 3600, 5400, 86399, 86400, 90061, 2630016, 31557600, 9223372036} {
		d := time.Duration(secs) * time.Second
		s := FormatDuration(d)
		got, err := ParseDuration(s)
		if err != nil || got != d {
			t.Errorf("ParseDuration(FormatDuration(%v) = %q) = %v, %v", d, s, got, err)
		}
	}
}

func TestDurationText(t *testing.T) {
	var v struct {
		D Duration `toml:"d"`
	}
	if err := toml.Unmarshal([]byte(`d = "1h 30m"`), &v); err != nil {
		t.Fatal(err)
	}
	if v.D.Duration != 90*time.Minute {
		t.Fatalf("decoded %v, want 1h30m", v.D.Duration)
	}
	out, err := toml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != `d = '1h 30m'` && got != `d = "1h 30m"` {
		t.Fatalf("marshaled %q", got)
	}
	if err := toml.Unmarshal([]byte(`d = "1H"`), &v); err == nil || !strings.Contains(err.Error(), `unknown unit "H"`) {
		t.Fatalf("decoding 1H: %v", err)
	}
	for _, bad := range []time.Duration{0, -time.Second, 1500 * time.Millisecond} {
		if _, err := (Duration{bad}).MarshalText(); err == nil {
			t.Errorf("MarshalText(%v) succeeded; want an error", bad)
		}
	}
	if s := (Duration{12*time.Minute + 4*time.Second}).String(); s != "12m 4s" {
		t.Errorf("String() = %q", s)
	}
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"1h30m", "1.5h", "0.7M", "1 hour 30 minutes", "500ms", "1 0m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			var de *DurationError
			if !errors.As(err, &de) || de.Input != s {
				t.Fatalf("ParseDuration(%q): error %v is not a *DurationError naming the input", s, err)
			}
			return
		}
		if d <= 0 || d%time.Second != 0 {
			t.Fatalf("ParseDuration(%q) = %v: not a positive whole number of seconds", s, d)
		}
		f := FormatDuration(d)
		if back, err := ParseDuration(f); err != nil || back != d {
			t.Fatalf("ParseDuration(%q) = %v, but FormatDuration gives %q, which parses to %v, %v", s, d, f, back, err)
		}
		if padded, err := ParseDuration(" \t" + s + "\t "); err != nil || padded != d {
			t.Fatalf("ParseDuration(%q) = %v, but with blanks around it %v, %v", s, d, padded, err)
		}
	})
}
