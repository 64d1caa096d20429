package model

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// SortedSchema is a tool's schema as the adapters send it: the bytes
// encoding/json writes back once the schema is decoded into a map (see
// sortedJSON), for a schema that is an object. ok is false for any other,
// and for what sortedJSON leaves to that decode, which the adapter then
// does.
func SortedSchema(raw json.RawMessage) (json.RawMessage, bool) {
	if t := bytes.TrimLeft(raw, " \t\n\r"); len(t) == 0 || t[0] != '{' {
		return nil, false
	}
	return sortedJSON(raw)
}

// sortedJSON returns the JSON value raw as the requests have always sent
// a tool's schema: as encoding/json writes it back once decoded into a map
// (object keys sorted, a duplicate's last value kept, no space, strings
// and numbers re-encoded), without HTML escaping. It walks the bytes
// instead of building the map, which cost a one-shot a reflective decode
// and encode of every tool's schema. ok is false for what it leaves to
// that decode: invalid JSON, a number it does not write as given, a string
// with an escape or a byte outside printable ASCII.
func sortedJSON(raw []byte) (out json.RawMessage, ok bool) {
	if !json.Valid(raw) {
		return nil, false
	}
	w := sortWriter{in: raw}
	w.i = w.space(0)
	if !w.value() {
		return nil, false
	}
	return w.out, true
}

// sortWriter writes sortedJSON's output; in is valid JSON.
type sortWriter struct {
	in  []byte
	i   int // the next byte of in to read
	out []byte
}

func (w *sortWriter) space(i int) int {
	for i < len(w.in) && (w.in[i] == ' ' || w.in[i] == '\t' || w.in[i] == '\n' || w.in[i] == '\r') {
		i++
	}
	return i
}

// value copies the value at w.i to w.out and moves past it.
func (w *sortWriter) value() bool {
	switch c := w.in[w.i]; {
	case c == '{':
		return w.object()
	case c == '[':
		return w.array()
	case c == '"':
		end, ok := w.plainString(w.i)
		if ok {
			w.out = append(w.out, w.in[w.i:end]...)
			w.i = end
		}
		return ok
	default: // a number or a literal
		end := w.i
		for end < len(w.in) && !strings.ContainsRune(",]} \t\n\r", rune(w.in[end])) {
			end++
		}
		tok := w.in[w.i:end]
		if c != 't' && c != 'f' && c != 'n' && !plainNumber(tok) {
			return false
		}
		w.out = append(w.out, tok...)
		w.i = end
		return true
	}
}

// plainString returns the end of the string at i, and whether it is
// written back as it stands: no escape, only printable ASCII.
func (w *sortWriter) plainString(i int) (int, bool) {
	for j := i + 1; j < len(w.in); j++ {
		switch c := w.in[j]; {
		case c == '"':
			return j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return 0, false
		}
	}
	return 0, false
}

// plainNumber reports whether a float64 encodes back to tok: an integer
// of at most 15 digits, which a float64 holds exactly and writes without
// exponent.
func plainNumber(tok []byte) bool {
	digits := bytes.TrimPrefix(tok, []byte("-"))
	if len(digits) == 0 || len(digits) > 15 || (digits[0] == '0' && len(digits) > 1) {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func (w *sortWriter) array() bool {
	w.out = append(w.out, '[')
	w.i = w.space(w.i + 1)
	for first := true; w.in[w.i] != ']'; first = false {
		if !first {
			w.out = append(w.out, ',')
			w.i = w.space(w.i + 1) // the comma
		}
		if !w.value() {
			return false
		}
		w.i = w.space(w.i)
	}
	w.i++
	w.out = append(w.out, ']')
	return true
}

// member is an object member's key (quoted, as it stands) and its value
// already written, in the output's bytes.
type member struct {
	key        []byte
	start, end int
}

// name is the key without its quotes, which sort with it otherwise.
func (m member) name() []byte { return m.key[1 : len(m.key)-1] }

func (w *sortWriter) object() bool {
	var members []member
	// Values are written after the object's own output, then copied back
	// into place in key order.
	mark := len(w.out)
	w.i = w.space(w.i + 1)
	for first := true; w.in[w.i] != '}'; first = false {
		if !first {
			w.i = w.space(w.i + 1) // the comma
		}
		end, ok := w.plainString(w.i)
		if !ok {
			return false
		}
		key := w.in[w.i:end]
		w.i = w.space(w.space(end) + 1) // the colon
		start := len(w.out)
		if !w.value() {
			return false
		}
		members = append(members, member{key, start, len(w.out)})
		w.i = w.space(w.i)
	}
	w.i++
	// Sorted by key; of equal keys the last stays, as a map keeps it.
	slices.SortStableFunc(members, func(a, b member) int { return bytes.Compare(a.name(), b.name()) })
	values := slices.Clone(w.out[mark:])
	w.out = append(w.out[:mark], '{')
	for k, m := range members {
		if k+1 < len(members) && bytes.Equal(members[k+1].key, m.key) {
			continue
		}
		if w.out[len(w.out)-1] != '{' {
			w.out = append(w.out, ',')
		}
		w.out = append(w.out, m.key...)
		w.out = append(w.out, ':')
		w.out = append(w.out, values[m.start-mark:m.end-mark]...)
	}
	w.out = append(w.out, '}')
	return true
}
