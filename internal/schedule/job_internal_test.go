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

func TestUntil(t *testing.T) {
	now := time.Date(2026, 8, 11, 13, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{12 * time.Minute, "in 12m0s"},
		{time.Second, "in 1s"},
		{0, "due now"},
		{-999 * time.Millisecond, "due now"},
		{-3 * time.Minute, "3m0s overdue"},
		{-(24*time.Hour + time.Hour + 5*time.Minute), "25h0m0s overdue"},
	} {
		if got := Until(now.Add(tc.d), now, time.Duration.String); got != tc.want {
			t.Errorf("Until(now%+v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// One id a prefix of another: they share all of the shorter one.
func TestCommonPrefixOfAPrefix(t *testing.T) {
	if n := commonPrefix("abc", "abcdef"); n != 3 {
		t.Errorf("commonPrefix(abc, abcdef) = %d", n)
	}
	if n := commonPrefix("abcdef", "abc"); n != 3 {
		t.Errorf("commonPrefix(abcdef, abc) = %d", n)
	}
}
