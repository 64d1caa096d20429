package schedule

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
)

// Gate is a cheap check run before a job's turn: Check is what runs, When
// decides from its result whether something happened. Its JSON is what
// schedule_create takes:
//
//	{"check": {"command": "..."} | {"tool": "...", "arguments": {...}},
//	 "when": "changed" | "succeeded" | {"matches": "re"} |
//	         {"at": "/pointer", "is": "changed" | "not-empty" | "empty" | "true" | "false" | {"equals": any}}}
type Gate struct {
	Check Check `json:"check"`
	When  When  `json:"when"`
}

// Check is a gate's probe: a shell command, or a call of a tool.
type Check struct {
	Command   string          `json:"command,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// IsCommand reports whether the check is a shell command.
func (c Check) IsCommand() bool { return c.Command != "" }

// Predicate names.
const (
	WhenChanged   = "changed"   // the whole output differs from the last evaluation
	WhenSucceeded = "succeeded" // exit status 0, or a tool result not flagged as an error
	WhenMatches   = "matches"   // the output matches a regular expression
	WhenAt        = "at"        // a JSON pointer into the result, judged by Is
)

// When is a gate's predicate.
type When struct {
	// Kind is WhenChanged, WhenSucceeded, WhenMatches or WhenAt.
	Kind string
	// Pattern is the regular expression of WhenMatches.
	Pattern string
	// Pointer (RFC 6901) and Is judge a JSON result for WhenAt.
	Pointer string
	Is      Is
}

// What Is can test the value a pointer selects for.
const (
	IsChanged  = "changed"
	IsNotEmpty = "not-empty"
	IsEmpty    = "empty" // null, "", [] or {}
	IsTrue     = "true"
	IsFalse    = "false"
	IsEquals   = "equals"
)

// Is is the test of a WhenAt predicate.
type Is struct {
	Kind string
	// Equals is the JSON value IsEquals compares with.
	Equals json.RawMessage
}

// Compares reports whether the predicate compares against the previous
// evaluation, and so always fires the first time.
func (w When) Compares() bool {
	return w.Kind == WhenChanged || (w.Kind == WhenAt && w.Is.Kind == IsChanged)
}

func (w When) String() string {
	switch w.Kind {
	case WhenMatches:
		return fmt.Sprintf("matches %q", w.Pattern)
	case WhenAt:
		is := w.Is.Kind
		if is == IsEquals {
			is = "equals " + string(w.Is.Equals)
		}
		return fmt.Sprintf("at %s is %s", w.Pointer, is)
	}
	return w.Kind
}

func (w When) MarshalJSON() ([]byte, error) {
	switch w.Kind {
	case WhenChanged, WhenSucceeded:
		return json.Marshal(w.Kind)
	case WhenMatches:
		return json.Marshal(map[string]string{"matches": w.Pattern})
	case WhenAt:
		return json.Marshal(struct {
			At string `json:"at"`
			Is Is     `json:"is"`
		}{w.Pointer, w.Is})
	}
	return nil, fmt.Errorf("unknown predicate %q", w.Kind)
}

func (w *When) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		if s != WhenChanged && s != WhenSucceeded {
			return fmt.Errorf(`when %q: want "changed", "succeeded", {"matches": ...} or {"at": ..., "is": ...}`, s)
		}
		*w = When{Kind: s}
		return nil
	}
	var o map[string]json.RawMessage
	if err := json.Unmarshal(b, &o); err != nil {
		return errors.New(`when: want "changed", "succeeded", {"matches": ...} or {"at": ..., "is": ...}`)
	}
	if p, ok := o["matches"]; ok {
		if len(o) != 1 {
			return errors.New(`when: {"matches": ...} takes no other key`)
		}
		if err := json.Unmarshal(p, &w.Pattern); err != nil {
			return errors.New("when.matches: want a string")
		}
		w.Kind = WhenMatches
		return nil
	}
	at, okAt := o["at"]
	is, okIs := o["is"]
	if !okAt || !okIs || len(o) != 2 {
		return errors.New(`when: an object is {"matches": ...} or {"at": ..., "is": ...}`)
	}
	if err := json.Unmarshal(at, &w.Pointer); err != nil {
		return errors.New("when.at: want a JSON pointer string")
	}
	if err := json.Unmarshal(is, &w.Is); err != nil {
		return err
	}
	w.Kind = WhenAt
	return nil
}

func (i Is) MarshalJSON() ([]byte, error) {
	if i.Kind == IsEquals {
		return json.Marshal(map[string]json.RawMessage{"equals": i.Equals})
	}
	return json.Marshal(i.Kind)
}

func (i *Is) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		switch s {
		case IsChanged, IsNotEmpty, IsEmpty, IsTrue, IsFalse:
			*i = Is{Kind: s}
			return nil
		}
		return fmt.Errorf(`when.is %q: want "changed", "not-empty", "empty", "true", "false" or {"equals": value}`, s)
	}
	var o map[string]json.RawMessage
	if err := json.Unmarshal(b, &o); err != nil || len(o) != 1 || o["equals"] == nil {
		return errors.New(`when.is: want "changed", "not-empty", "empty", "true", "false" or {"equals": value}`)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, o["equals"]); err != nil {
		return fmt.Errorf("when.is.equals: %w", err)
	}
	*i = Is{Kind: IsEquals, Equals: buf.Bytes()}
	return nil
}

// ParseGate decodes and checks a gate's JSON.
func ParseGate(b []byte) (*Gate, error) {
	var g Gate
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("gate: %w", err)
	}
	if err := g.validate(); err != nil {
		return nil, err
	}
	return &g, nil
}

func (g *Gate) validate() error {
	c := g.Check
	switch {
	case c.Command != "" && c.Tool != "":
		return errors.New("gate.check: give a command or a tool, not both")
	case c.Command == "" && c.Tool == "":
		return errors.New("gate.check: give a command or a tool")
	case c.Command != "" && len(c.Arguments) > 0:
		return errors.New("gate.check: arguments go with a tool, not a command")
	}
	if strings.TrimSpace(c.Command) == "" && c.Tool == "" {
		return errors.New("gate.check.command is empty")
	}
	if c.Tool != "" {
		if len(c.Arguments) == 0 || string(c.Arguments) == "null" {
			g.Check.Arguments = json.RawMessage(`{}`)
		} else {
			var o map[string]json.RawMessage
			if err := json.Unmarshal(c.Arguments, &o); err != nil {
				return errors.New("gate.check.arguments: want a JSON object")
			}
			var buf bytes.Buffer
			json.Compact(&buf, c.Arguments)
			g.Check.Arguments = buf.Bytes()
		}
	}
	switch g.When.Kind {
	case WhenChanged, WhenSucceeded:
	case WhenMatches:
		if _, err := regexp.Compile(g.When.Pattern); err != nil {
			return fmt.Errorf("gate.when.matches: %w", err)
		}
	case WhenAt:
		if _, err := splitPointer(g.When.Pointer); err != nil {
			return fmt.Errorf("gate.when.at: %w", err)
		}
	case "":
		return errors.New("gate.when is missing")
	default:
		return fmt.Errorf("gate.when: unknown predicate %q", g.When.Kind)
	}
	return nil
}

// JSON renders the gate as stored.
func (g *Gate) JSON() string {
	b, err := json.Marshal(g)
	if err != nil {
		// Only a When built by hand can fail, and validate refuses those.
		panic(fmt.Sprintf("marshal gate: %v", err))
	}
	return string(b)
}

// Describe says what the gate runs and when it fires, in full.
func (g *Gate) Describe() string {
	if g.Check.IsCommand() {
		return fmt.Sprintf("command %q, fires when %s", g.Check.Command, g.When)
	}
	return fmt.Sprintf("tool %s %s, fires when %s", g.Check.Tool, g.Check.Arguments, g.When)
}

// Limits on what a gate reads and passes on.
const (
	// MaxProbeOutput is the most of a probe's result a gate reads; a
	// pointer cannot point into a longer one.
	MaxProbeOutput = 1 << 20
	// MaxTurnOutput is the most of it the triggered turn is shown.
	MaxTurnOutput = 8 << 10
)

// probe is what one evaluation of a check produced.
type probe struct {
	// out is the result, at most MaxProbeOutput bytes of it; cut says
	// there was more.
	out []byte
	cut bool
	// sum hashes the whole result.
	sum [sha256.Size]byte
	// ok is exit status 0, or a tool result not flagged as an error.
	ok   bool
	exit int // a command's exit status
	// stderr is a command's error output, for the turn only.
	stderr []byte
}

// verdict is what a predicate made of a probe.
type verdict struct {
	fire bool
	// baseline, when set, is the observation to store for next time.
	baseline *string
}

// ErrNotJSON reports a probe whose result a pointer cannot read.
var ErrNotJSON = errors.New("the probe did not return JSON")

// judge applies w to p. prev is the stored baseline when has is set. An
// error means the gate could not be evaluated.
func judge(w When, p probe, prev string, has bool) (verdict, error) {
	switch w.Kind {
	case WhenChanged:
		cur := "sha256:" + hex.EncodeToString(p.sum[:])
		return verdict{fire: !has || cur != prev, baseline: &cur}, nil
	case WhenSucceeded:
		return verdict{fire: p.ok}, nil
	case WhenMatches:
		re, err := regexp.Compile(w.Pattern)
		if err != nil {
			return verdict{}, fmt.Errorf("pattern %q: %w", w.Pattern, err)
		}
		return verdict{fire: re.Match(p.out)}, nil
	case WhenAt:
		return judgeAt(w, p, prev, has)
	}
	return verdict{}, fmt.Errorf("unknown predicate %q", w.Kind)
}

func judgeAt(w When, p probe, prev string, has bool) (verdict, error) {
	if p.cut {
		return verdict{}, fmt.Errorf("%w: the result is over %d bytes", ErrNotJSON, MaxProbeOutput)
	}
	dec := json.NewDecoder(bytes.NewReader(p.out))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return verdict{}, fmt.Errorf("%w: %v", ErrNotJSON, err)
	}
	if dec.More() {
		return verdict{}, fmt.Errorf("%w: more than one value", ErrNotJSON)
	}
	v, err := resolvePointer(doc, w.Pointer)
	if err != nil {
		return verdict{}, err
	}
	switch w.Is.Kind {
	case IsChanged:
		b, _ := json.Marshal(v) // map keys sorted: a stable form
		sum := sha256.Sum256(b)
		cur := "sha256:" + hex.EncodeToString(sum[:])
		return verdict{fire: !has || cur != prev, baseline: &cur}, nil
	case IsEmpty:
		return verdict{fire: isEmpty(v)}, nil
	case IsNotEmpty:
		return verdict{fire: !isEmpty(v)}, nil
	case IsTrue:
		return verdict{fire: v == true}, nil
	case IsFalse:
		return verdict{fire: v == false}, nil
	case IsEquals:
		return verdict{fire: jsonEqual(v, w.Is.Equals)}, nil
	}
	return verdict{}, fmt.Errorf("unknown test %q", w.Is.Kind)
}

func isEmpty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

// jsonEqual compares a decoded value with a JSON document, numbers by
// value (1 equals 1.0).
func jsonEqual(v any, want json.RawMessage) bool {
	var w any
	if json.Unmarshal(want, &w) != nil {
		return false
	}
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	var got any
	if json.Unmarshal(b, &got) != nil {
		return false
	}
	return reflect.DeepEqual(got, w)
}

// splitPointer parses an RFC 6901 JSON pointer into its reference tokens.
func splitPointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if p[0] != '/' {
		return nil, fmt.Errorf("pointer %q must be empty or begin with /", p)
	}
	toks := strings.Split(p[1:], "/")
	for i, t := range toks {
		for j := 0; j < len(t); j++ {
			if t[j] == '~' && (j+1 == len(t) || (t[j+1] != '0' && t[j+1] != '1')) {
				return nil, fmt.Errorf("pointer %q: ~ must be followed by 0 or 1", p)
			}
		}
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks, nil
}

// resolvePointer selects the value p points at in doc. A pointer that
// selects nothing is an error: a result that lost the field it watched
// has most likely changed its shape.
func resolvePointer(doc any, p string) (any, error) {
	toks, err := splitPointer(p)
	if err != nil {
		return nil, err
	}
	v := doc
	for i, t := range toks {
		at := "/" + strings.Join(toks[:i+1], "/")
		switch c := v.(type) {
		case map[string]any:
			next, ok := c[t]
			if !ok {
				return nil, fmt.Errorf("pointer %s: the result has no %s", p, at)
			}
			v = next
		case []any:
			n, err := strconv.Atoi(t)
			if err != nil || n < 0 || (len(t) > 1 && t[0] == '0') {
				return nil, fmt.Errorf("pointer %s: %q is not an array index", p, t)
			}
			if n >= len(c) {
				return nil, fmt.Errorf("pointer %s: the result has no %s (the array has %d items)", p, at, len(c))
			}
			v = c[n]
		default:
			return nil, fmt.Errorf("pointer %s: %s is not an object or array", p, "/"+strings.Join(toks[:i], "/"))
		}
	}
	return v, nil
}
