package tool_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"meka.dev/meka/internal/schedule"
	"meka.dev/meka/internal/tools/fstool"
	"meka.dev/meka/internal/tools/shelltool"
	"meka.dev/meka/plan/checklist"
	"meka.dev/meka/plan/todo"
	"meka.dev/meka/plan/writetodos"
	"meka.dev/meka/tool"
)

const header = "arguments do not match the schema:\n"

// validator compiles schema as the tool "t".
func validator(tb testing.TB, schema string) *tool.Validator {
	tb.Helper()
	v, err := tool.NewValidator([]tool.Tool{specTool{tool.Spec{Name: "t", Schema: json.RawMessage(schema)}}})
	if err != nil {
		tb.Fatalf("compile %s: %v", schema, err)
	}
	return v
}

// The schema of checklist_add's items and of schedule_create's gate
// condition, the two unions tools declare.
const (
	itemsSchema = `{"type": "object", "properties": {"items": {"type": "array", "items": {"anyOf": [
	  {"type": "string"},
	  {"type": "object", "properties": {"text": {"type": "string"}, "status": {"type": "string", "enum": ["pending", "in_progress"]}},
	   "required": ["text"], "additionalProperties": false}]}}},
	  "required": ["items"], "additionalProperties": false}`
	whenSchema = `{"anyOf": [
	  {"type": "string", "enum": ["changed", "succeeded"]},
	  {"type": "object", "properties": {"matches": {"type": "string"}}, "required": ["matches"], "additionalProperties": false},
	  {"type": "object", "properties": {"at": {"type": "string"}, "is": {"anyOf": [
	    {"type": "string", "enum": ["changed", "empty"]},
	    {"type": "object", "properties": {"equals": {}}, "required": ["equals"], "additionalProperties": false}]}},
	   "required": ["at", "is"], "additionalProperties": false}]}`
	fileSchema = `{"type": "object", "properties": {
	  "path": {"type": "string", "description": "The file."},
	  "content": {"type": "string"},
	  "line": {"type": "integer", "minimum": 1}},
	  "required": ["path", "content"], "additionalProperties": false}`
)

