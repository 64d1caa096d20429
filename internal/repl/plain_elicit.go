package repl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	num "strconv" // the package's tests declare a strconv of their own
	"strings"

	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/termsafe"
)

// maxTries bounds how often one field is asked again after an answer
// that does not fit it; then the elicitation is cancelled.
const maxTries = 5

// elicit puts an MCP server's request for input to the person at the
// terminal, a line per question: whether to answer (y, N declines, c
// cancels), then, for a form, each field in the schema's order, checked
// against its type, choices and bounds and asked again when it does not
// fit; for a URL, whether they completed it. The end of input or of the
// call cancels it.
func (p *plainAsk) elicit(ctx context.Context, pr *plainPrinter, lines <-chan string, e host.Elicitation) (host.ElicitResult, error) {
	p.one.Lock()
	defer p.one.Unlock()
	// Open for the whole exchange, so that no answer is taken for a
	// prompt while the loop reads lines during a job's turn.
	q := p.open(true)
	defer p.close()
	server := safe(e.Server)
	settle := func(r host.ElicitResult, said string) (host.ElicitResult, error) {
		pr.line(fmt.Sprintf("(MCP server %s: %s)", server, said))
		return r, nil
	}
	cancel := func() (host.ElicitResult, error) {
		return settle(host.ElicitResult{Action: host.ElicitCancel}, "cancelled")
	}
	decline := func() (host.ElicitResult, error) {
		return settle(host.ElicitResult{Action: host.ElicitDecline}, "declined")
	}
	var fields []formField
	if e.Mode != host.ElicitURL {
		var err error
		if fields, err = parseForm(e.Schema); err != nil {
			// A form this mode cannot put is declined, and the server
			// is told so rather than sent a guess.
			pr.line(fmt.Sprintf("MCP server %s asks: %s", server, safe(e.Message)))
			pr.line("  (the form cannot be asked here: " + err.Error() + ")")
			return decline()
		}
	}
	pr.line(fmt.Sprintf("MCP server %s asks: %s", server, safe(e.Message)))
	question := "Answer? [y/N/c] (y answers the form, N declines, c cancels)"
	if e.Mode == host.ElicitURL {
		pr.line("  Open " + safe(e.URL))
		question = "Done? [y/N/c] (y once you completed it at that page, N declines, c cancels)"
	}
	reply, ok := p.next(ctx, pr, q, lines, question)
	if !ok {
		return cancel()
	}
	switch strings.ToLower(strings.TrimSpace(reply)) {
	case "y", "yes":
	case "c", "cancel":
		return cancel()
	default:
		return decline()
	}
	if e.Mode == host.ElicitURL {
		return settle(host.ElicitResult{Action: host.ElicitAccept}, "done")
	}
	content := map[string]any{}
	for _, f := range fields {
		v, set, ok := p.field(ctx, pr, q, lines, f)
		if !ok {
			return cancel()
		}
		if set {
			content[f.name] = v
		}
	}
	return settle(host.ElicitResult{Action: host.ElicitAccept, Content: content}, "answered")
}

// field asks one field until the answer fits, at most maxTries times;
// set is false for an optional field left empty, ok false when the
// exchange ended.
func (p *plainAsk) field(ctx context.Context, pr *plainPrinter, q chan string, lines <-chan string, f formField) (v any, set, ok bool) {
	prompt := f.prompt()
	for range maxTries {
		reply, ok := p.next(ctx, pr, q, lines, prompt)
		if !ok {
			return nil, false, false
		}
		reply = strings.TrimSpace(reply)
		if reply == "" {
			switch {
			case f.def != nil:
				return f.def, true, true
			case !f.required:
				return nil, false, true
			}
			pr.line(fmt.Sprintf("  (%s is required)", f.name))
			continue
		}
		v, err := f.parse(reply)
		if err == nil {
			return v, true, true
		}
		pr.line(fmt.Sprintf("  (%s: %v; try again)", f.name, err))
	}
	pr.line(fmt.Sprintf("  (%s: %d answers did not fit)", f.name, maxTries))
	return nil, false, false
}

// safe is text a server sent, on one line, with nothing a terminal would
// obey.
func safe(s string) string { return oneLine(termsafe.String(s, false)) }

