package tool

import (
	"math"
	"strconv"
	"strings"
)

// decimal is a JSON number held exactly: digits × 10^exp. Comparing two
// needs no arithmetic, so integers beyond 2^53 and long fractions are
// judged as written, not as the nearest float64.
type decimal struct {
	neg    bool
	digits string // significant digits, no leading or trailing zeros; "" is zero
	exp    int64
}

// maxExp bounds exponents: a larger one saturates, so two numbers differing
// only beyond 10^(2^50) compare equal. No real argument comes near.
const maxExp = 1 << 50

// parseDecimal reads a JSON number literal.
func parseDecimal(s string) (decimal, bool) {
	var d decimal
	i := 0
	if i < len(s) && s[i] == '-' {
		d.neg = true
		i++
	}
	start := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intPart := s[start:i]
	if intPart == "" {
		return decimal{}, false
	}
	var frac string
	if i < len(s) && s[i] == '.' {
		i++
		fs := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		frac = s[fs:i]
		if frac == "" {
			return decimal{}, false
		}
	}
	var exp int64
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		es := i
		for i < len(s) && isDigit(s[i]) {
			if exp < maxExp {
				exp = exp*10 + int64(s[i]-'0')
			}
			i++
		}
		if i == es {
			return decimal{}, false
		}
		exp = min(exp, maxExp)
		if eneg {
			exp = -exp
		}
	}
	if i != len(s) {
		return decimal{}, false
	}
	// Only a number with significant fraction digits needs a new string.
	frac = strings.TrimRight(frac, "0")
	mant := intPart
	if frac != "" {
		mant = intPart + frac
		exp -= int64(len(frac))
	}
	mant = strings.TrimLeft(mant, "0")
	if mant == "" {
		return decimal{}, true // zero, and -0 is zero
	}
	trimmed := strings.TrimRight(mant, "0")
	exp += int64(len(mant) - len(trimmed))
	d.digits = trimmed
	d.exp = exp
	return d, true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isInteger reports whether d has no fractional part.
func (d decimal) isInteger() bool { return d.digits == "" || d.exp >= 0 }

// int returns d as an int when it is an integer of at most 18 digits
// that fits.
func (d decimal) int() (int, bool) {
	if d.digits == "" {
		return 0, true
	}
	if d.exp < 0 || int64(len(d.digits))+d.exp > 18 {
		return 0, false
	}
	n, err := strconv.ParseInt(d.digits, 10, 64)
	if err != nil {
		return 0, false
	}
	for range d.exp {
		n *= 10
	}
	if n > math.MaxInt {
		return 0, false
	}
	if d.neg {
		n = -n
	}
	return int(n), true
}

// cmp returns -1, 0 or +1 as d is less than, equal to or greater than e.
func (d decimal) cmp(e decimal) int {
	switch {
	case d.digits == "" && e.digits == "":
		return 0
	case d.digits == "":
		return sign(!e.neg)
	case e.digits == "":
		return sign(d.neg)
	case d.neg != e.neg:
		return sign(d.neg)
	}
	c := d.cmpAbs(e)
	if d.neg {
		c = -c
	}
	return c
}

// sign is -1 when negative, else +1.
func sign(negative bool) int {
	if negative {
		return -1
	}
	return 1
}

// cmpAbs compares the magnitudes of two non-zero decimals: first by the
// position of the leading digit, then digit by digit.
func (d decimal) cmpAbs(e decimal) int {
	dl, el := int64(len(d.digits))+d.exp, int64(len(e.digits))+e.exp
	switch {
	case dl < el:
		return -1
	case dl > el:
		return 1
	}
	return strings.Compare(d.digits, e.digits)
}