// Each case is a schema, an instance and the exact problem lines, or ""
// for a valid instance.
var validateCases = []struct {
	name, schema, args, want string
}{
	// type
	{"string", `{"type": "string"}`, `"x"`, ""},
	{"string got number", `{"type": "string"}`, `5`, "- at /: want string, got number"},
	{"integer", `{"type": "integer"}`, `5`, ""},
	{"integer with zero fraction", `{"type": "integer"}`, `5.0`, ""},
	{"integer with exponent", `{"type": "integer"}`, `1.5e3`, ""},
	{"integer got fraction", `{"type": "integer"}`, `5.5`, "- at /: want integer, got number"},
	{"integer got tiny fraction", `{"type": "integer"}`, `1.0000000000000000000001`, "- at /: want integer, got number"},
	{"integer beyond 2^53", `{"type": "integer"}`, `9007199254740993`, ""},
	{"integer beyond 2^53 with fraction", `{"type": "integer"}`, `9007199254740993.5`, "- at /: want integer, got number"},
	{"huge integer", `{"type": "integer"}`, `123456789012345678901234567890`, ""},
	{"integer got string", `{"type": "integer"}`, `"5"`, "- at /: want integer, got string"},
	{"number", `{"type": "number"}`, `-0.25e-3`, ""},
	{"number got boolean", `{"type": "number"}`, `true`, "- at /: want number, got boolean"},
	{"boolean", `{"type": "boolean"}`, `false`, ""},
	{"boolean got string", `{"type": "boolean"}`, `"true"`, "- at /: want boolean, got string"},
	{"null", `{"type": "null"}`, `null`, ""},
	{"array got object", `{"type": "array"}`, `{}`, "- at /: want array, got object"},
	{"type list", `{"type": ["string", "null"]}`, `null`, ""},
	{"type list got number", `{"type": ["string", "null"]}`, `1`, "- at /: want string or null, got number"},
	{"integer or number is number", `{"type": ["integer", "number"]}`, `1.5`, ""},
	{"arguments not an object", `{"type": "object"}`, `[1, 2]`, "- at /: the arguments must be a JSON object, got array"},
	{"arguments as a string of JSON", `{"type": "object"}`, `"{\"path\": \"a\"}"`,
		"- at /: the arguments must be a JSON object, got a string holding object JSON; send the object itself, not a string"},
	{"nested object as a string of JSON", `{"properties": {"gate": {"type": "object"}}}`, `{"gate": "{}"}`,
		"- at /gate: want object, got a string holding object JSON; send the object itself, not a string"},
	{"string that is not JSON", `{"properties": {"gate": {"type": "object"}}}`, `{"gate": "{"}`, "- at /gate: want object, got string"},

	// properties, required, additionalProperties
	{"file ok", fileSchema, `{"path": "a", "content": "", "line": 3}`, ""},
	{"empty args are the empty object", fileSchema, ``, `- at /: missing required properties "path", "content"`},
	{"missing one", fileSchema, `{"content": "x"}`, `- at /: missing required property "path"`},
	{"property type", `{"type": "object", "properties": {"n": {"type": "integer"}}}`, `{"n": "three"}`,
		"- at /n: want integer, got string"},
	{"unexpected property", fileSchema, `{"path": "a", "content": "b", "file": "c"}`,
		`- at /: unexpected property "file"; the allowed properties are "path", "content", "line"`},
	{"unexpected properties sorted", fileSchema, `{"path": "a", "content": "b", "z": 1, "y": 2}`,
		`- at /: unexpected properties "y", "z"; the allowed properties are "path", "content", "line"`},
	{"no properties allowed", `{"type": "object", "properties": {}, "additionalProperties": false}`, `{"a": 1}`,
		`- at /: unexpected property "a"; no properties are allowed here`},
	{"additional allowed", `{"type": "object", "properties": {"a": {}}}`, `{"b": 1}`, ""},
	{"additional true", `{"additionalProperties": true}`, `{"b": 1}`, ""},
	{"additional schema", `{"properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}}`,
		`{"a": "x", "b": 1, "c": "y"}`, "- at /c: want integer, got string"},
	{"problems in order", fileSchema, `{"content": 1, "line": 0, "x": null}`, `- at /: missing required property "path"
- at /: unexpected property "x"; the allowed properties are "path", "content", "line"
- at /content: want string, got number
- at /line: want at least 1, got 0`},
	{"pointer escaping", `{"properties": {"a/b~c": {"type": "string"}}}`, `{"a/b~c": 1}`, "- at /a~1b~0c: want string, got number"},
	{"object keywords ignore other types", `{"properties": {"a": {"type": "string"}}, "required": ["a"]}`, `"x"`, ""},

	// items
	{"items", `{"type": "array", "items": {"type": "string"}}`, `["a", 1, "b", true]`,
		"- at /1: want string, got number\n- at /3: want string, got boolean"},
	{"items false", `{"items": false}`, `[1]`, "- at /0: no value is allowed here"},
	{"items false empty", `{"items": false}`, `[]`, ""},
	{"nested pointer", itemsSchema, `{"items": ["a", {"text": "b", "status": "done"}]}`,
		`- at /items/1/status: value must be one of "pending", "in_progress"`},

	// enum, const
	{"enum", `{"enum": ["a", "b"]}`, `"c"`, `- at /: value must be one of "a", "b"`},
	{"enum number by value", `{"enum": [1, 2]}`, `1.0`, ""},
	{"enum number", `{"enum": [1, 2]}`, `3`, "- at /: value must be one of 1, 2"},
	{"enum object", `{"enum": [{"a": [1, {"b": null}]}]}`, `{"a": [1, {"b": null}]}`, ""},
	{"enum object differs", `{"enum": [{"a": [1, 2]}]}`, `{"a": [2, 1]}`, `- at /: value must be one of {"a":[1,2]}`},
	{"enum not html escaped", `{"enum": ["<a&b>"]}`, `"x"`, `- at /: value must be one of "<a&b>"`},
	{"const", `{"const": "x"}`, `"y"`, `- at /: value must be "x"`},
	{"const number", `{"const": 10}`, `1e1`, ""},
	{"const beyond 2^53", `{"const": 9007199254740993}`, `9007199254740992`, "- at /: value must be 9007199254740993"},
	{"const null", `{"const": null}`, `false`, "- at /: value must be null"},

	// lengths and sizes
	{"minItems", `{"minItems": 1}`, `[]`, "- at /: want at least 1 item, got 0"},
	{"maxItems", `{"maxItems": 2}`, `[1, 2, 3]`, "- at /: want at most 2 items, got 3"},
	{"maxItems ok", `{"maxItems": 2}`, `[1, 2]`, ""},
	{"minLength", `{"minLength": 1}`, `""`, "- at /: want at least 1 character, got 0"},
	{"maxLength counts runes", `{"maxLength": 3}`, `"héé"`, ""},
	{"maxLength", `{"maxLength": 3}`, `"abcd"`, "- at /: want at most 3 characters, got 4"},
	{"lengths ignore numbers", `{"minLength": 3, "minItems": 3}`, `1`, ""},

	// minimum, maximum
	{"minimum", `{"minimum": 1}`, `0`, "- at /: want at least 1, got 0"},
	{"minimum equal", `{"minimum": 1}`, `1`, ""},
	{"maximum", `{"maximum": 3600}`, `3601`, "- at /: want at most 3600, got 3601"},
	{"maximum exact beyond float", `{"maximum": 9007199254740992}`, `9007199254740993`,
		"- at /: want at most 9007199254740992, got 9007199254740993"},
	{"minimum exact fraction", `{"minimum": 0.5}`, `0.49999999999999999999`, "- at /: want at least 0.5, got 0.49999999999999999999"},
	{"negative bounds", `{"minimum": -2, "maximum": -1}`, `-1.5`, ""},
	{"below negative minimum", `{"minimum": -2}`, `-2.5`, "- at /: want at least -2, got -2.5"},
	{"bounds ignore strings", `{"minimum": 1}`, `"0"`, ""},

	// pattern
	{"pattern", `{"pattern": "^[a-z]+$"}`, `"abc"`, ""},
	{"pattern mismatch", `{"pattern": "^[a-z]+$"}`, `"aB"`, `- at /: string must match the pattern "^[a-z]+$"`},
	{"pattern unanchored", `{"pattern": "b"}`, `"abc"`, ""},

	// anyOf, oneOf, allOf
	{"anyOf string", itemsSchema, `{"items": ["a"]}`, ""},
	{"anyOf object", itemsSchema, `{"items": [{"text": "a", "status": "pending"}]}`, ""},
	{"anyOf type union", itemsSchema, `{"items": [5]}`, "- at /items/0: want string or object, got number"},
	{"anyOf one branch takes the type", whenSchema, `"sometimes"`, `- at /: value must be one of "changed", "succeeded"`},
	{"anyOf closest", whenSchema, `{"at": "/x"}`, `- at /: matches none of the 3 alternatives; the closest, alternative 3, fails with:
  - at /: missing required property "is"`},
	{"anyOf nested", whenSchema, `{"at": "/x", "is": {"equal": 1}}`, `- at /: matches none of the 3 alternatives; the closest, alternative 3, fails with:
  - at /is: missing required property "equals"
  - at /is: unexpected property "equal"; the allowed properties are "equals"`},
	{"anyOf nested ok", whenSchema, `{"at": "/x", "is": {"equals": [1, {}]}}`, ""},
	{"oneOf", `{"oneOf": [{"type": "integer"}, {"minimum": 0}]}`, `-1`, ""},
	{"oneOf both", `{"oneOf": [{"type": "integer"}, {"minimum": 0}]}`, `5`,
		"- at /: value matches alternatives 1 and 2, but must match exactly one of the 2"},
	{"oneOf none", `{"oneOf": [{"type": "string"}, {"type": "boolean"}]}`, `null`, "- at /: want string or boolean, got null"},
	{"allOf", `{"allOf": [{"minLength": 2}, {"pattern": "^a"}]}`, `"b"`,
		"- at /: want at least 2 characters, got 1\n- at /: string must match the pattern \"^a\""},
	{"allOf ok", `{"allOf": [{"minLength": 2}, {"pattern": "^a"}]}`, `"ab"`, ""},

	// boolean schemas and annotations
	{"true schema", `true`, `{"anything": [1]}`, ""},
	{"false schema", `false`, `{}`, "- at /: no value is allowed here"},
	{"empty schema", `{}`, `[null]`, ""},
	{"annotations", `{"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "t", "description": "d",
		"default": "x", "examples": ["y"], "type": "string"}`, `"z"`, ""},
}

