package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// The validator understands a fixed subset of JSON Schema: the keywords
// tools declare plus a small common core. A schema using any other keyword
// is refused when compiled, so that no constraint a tool writes is ever
// silently left unchecked.

// schema is one compiled (sub)schema; newSchema's accepts anything.
type schema struct {
	never bool    // the false schema: nothing is valid
	types typeSet // zero: any type

	props    []prop // in declared order
	byName   map[string]*schema
	required []string
	noExtra  bool    // additionalProperties: false
	extra    *schema // additionalProperties as a schema; nil: anything

	items              *schema
	minItems, maxItems int // -1: unset
	minLen, maxLen     int // in runes; -1: unset

	minimum, maximum *decimal
	pattern          *regexp.Regexp

	enum     []any
	konst    any
	hasConst bool

	allOf, anyOf, oneOf []*schema
}

func newSchema() *schema { return &schema{minItems: -1, maxItems: -1, minLen: -1, maxLen: -1} }

type prop struct {
	name string
	s    *schema
}

// typeSet is a set of JSON Schema type names.
type typeSet uint8

const (
	typeNull typeSet = 1 << iota
	typeBoolean
	typeObject
	typeArray
	typeNumber
	typeString
	typeInteger
)

var typeNames = []struct {
	t    typeSet
	name string
}{
	{typeString, "string"}, {typeInteger, "integer"}, {typeNumber, "number"},
	{typeBoolean, "boolean"}, {typeObject, "object"}, {typeArray, "array"}, {typeNull, "null"},
}

// String lists the set as "string, integer or null".
func (t typeSet) String() string {
	var names []string
	for _, n := range typeNames {
		if t&n.t != 0 && !(n.t == typeInteger && t&typeNumber != 0) {
			names = append(names, n.name)
		}
	}
	switch len(names) {
	case 0:
		return "nothing"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// errSchema marks every compile failure.
var errSchema = errors.New("compile schema")

// compileSchema compiles the schema a spec declares, refusing keywords the
// validator does not implement.
func compileSchema(s Spec) (*schema, error) {
	if len(bytes.TrimSpace(s.Schema)) == 0 {
		return nil, fmt.Errorf("%w: tool has no schema", errSchema)
	}
	if !json.Valid(s.Schema) {
		return nil, fmt.Errorf("%w: schema is not valid JSON", errSchema)
	}
	sch, err := compileNode(s.Schema, "#")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errSchema, err)
	}
	return sch, nil
}

