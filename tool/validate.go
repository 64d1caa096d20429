package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Validator checks call arguments against tool schemas, compiling each
// schema once. It is safe for concurrent use once built.
type Validator struct {
	schemas map[string]*schema
}

// NewValidator compiles the schemas of tools. A schema using a keyword
// the validator does not implement is an error naming the tool and the
// keyword.
func NewValidator(tools []Tool) (*Validator, error) {
	v := &Validator{schemas: make(map[string]*schema, len(tools))}
	for _, t := range tools {
		spec := t.Spec()
		sch, err := compile(spec)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", spec.Name, err)
		}
		v.schemas[spec.Name] = sch
	}
	return v, nil
}

// Validate returns nil when args satisfy the schema of the tool called
// name, else an error written for the model to correct its call: one line
// per problem, each with the JSON pointer of the offending argument.
// Empty args are the empty object.
func (v *Validator) Validate(name string, args json.RawMessage) error {
	sch, ok := v.schemas[name]
	if !ok {
		return fmt.Errorf("unknown tool %q", name)
	}
	return sch.check(args)
}

// check validates call arguments against s.
func (sch *schema) check(args json.RawMessage) error {
	if sch == nil {
		// A server-validated schema the validator cannot express.
		if len(bytes.TrimSpace(args)) > 0 && !json.Valid(args) {
			return errors.New("the arguments are not valid JSON")
		}
		return nil
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	var inst any
	if err := decodeUseNumber(args, &inst); err != nil {
		return fmt.Errorf("arguments are not valid JSON: %v", err)
	}
	if ps := sch.validate(inst, &walk{}); len(ps) > 0 {
		return fmt.Errorf("arguments do not match the schema:\n%s", render(ps))
	}
	return nil
}

// problem is one way an argument fails its schema.
type problem struct {
	at  string // JSON pointer of the value
	msg string
	// A type mismatch leaves msg empty and says what was wanted and what
	// came, so that the alternatives of an anyOf can merge theirs.
	want typeSet
	val  any
	// sub is the detail of an anyOf or oneOf that nothing matched.
	sub []problem
}

// walk holds the JSON pointer of the value being checked as a stack of
// tokens, pushed and popped as validation descends and spelt out only for
// a problem.
type walk struct{ toks []pathTok }

type pathTok struct {
	key string
	idx int // an array index; -1 for an object key
}

func (w *walk) push(key string) { w.toks = append(w.toks, pathTok{key: key, idx: -1}) }
func (w *walk) pushIndex(i int) { w.toks = append(w.toks, pathTok{idx: i}) }
func (w *walk) pop()            { w.toks = w.toks[:len(w.toks)-1] }

func (w *walk) pointer() string {
	if len(w.toks) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, t := range w.toks {
		b.WriteByte('/')
		if t.idx >= 0 {
			b.WriteString(strconv.Itoa(t.idx))
		} else {
			b.WriteString(escapePointer(t.key))
		}
	}
	return b.String()
}

func (w *walk) problem(format string, args ...any) problem {
	return problem{at: w.pointer(), msg: fmt.Sprintf(format, args...)}
}

// validate returns the problems of inst against s, nil when it is valid.
// A value of the wrong type gets that one problem: the keywords for the
// type it should have had say nothing useful about it.
func (s *schema) validate(inst any, w *walk) []problem {
	if s.never {
		return []problem{w.problem("no value is allowed here")}
	}
	if s.types != 0 && s.types&typeOf(inst) == 0 {
		return []problem{{at: w.pointer(), want: s.types, val: inst}}
	}
	var ps []problem
	if s.hasConst && !equal(inst, s.konst) {
		ps = append(ps, w.problem("value must be %s", jsonText(s.konst)))
	}
	if s.enum != nil && !slices.ContainsFunc(s.enum, func(e any) bool { return equal(inst, e) }) {
		ps = append(ps, w.problem("value must be one of %s", jsonList(s.enum)))
	}
	switch x := inst.(type) {
	case string:
		ps = s.validateString(x, w, ps)
	case json.Number:
		ps = s.validateNumber(x, w, ps)
	case []any:
		ps = s.validateArray(x, w, ps)
	case map[string]any:
		ps = s.validateObject(x, w, ps)
	}
	for _, sub := range s.allOf {
		ps = append(ps, sub.validate(inst, w)...)
	}
	if s.anyOf != nil {
		ps = append(ps, alternatives(false, s.anyOf, inst, w)...)
	}
	if s.oneOf != nil {
		ps = append(ps, alternatives(true, s.oneOf, inst, w)...)
	}
	return ps
}

func (s *schema) validateString(x string, w *walk, ps []problem) []problem {
	if s.minLen >= 0 || s.maxLen >= 0 {
		n := utf8.RuneCountInString(x)
		if s.minLen >= 0 && n < s.minLen {
			ps = append(ps, w.problem("want at least %s, got %d", plural(s.minLen, "character"), n))
		}
		if s.maxLen >= 0 && n > s.maxLen {
			ps = append(ps, w.problem("want at most %s, got %d", plural(s.maxLen, "character"), n))
		}
	}
	if s.pattern != nil && !s.pattern.MatchString(x) {
		ps = append(ps, w.problem("string must match the pattern %s", quotePattern(s.pattern)))
	}
	return ps
}

func (s *schema) validateNumber(x json.Number, w *walk, ps []problem) []problem {
	if s.minimum == nil && s.maximum == nil {
		return ps
	}
	d, ok := parseDecimal(string(x))
	if !ok {
		return ps // the decoder only makes valid literals
	}
	if s.minimum != nil && d.cmp(*s.minimum) < 0 {
		ps = append(ps, w.problem("want at least %s, got %s", s.minimum, clip(string(x))))
	}
	if s.maximum != nil && d.cmp(*s.maximum) > 0 {
		ps = append(ps, w.problem("want at most %s, got %s", s.maximum, clip(string(x))))
	}
	return ps
}

func (s *schema) validateArray(x []any, w *walk, ps []problem) []problem {
	if s.minItems >= 0 && len(x) < s.minItems {
		ps = append(ps, w.problem("want at least %s, got %d", plural(s.minItems, "item"), len(x)))
	}
	if s.maxItems >= 0 && len(x) > s.maxItems {
		ps = append(ps, w.problem("want at most %s, got %d", plural(s.maxItems, "item"), len(x)))
	}
	if s.items != nil {
		for i, e := range x {
			w.pushIndex(i)
			ps = append(ps, s.items.validate(e, w)...)
			w.pop()
		}
	}
	return ps
}

func (s *schema) validateObject(x map[string]any, w *walk, ps []problem) []problem {
	var missing []string
	for _, r := range s.required {
		if _, ok := x[r]; !ok {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		ps = append(ps, w.problem("missing required %s %s", pluralWord(len(missing), "property", "properties"), jsonList(missing)))
	}
	if s.noExtra || s.extra != nil {
		var extra []string
		for k := range x {
			if _, ok := s.byName[k]; !ok {
				extra = append(extra, k)
			}
		}
		slices.Sort(extra)
		if s.noExtra && len(extra) > 0 {
			ps = append(ps, w.problem("unexpected %s %s; %s", pluralWord(len(extra), "property", "properties"),
				jsonList(extra), s.allowed()))
		}
		if s.extra != nil {
			for _, k := range extra {
				w.push(k)
				ps = append(ps, s.extra.validate(x[k], w)...)
				w.pop()
			}
		}
	}
	for _, p := range s.props {
		if v, ok := x[p.name]; ok {
			w.push(p.name)
			ps = append(ps, p.s.validate(v, w)...)
			w.pop()
		}
	}
	return ps
}

// allowed names the properties an object may have, for the model to pick
// the one it meant.
func (s *schema) allowed() string {
	if len(s.props) == 0 {
		return "no properties are allowed here"
	}
	names := make([]string, len(s.props))
	for i, p := range s.props {
		names[i] = p.name
	}
	return "the allowed properties are " + jsonList(names)
}

// alternatives checks an anyOf, or with one a oneOf. When nothing matches
// it reports compactly: the alternatives that only disagree on the type
// merge into one type problem; when one alternative takes the value's type
// its problems are the answer; otherwise the closest alternative's are,
// under a line saying none matched.
func alternatives(one bool, subs []*schema, inst any, w *walk) []problem {
	t := typeOf(inst)
	var want typeSet // of the alternatives that refuse the value's type
	var matched []string
	var near []int        // the other failing alternatives
	var fails [][]problem // their problems
	var at string
	for i, sub := range subs {
		if !sub.never && sub.types != 0 && sub.types&t == 0 {
			want |= sub.types // spares building a problem on the way to a match
			continue
		}
		ps := sub.validate(inst, w)
		if len(ps) == 0 {
			if !one {
				return nil
			}
			matched = append(matched, strconv.Itoa(i+1))
			continue
		}
		if at == "" {
			at = w.pointer()
		}
		if len(ps) == 1 && ps[0].want != 0 && ps[0].at == at {
			want |= ps[0].want
			continue
		}
		near = append(near, i)
		fails = append(fails, ps)
	}
	switch {
	case len(matched) == 1:
		return nil
	case len(matched) > 1:
		return []problem{w.problem("value matches alternatives %s, but must match exactly one of the %d",
			joinAnd(matched), len(subs))}
	}
	switch len(near) {
	case 0:
		return []problem{{at: w.pointer(), want: want, val: inst}}
	case 1:
		return fails[0]
	}
	// The closest alternative is the one with the fewest problems with
	// the value itself, as opposed to inside it (a missing or unexpected
	// property says the value has another shape), then the fewest in all.
	best, bestAt, bestAll := -1, 0, 0
	for k, ps := range fails {
		nAt, nAll := 0, lines(ps)
		for _, p := range ps {
			if p.at == at {
				nAt++
			}
		}
		if best < 0 || nAt < bestAt || nAt == bestAt && nAll < bestAll {
			best, bestAt, bestAll = k, nAt, nAll
		}
	}
	return []problem{{at: at, msg: fmt.Sprintf("matches none of the %d alternatives; the closest, alternative %d, fails with:",
		len(subs), near[best]+1), sub: fails[best]}}
}

// maxLines caps a report: past it the model learns only how many more
// problems there are.
const maxLines = 20

func render(ps []problem) string {
	var b strings.Builder
	n := 0
	write(&b, ps, "", &n)
	if more := lines(ps) - n; more > 0 {
		fmt.Fprintf(&b, "\n- and %d more %s", more, pluralWord(more, "problem", "problems"))
	}
	return b.String()
}

func write(b *strings.Builder, ps []problem, indent string, n *int) {
	for _, p := range ps {
		if *n == maxLines {
			return
		}
		if *n > 0 {
			b.WriteByte('\n')
		}
		*n++
		msg := p.msg
		if p.want != 0 {
			msg = typeMessage(p)
		}
		fmt.Fprintf(b, "%s- at %s: %s", indent, p.at, msg)
		write(b, p.sub, indent+"  ", n)
	}
}

func lines(ps []problem) int {
	n := len(ps)
	for _, p := range ps {
		n += lines(p.sub)
	}
	return n
}

// typeMessage says what type was wanted and what came. Two mistakes get
// their own words: arguments that are not an object at all, and an object
// or array sent as a string of JSON.
func typeMessage(p problem) string {
	got := typeName(p.val)
	if s, ok := p.val.(string); ok && p.want&(typeObject|typeArray) != 0 {
		var v any
		if decodeUseNumber([]byte(s), &v) == nil && p.want&typeOf(v)&(typeObject|typeArray) != 0 {
			got = "a string holding " + typeName(v) + " JSON; send the " + typeName(v) + " itself, not a string"
		}
	}
	if p.at == "/" && p.want == typeObject {
		return "the arguments must be a JSON object, got " + got
	}
	return fmt.Sprintf("want %s, got %s", p.want, got)
}

// typeOf is the set of types inst belongs to: an integral number is both
// an integer and a number.
func typeOf(inst any) typeSet {
	switch x := inst.(type) {
	case nil:
		return typeNull
	case bool:
		return typeBoolean
	case string:
		return typeString
	case json.Number:
		if d, ok := parseDecimal(string(x)); ok && d.isInteger() {
			return typeNumber | typeInteger
		}
		return typeNumber
	case []any:
		return typeArray
	case map[string]any:
		return typeObject
	}
	return 0
}

func typeName(inst any) string {
	t := typeOf(inst)
	if t&typeNumber != 0 {
		return "number"
	}
	return t.String()
}

// equal is JSON equality: numbers by value, objects regardless of order.
func equal(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		dx, okx := parseDecimal(string(x))
		dy, oky := parseDecimal(string(y))
		return okx && oky && dx.cmp(dy) == 0
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, equal)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equal(v, w) {
				return false
			}
		}
		return true
	}
	return false
}

