package cron

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Sentinels that a *ParseError unwraps to, so callers can tell a typo from
// a dialect meka does not speak or a pattern that matches no date.
var (
	// ErrSyntax: the expression is malformed or a value is out of range.
	ErrSyntax = errors.New("invalid cron expression")
	// ErrUnsupported: the expression uses another dialect's syntax (a
	// seconds field, Quartz L W # ?, cronie's ~, @reboot, @every).
	ErrUnsupported = errors.New("unsupported cron syntax")
	// ErrNeverFires: the expression is well formed but matches no date.
	ErrNeverFires = errors.New("cron expression never fires")
)

// ParseError reports why Parse rejected an expression.
type ParseError struct {
	Expr  string // the expression as given
	Field string // "minute", "hour", "day-of-month", "month", "day-of-week", or "" for the whole expression
	Msg   string // why, in words meant for the person who wrote Expr
	Err   error  // ErrSyntax, ErrUnsupported or ErrNeverFires
}

func (e *ParseError) Error() string {
	expr := e.Expr
	if len(expr) > 80 {
		expr = expr[:80] + "..."
	}
	if e.Field != "" {
		return fmt.Sprintf("parse cron %q: %s field: %s", expr, e.Field, e.Msg)
	}
	return fmt.Sprintf("parse cron %q: %s", expr, e.Msg)
}

func (e *ParseError) Unwrap() error { return e.Err }

// Field indexes, in expression order.
const (
	fMinute = iota
	fHour
	fDom
	fMonth
	fDow
	nFields
)

type fieldSpec struct {
	name   string
	lo, hi int
	names  []string // names[i] is the name of value i (empty where none)
}

var specs = [nFields]fieldSpec{
	{name: "minute", lo: 0, hi: 59},
	{name: "hour", lo: 0, hi: 23},
	{name: "day-of-month", lo: 1, hi: 31},
	{name: "month", lo: 1, hi: 12, names: []string{"", "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}},
	{name: "day-of-week", lo: 0, hi: 7, names: []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}},
}

// descriptors maps each accepted @-descriptor to its five-field expansion.
// The expansions set exactly the star flags cronie's load_entry sets by hand.
var descriptors = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// elem is one list element of a field: "*", "*/S", "N", "N-M" or "N-M/S".
type elem struct {
	star           bool
	ranged         bool // written with "-"
	lo, hi, step   int
	loName, hiName string // lower-case name when the bound was written as one
}

func (e elem) String() string {
	var b strings.Builder
	bound := func(v int, name string) {
		if name != "" {
			b.WriteString(name)
		} else {
			b.WriteString(strconv.Itoa(v))
		}
	}
	if e.star {
		b.WriteByte('*')
	} else {
		bound(e.lo, e.loName)
		if e.ranged {
			b.WriteByte('-')
			bound(e.hi, e.hiName)
		}
	}
	if e.step > 1 {
		b.WriteByte('/')
		b.WriteString(strconv.Itoa(e.step))
	}
	return b.String()
}

// Parse parses a five-field cron expression or an @-descriptor. A returned
// error is a *ParseError.
func Parse(expr string) (*Schedule, error) {
	fail := func(field string, sentinel error, format string, args ...any) (*Schedule, error) {
		msg := fmt.Sprintf(format, args...)
		if len(msg) > 300 { // a pasted megabyte should not come back; keep the reason at the end
			msg = strings.ToValidUTF8(msg[:150], "") + "..." + strings.ToValidUTF8(msg[len(msg)-150:], "")
		}
		return nil, &ParseError{Expr: expr, Field: field, Msg: msg, Err: sentinel}
	}
	text := strings.Trim(expr, " \t")
	if text == "" {
		return fail("", ErrSyntax, "empty expression: want five fields (minute hour day-of-month month day-of-week)")
	}
	if i := strings.IndexFunc(text, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }); i >= 0 {
		return fail("", ErrSyntax, "control character %q at byte %d", text[i], i)
	}
	fields := strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == '\t' })

	if strings.HasPrefix(fields[0], "@") {
		return parseDescriptor(fields, fail)
	}
	switch n := len(fields); {
	case n == 6:
		return fail("", ErrUnsupported, "six fields: a seconds field is not supported; cron here has five fields (minute hour day-of-month month day-of-week) and fires at minute resolution")
	case n == 7:
		return fail("", ErrUnsupported, "seven fields: Quartz seconds and year fields are not supported; want five fields (minute hour day-of-month month day-of-week)")
	case n != nFields:
		return fail("", ErrSyntax, "%d fields: want exactly five (minute hour day-of-month month day-of-week)", n)
	}

	s := &Schedule{}
	var norm [nFields]string
	for f := range nFields {
		var bits uint64
		var parts []string
		for item := range strings.SplitSeq(fields[f], ",") {
			e, sentinel, msg := parseElem(item, &specs[f])
			if msg != "" {
				return fail(specs[f].name, sentinel, "%s", msg)
			}
			for v := e.lo; v <= e.hi; v += e.step {
				bits |= 1 << v
			}
			parts = append(parts, e.String())
		}
		norm[f] = strings.Join(parts, ",")
		star := fields[f][0] == '*'
		switch f {
		case fMinute:
			s.minute = bits
			s.minStar = star
		case fHour:
			s.hour = uint32(bits)
			s.hrStar = star
		case fDom:
			s.dom = uint32(bits)
			s.domStar = star
		case fMonth:
			s.month = uint16(bits)
		case fDow:
			// 0 and 7 are both Sunday: fold 7 onto 0.
			if bits&(1<<7) != 0 {
				bits |= 1
			}
			s.dow = uint8(bits & 0x7f)
			s.dowStar = star
		}
	}
	s.text = strings.Join(norm[:], " ")
	if msg := s.neverFires(fields[fDom], fields[fMonth], fields[fDow]); msg != "" {
		return fail("", ErrNeverFires, "%s", msg)
	}
	return s, nil
}

