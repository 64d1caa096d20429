package shelltool

import (
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// stream keeps what one of a command's streams printed: a head in memory
// and, once that overflows, everything in a scratchpad file. It is written
// by one copier goroutine and read after the copy ends.
type stream struct {
	name string
	// limit is how much head is kept in memory.
	limit int
	// maxSpill bounds the scratchpad file.
	maxSpill int64
	// create opens the scratchpad file; nil when there is no scratchpad.
	create func(name string) (*os.File, error)
	// live, when set, also receives every write.
	live *live

	head    []byte
	total   int64
	spill   *os.File
	spilled int64
	// spillErr is why the rest could not be kept.
	spillErr error
}

func (s *stream) Write(p []byte) (int, error) {
	if s.live != nil {
		s.live.add(p)
	}
	s.total += int64(len(p))
	rest := p
	if room := s.limit - len(s.head); room > 0 {
		n := min(room, len(rest))
		s.head = append(s.head, rest[:n]...)
		rest = rest[n:]
	}
	if len(rest) == 0 || s.spillErr != nil {
		return len(p), nil
	}
	if s.spill == nil {
		if s.spill, s.spillErr = s.open(); s.spillErr != nil {
			return len(p), nil
		}
		s.write(s.head)
	}
	s.write(rest)
	return len(p), nil // never fail the copy: the command must not block
}

func (s *stream) open() (*os.File, error) {
	if s.create == nil {
		return nil, errNoScratch
	}
	return s.create(s.name)
}

func (s *stream) write(p []byte) {
	if s.spillErr != nil {
		return
	}
	if room := s.maxSpill - s.spilled; int64(len(p)) > room {
		p = p[:max(room, 0)]
		s.spillErr = errSpillFull
	}
	n, err := s.spill.Write(p)
	s.spilled += int64(n)
	if err != nil && s.spillErr == nil {
		s.spillErr = err
	}
}

// whole reports whether the head holds everything the stream printed.
func (s *stream) whole() bool { return s.total == int64(len(s.head)) }

// keep makes sure the scratchpad has the stream's whole output, for a
// stream the result shows only part of, and returns the file's path, or
// "" with the reason nothing (or not all) was kept.
func (s *stream) keep() (string, error) {
	if s.spill == nil && s.spillErr == nil && s.whole() {
		if s.spill, s.spillErr = s.open(); s.spillErr == nil {
			s.write(s.head)
		}
	}
	if s.spill == nil {
		return "", s.spillErr
	}
	return s.spill.Name(), s.spillErr
}

func (s *stream) close() {
	if s.spill != nil {
		s.spill.Close()
	}
}

// maxPending bounds live output waiting for the next tick: a front door
// shows a trailing window, so the oldest is what a flood drops.
const maxPending = 256 << 10

// live coalesces a command's stdout and stderr, interleaved as they
// arrive, into at most one Output call per tick.
type live struct {
	out func(string)

	mu      sync.Mutex // guards pending
	pending []byte
}

func (l *live) add(p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending = append(l.pending, p...)
	if over := len(l.pending) - maxPending; over > 0 {
		l.pending = l.pending[over:]
		for len(l.pending) > 0 && !utf8.RuneStart(l.pending[0]) {
			l.pending = l.pending[1:]
		}
	}
}

// flush emits what is pending. Unless final, an incomplete rune at the end
// waits for the rest of its bytes.
func (l *live) flush(final bool) {
	l.mu.Lock()
	chunk := l.pending
	if !final {
		chunk = chunk[:completeRunes(chunk)]
	}
	l.pending = append([]byte(nil), l.pending[len(chunk):]...)
	l.mu.Unlock()
	if len(chunk) > 0 {
		l.out(strings.ToValidUTF8(string(chunk), "\uFFFD"))
	}
}

// run flushes on every tick until stop is closed, then a last time.
func (l *live) run(ticks <-chan time.Time, stop <-chan struct{}) {
	for {
		select {
		case <-ticks:
			l.flush(false)
		case <-stop:
			l.flush(true)
			return
		}
	}
}

// completeRunes returns the length of b without a trailing incomplete
// UTF-8 sequence.
func completeRunes(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			break
		}
	}
	return len(b)
}

// cutAtLine returns the longest prefix of s within n bytes that ends at a
// line break, or n bytes (on a rune boundary) when the first line is
// longer.
func cutAtLine(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if i := strings.LastIndexByte(s[:n], '\n'); i > 0 {
		return s[:i+1]
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
