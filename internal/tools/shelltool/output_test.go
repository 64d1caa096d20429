package shelltool

import (
	"testing"
	"time"
)

// TestLiveCoalesces drives the coalescer with a fake ticker: writes between
// two ticks make one Output call, a tick with nothing pending makes none,
// and a rune split across writes is never split across calls.
func TestLiveCoalesces(t *testing.T) {
	got := make(chan string, 16)
	l := &live{out: func(s string) { got <- s }}
	ticks := make(chan time.Time)
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		l.run(ticks, stop)
	}()
	tick := func() { ticks <- time.Time{} } // returns once run has taken it

	l.add([]byte("one "))
	l.add([]byte("two "))
	l.add([]byte("three\n"))
	if len(got) != 0 {
		t.Fatal("Output called before a tick")
	}
	tick()
	tick() // the first flush has completed once run takes the second tick
	if n := len(got); n != 1 {
		t.Fatalf("%d Output calls after two ticks, want 1", n)
	}
	if s := <-got; s != "one two three\n" {
		t.Errorf("chunk = %q", s)
	}

	e := []byte("é")
	l.add([]byte("caf"))
	l.add(e[:1])
	tick()
	tick()
	if s := <-got; s != "caf" {
		t.Errorf("chunk = %q, want the complete runes only", s)
	}
	l.add(e[1:])
	l.add([]byte("\xff"))
	close(stop)
	<-stopped
	if s := <-got; s != "é\uFFFD" {
		t.Errorf("final chunk = %q", s)
	}
	if len(got) != 0 {
		t.Errorf("extra Output calls: %d", len(got))
	}
}

func TestLiveBoundsPending(t *testing.T) {
	var out []string
	l := &live{out: func(s string) { out = append(out, s) }}
	big := make([]byte, maxPending)
	for i := range big {
		big[i] = 'a'
	}
	l.add([]byte("old"))
	l.add(big)
	l.flush(true)
	if len(out) != 1 || len(out[0]) != maxPending || out[0][0] != 'a' {
		t.Errorf("flushed %d bytes starting %q, want the newest %d", len(out[0]), out[0][:3], maxPending)
	}
}

func TestCutAtLine(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"abc\ndef\n", 100, "abc\ndef\n"},
		{"abc\ndef\nghi", 9, "abc\ndef\n"},
		{"abcdef", 4, "abcd"},
		{"aé", 2, "a"},
	}
	for _, tt := range tests {
		if got := cutAtLine(tt.s, tt.n); got != tt.want {
			t.Errorf("cutAtLine(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

func TestCompleteRunes(t *testing.T) {
	euro := []byte("€") // three bytes
	for i, want := range []int{0, 0, 0, 3} {
		b := append([]byte(nil), euro[:i]...)
		if i == 3 {
			b = euro
		}
		if got := completeRunes(b); got != want {
			t.Errorf("completeRunes(%q) = %d, want %d", b, got, want)
		}
	}
	if got := completeRunes(append([]byte("ab"), euro[:2]...)); got != 2 {
		t.Errorf("completeRunes(ab+partial) = %d, want 2", got)
	}
}
