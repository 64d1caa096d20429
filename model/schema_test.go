package model

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// decodedSchema is what sortedJSON must equal: raw decoded into a map
// and encoded back, as the request did before.
func decodedSchema(t *testing.T, raw []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b) // as the adapters encode a request
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

var sortedCases = []string{
	`{}`, ` {"b":1, "a":[true,false,null,{"d":"x","c":-0}] } `,
	`{"type":"object","properties":{"path":{"type":"string","description":"A file, <relative> & \"quoted\""},"limit":{"type":"integer","minimum":1,"maximum":2000}},"required":["path"],"additionalProperties":false}`,
	`{"a!":1,"a":2,"a b":3,"":4,"~":5}`, `{"k":1,"k":2,"j":{"k":1,"k":{}}}`,
	`{"n":[123456789012345,-7,0,1.5,1e3,0.000001,12345678901234567890]}`,
	`{"s":"é","t":"\u2028","u":"\x7f","v":"tab\tin"}`,
}

// Where sortedJSON writes a schema, it writes the bytes the decode into
// a map did; where it leaves one to that decode, it says so.
func TestSortedJSONMatchesTheMap(t *testing.T) {
	fast := 0
	for _, raw := range sortedCases {
		if !json.Valid([]byte(raw)) {
			continue
		}
		got, ok := sortedJSON([]byte(raw))
		if !ok {
			continue
		}
		fast++
		if want := decodedSchema(t, []byte(raw)); string(got) != want {
			t.Errorf("%s:\n got %s\nwant %s", raw, got, want)
		}
	}
	if fast < 4 {
		t.Errorf("only %d of %d cases took the fast path", fast, len(sortedCases))
	}
	if _, ok := sortedJSON([]byte(`{"a":1`)); ok {
		t.Error("invalid JSON written")
	}
}

func FuzzSortedJSON(f *testing.F) {
	for _, c := range sortedCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := sortedJSON(raw)
		if !ok {
			return
		}
		if want := decodedSchema(t, raw); string(got) != want {
			t.Fatalf("%s:\n got %s\nwant %s", raw, got, want)
		}
	})
}
