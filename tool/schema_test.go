package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

// member is one key and value eachMember yields.
type member struct {
	key string
	v   string
}

// decoderMembers is what a json.Decoder reads as raw's members: what
// eachMember must yield, without the decoder's cost.
func decoderMembers(raw []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errNotObject
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, member{tok.(string), string(v)})
	}
	_, err := dec.Token()
	return out, err
}

func scannedMembers(raw []byte) ([]member, error) {
	var out []member
	err := eachMember(raw, func(k string, v json.RawMessage) error {
		out = append(out, member{k, string(v)})
		return nil
	})
	return out, err
}

var memberCases = []string{
	`{}`, ` { } `, `{"a":1}`, "{\n\t\"a\" : 1 ,\r\n \"b\":\"x\" }",
	`{"a":{"b":[1,{"c":"}"}],"d":null},"e":[],"f":"\"]}"}`,
	`{"t\u00e9":true,"\"q\"":false,"a\/b":-1.5e+3,"":""}`,
	`{"a":1,"a":2}`, `{"é":"ü","ok":[ "a" , "b" ]}`,
	`{"type": "object", "properties": {"path": {"type": "string", "description": "A path, \"quoted\" \\ and {braced}"}}, "required": ["path"]}`,
}

// eachMember yields what a json.Decoder reads, key for key and byte for
// byte, on every valid object.
func TestEachMemberMatchesTheDecoder(t *testing.T) {
	for _, raw := range memberCases {
		want, werr := decoderMembers([]byte(raw))
		got, err := scannedMembers([]byte(raw))
		if werr != nil || err != nil || !slices.Equal(got, want) {
			t.Errorf("%s:\n got %q, %v\nwant %q, %v", raw, got, err, want, werr)
		}
	}
}

// Neither a non-object nor a malformed object panics: each is an error.
func TestEachMemberRefusesMalformedInput(t *testing.T) {
	for _, raw := range []string{``, ` `, `[]`, `"a"`, `1`, `null`} {
		if _, err := scannedMembers([]byte(raw)); !errors.Is(err, errNotObject) {
			t.Errorf("%q: %v", raw, err)
		}
	}
	for _, raw := range []string{`{`, `{"a"`, `{"a":`, `{"a":1`, `{"a":1,`, `{"a":1,}`, `{a:1}`, `{"a" 1}`,
		`{"a":"x}`, `{"a":[1}`, `{"a":]}`, `{"a":1 "b":2}`, `{,}`, `{"a":{}]`} {
		if _, err := scannedMembers([]byte(raw)); err == nil {
			t.Errorf("%q: no error", raw)
		}
	}
}

func FuzzEachMember(f *testing.F) {
	for _, c := range memberCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := scannedMembers(raw) // never panics
		if !json.Valid(raw) {
			return
		}
		want, werr := decoderMembers(raw)
		if (err == nil) != (werr == nil) || !slices.Equal(got, want) {
			t.Fatalf("%q:\n got %q, %v\nwant %q, %v", raw, got, err, want, werr)
		}
	})
}