// compileNode compiles the schema raw found at the schema pointer at.
func compileNode(raw json.RawMessage, at string) (*schema, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case bytes.Equal(raw, []byte("true")):
		return newSchema(), nil
	case bytes.Equal(raw, []byte("false")):
		return &schema{never: true}, nil
	case len(raw) == 0 || raw[0] != '{':
		return nil, fmt.Errorf("at %s: a schema must be an object or a boolean", at)
	}
	s := newSchema()
	err := eachMember(raw, func(kw string, v json.RawMessage) error {
		return s.keyword(kw, v, at)
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// keyword compiles one keyword of the schema at at into s.
func (s *schema) keyword(kw string, v json.RawMessage, at string) error {
	// here locates the keyword's subschemas; only the keywords that have
	// some spell it out.
	here := func() string { return at + "/" + escapePointer(kw) }
	bad := func(want string) error { return fmt.Errorf("at %s: %s must be %s", at, kw, want) }
	var err error
	switch kw {
	case "description", "title", "default", "examples", "$schema":
		// Annotations: nothing to check.
	case "type":
		s.types, err = compileType(v)
		if err != nil {
			return fmt.Errorf("at %s: %w", at, err)
		}
	case "properties":
		s.byName = make(map[string]*schema)
		props := here()
		err = eachMember(v, func(name string, raw json.RawMessage) error {
			sub, err := compileNode(raw, props+"/"+escapePointer(name))
			if err != nil {
				return err
			}
			if _, dup := s.byName[name]; dup {
				return fmt.Errorf("at %s: property %q is declared twice", props, name)
			}
			s.byName[name] = sub
			s.props = append(s.props, prop{name, sub})
			return nil
		})
		if errors.Is(err, errNotObject) {
			return bad("an object")
		}
	case "required":
		var names []string
		if json.Unmarshal(v, &names) != nil {
			return bad("an array of strings")
		}
		s.required = names
	case "additionalProperties":
		sub, err := compileNode(v, here())
		if err != nil {
			return err
		}
		switch {
		case sub.never:
			s.noExtra = true
		case !sub.isTrivial():
			s.extra = sub
		}
	case "items":
		s.items, err = compileNode(v, here())
	case "enum":
		var vals []any
		if decodeUseNumber(v, &vals) != nil || len(vals) == 0 {
			return bad("a non-empty array")
		}
		s.enum = vals
	case "const":
		if err := decodeUseNumber(v, &s.konst); err != nil {
			return bad("a JSON value")
		}
		s.hasConst = true
	case "minItems", "maxItems", "minLength", "maxLength":
		n, ok := count(v)
		if !ok {
			return bad("a non-negative integer")
		}
		switch kw {
		case "minItems":
			s.minItems = n
		case "maxItems":
			s.maxItems = n
		case "minLength":
			s.minLen = n
		default:
			s.maxLen = n
		}
	case "minimum", "maximum":
		d, ok := parseDecimal(string(bytes.TrimSpace(v)))
		if !ok {
			return bad("a number")
		}
		if kw == "minimum" {
			s.minimum = &d
		} else {
			s.maximum = &d
		}
	case "pattern":
		var p string
		if json.Unmarshal(v, &p) != nil {
			return bad("a string")
		}
		s.pattern, err = regexp.Compile(p)
		if err != nil {
			return fmt.Errorf("at %s: pattern: %w", at, err)
		}
	case "allOf", "anyOf", "oneOf":
		var raws []json.RawMessage
		if json.Unmarshal(v, &raws) != nil || len(raws) == 0 {
			return bad("a non-empty array of schemas")
		}
		subs := make([]*schema, len(raws))
		for i, r := range raws {
			if subs[i], err = compileNode(r, fmt.Sprintf("%s/%d", here(), i)); err != nil {
				return err
			}
		}
		switch kw {
		case "allOf":
			s.allOf = subs
		case "anyOf":
			s.anyOf = subs
		default:
			s.oneOf = subs
		}
	default:
		return fmt.Errorf("at %s: unsupported keyword %q", at, kw)
	}
	return err
}

// isTrivial reports whether s accepts every value.
func (s *schema) isTrivial() bool {
	return !s.never && s.types == 0 && s.props == nil && s.required == nil && !s.noExtra &&
		s.extra == nil && s.items == nil && s.minItems < 0 && s.maxItems < 0 && s.minLen < 0 &&
		s.maxLen < 0 && s.minimum == nil && s.maximum == nil && s.pattern == nil && s.enum == nil &&
		!s.hasConst && s.allOf == nil && s.anyOf == nil && s.oneOf == nil
}

func compileType(v json.RawMessage) (typeSet, error) {
	var names []string
	one, err := unquote(v) // the common case, without reflection
	if err == nil {
		names = []string{one}
	} else if json.Unmarshal(v, &names) != nil || len(names) == 0 {
		return 0, errors.New("type must be a type name or a non-empty array of them")
	}
	var set typeSet
	for _, n := range names {
		t := typeByName(n)
		if t == 0 {
			return 0, fmt.Errorf("unknown type %q", n)
		}
		set |= t
	}
	return set, nil
}

func typeByName(n string) typeSet {
	for _, tn := range typeNames {
		if tn.name == n {
			return tn.t
		}
	}
	return 0
}

// count reads a non-negative integer that fits an int.
func count(v json.RawMessage) (int, bool) {
	d, ok := parseDecimal(string(bytes.TrimSpace(v)))
	if !ok || d.neg || !d.isInteger() {
		return 0, false
	}
	n, ok := d.int()
	return n, ok
}

var errNotObject = errors.New("not an object")

// eachMember calls f with each member of the JSON object raw, in order.
// It walks the bytes rather than running a json.Decoder over them: a
// session compiles every tool's schema when it opens, and the decoder's
// tokens cost a one-shot more than the rest of the compile. raw is valid
// JSON (compileSchema checks the whole schema first); a malformed one is
// an error, never a panic.
func eachMember(raw json.RawMessage, f func(key string, v json.RawMessage) error) error {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return errNotObject
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return nil
	}
	for {
		end := skipValue(raw, i)
		if end < 0 || raw[i] != '"' {
			return errMalformed
		}
		key, err := unquote(raw[i:end])
		if err != nil {
			return err
		}
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return errMalformed
		}
		i = skipSpace(raw, i+1)
		end = skipValue(raw, i)
		if end < 0 {
			return errMalformed
		}
		if err := f(key, raw[i:end]); err != nil {
			return err
		}
		i = skipSpace(raw, end)
		switch {
		case i < len(raw) && raw[i] == ',':
			i = skipSpace(raw, i+1)
		case i < len(raw) && raw[i] == '}':
			return nil
		default:
			return errMalformed
		}
	}
}

var errMalformed = errors.New("malformed JSON")

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value that starts at
// b[i], or -1 when there is none to skip.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			i++
			for i < len(b) && b[i] != '"' {
				if b[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(b) {
				return -1
			}
			i++
		case '{', '[':
			depth++
			i++
		case '}', ']':
			if depth == 0 {
				return -1
			}
			depth--
			i++
		default:
			if depth > 0 {
				i++ // a byte of a number, a literal, a separator or space
				continue
			}
			if isDelim(c) {
				return -1
			}
			for i < len(b) && !isDelim(b[i]) {
				i++
			}
		}
		if depth == 0 {
			return i
		}
	}
	return -1
}

// isDelim reports whether c ends a number or a literal.
func isDelim(c byte) bool {
	switch c {
	case '"', '{', '}', '[', ']', ',', ':', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// unquote decodes the JSON string q, quotes included; one with no escape
// and only printable ASCII is its bytes.
func unquote(q []byte) (string, error) {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return "", errMalformed
	}
	plain := true
	for _, c := range q[1 : len(q)-1] {
		if c == '\\' || c == '"' || c < 0x20 || c >= 0x80 {
			plain = false
			break
		}
	}
	if plain {
		return string(q[1 : len(q)-1]), nil
	}
	var s string
	err := json.Unmarshal(q, &s)
	return s, err
}

// decodeUseNumber decodes exactly one JSON value from data into v,
// keeping numbers as json.Number.
func decodeUseNumber(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the top-level value")
	}
	return nil
}

// escapePointer escapes a JSON pointer reference token (RFC 6901).
func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
