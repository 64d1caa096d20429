// Package termsafe neutralises what a terminal would obey in text meka
// did not write itself, such as a model's reply: control sequences that
// retitle the window, move the cursor, clear the screen, write to the
// clipboard (OSC 52) or answer back are dropped; colour (SGR) may be
// kept. It imports nothing from meka.
package termsafe

import (
	"io"
	"unicode/utf8"
)

// maxSeq bounds an escape sequence; a longer one is dropped whole and
// what follows it is text again.
const maxSeq = 4096

type state uint8

const (
	text   state = iota
	esc          // after ESC
	csi          // in ESC [ … final
	str          // in OSC, DCS, SOS, PM or APC, up to BEL or ESC \
	strEsc       // ESC seen inside a string: ESC \ ends it
)

// Writer filters what is written through it. It keeps state between
// writes, so a sequence split across writes is still recognised; it is
// not safe for concurrent use.
type Writer struct {
	w io.Writer
	// Color keeps SGR sequences (colours, bold); the rest are dropped.
	Color bool

	st   state
	seq  []byte // the sequence being read, for CSI kept when it is SGR
	part []byte // an incomplete UTF-8 rune at the end of a write
	out  []byte
}

// NewWriter returns a Writer that writes filtered text to w, keeping
// colour when color is set.
func NewWriter(w io.Writer, color bool) *Writer { return &Writer{w: w, Color: color} }

// Write filters p and writes what is left. It reports len(p) on success.
func (w *Writer) Write(p []byte) (int, error) {
	w.out = w.out[:0]
	if len(w.part) > 0 {
		p2 := append(w.part, p...)
		w.part = nil
		w.filter(p2)
	} else {
		w.filter(p)
	}
	if len(w.out) == 0 {
		return len(p), nil
	}
	if _, err := w.w.Write(w.out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// String filters s on its own, as one write, keeping colour if color.
func String(s string, color bool) string {
	w := &Writer{Color: color}
	w.filter([]byte(s))
	return string(w.out)
}

func (w *Writer) filter(p []byte) {
	for i := 0; i < len(p); {
		b := p[i]
		switch w.st {
		case text:
			switch {
			case b == 0x1b:
				w.st, w.seq = esc, append(w.seq[:0], b)
				i++
			case b == '\n' || b == '\t':
				w.out = append(w.out, b)
				i++
			case b < 0x20 || b == 0x7f:
				i++ // BEL, backspace, carriage return, …: dropped
			case b < utf8.RuneSelf:
				w.out = append(w.out, b)
				i++
			default:
				if !utf8.FullRune(p[i:]) {
					w.part = append(w.part[:0], p[i:]...)
					return
				}
				r, n := utf8.DecodeRune(p[i:])
				if r >= 0x80 && r <= 0x9f {
					i += n // C1 controls: the 8-bit CSI, OSC, …
					continue
				}
				w.out = append(w.out, p[i:i+n]...)
				i += n
			}
		case esc:
			w.seq = append(w.seq, b)
			i++
			switch b {
			case '[':
				w.st = csi
			case ']', 'P', 'X', '^', '_':
				w.st = str
			default:
				w.st = text // a two-byte sequence (reset, save cursor, …): dropped
			}
		case csi:
			w.seq = append(w.seq, b)
			i++
			if b >= 0x40 && b <= 0x7e {
				if b == 'm' && w.Color && sgr(w.seq) {
					w.out = append(w.out, w.seq...)
				}
				w.st = text
			} else if b < 0x20 || len(w.seq) > maxSeq {
				w.st = text // malformed or too long: dropped
			}
		case str:
			i++
			switch {
			case b == 0x07:
				w.st = text
			case b == 0x1b:
				w.st = strEsc
			default:
				w.seq = append(w.seq, b)
				if len(w.seq) > maxSeq {
					w.st = text
				}
			}
		case strEsc:
			i++
			if b == '\\' {
				w.st = text
			} else {
				w.st = str
			}
		}
	}
}

// sgr reports whether an ESC [ … m sequence holds only parameters, so it
// sets colours or attributes and nothing else.
func sgr(seq []byte) bool {
	for _, c := range seq[2 : len(seq)-1] {
		if (c < '0' || c > '9') && c != ';' && c != ':' {
			return false
		}
	}
	return true
}
