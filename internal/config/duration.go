package config

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// unitSeconds maps every unit name to its length in seconds. Names and
// lengths are humantime's; a month is 30.44 days and a year 365.25 days.
var unitSeconds = map[string]int64{
	"s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
	"m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
	"h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
	"d": 86400, "day": 86400, "days": 86400,
	"w": 604800, "wk": 604800, "wks": 604800, "week": 604800, "weeks": 604800,
	"M": 2630016, "month": 2630016, "months": 2630016,
	"y": 31557600, "yr": 31557600, "yrs": 31557600, "year": 31557600, "years": 31557600,
}

// subSecondUnits are humantime units meka refuses: the scheduler works in
// whole seconds, so naming them gets a message rather than "unknown unit".
var subSecondUnits = map[string]bool{
	"ns": true, "nsec": true, "nanos": true,
	"us": true, "usec": true, "µs": true, "μs": true, "micros": true,
	"ms": true, "msec": true, "millis": true,
}

// maxSeconds is the largest whole number of seconds a time.Duration holds.
const maxSeconds = math.MaxInt64 / int64(time.Second)

// Bounds on digit strings, so a hostile input costs no big arithmetic: more
// than 19 significant integer digits always overflows maxSeconds, and a
// fraction with more than 30 significant digits can never come to whole
// seconds (no unit length has 2^30 or 5^30 among its factors).
const (
	maxIntDigits  = 19
	maxFracDigits = 30
)

// DurationError reports a string ParseDuration refused. Error names the input.
type DurationError struct {
	Input string
	// Reason says what is wrong, e.g. `unknown unit "H"`.
	Reason string
}

func (e *DurationError) Error() string {
	return fmt.Sprintf("invalid duration %q: %s", e.Input, e.Reason)
}

// ParseDuration reads a human duration such as "30m", "1h 30m", "1.5h" or
// "2 days 4 hours". The grammar is
//
//	duration = ws* term { ws* term } ws*
//	term     = number ws* unit
//	number   = digit { digit } [ "." digit { digit } ]
//	ws       = " " | "\t"
//
// with humantime's units, case-sensitive (m is minutes, M is months):
// s sec secs second seconds; m min mins minute minutes; h hr hrs hour hours;
// d day days; w wk wks week weeks; M month months (30.44 days);
// y yr yrs year years (365.25 days). Terms add up in any order. Decimals are
// computed exactly and every term must come to a whole number of seconds.
// The total must be positive and fit in a time.Duration. A bare number,
// signs, exponents, separators, sub-second units and words are errors, each
// a *DurationError.
func ParseDuration(s string) (time.Duration, error) {
	fail := func(format string, args ...any) (time.Duration, error) {
		return 0, &DurationError{Input: s, Reason: fmt.Sprintf(format, args...)}
	}
	if s == "" {
		return fail("empty")
	}
	total := new(big.Int)
	terms := 0
	i := skipBlanks(s, 0)
	if i == len(s) {
		return fail("blank")
	}
	for i < len(s) {
		// number
		c := s[i]
		switch {
		case c == '+' || c == '-':
			return fail("signs are not allowed")
		case c == '.':
			return fail("a decimal point needs a digit before it")
		case c == ',' || c == ';':
			return fail("separators between terms are not allowed; write terms side by side, as in \"1h 30m\"")
		case !isDigit(c):
			if terms == 0 {
				return fail("expected a number, got %q", word(s, i))
			}
			return fail("expected a number after %q, got %q", strings.TrimRight(s[:i], " \t"), word(s, i))
		}
		start := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		intPart := s[start:i]
		fracPart := ""
		if i < len(s) && s[i] == '.' {
			i++
			fs := i
			for i < len(s) && isDigit(s[i]) {
				i++
			}
			if i == fs {
				return fail("a decimal point needs a digit after it")
			}
			fracPart = s[fs:i]
		}
		number := s[start:i]
		if i+1 < len(s) && (s[i] == '_' || s[i] == ',' || s[i] == '\'') && isDigit(s[i+1]) {
			return fail("digit separators are not allowed")
		}

		// unit
		i = skipBlanks(s, i)
		if i == len(s) {
			if terms == 0 {
				return fail("a number needs a unit (s, m, h, d, w, M or y)")
			}
			return fail("number %q has no unit", number)
		}
		if isDigit(s[i]) {
			return fail("digits must not be split by blanks")
		}
		us := i
		for i < len(s) {
			r, size := utf8.DecodeRuneInString(s[i:])
			if !unicode.IsLetter(r) {
				break
			}
			i += size
		}
		unit := s[us:i]
		if unit == "" {
			return fail("expected a unit after %q, got %q", number, word(s, us))
		}
		if (unit == "e" || unit == "E") && i < len(s) && (isDigit(s[i]) || s[i] == '+' || s[i] == '-') {
			return fail("exponents are not allowed")
		}
		secs, ok := unitSeconds[unit]
		if !ok {
			return fail("%s", unknownUnit(unit))
		}

		// what may follow a unit: blanks, the end, or the next number
		if i < len(s) && !isBlank(s[i]) && !isDigit(s[i]) {
			switch c := s[i]; {
			case c == ',' || c == ';':
				return fail("separators between terms are not allowed; write terms side by side, as in \"1h 30m\"")
			case c == '+' || c == '-':
				return fail("signs are not allowed")
			default:
				return fail("unexpected %q after %q", word(s, i), s[start:i])
			}
		}

		v, err := termSeconds(intPart, fracPart, secs)
		if err != "" {
			return fail("%q: %s", s[start:i], err)
		}
		total.Add(total, v)
		if total.Cmp(big.NewInt(maxSeconds)) > 0 {
			return fail("too long (the maximum is %ds, about 292 years)", maxSeconds)
		}
		terms++
		i = skipBlanks(s, i)
	}
	if total.Sign() == 0 {
		return fail("must be greater than zero")
	}
	return time.Duration(total.Int64()) * time.Second, nil
}

