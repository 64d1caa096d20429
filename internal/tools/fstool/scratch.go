package fstool

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"meka.dev/meka/tool"
)

// maxResultBytes is the most text a result carries inline; past it the
// whole goes to the scratchpad and the result keeps a head.
const (
	maxResultBytes = 64 << 10
	resultHeadSize = 8 << 10
)

// createScratch opens a new file in the session's scratchpad, named after
// the tool and the time.
func (e *env) createScratch(call tool.Call) (*os.File, error) {
	if e.opts.ScratchDir == "" {
		return nil, fmt.Errorf("create scratch file: %w", errNoScratch)
	}
	if err := os.MkdirAll(e.opts.ScratchDir, 0o700); err != nil {
		return nil, fmt.Errorf("create scratch file: %w", err)
	}
	stamp := e.opts.Now().UTC().Format("20060102T150405")
	f, err := os.CreateTemp(e.opts.ScratchDir, fmt.Sprintf("%s-%s-*.txt", call.Name, stamp))
	if err != nil {
		return nil, fmt.Errorf("create scratch file: %w", err)
	}
	return f, nil
}

// errNoScratch is returned when the session has no scratchpad.
var errNoScratch = errors.New("this session has no scratchpad")

// bounded returns text when it is small; else it writes text to the
// scratchpad and returns its head with a reference to the whole.
func (e *env) bounded(call tool.Call, text string) string {
	if len(text) <= maxResultBytes {
		return text
	}
	head := cutAtLine(text, resultHeadSize)
	f, err := e.createScratch(call)
	if err == nil {
		_, err = f.WriteString(text)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			return fmt.Sprintf("%s\n[Output cut at %s of %s. The whole output is in the scratchpad file %s: read it with file_read (line, limit or pattern).]",
				head, size(int64(len(head))), size(int64(len(text))), f.Name())
		}
		os.Remove(f.Name())
	}
	return fmt.Sprintf("%s\n[Output cut at %s of %s.]", head, size(int64(len(head))), size(int64(len(text))))
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
	return cutRunes(s, n)
}

// cutRunes cuts s to at most n bytes without splitting a rune.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// size formats a byte count for people.
func size(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}