// formField is one field of a form's schema, as elicitation allows them:
// a string, number, integer or boolean, a choice of one (enum or oneOf
// consts) or of several (an array of such choices).
type formField struct {
	name, title, desc string
	typ               string // string, number, integer, boolean, array
	required          bool
	def               any // nil: no default
	choices           []string
	labels            []string // the choices' titles, when given
	min, max          *float64 // a number's bounds, a string's or a list's length
}

type choiceSchema struct {
	Const any    `json:"const"`
	Title string `json:"title"`
}

type fieldSchema struct {
	Type        string         `json:"type"`
	Title       string         `json:"title"`
	Description string         `json:"description"`
	Default     any            `json:"default"`
	Enum        []any          `json:"enum"`
	EnumNames   []string       `json:"enumNames"`
	OneOf       []choiceSchema `json:"oneOf"`
	AnyOf       []choiceSchema `json:"anyOf"`
	Items       *struct {
		Enum  []any          `json:"enum"`
		AnyOf []choiceSchema `json:"anyOf"`
		OneOf []choiceSchema `json:"oneOf"`
	} `json:"items"`
	Minimum   *float64 `json:"minimum"`
	Maximum   *float64 `json:"maximum"`
	MinLength *float64 `json:"minLength"`
	MaxLength *float64 `json:"maxLength"`
	MinItems  *float64 `json:"minItems"`
	MaxItems  *float64 `json:"maxItems"`
}

// parseForm reads a form schema's fields in the order its properties
// come in.
func parseForm(schema json.RawMessage) ([]formField, error) {
	var s struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if len(schema) == 0 {
		return nil, nil
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("the schema is not a JSON object: %w", err)
	}
	names, props, err := orderedObject(s.Properties)
	if err != nil {
		return nil, fmt.Errorf("the schema's properties: %w", err)
	}
	required := map[string]bool{}
	for _, n := range s.Required {
		required[n] = true
	}
	out := make([]formField, 0, len(names))
	for _, n := range names {
		var fs fieldSchema
		if err := json.Unmarshal(props[n], &fs); err != nil {
			return nil, fmt.Errorf("field %s: %w", safe(n), err)
		}
		f := formField{name: n, title: fs.Title, desc: fs.Description, typ: fs.Type, required: required[n], def: fs.Default,
			min: fs.Minimum, max: fs.Maximum}
		choices := func(enum []any, names []string, cs []choiceSchema) {
			for i, v := range enum {
				f.choices = append(f.choices, fmt.Sprint(v))
				label := ""
				if i < len(names) {
					label = names[i]
				}
				f.labels = append(f.labels, label)
			}
			for _, c := range cs {
				f.choices = append(f.choices, fmt.Sprint(c.Const))
				f.labels = append(f.labels, c.Title)
			}
		}
		switch fs.Type {
		case "string":
			choices(fs.Enum, fs.EnumNames, append(fs.OneOf, fs.AnyOf...))
			f.min, f.max = fs.MinLength, fs.MaxLength
		case "number", "integer", "boolean":
		case "array":
			if fs.Items == nil {
				return nil, fmt.Errorf("field %s: a list without items", safe(n))
			}
			choices(fs.Items.Enum, nil, append(fs.Items.AnyOf, fs.Items.OneOf...))
			if len(f.choices) == 0 {
				return nil, fmt.Errorf("field %s: a list of free values", safe(n))
			}
			f.min, f.max = fs.MinItems, fs.MaxItems
		default:
			return nil, fmt.Errorf("field %s has type %q", safe(n), fs.Type)
		}
		out = append(out, f)
	}
	return out, nil
}

// orderedObject returns a JSON object's keys in order and their values.
func orderedObject(raw json.RawMessage) ([]string, map[string]json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, errors.New("not a JSON object")
	}
	var keys []string
	vals := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		if _, dup := vals[k]; !dup {
			keys = append(keys, k)
		}
		vals[k] = v
	}
	return keys, vals, nil
}

