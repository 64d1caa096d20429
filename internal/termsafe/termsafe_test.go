package termsafe

import (
	"bytes"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		name, in, color, plain string
	}{
		{"text", "hello, 世界\n\tok", "hello, 世界\n\tok", "hello, 世界\n\tok"},
		{"colour", "\x1b[1;31mred\x1b[0m", "\x1b[1;31mred\x1b[0m", "red"},
		{"window title", "a\x1b]0;pwned\x07b", "ab", "ab"},
		{"title ended by ST", "a\x1b]2;pwned\x1b\\b", "ab", "ab"},
		{"clipboard", "x\x1b]52;c;cm0gLXJmIH4=\x07y", "xy", "xy"},
		{"cursor and clear", "\x1b[2J\x1b[H\x1b[10;5Hz", "z", "z"},
		{"private mode", "\x1b[?1049hq", "q", "q"},
		{"device query", "\x1b[6nq\x1bZ", "q", "q"},
		{"DCS", "a\x1bP1$r0m\x1b\\b", "ab", "ab"},
		{"two-byte", "a\x1bcb\x1b7c", "abc", "abc"},
		{"C0", "a\rb\bc\x07d\x00e\x7f", "abcde", "abcde"},
		{"C1 CSI", "a\u009b2Jb", "a2Jb", "a2Jb"},
		{"sgr with intermediate", "\x1b[1 mX", "X", "X"},
		{"hyperlink keeps its text", "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link", "link"},
	} {
		if got := String(tc.in, true); got != tc.color {
			t.Errorf("%s with colour: %q, want %q", tc.name, got, tc.color)
		}
		if got := String(tc.in, false); got != tc.plain {
			t.Errorf("%s plain: %q, want %q", tc.name, got, tc.plain)
		}
	}
}

// A sequence split across writes, byte by byte, is filtered as a whole.
func TestSplitWrites(t *testing.T) {
	in := "start \x1b]0;title\x07 \x1b[32mgreen\x1b[0m 世界 \x1b[2J end"
	var buf bytes.Buffer
	w := NewWriter(&buf, true)
	for i := range len(in) {
		if n, err := w.Write([]byte{in[i]}); n != 1 || err != nil {
			t.Fatal(n, err)
		}
	}
	if want := String(in, true); buf.String() != want {
		t.Fatalf("%q, want %q", buf.String(), want)
	}
}

// An unterminated string sequence swallows at most maxSeq bytes.
func TestLongSequenceBounded(t *testing.T) {
	in := "\x1b]0;" + strings.Repeat("a", maxSeq+10) + "visible"
	if got := String(in, true); !strings.HasSuffix(got, "visible") || len(got) > 20 {
		t.Fatalf("%d bytes: %q…", len(got), got[:min(len(got), 40)])
	}
}

func FuzzWriter(f *testing.F) {
	for _, s := range []string{"\x1b[31mx", "\x1b]0;t\x07", "a\u009bb", "\x1bP\x1b\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, color := range []bool{true, false} {
			out := String(s, color)
			// What is left has no control byte but newline, tab, and the
			// ESC of a kept SGR sequence.
			rest := out
			for {
				i := strings.IndexByte(rest, 0x1b)
				if i < 0 {
					break
				}
				if !color || !strings.HasPrefix(rest[i:], "\x1b[") {
					t.Fatalf("escape left in %q", out)
				}
				j := strings.IndexByte(rest[i:], 'm')
				if j < 0 || !sgr([]byte(rest[i:i+j+1])) {
					t.Fatalf("non-SGR sequence left in %q", out)
				}
				rest = rest[i+j+1:]
			}
			for _, c := range []byte(strings.ReplaceAll(out, "\x1b", "")) {
				if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
					t.Fatalf("control %#x left in %q", c, out)
				}
			}
		}
	})
}