func TestValidate(t *testing.T) {
	for _, c := range validateCases {
		t.Run(c.name, func(t *testing.T) {
			err := validator(t, c.schema).Validate("t", json.RawMessage(c.args))
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("%s against %s: %v", c.args, c.schema, err)
			case c.want == "":
			case err == nil:
				t.Fatalf("%s against %s: valid, want\n%s", c.args, c.schema, c.want)
			case err.Error() != header+c.want:
				t.Fatalf("%s against %s:\ngot  %q\nwant %q", c.args, c.schema, err.Error(), header+c.want)
			}
		})
	}
}

func TestValidateCapsTheReport(t *testing.T) {
	v := validator(t, `{"type": "array", "items": {"type": "string"}}`)
	err := v.Validate("t", json.RawMessage("["+strings.Repeat("1,", 29)+"1]"))
	if err == nil {
		t.Fatal("valid")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 22 || lines[20] != "- at /19: want string, got number" || lines[21] != "- and 10 more problems" {
		t.Fatalf("report:\n%s", err)
	}
}

func TestValidateRefusesBadJSONAndUnknownTools(t *testing.T) {
	v := validator(t, fileSchema)
	for _, args := range []string{`{`, `{"path": "a"} {}`, `{"path": "a"} x`, `nul`} {
		err := v.Validate("t", json.RawMessage(args))
		if err == nil || !strings.HasPrefix(err.Error(), "arguments are not valid JSON: ") {
			t.Errorf("%s: %v", args, err)
		}
	}
	if err := v.Validate("other", json.RawMessage(`{}`)); err == nil || err.Error() != `unknown tool "other"` {
		t.Errorf("unknown tool: %v", err)
	}
}

// A keyword the validator does not implement would be a constraint left
// unchecked: it is refused wherever it sits, naming the tool and keyword.
func TestCompileRefusesUnsupportedKeywords(t *testing.T) {
	for _, kw := range []string{"format", "$ref", "$defs", "$id", "not", "if", "patternProperties",
		"propertyNames", "minProperties", "dependentRequired", "uniqueItems", "contains", "prefixItems",
		"exclusiveMinimum", "exclusiveMaximum", "multipleOf", "unevaluatedProperties", "readOnly", "enums"} {
		for _, tmpl := range []string{
			`{%q: 1}`,
			`{"type": "object", "properties": {"a": {"type": "array", "items": {%q: 1}}}}`,
			`{"anyOf": [{"type": "string"}, {"properties": {"x": {%q: 1}}}]}`,
			`{"additionalProperties": {%q: 1}}`,
		} {
			schema := fmt.Sprintf(tmpl, kw)
			spec := tool.Spec{Name: "probe_tool", Schema: json.RawMessage(schema)}
			_, err := tool.NewValidator([]tool.Tool{specTool{spec}})
			if err == nil || !strings.Contains(err.Error(), "probe_tool") || !strings.Contains(err.Error(), fmt.Sprintf("unsupported keyword %q", kw)) {
				t.Errorf("NewValidator %s: %v", schema, err)
			}
			err = tool.NewRegistry().Add(specTool{spec})
			if err == nil || !strings.Contains(err.Error(), "add tool probe_tool") || !strings.Contains(err.Error(), kw) {
				t.Errorf("Registry.Add %s: %v", schema, err)
			}
		}
	}
	_, err := tool.NewValidator([]tool.Tool{specTool{tool.Spec{Name: "x",
		Schema: json.RawMessage(`{"properties": {"a": {"anyOf": [{}, {"format": "uri"}]}}}`)}}})
	if err == nil || !strings.Contains(err.Error(), `at #/properties/a/anyOf/1: unsupported keyword "format"`) {
		t.Errorf("location: %v", err)
	}
}

func TestCompileRefusesMalformedSchemas(t *testing.T) {
	for _, schema := range []string{
		``, ` `, `[]`, `"object"`, `1`, `{`, `{"type": 1}`,
		`{"type": "strin"}`, `{"type": []}`, `{"type": ["string", 1]}`,
		`{"properties": []}`, `{"properties": {"a": 1}}`, `{"properties": {"a": {"type": "x"}}}`,
		`{"required": "a"}`, `{"required": [1]}`,
		`{"additionalProperties": 1}`, `{"items": [{}]}`,
		`{"enum": []}`, `{"enum": 1}`,
		`{"minItems": -1}`, `{"maxLength": 1.5}`, `{"minLength": "1"}`, `{"maxItems": 1e30}`,
		`{"minimum": "1"}`, `{"maximum": null}`,
		`{"pattern": "("}`, `{"pattern": 1}`,
		`{"anyOf": []}`, `{"oneOf": {}}`, `{"allOf": [1]}`,
		`{"type": "object"} {}`,
	} {
		spec := tool.Spec{Name: "bad", Schema: json.RawMessage(schema)}
		if _, err := tool.NewValidator([]tool.Tool{specTool{spec}}); err == nil || !strings.Contains(err.Error(), "tool bad: compile schema") {
			t.Errorf("NewValidator %q: %v", schema, err)
		}
		if err := tool.NewRegistry().Add(specTool{spec}); err == nil {
			t.Errorf("Registry.Add %q: nil", schema)
		}
	}
}

// projectTools are every tool meka builds, constructed with zero options.
func projectTools(tb testing.TB) []tool.Tool {
	tb.Helper()
	tools := fstool.New(fstool.Options{})
	tools = append(tools, shelltool.New(shelltool.Options{}))
	tools = append(tools, checklist.New(checklist.Options{}).Tools()...)
	plans, err := todo.Plugin{Store: todo.NewStore()}.Tools()
	if err != nil {
		tb.Fatal(err)
	}
	tools = append(tools, plans...)
	tools = append(tools, writetodos.New(writetodos.Options{}).Tools()...)
	sched, err := schedule.New(schedule.Options{Store: struct{ schedule.Store }{}, Owner: "test"})
	if err != nil {
		tb.Fatal(err)
	}
	return append(tools, sched.Tools()...)
}

// Every schema the project declares compiles: a tool reaching for a
// keyword the validator lacks fails here, not at a user's first call.
func TestProjectSchemasCompile(t *testing.T) {
	tools := projectTools(t)
	v, err := tool.NewValidator(tools)
	if err != nil {
		t.Fatal(err)
	}
	if err := tool.NewRegistry().Add(tools...); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range tools {
		names[tl.Spec().Name] = true
	}
	for _, n := range []string{"file_read", "file_write", "file_edit", "file_find", "file_search", "shell_execute",
		"checklist_add", "checklist_edit", "checklist_read", "update_plan", "patch_plan", "write_todos",
		"schedule_create", "schedule_list", "schedule_cancel"} {
		if !names[n] {
			t.Errorf("no tool %s among %v", n, names)
		}
	}
	calls := []struct{ name, args, want string }{
		{"file_read", `{"path": "a.go", "line": 10, "limit": 20}`, ""},
		{"file_read", `{"path": "a.go", "line": 0}`, "- at /line: want at least 1, got 0"},
		{"file_edit", `{"path": "a", "old": "x"}`, `- at /: missing required property "new"`},
		{"shell_execute", `{"command": "ls", "timeout": 7200}`, "- at /timeout: want at most 3600, got 7200"},
		{"shell_execute", `{"command": "ls", "timeout": 1.5}`, "- at /timeout: want integer, got number"},
		{"checklist_add", `{"items": ["a", {"text": "b", "status": "in_progress"}]}`, ""},
		{"checklist_add", `{"items": [{"text": "b", "status": "done"}]}`,
			`- at /items/0/status: value must be one of "pending", "in_progress"`},
		{"checklist_read", ``, ""},
		{"update_plan", `{"plan": [{"step": "s", "status": "pending"}]}`, ""},
		{"patch_plan", `{"operations": [{"action": "add", "id": "s1", "item": {"step": "s"}}]}`,
			`- at /operations/0/item: missing required property "status"`},
		{"write_todos", `{"todos": [{"content": "c", "status": "pending"}]}`, ""},
		{"schedule_create", `{"prompt": "p", "every": "1h", "gate": {"check": {"tool": "x", "arguments": {}}, "when": {"at": "/n", "is": {"equals": 3}}}}`, ""},
		{"schedule_create", `{"prompt": "", "gate": {"check": {}, "when": "sometimes"}}`,
			"- at /prompt: want at least 1 character, got 0\n" + `- at /gate/when: value must be one of "changed", "succeeded"`},
		{"schedule_cancel", `{"id": ""}`, "- at /id: want at least 1 character, got 0"},
	}
	for _, c := range calls {
		err := v.Validate(c.name, json.RawMessage(c.args))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %s: %v", c.name, c.args, err)
		case c.want != "" && (err == nil || err.Error() != header+c.want):
			t.Errorf("%s %s:\ngot  %v\nwant %s", c.name, c.args, err, c.want)
		}
	}
}

