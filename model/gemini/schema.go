package gemini

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Schema converts a tool's JSON Schema to the OpenAPI subset Gemini's
// functionDeclarations take: types upper-cased, ["x","null"] as type X
// nullable, local $refs inlined, oneOf as anyOf, a string const as a
// one-value enum, an allOf of plain objects merged, and keywords Gemini
// lacks (additionalProperties, $schema, examples, …) dropped. What has no
// equivalent is refused with where it is: not, if/then/else,
// patternProperties, enums of other than strings, recursive references.
func Schema(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var root map[string]any
	if err := json.Unmarshal(raw, &root); err != nil {
		return nil, fmt.Errorf("decode parameters: %w", err)
	}
	if len(root) == 0 {
		return nil, nil
	}
	c := converter{root: root, active: map[string]bool{}}
	out, err := c.node(root, "parameters")
	if err != nil {
		return nil, err
	}
	m, _ := out.(map[string]any)
	return m, nil
}

// kept are the keywords Gemini's Schema has, besides those converted.
var keptKeywords = map[string]bool{
	"description": true, "format": true, "title": true, "default": true, "example": true,
	"minimum": true, "maximum": true, "minLength": true, "maxLength": true, "pattern": true,
	"minItems": true, "maxItems": true, "minProperties": true, "maxProperties": true,
	"propertyOrdering": true, "nullable": true, "required": true,
}

// refused are keywords with no equivalent: dropping them would let the
// model send what the tool refuses.
var refused = []string{"not", "if", "then", "else", "patternProperties", "dependentSchemas", "unevaluatedProperties"}

type converter struct {
	root   map[string]any
	active map[string]bool // $refs being inlined, to catch recursion
}

func (c *converter) node(v any, at string) (any, error) {
	s, ok := v.(map[string]any)
	if !ok {
		if b, isBool := v.(bool); isBool && b {
			return map[string]any{}, nil
		}
		return nil, fmt.Errorf("%s: %s is not a schema Gemini takes", at, compact(v))
	}
	if ref, ok := s["$ref"].(string); ok {
		return c.ref(ref, at)
	}
	for _, k := range refused {
		if _, ok := s[k]; ok {
			return nil, fmt.Errorf("%s: %q has no equivalent in Gemini's schema subset", at, k)
		}
	}
	out := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(s)) {
		v := s[k]
		switch {
		case k == "type":
			if err := setType(out, v, at); err != nil {
				return nil, err
			}
		case k == "enum" || k == "const":
			vals := []any{v}
			if k == "enum" {
				vals, _ = v.([]any)
			}
			var enum []any
			for _, e := range vals {
				str, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("%s.%s: %s is not a string; Gemini enums hold strings only", at, k, compact(e))
				}
				enum = append(enum, str)
			}
			out["enum"] = enum
		case k == "properties":
			props, _ := v.(map[string]any)
			conv := map[string]any{}
			for _, name := range slices.Sorted(maps.Keys(props)) {
				p, err := c.node(props[name], at+".properties."+name)
				if err != nil {
					return nil, err
				}
				conv[name] = p
			}
			out["properties"] = conv
		case k == "items":
			it, err := c.node(v, at+".items")
			if err != nil {
				return nil, err
			}
			out["items"] = it
		case k == "anyOf" || k == "oneOf":
			alts, _ := v.([]any)
			var conv []any
			for i, a := range alts {
				n, err := c.node(a, fmt.Sprintf("%s.%s[%d]", at, k, i))
				if err != nil {
					return nil, err
				}
				conv = append(conv, n)
			}
			out["anyOf"] = conv
		case k == "allOf":
			if err := c.allOf(out, v, at); err != nil {
				return nil, err
			}
		case keptKeywords[k]:
			out[k] = v
		}
	}
	return out, nil
}

// setType writes a JSON Schema type as Gemini's: upper-cased, a
// ["x","null"] pair as type X nullable, several types as anyOf.
func setType(out map[string]any, v any, at string) error {
	var types []string
	switch t := v.(type) {
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return fmt.Errorf("%s.type: %s is not a type name", at, compact(e))
			}
			types = append(types, s)
		}
	default:
		return fmt.Errorf("%s.type: %s is not a type name", at, compact(v))
	}
	var real []string
	for _, t := range types {
		if t == "null" {
			out["nullable"] = true
			continue
		}
		real = append(real, strings.ToUpper(t))
	}
	switch len(real) {
	case 0:
		out["type"] = "NULL"
	case 1:
		out["type"] = real[0]
	default:
		var alts []any
		for _, t := range real {
			alts = append(alts, map[string]any{"type": t})
		}
		out["anyOf"] = alts
	}
	return nil
}

// allOf merges a list of object schemas into out; anything else is
// refused.
func (c *converter) allOf(out map[string]any, v any, at string) error {
	parts, _ := v.([]any)
	props, _ := out["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	req, _ := out["required"].([]any)
	for i, p := range parts {
		n, err := c.node(p, fmt.Sprintf("%s.allOf[%d]", at, i))
		if err != nil {
			return err
		}
		m := n.(map[string]any)
		for k := range m {
			if k != "type" && k != "properties" && k != "required" && k != "description" {
				return fmt.Errorf("%s.allOf[%d]: only plain objects can be merged for Gemini, not %q", at, i, k)
			}
		}
		if t, ok := m["type"]; ok && t != "OBJECT" {
			return fmt.Errorf("%s.allOf[%d]: only objects can be merged for Gemini, not %v", at, i, t)
		}
		pm, _ := m["properties"].(map[string]any)
		maps.Copy(props, pm)
		r, _ := m["required"].([]any)
		req = append(req, r...)
	}
	out["type"] = "OBJECT"
	out["properties"] = props
	if len(req) > 0 {
		out["required"] = req
	}
	return nil
}

// ref inlines a local reference: #/$defs/X or #/definitions/X.
func (c *converter) ref(ref, at string) (any, error) {
	if c.active[ref] {
		return nil, fmt.Errorf("%s: %q refers to itself; Gemini's schemas cannot recurse", at, ref)
	}
	var target any = c.root
	path, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, fmt.Errorf("%s: reference %q is not local to the schema", at, ref)
	}
	for _, seg := range strings.Split(path, "/") {
		m, isMap := target.(map[string]any)
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		if !isMap || m[seg] == nil {
			return nil, fmt.Errorf("%s: reference %q points at nothing", at, ref)
		}
		target = m[seg]
	}
	c.active[ref] = true
	defer delete(c.active, ref)
	return c.node(target, at)
}

func compact(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
