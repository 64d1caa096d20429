package schedule

import (
	"strings"
	"testing"
	"time"
)

// A recurring job stored with no interval (a row written wrong) has no
// next occurrence and stands for one missed, instead of dividing by zero.
func TestZeroIntervalJob(t *testing.T) {
	at := time.Date(2026, 8, 11, 13, 0, 0, 0, time.UTC)
	j := Job{ID: "0123456789abcdef", Kind: KindEvery, NextAt: at}
	if _, err := nextAfter(j, at); err == nil || !strings.Contains(err.Error(), "interval 0s is not positive") {
		t.Errorf("nextAfter = %v", err)
	}
	if n, capped := occurrences(j, at.Add(time.Hour)); n != 1 || capped {
		t.Errorf("occurrences = %d, %v; want 1, false", n, capped)
	}
}

// A probe's capture keeps MaxProbeOutput bytes, marked cut only when more
// came; its stderr keeps its first n bytes.
func TestProbeBuffers(t *testing.T) {
	c := newCapture()
	c.Write(make([]byte, MaxProbeOutput-10))
	c.Write(make([]byte, 10))
	if p := c.probe(); p.cut || len(p.out) != MaxProbeOutput {
		t.Errorf("exactly %d bytes: cut %v, kept %d", MaxProbeOutput, p.cut, len(p.out))
	}
	c.Write([]byte{1})
	if p := c.probe(); !p.cut || len(p.out) != MaxProbeOutput {
		t.Errorf("a byte more: cut %v, kept %d", p.cut, len(p.out))
	}

	l := &limited{n: 10}
	for _, s := range []string{"abcd", "efghijkl", "mnop"} {
		if n, err := l.Write([]byte(s)); n != len(s) || err != nil {
			t.Errorf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := l.buf.String(); got != "abcdefghij" {
		t.Errorf("limited kept %q, want the first 10 bytes", got)
	}
}
