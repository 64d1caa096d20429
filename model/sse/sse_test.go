package sse

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

type ev struct{ typ, data, id string }

func readAll(t testing.TB, r io.Reader, max int) ([]ev, error) {
	t.Helper()
	sr := NewReader(r)
	if max > 0 {
		sr.SetMaxLine(max)
	}
	var out []ev
	for range 1 << 16 {
		e, err := sr.Next()
		if err != nil {
			return out, err
		}
		out = append(out, ev{e.Type, string(e.Data), e.ID})
	}
	t.Fatal("stream never ended")
	return nil, nil
}

func TestParsing(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []ev
	}{
		{"data", "data: hello\n\n", []ev{{"", "hello", ""}}},
		{"typed", "event: message_start\ndata: {\"a\":1}\n\n", []ev{{"message_start", `{"a":1}`, ""}}},
		{"multi-line data", "data: one\ndata: two\ndata:\n\n", []ev{{"", "one\ntwo\n", ""}}},
		{"one space stripped only", "data:  two spaces\n\n", []ev{{"", " two spaces", ""}}},
		{"no space", "data:x\n\n", []ev{{"", "x", ""}}},
		{"CRLF", "event: a\r\ndata: b\r\n\r\n", []ev{{"a", "b", ""}}},
		{"lone CR", "data: a\rdata: b\r\r", []ev{{"", "a\nb", ""}}},
		{"comments and keepalives", ": ping\n\n:\ndata: x\n\n", []ev{{"", "x", ""}}},
		{"type without data is not dispatched", "event: ping\n\ndata: x\n\n", []ev{{"", "x", ""}}},
		{"id carries over", "id: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\n", []ev{{"", "a", "7"}, {"", "b", "7"}, {"", "c", ""}}},
		{"id with NUL ignored", "id: 1\ndata: a\n\nid: x\x00y\ndata: b\n\n", []ev{{"", "a", "1"}, {"", "b", "1"}}},
		{"field without colon", "data\n\n", []ev{{"", "", ""}}},
		{"unknown and retry ignored", "retry: 10\nfoo: bar\ndata: x\n\n", []ev{{"", "x", ""}}},
		{"unfinished last event dropped", "data: a\n\ndata: cut", []ev{{"", "a", ""}}},
		{"unfinished after a full line dropped", "data: a\n\ndata: b\n", []ev{{"", "a", ""}}},
		{"type resets between events", "event: a\ndata: 1\n\ndata: 2\n\n", []ev{{"a", "1", ""}, {"", "2", ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Byte at a time too, so no case depends on buffer boundaries.
			for _, r := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in))} {
				got, err := readAll(t, r, 0)
				if err != io.EOF {
					t.Fatalf("err = %v, want EOF", err)
				}
				if len(got) != len(tc.want) {
					t.Fatalf("events = %q, want %q", got, tc.want)
				}
				for i := range got {
					if got[i] != tc.want[i] {
						t.Errorf("event %d = %q, want %q", i, got[i], tc.want[i])
					}
				}
			}
		})
	}
}

func TestLineBound(t *testing.T) {
	in := "data: " + strings.Repeat("x", 100) + "\n\n"
	if _, err := readAll(t, strings.NewReader(in), 106); err != io.EOF {
		t.Fatalf("a line at the bound: err = %v", err)
	}
	_, err := readAll(t, iotest.OneByteReader(strings.NewReader(in)), 105)
	if !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("a line over the bound: err = %v, want ErrLineTooLong", err)
	}
}

func TestReadError(t *testing.T) {
	boom := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader("data: a\n\ndata: b\n"), iotest.ErrReader(boom))
	got, err := readAll(t, r, 0)
	if !errors.Is(err, boom) || len(got) != 1 {
		t.Fatalf("events %q, err %v: want one event then the reader's error", got, err)
	}
}

// FuzzReader checks that no input panics or loops, and that splitting the
// input differently never changes what is read.
func FuzzReader(f *testing.F) {
	for _, s := range []string{"data: a\n\n", "event: x\r\ndata: {}\r\n\r\n", "id: 1\rdata\r\r", ": c\n\n", "data: a\ndata: b\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		a, errA := readAll(t, strings.NewReader(in), 64)
		b, errB := readAll(t, iotest.OneByteReader(strings.NewReader(in)), 64)
		if (errA == io.EOF) != (errB == io.EOF) || len(a) != len(b) {
			t.Fatalf("whole %q (%v) vs byte-wise %q (%v)", a, errA, b, errB)
		}
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("event %d: %q vs %q", i, a[i], b[i])
			}
		}
	})
}

// Next reuses the buffer of the Data it returned, which is valid until the
// next call: a long stream reads with no allocation per event.
func TestNextAllocatesNoDataPerEvent(t *testing.T) {
	r := NewReader(strings.NewReader(strings.Repeat("data: {\"delta\":\"some text\"}\n\n", 300)))
	var err error
	allocs := testing.AllocsPerRun(200, func() { _, err = r.Next() })
	if err != nil || allocs != 0 {
		t.Fatalf("%v allocations per event (err %v), want 0", allocs, err)
	}
}