// String writes d back as a JSON number.
func (d decimal) String() string {
	if d.digits == "" {
		return "0"
	}
	s := d.digits
	switch {
	case d.exp >= 0 && d.exp <= 6:
		s += strings.Repeat("0", int(d.exp))
	case d.exp < 0 && -d.exp < int64(len(s)):
		s = s[:int64(len(s))+d.exp] + "." + s[int64(len(s))+d.exp:]
	case d.exp < 0 && -d.exp <= int64(len(s))+6:
		s = "0." + strings.Repeat("0", int(-d.exp)-len(s)) + s
	default:
		s += "e" + strconv.FormatInt(d.exp, 10)
	}
	if d.neg {
		s = "-" + s
	}
	return s
}

// jsonText renders v as compact JSON, without HTML escaping, clipped.
func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return fmt.Sprint(v)
	}
	return clip(strings.TrimSuffix(b.String(), "\n"))
}

func jsonList[T any](vs []T) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = jsonText(v)
	}
	return strings.Join(parts, ", ")
}

// clip shortens what a message quotes of a value.
func clip(s string) string {
	const max = 80
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max]) + "…"
}

func quotePattern(re *regexp.Regexp) string { return jsonText(re.String()) }

func plural(n int, word string) string {
	return strconv.Itoa(n) + " " + pluralWord(n, word, word+"s")
}

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func joinAnd(xs []string) string {
	if len(xs) == 1 {
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}
