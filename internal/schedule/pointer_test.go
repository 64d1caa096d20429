package schedule

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// JSON pointers as RFC 6901 reads them: ~0 and ~1 escapes and nothing
// else after a ~, array indexes without leading zeros and inside the array.
func TestResolvePointer(t *testing.T) {
	var doc any
	if err := json.Unmarshal([]byte(`{"a/b": {"c~d": 1}, "list": [0,1,2,3,4,5,6,7,8,9,"ten"], "pair": [1, 2]}`), &doc); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p, want, err string
	}{
		{p: "/a~1b/c~0d", want: "1"},
		{p: "/list/10", want: `"ten"`},
		{p: "/list/0", want: "0"},
		{p: "/list/01", err: `"01" is not an array index`},
		{p: "/list/-1", err: `"-1" is not an array index`},
		{p: "/pair/2", err: "the result has no /pair/2 (the array has 2 items)"},
		{p: "/a~", err: "~ must be followed by 0 or 1"},
		{p: "/a~2b", err: "~ must be followed by 0 or 1"},
		{p: "/none", err: "the result has no /none"},
	} {
		v, err := resolvePointer(doc, tc.p)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("resolvePointer(%s) = %v, %v; want an error saying %q", tc.p, v, err, tc.err)
			}
		case err != nil:
			t.Errorf("resolvePointer(%s): %v", tc.p, err)
		default:
			if b, _ := json.Marshal(v); string(b) != tc.want {
				t.Errorf("resolvePointer(%s) = %s, want %s", tc.p, b, tc.want)
			}
		}
	}
}

// A cut never splits a character: it backs off to the start of the one
// the limit falls in.
func TestCutOnARuneBoundary(t *testing.T) {
	b := []byte("x" + strings.Repeat("é", 10)) // 21 bytes; byte 10 is inside an é
	got := cut(b, 10, false)
	if !utf8.ValidString(got) || !strings.HasPrefix(got, "x"+strings.Repeat("é", 4)+"\n[… cut: the turn sees the first 9 bytes]") {
		t.Errorf("cut = %q", got)
	}
	if got := cut(b, len(b), false); got != string(b) {
		t.Errorf("cut at its length = %q", got)
	}
	if got := cut(b, len(b), true); !strings.HasSuffix(got, "the first 21 bytes]") {
		t.Errorf("cut of a result already cut = %q", got)
	}
}

func TestWhenString(t *testing.T) {
	for _, tc := range []struct {
		w    When
		want string
	}{
		{When{Kind: WhenAt, Pointer: "/state", Is: Is{Kind: IsEquals, Equals: json.RawMessage(`{"n":1}`)}}, `at /state is equals {"n":1}`},
		{When{Kind: WhenAt, Pointer: "/ok", Is: Is{Kind: IsTrue}}, "at /ok is true"},
		{When{Kind: WhenMatches, Pattern: "ERR"}, `matches "ERR"`},
		{When{Kind: WhenChanged}, "changed"},
	} {
		if got := tc.w.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}
