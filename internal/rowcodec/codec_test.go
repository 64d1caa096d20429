package rowcodec

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// entries has every entry variant and every part variant, with the
// characters JSON escapes and the empty lists it might confuse with nil.
func entries() []session.Entry {
	return []session.Entry{
		session.UserMessage{Parts: model.Parts{
			model.Text{Text: "a <b> & \"c\"\n\t\u2028 ünï \U0001F600"},
			model.Image{MediaType: "image/png", Data: []byte{0, 1, 0xff}, Name: "x.png"},
			model.Resource{URI: "file:///a.go", Name: "a.go", MimeType: "text/x-go", Text: "package a"},
		}, Source: session.SourceSchedule},
		session.UserMessage{Parts: model.Parts{model.Text{Text: "task 3 finished"}}, Source: session.SourceTask, Tasks: []string{"t3", "t4"}},
		session.UserMessage{Parts: model.Parts{}},
		session.UserMessage{},
		session.AssistantMessage{
			Parts: model.Parts{
				model.Thinking{Text: "hm", Signature: "sig", Redacted: "r", Provider: "anthropic"},
				model.Text{Text: "ok"},
				model.ToolCall{ID: "c1", Name: "shell", Arguments: json.RawMessage(`{"cmd":"ls -la","n":[1,2.5,null,true]}`)},
				model.ToolCall{ID: "c2", Name: "noargs"},
			},
			Usage: model.Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4},
			Stop:  model.StopToolUse,
			Model: "m",
		},
		session.AssistantMessage{Stop: model.StopEndTurn},
		session.ToolResult{
			CallID: "c1", Name: "shell", Status: session.StatusOK,
			Content: model.Parts{
				model.Text{Text: strings.Repeat("line\n", 20)},
				model.ToolResult{CallID: "n", Name: "inner", IsError: true, Content: model.Parts{
					model.ToolResult{CallID: "nn", Name: "deeper", Content: model.Parts{}},
				}},
			},
			Change: "diff",
			State:  json.RawMessage(`{"a":[1,{"b":"c"}]}`),
		},
		session.ToolResult{CallID: "c2", Status: session.StatusRefused},
		session.Notice{Severity: session.SeverityError, Title: "t", Description: "d"},
		session.Compaction{Summary: "s", KeptFrom: 7, Checkpoint: map[string]json.RawMessage{"plan": json.RawMessage(`[]`)}},
		session.ToolSet{Source: "mcp", Tools: []session.ToolDef{{Name: "mcp__s__t", Schema: json.RawMessage(`{"type":"object"}`), Server: "s", Remote: "t"}},
			Removed: []string{"mcp__s__u"}},
	}
}