func parseDescriptor(fields []string, fail func(string, error, string, ...any) (*Schedule, error)) (*Schedule, error) {
	d := fields[0]
	switch {
	case d == "@reboot":
		return fail("", ErrUnsupported, "@reboot is not supported: a schedule fires at times, and meka has no daemon start to run at")
	case strings.HasPrefix(d, "@every"):
		return fail("", ErrUnsupported, "@every is not cron: schedule an interval (every = \"30m\") instead")
	}
	exp, ok := descriptors[d]
	if !ok {
		if _, lower := descriptors[strings.ToLower(d)]; lower {
			return fail("", ErrSyntax, "descriptor %q must be lower case (%s)", d, strings.ToLower(d))
		}
		return fail("", ErrSyntax, "unknown descriptor %q: want @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly", d)
	}
	if len(fields) > 1 {
		return fail("", ErrSyntax, "descriptor %s stands alone, found %q after it", d, fields[1])
	}
	s, err := Parse(exp)
	if err != nil {
		panic("cron: descriptor expansion " + exp + " does not parse: " + err.Error())
	}
	s.text = d
	return s, nil
}

// parseElem parses one list element. On failure it returns the sentinel and
// a non-empty message.
func parseElem(item string, sp *fieldSpec) (e elem, sentinel error, msg string) {
	if item == "" {
		return e, ErrSyntax, "empty list element (stray comma?)"
	}
	i := 0
	if item[0] == '*' {
		e.star, e.lo, e.hi, i = true, sp.lo, sp.hi, 1
	} else {
		v, name, n, sen, m := scanValue(item, sp)
		if m != "" {
			return e, sen, m
		}
		e.lo, e.hi, e.loName, i = v, v, name, n
		if i < len(item) && item[i] == '-' {
			i++
			if i == len(item) {
				return e, ErrSyntax, fmt.Sprintf("range %q has no end", item)
			}
			v, name, n, sen, m := scanValue(item[i:], sp)
			if m != "" {
				return e, sen, m
			}
			e.hi, e.hiName, e.ranged = v, name, true
			i += n
			if e.lo > e.hi {
				msg := fmt.Sprintf("range %q is backwards: %d comes after %d", item[:i], e.lo, e.hi)
				if sp.name == "day-of-week" && e.hi == 0 {
					msg += "; Sunday is 0 here, write 7 (or sat,sun) to end a range on Sunday"
				}
				return e, ErrSyntax, msg
			}
		}
	}
	e.step = 1
	if i < len(item) && item[i] == '/' {
		if !e.star && !e.ranged {
			return e, ErrSyntax, fmt.Sprintf("step %q needs a range: write %d-%d%s or *%s (a lone start value is not a range)",
				item, e.lo, sp.hi, item[i:], item[i:])
		}
		j := i + 1
		for j < len(item) && isAlnum(item[j]) {
			j++
		}
		tok := item[i+1 : j]
		if tok == "" || !allDigits(tok) {
			return e, ErrSyntax, fmt.Sprintf("step in %q must be a decimal number", item)
		}
		step := atoiCapped(tok)
		if step == 0 {
			return e, ErrSyntax, fmt.Sprintf("step 0 in %q: a step must be at least 1", item)
		}
		if step > 1 && step > e.hi-e.lo {
			return e, ErrSyntax, fmt.Sprintf("step %s in %q is larger than the %d its range %d-%d spans, which cron implementations read differently; write %d for the start alone",
				tok, item, e.hi-e.lo, e.lo, e.hi, e.lo)
		}
		e.step = step
		i = j
	}
	if i < len(item) {
		if strings.IndexByte("?#~$", item[i]) >= 0 {
			sen, m := special(item[i:], item)
			return e, sen, m
		}
		return e, ErrSyntax, fmt.Sprintf("unexpected %q after %q", item[i:], item[:i])
	}
	return e, nil, ""
}