// termSeconds computes number × unit exactly, as (int.frac × 10^k) × unit / 10^k,
// and says why when it is not a whole number of seconds.
func termSeconds(intPart, fracPart string, unit int64) (*big.Int, string) {
	intPart = strings.TrimLeft(intPart, "0")
	fracPart = strings.TrimRight(fracPart, "0")
	if len(intPart) > maxIntDigits {
		return nil, fmt.Sprintf("too long (the maximum is %ds, about 292 years)", maxSeconds)
	}
	if len(fracPart) > maxFracDigits {
		return nil, "not a whole number of seconds"
	}
	n, ok := new(big.Int).SetString("0"+intPart+fracPart, 10)
	if !ok {
		return nil, "not a number" // unreachable: both parts are ASCII digits
	}
	n.Mul(n, big.NewInt(unit))
	den := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(fracPart))), nil)
	q, r := new(big.Int).QuoRem(n, den, new(big.Int))
	if r.Sign() != 0 {
		return nil, "not a whole number of seconds"
	}
	return q, ""
}

func unknownUnit(unit string) string {
	if subSecondUnits[unit] {
		return fmt.Sprintf("sub-second unit %q is not supported; the smallest unit is s", unit)
	}
	// Units are case-sensitive; suggest the spelling the writer probably meant.
	for _, alt := range []string{strings.ToLower(unit), strings.ToUpper(unit)} {
		if _, ok := unitSeconds[alt]; ok && alt != unit {
			return fmt.Sprintf("unknown unit %q (units are case-sensitive; did you mean %q?)", unit, alt)
		}
	}
	return fmt.Sprintf("unknown unit %q (want s, m, h, d, w, M or y, or their names)", unit)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isBlank(c byte) bool { return c == ' ' || c == '\t' }

func skipBlanks(s string, i int) int {
	for i < len(s) && isBlank(s[i]) {
		i++
	}
	return i
}

// word returns the run of non-blank text at s[i:], capped for messages.
func word(s string, i int) string {
	j := i
	for j < len(s) && !isBlank(s[j]) && j-i < 20 {
		j++
	}
	if j == i { // a multi-byte rune cut short, or nothing: show one rune
		_, size := utf8.DecodeRuneInString(s[i:])
		j = i + size
	}
	for !utf8.ValidString(s[i:j]) && j < len(s) {
		j++
	}
	return s[i:j]
}

// FormatDuration renders d for people, largest unit first, as days, hours,
// minutes and seconds with zero parts left out: "12m 4s", "1h 30m", "2d 1h".
// The output of a whole, positive number of seconds parses back to d with
// ParseDuration. Other values are rounded to the second; under one second
// they print as time.Duration does ("250ms"), and negatives carry a "-".
func FormatDuration(d time.Duration) string {
	if d < 0 {
		if d == math.MinInt64 {
			return "-" + formatSeconds(uint64(math.MaxInt64)/uint64(time.Second)+1)
		}
		return "-" + FormatDuration(-d)
	}
	if d == 0 {
		return "0s"
	}
	if d < time.Second {
		return d.String()
	}
	secs := uint64(d / time.Second)
	if d%time.Second >= time.Second/2 {
		secs++
	}
	return formatSeconds(secs)
}

func formatSeconds(secs uint64) string {
	var b strings.Builder
	for _, u := range [...]struct {
		name string
		len  uint64
	}{{"d", 86400}, {"h", 3600}, {"m", 60}, {"s", 1}} {
		if n := secs / u.len; n > 0 {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(strconv.FormatUint(n, 10))
			b.WriteString(u.name)
			secs -= n * u.len
		}
	}
	return b.String()
}

// Duration is a time.Duration written in config files as a human duration
// string ("30m", "1h 30m"). It implements encoding.TextUnmarshaler with
// ParseDuration and encoding.TextMarshaler with FormatDuration, so TOML and
// JSON decoders read and write it as a string.
type Duration struct {
	time.Duration
}

// UnmarshalText parses b with ParseDuration.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// MarshalText formats d with FormatDuration. It refuses a value that would
// not parse back: zero, negative, or not a whole number of seconds.
func (d Duration) MarshalText() ([]byte, error) {
	if d.Duration <= 0 || d.Duration%time.Second != 0 {
		return nil, fmt.Errorf("marshal duration: %v is not a positive whole number of seconds", d.Duration)
	}
	return []byte(FormatDuration(d.Duration)), nil
}

// String formats d with FormatDuration.
func (d Duration) String() string { return FormatDuration(d.Duration) }
