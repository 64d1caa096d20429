package repl

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// composer is the prompt being typed: a multi-line buffer, a cursor, and
// the history of what was sent. It is small on purpose: the screen stashes
// and restores it whole when a scheduled turn takes the prompt.
type composer struct {
	text   []rune
	cursor int // index into text

	history []string
	hIndex  int    // len(history) when not browsing
	hDraft  string // what was typed before browsing began
}

// draft is a composer's text and cursor, as stashed by a scheduled turn.
type draft struct {
	text   string
	cursor int
}

func (c *composer) value() string { return string(c.text) }

func (c *composer) snapshot() draft { return draft{text: string(c.text), cursor: c.cursor} }

func (c *composer) set(text string) {
	c.text = []rune(text)
	c.cursor = len(c.text)
	c.hIndex = len(c.history)
}

func (c *composer) restore(d draft) {
	c.text = []rune(d.text)
	c.cursor = min(max(d.cursor, 0), len(c.text))
	c.hIndex = len(c.history)
}

func (c *composer) clear() { c.set("") }

func (c *composer) insert(s string) {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	r := []rune(s)
	c.text = append(c.text[:c.cursor], append(r, c.text[c.cursor:]...)...)
	c.cursor += len(r)
}

func (c *composer) backspace() {
	if c.cursor == 0 {
		return
	}
	c.text = append(c.text[:c.cursor-1], c.text[c.cursor:]...)
	c.cursor--
}

func (c *composer) deleteForward() {
	if c.cursor < len(c.text) {
		c.text = append(c.text[:c.cursor], c.text[c.cursor+1:]...)
	}
}

func (c *composer) left() { c.cursor = max(c.cursor-1, 0) }

func (c *composer) right() { c.cursor = min(c.cursor+1, len(c.text)) }

// lineStart and lineEnd bound the line the cursor is on.
func (c *composer) lineStart() int {
	i := c.cursor
	for i > 0 && c.text[i-1] != '\n' {
		i--
	}
	return i
}

func (c *composer) lineEnd() int {
	i := c.cursor
	for i < len(c.text) && c.text[i] != '\n' {
		i++
	}
	return i
}

func (c *composer) home() { c.cursor = c.lineStart() }
func (c *composer) end()  { c.cursor = c.lineEnd() }

// killLine deletes from the line's start to the cursor (ctrl+u).
func (c *composer) killLine() {
	s := c.lineStart()
	c.text = append(c.text[:s], c.text[c.cursor:]...)
	c.cursor = s
}

// killWord deletes the word before the cursor (ctrl+w).
func (c *composer) killWord() {
	i := c.cursor
	for i > 0 && c.text[i-1] == ' ' {
		i--
	}
	for i > 0 && c.text[i-1] != ' ' && c.text[i-1] != '\n' {
		i--
	}
	c.text = append(c.text[:i], c.text[c.cursor:]...)
	c.cursor = i
}

// up moves to the line above, or at the first line to the previous
// history entry; it reports whether it did anything.
func (c *composer) up() {
	s := c.lineStart()
	if s > 0 {
		col := c.cursor - s
		prevStart := s - 1
		for prevStart > 0 && c.text[prevStart-1] != '\n' {
			prevStart--
		}
		c.cursor = min(prevStart+col, s-1)
		return
	}
	if c.hIndex == 0 {
		return
	}
	if c.hIndex == len(c.history) {
		c.hDraft = string(c.text)
	}
	c.hIndex--
	c.text = []rune(c.history[c.hIndex])
	c.cursor = len(c.text)
}

func (c *composer) down() {
	e := c.lineEnd()
	if e < len(c.text) {
		col := c.cursor - c.lineStart()
		next := e + 1
		nextEnd := next
		for nextEnd < len(c.text) && c.text[nextEnd] != '\n' {
			nextEnd++
		}
		c.cursor = min(next+col, nextEnd)
		return
	}
	if c.hIndex >= len(c.history) {
		return
	}
	c.hIndex++
	if c.hIndex == len(c.history) {
		c.text = []rune(c.hDraft)
	} else {
		c.text = []rune(c.history[c.hIndex])
	}
	c.cursor = len(c.text)
}

// remember adds a sent text to the history.
func (c *composer) remember(text string) {
	if text == "" || (len(c.history) > 0 && c.history[len(c.history)-1] == text) {
		c.hIndex = len(c.history)
		return
	}
	c.history = append(c.history, text)
	if len(c.history) > maxHistory {
		c.history = c.history[len(c.history)-maxHistory:]
	}
	c.hIndex = len(c.history)
}

const maxHistory = 500

// render lays the composer out at width: "> " before the first line, two
// spaces before the others, hard-wrapped. It returns the lines and the
// cursor's row and column among them.
func (c *composer) render(width int, prompt string) (lines []string, row, col int) {
	avail := max(width-2, 1)
	line := []rune{}
	lineW := 0
	flush := func() {
		prefix := "  "
		if len(lines) == 0 {
			prefix = prompt
		}
		lines = append(lines, prefix+string(line))
		line, lineW = line[:0], 0
	}
	place := func() { row, col = len(lines), 2+lineW }
	for i, r := range c.text {
		if i == c.cursor {
			place()
		}
		if r == '\n' {
			flush()
			continue
		}
		w := ansi.StringWidth(string(r))
		if lineW+w > avail {
			flush()
			if i == c.cursor {
				place()
			}
		}
		line = append(line, r)
		lineW += w
	}
	if c.cursor == len(c.text) {
		if lineW >= avail {
			flush()
		}
		place()
	}
	flush()
	return lines, row, col
}