func TestValidateIsConcurrencySafe(t *testing.T) {
	v := validator(t, itemsSchema)
	done := make(chan error)
	for range 4 {
		go func() {
			var err error
			for range 50 {
				if e := v.Validate("t", json.RawMessage(`{"items": ["a", {"text": "b", "status": "x"}]}`)); e == nil {
					err = fmt.Errorf("invalid call passed")
				}
			}
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// fuzzSchemas cover every keyword; FuzzValidate picks one per input.
var fuzzSchemas = []string{itemsSchema, whenSchema, fileSchema,
	`{"type": "object", "properties": {
	  "n": {"type": ["integer", "null"], "minimum": -5, "maximum": 1e3},
	  "s": {"type": "string", "minLength": 1, "maxLength": 4, "pattern": "^[a-z]"},
	  "a": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"oneOf": [{"const": 1}, {"enum": [[1], {"k": null}]}]}},
	  "o": {"allOf": [{"type": "object"}, {"additionalProperties": {"type": "boolean"}}]}},
	  "additionalProperties": false}`,
	`true`, `false`,
}

func FuzzValidate(f *testing.F) {
	vs := make([]*tool.Validator, len(fuzzSchemas))
	for i, s := range fuzzSchemas {
		vs[i] = validator(f, s)
	}
	f.Add([]byte(`{"items": ["a", {"text": "b", "status": "pending"}]}`), uint8(0))
	f.Fuzz(func(t *testing.T, args []byte, which uint8) {
		v := vs[int(which)%len(vs)]
		err := v.Validate("t", args)
		if err == nil {
			return
		}
		msg := err.Error()
		if again := v.Validate("t", args); again == nil || again.Error() != msg {
			t.Fatalf("not deterministic: %q then %v", msg, again)
		}
		body, ok := strings.CutPrefix(msg, header)
		if !ok {
			if !strings.HasPrefix(msg, "arguments are not valid JSON: ") {
				t.Fatalf("unexpected error %q", msg)
			}
			return
		}
		for _, line := range strings.Split(body, "\n") {
			if !strings.HasPrefix(strings.TrimLeft(line, " "), "- ") {
				t.Fatalf("line %q of %q", line, msg)
			}
		}
	})
}

func BenchmarkValidate(b *testing.B) {
	v, err := tool.NewValidator(projectTools(b))
	if err != nil {
		b.Fatal(err)
	}
	calls := []struct{ name, args string }{
		{"file_read", `{"path": "internal/host/host.go", "line": 120, "limit": 80}`},
		{"checklist_add", `{"items": ["Read the spec", {"text": "Write the validator", "status": "in_progress"}, "Run the tests"]}`},
	}
	for _, c := range calls {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := v.Validate(c.name, json.RawMessage(c.args)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCompile: every project schema compiled, as a new session's
// registry does.
func BenchmarkCompile(b *testing.B) {
	tools := projectTools(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tool.NewValidator(tools); err != nil {
			b.Fatal(err)
		}
	}
}
