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
	here := at + "/" + escapePointer(kw)
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
		err = eachMember(v, func(name string, raw json.RawMessage) error {
			sub, err := compileNode(raw, here+"/"+escapePointer(name))
			if err != nil {
				return err
			}
			if _, dup := s.byName[name]; dup {
				return fmt.Errorf("at %s: property %q is declared twice", here, name)
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
		sub, err := compileNode(v, here)
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
		s.items, err = compileNode(v, here)
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
			if subs[i], err = compileNode(r, fmt.Sprintf("%s/%d", here, i)); err != nil {
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
	var one string
	if json.Unmarshal(v, &one) == nil {
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
func eachMember(raw json.RawMessage, f func(key string, v json.RawMessage) error) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return errNotObject
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		if err := f(key, v); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	return nil
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
