package gemini_test

import (
	"encoding/json"
	"strings"
	"testing"

	"meka.dev/meka/model/gemini"
)

func TestSchema(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"type":"object","properties":{"path":{"type":"string","description":"where"}},"required":["path"],"additionalProperties":false,"$schema":"x"}`,
			`{"properties":{"path":{"description":"where","type":"STRING"}},"required":["path"],"type":"OBJECT"}`},
		{`{"type":"object","properties":{"n":{"type":["integer","null"],"minimum":1},"k":{"const":"a"},"e":{"enum":["x","y"]}}}`,
			`{"properties":{"e":{"enum":["x","y"]},"k":{"enum":["a"]},"n":{"minimum":1,"nullable":true,"type":"INTEGER"}},"type":"OBJECT"}`},
		{`{"type":"object","properties":{"a":{"$ref":"#/$defs/A"},"b":{"oneOf":[{"type":"string"},{"type":"number"}]}},"$defs":{"A":{"type":"array","items":{"type":"boolean"}}}}`,
			`{"properties":{"a":{"items":{"type":"BOOLEAN"},"type":"ARRAY"},"b":{"anyOf":[{"type":"STRING"},{"type":"NUMBER"}]}},"type":"OBJECT"}`},
		{`{"allOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"b":{"type":"string"}}}]}`,
			`{"properties":{"a":{"type":"STRING"},"b":{"type":"STRING"}},"required":["a"],"type":"OBJECT"}`},
		{`{}`, `null`},
	} {
		got, err := gemini.Schema(json.RawMessage(tc.in))
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if b, _ := json.Marshal(got); string(b) != tc.want {
			t.Errorf("%s\n got %s\nwant %s", tc.in, b, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{`{"type":"object","properties":{"a":{"not":{"type":"string"}}}}`, `parameters.properties.a: "not" has no equivalent`},
		{`{"type":"object","properties":{"a":{"enum":[1,2]}}}`, `parameters.properties.a.enum: 1 is not a string`},
		{`{"type":"object","properties":{"t":{"$ref":"#/$defs/T"}},"$defs":{"T":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/T"}}}}}}`, `refers to itself`},
		{`{"patternProperties":{"^x":{}}}`, `"patternProperties" has no equivalent`},
		{`{"if":{},"then":{}}`, `"if" has no equivalent`},
		{`{"$ref":"https://example.com/s.json"}`, `not local`},
	} {
		_, err := gemini.Schema(json.RawMessage(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want …%s…", tc.in, err, tc.want)
		}
	}
}