func TestDecodeEntryMatchesSession(t *testing.T) {
	for _, e := range entries() {
		kind, payload, err := session.EncodeEntry(e)
		if err != nil {
			t.Fatal(err)
		}
		want, err := session.DecodeEntry(kind, payload)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(kind, payload)
		if err != nil {
			t.Fatalf("Decode(%s): %v", payload, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Decode(%s)\n got %#v\nwant %#v", payload, got, want)
		}
		// The kinds with parts must take the fast path, or it has fallen
		// behind the model's types.
		if _, ok := fastDecode(kind, payload); !ok && kind != "notice" && kind != "compaction" && kind != "tool_set" {
			t.Errorf("fastDecode(%s, %s) fell back", kind, payload)
		}
	}
}

func TestEncodeEntryMatchesSession(t *testing.T) {
	for _, e := range entries() {
		wantKind, want, err := session.EncodeEntry(e)
		if err != nil {
			t.Fatal(err)
		}
		kind, got, err := Encode(e)
		if err != nil {
			t.Fatalf("Encode(%#v): %v", e, err)
		}
		if kind != wantKind {
			t.Errorf("Encode kind %q, want %q", kind, wantKind)
		}
		// Byte for byte but for the order of a tool result's fields.
		if _, ok := e.(session.ToolResult); !ok && string(got) != string(want) {
			t.Errorf("Encode(%#v)\n got %s\nwant %s", e, got, want)
		}
		back, err := session.DecodeEntry(kind, got)
		if err != nil {
			t.Fatalf("decode %s: %v", got, err)
		}
		if wantBack, _ := session.DecodeEntry(wantKind, want); !reflect.DeepEqual(back, wantBack) {
			t.Errorf("Encode(%#v) decodes to %#v, want %#v", e, back, wantBack)
		}
	}
}

func TestDecodeEntryFallsBack(t *testing.T) {
	for _, tc := range []struct{ kind, payload string }{
		{"user", `{"parts":[{"type":"text","text":"a","cache":true}]}`}, // a field the mirror lacks
		{"user", `{"parts":[{"type":"audio","data":"AAAA"}]}`},          // an unknown part
		{"user", `{"parts":[{"type":"text","text":"a","data":"!!"}]}`},  // a stray field of another part
		{"user", `{"parts":[]} {}`},                                     // trailing data
		{"user", `{"parts":[{"type":"text","text":1}]}`},                // a wrong type
		{"user", `{"parts":null}`},
		{"assistant", `{"parts":[{"type":"tool_call","id":"x","arguments":{"a":1}}],"extra":1}`},
		{"tool_result", `{"call_id":"x","content":[{"type":"tool_result","content":[{"type":"nope"}]}]}`},
		{"notice", `{"severity":"info","title":"t"}`},
		{"mystery", `{}`},
	} {
		want, wantErr := session.DecodeEntry(tc.kind, []byte(tc.payload))
		got, err := Decode(tc.kind, []byte(tc.payload))
		if (err != nil) != (wantErr != nil) {
			t.Errorf("Decode(%s, %s) error %v, session.DecodeEntry %v", tc.kind, tc.payload, err, wantErr)
			continue
		}
		if err == nil && !sameEncoding(t, got, want) {
			t.Errorf("Decode(%s, %s) = %#v, session.DecodeEntry %#v", tc.kind, tc.payload, got, want)
		}
	}
}

// sameEncoding compares entries by what they store as, which does not
// tell a nil list of parts from an empty one.
func sameEncoding(t testing.TB, a, b session.Entry) bool {
	t.Helper()
	ka, pa, err := session.EncodeEntry(a)
	if err != nil {
		t.Fatal(err)
	}
	kb, pb, err := session.EncodeEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	return ka == kb && string(pa) == string(pb)
}

// TestWireMirrorsModel keeps the mirror structs complete: every JSON field
// of every part and entry variant must be in its mirror with the same type
// (Parts as a list of mirrors), or its payloads would all fall back.
func TestWireMirrorsModel(t *testing.T) {
	partsType := reflect.TypeFor[model.Parts]()
	wirePartsType := reflect.TypeFor[[]wirePart]()
	check := func(variant any, mirror reflect.Type) {
		t.Helper()
		fields := map[string]reflect.Type{}
		for f := range mirror.Fields() {
			fields[jsonName(f)] = f.Type
		}
		vt := reflect.TypeOf(variant)
		for f := range vt.Fields() {
			name := jsonName(f)
			if name == "-" || !f.IsExported() {
				continue
			}
			want := f.Type
			if want == partsType {
				want = wirePartsType
			}
			if got, ok := fields[name]; !ok || got != want {
				t.Errorf("%s field %q (%v) is not in %s as %v", vt, name, f.Type, mirror, want)
			}
		}
	}
	wp := reflect.TypeFor[wirePart]()
	for _, p := range []model.Part{model.Text{}, model.Image{}, model.Resource{}, model.Thinking{}, model.ToolCall{}, model.ToolResult{}} {
		check(p, wp)
	}
	check(session.UserMessage{}, reflect.TypeFor[wireUser]())
	check(session.AssistantMessage{}, reflect.TypeFor[wireAssistant]())
	check(session.ToolResult{}, reflect.TypeFor[wireToolResult]())
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

// FuzzDecodeEntry checks that decodeEntry answers as session.DecodeEntry
// does, whatever the payload.
func FuzzDecodeEntry(f *testing.F) {
	for _, e := range entries() {
		kind, payload, err := session.EncodeEntry(e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(kind, payload)
	}
	f.Fuzz(func(t *testing.T, kind string, payload []byte) {
		want, wantErr := session.DecodeEntry(kind, payload)
		got, err := Decode(kind, payload)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("Decode error %v, session.DecodeEntry %v", err, wantErr)
		}
		if err == nil && !sameEncoding(t, got, want) {
			t.Fatalf("Decode = %#v, session.DecodeEntry %#v", got, want)
		}
	})
}

// benchPayloads returns n stored rows shaped like a coding session's:
// per turn a question, an assistant message with three tool calls, and
// three file reads of a couple of KB.
func benchPayloads(b *testing.B, n int) (kinds []string, payloads [][]byte) {
	code := strings.Repeat("\tif err != nil {\n\t\treturn fmt.Errorf(\"read thing: %w\", err)\n\t}\n", 30)
	var es []session.Entry
	for len(es) < n {
		es = append(es,
			session.UserMessage{Parts: model.Parts{model.Text{Text: "please fix the failing test"}}},
			session.AssistantMessage{Parts: model.Parts{
				model.Text{Text: strings.Repeat("Let me look at the code. ", 10)},
				model.ToolCall{ID: "c1", Name: "file_read", Arguments: json.RawMessage(`{"path":"a.go"}`)},
				model.ToolCall{ID: "c2", Name: "file_read", Arguments: json.RawMessage(`{"path":"b.go"}`)},
				model.ToolCall{ID: "c3", Name: "file_read", Arguments: json.RawMessage(`{"path":"c.go"}`)},
			}, Usage: model.Usage{InputTokens: 20000, OutputTokens: 300}, Stop: model.StopToolUse},
			session.ToolResult{CallID: "c1", Name: "file_read", Status: session.StatusOK, Content: model.Parts{model.Text{Text: code}}},
			session.ToolResult{CallID: "c2", Name: "file_read", Status: session.StatusOK, Content: model.Parts{model.Text{Text: code}}},
			session.ToolResult{CallID: "c3", Name: "file_read", Status: session.StatusOK, Content: model.Parts{model.Text{Text: code}}},
		)
	}
	for _, e := range es[:n] {
		k, p, err := session.EncodeEntry(e)
		if err != nil {
			b.Fatal(err)
		}
		kinds, payloads = append(kinds, k), append(payloads, p)
	}
	return kinds, payloads
}

// BenchmarkDecode2000 compares session.DecodeEntry with decodeEntry, on
// one CPU.
func BenchmarkDecode2000(b *testing.B) {
	kinds, payloads := benchPayloads(b, 2000)
	var size int64
	for _, p := range payloads {
		size += int64(len(p))
	}
	b.Run("session.DecodeEntry", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			for i := range kinds {
				if _, err := session.DecodeEntry(kinds[i], payloads[i]); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("Decode", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			for i := range kinds {
				if _, err := Decode(kinds[i], payloads[i]); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