// prompt is the field's question: its name and title, what fits, and
// its description.
func (f formField) prompt() string {
	label := safe(f.name)
	if t := safe(f.title); t != "" && t != label {
		label += " (" + t + ")"
	}
	var what []string
	switch {
	case f.typ == "array":
		what = append(what, "any of "+f.choiceList()+", separated by commas")
	case len(f.choices) > 0:
		what = append(what, "one of "+f.choiceList())
	case f.typ == "string":
		what = append(what, "text")
	case f.typ == "number":
		what = append(what, "a number")
	case f.typ == "integer":
		what = append(what, "a whole number")
	case f.typ == "boolean":
		what = append(what, "yes or no")
	}
	if b := f.bounds(); b != "" {
		what = append(what, b)
	}
	switch {
	case f.def != nil:
		what = append(what, "empty takes "+safe(formatValue(f.def)))
	case f.required:
		what = append(what, "required")
	default:
		what = append(what, "optional, empty skips")
	}
	out := label + " [" + strings.Join(what, "; ") + "]"
	if d := safe(f.desc); d != "" {
		out += ": " + d
	}
	return out
}

func (f formField) choiceList() string {
	out := make([]string, len(f.choices))
	for i, c := range f.choices {
		out[i] = safe(c)
		if l := safe(f.labels[i]); l != "" && l != out[i] {
			out[i] += " (" + l + ")"
		}
	}
	return strings.Join(out, ", ")
}

func (f formField) bounds() string {
	unit := ""
	switch f.typ {
	case "string":
		if len(f.choices) > 0 {
			return ""
		}
		unit = " characters"
	case "array":
		unit = " choices"
	case "boolean":
		return ""
	}
	n := func(p *float64) string { return num.FormatFloat(*p, 'f', -1, 64) }
	switch {
	case f.min != nil && f.max != nil:
		return "from " + n(f.min) + " to " + n(f.max) + unit
	case f.min != nil:
		return "at least " + n(f.min) + unit
	case f.max != nil:
		return "at most " + n(f.max) + unit
	}
	return ""
}

func formatValue(v any) string {
	switch v := v.(type) {
	case bool:
		if v {
			return "yes"
		}
		return "no"
	case []any:
		s := make([]string, len(v))
		for i, x := range v {
			s[i] = fmt.Sprint(x)
		}
		return strings.Join(s, ", ")
	}
	return fmt.Sprint(v)
}

// parse checks an answer against the field and returns its value.
func (f formField) parse(s string) (any, error) {
	inRange := func(x float64, unit string) error {
		if f.min != nil && x < *f.min {
			return fmt.Errorf("less than %s%s", num.FormatFloat(*f.min, 'f', -1, 64), unit)
		}
		if f.max != nil && x > *f.max {
			return fmt.Errorf("more than %s%s", num.FormatFloat(*f.max, 'f', -1, 64), unit)
		}
		return nil
	}
	switch f.typ {
	case "boolean":
		switch strings.ToLower(s) {
		case "y", "yes", "true":
			return true, nil
		case "n", "no", "false":
			return false, nil
		}
		return nil, errors.New("answer yes or no")
	case "number":
		x, err := num.ParseFloat(s, 64)
		if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, errors.New("not a number")
		}
		return x, inRange(x, "")
	case "integer":
		x, err := num.ParseInt(s, 10, 64)
		if err != nil {
			return nil, errors.New("not a whole number")
		}
		return x, inRange(float64(x), "")
	case "array":
		var picked []any
		for _, c := range strings.Split(s, ",") {
			c = strings.TrimSpace(c)
			if c == "" {
				continue
			}
			v, err := f.choose(c)
			if err != nil {
				return nil, err
			}
			picked = append(picked, v)
		}
		return picked, inRange(float64(len(picked)), " choices")
	}
	if len(f.choices) > 0 {
		return f.choose(s)
	}
	return s, inRange(float64(len([]rune(s))), " characters")
}

// choose returns the choice s names, by value or by title.
func (f formField) choose(s string) (any, error) {
	for i, c := range f.choices {
		if s == c || (f.labels[i] != "" && strings.EqualFold(s, f.labels[i])) {
			return c, nil
		}
	}
	return nil, fmt.Errorf("%q is not one of %s", safe(s), f.choiceList())
}