// scanValue reads a number or name at the start of s and returns its value
// and the number of bytes read.
func scanValue(s string, sp *fieldSpec) (v int, name string, n int, sentinel error, msg string) {
	for n < len(s) && isAlnum(s[n]) {
		n++
	}
	tok := s[:n]
	if tok == "" {
		if sen, m := special(s, s); m != "" {
			return 0, "", 0, sen, m
		}
		return 0, "", 0, ErrSyntax, fmt.Sprintf("expected a number or name at %q", s)
	}
	if quartzToken(tok) {
		return 0, "", 0, ErrUnsupported, fmt.Sprintf("%q is Quartz syntax (L, W, #, ?), which Vixie cron does not have", tok)
	}
	if allDigits(tok) {
		v = atoiCapped(tok)
		if v < sp.lo || v > sp.hi {
			return 0, "", 0, ErrSyntax, fmt.Sprintf("value %s is out of range %d-%d", tok, sp.lo, sp.hi)
		}
		return v, "", n, nil, ""
	}
	if sp.names == nil {
		return 0, "", 0, ErrSyntax, fmt.Sprintf("%q is not a number (names are allowed only in the month and day-of-week fields)", tok)
	}
	lower := strings.ToLower(tok)
	for i, nm := range sp.names {
		if nm != "" && nm == lower {
			return i, lower, n, nil, ""
		}
	}
	return 0, "", 0, ErrSyntax, fmt.Sprintf("unknown %s name %q: use a number or three letters, %s to %s",
		sp.name, tok, sp.names[sp.lo], sp.names[len(sp.names)-1])
}

// special recognises characters other cron dialects give meaning to, so the
// message can name the dialect instead of just the character.
func special(rest, item string) (error, string) {
	switch rest[0] {
	case '?', '#':
		return ErrUnsupported, fmt.Sprintf("%q is Quartz syntax (L, W, #, ?), which Vixie cron does not have", item)
	case '~':
		return ErrUnsupported, fmt.Sprintf("%q: random ranges (~) are a cronie extension and not supported", item)
	case '$':
		return ErrUnsupported, fmt.Sprintf("%q: $ (last day of month) is not supported", item)
	case '*':
		return ErrSyntax, fmt.Sprintf("%q: * must stand alone at the start of a list element (* or */step)", item)
	case '/':
		return ErrSyntax, fmt.Sprintf("%q: a step needs a range or * before the /", item)
	case '-':
		return ErrSyntax, fmt.Sprintf("%q: a range needs a start and an end (no negative numbers)", item)
	}
	return nil, ""
}

// quartzToken reports Quartz's L, W and LW, alone or after a number (5L, 15W).
func quartzToken(tok string) bool {
	u := strings.ToUpper(tok)
	u = strings.TrimLeft(u, "0123456789")
	return u == "L" || u == "W" || u == "LW"
}

func isAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func allDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// atoiCapped parses a digit string, saturating at a value larger than any
// field bound so that huge numbers report as out of range.
func atoiCapped(s string) int {
	v := 0
	for i := range len(s) {
		v = v*10 + int(s[i]-'0')
		if v > 1000 {
			return 1000
		}
	}
	return v
}
