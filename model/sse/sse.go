// Package sse reads a server-sent event stream, as the WHATWG HTML
// specification defines its parsing (section 9.2, "Server-sent events"):
// the wire format both providers stream model replies in.
//
// It is a reader only, and keeps what a client needs from each event: its
// type, its data and its id. The reconnection time ("retry") is ignored;
// meka does not reconnect a reply stream, it retries the request.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Event is one dispatched event.
type Event struct {
	// Type is the event field, "" when the event named none (the
	// specification's "message").
	Type string
	// Data is the data fields joined by newlines.
	Data []byte
	// ID is the last event id the stream set, carried over from earlier
	// events as the specification says.
	ID string
}

// DefaultMaxLine bounds one line of the stream, so a server that never
// sends a newline cannot grow meka's memory without end.
const DefaultMaxLine = 8 << 20

// ErrLineTooLong is returned when a line exceeds the reader's bound.
var ErrLineTooLong = errors.New("sse: line too long")

// Reader reads events from a stream. It is not safe for concurrent use.
type Reader struct {
	r       *bufio.Reader
	maxLine int
	line    []byte
	// pendingCR says the last line ended in a lone CR, so an LF that
	// follows belongs to it.
	pendingCR bool

	typ    string
	data   []byte
	hasAny bool // a data field was seen since the last dispatch
	id     string
}

// NewReader returns a reader of r with lines bounded by DefaultMaxLine.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 32<<10), maxLine: DefaultMaxLine}
}

// SetMaxLine sets the bound on one line, in bytes.
func (r *Reader) SetMaxLine(n int) { r.maxLine = n }

// Next returns the next event. At the end of the stream it returns io.EOF;
// an event the stream did not finish with a blank line is discarded, as
// the specification says, so a cut stream is never mistaken for a whole
// last event. Other errors are the underlying reader's or ErrLineTooLong.
// The returned Data is valid until the next call.
func (r *Reader) Next() (Event, error) {
	for {
		line, err := r.readLine()
		if err != nil {
			if err == io.EOF {
				r.reset()
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if !r.hasAny {
				r.typ = "" // an event with no data is not dispatched
				continue
			}
			ev := Event{Type: r.typ, Data: r.data, ID: r.id}
			// Data is valid until the next call, so its buffer is reused.
			r.typ, r.data, r.hasAny = "", r.data[:0], false
			return ev, nil
		}
		r.field(line)
	}
}

func (r *Reader) reset() { r.typ, r.data, r.hasAny = "", nil, false }

// field applies one non-blank line.
func (r *Reader) field(line []byte) {
	if line[0] == ':' {
		return // a comment, which servers send to keep a connection alive
	}
	name, value, found := bytes.Cut(line, []byte(":"))
	if found && len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	switch string(name) {
	case "event":
		r.typ = string(value)
	case "data":
		if r.hasAny {
			r.data = append(r.data, '\n')
		}
		r.data = append(r.data, value...)
		r.hasAny = true
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			r.id = string(value)
		}
	}
	// "retry" and unknown fields are ignored, as the specification says.
}

// readLine returns the next line without its terminator (CRLF, LF or a
// lone CR). The returned slice is valid until the next call.
func (r *Reader) readLine() ([]byte, error) {
	r.line = r.line[:0]
	for {
		if _, err := r.r.Peek(1); err != nil {
			// A last line with no terminator is not a complete line;
			// whatever event it belongs to is incomplete.
			return nil, err
		}
		buf, _ := r.r.Peek(r.r.Buffered())
		if r.pendingCR {
			r.pendingCR = false
			if buf[0] == '\n' {
				r.r.Discard(1)
				continue
			}
		}
		i := bytes.IndexAny(buf, "\r\n")
		n := i
		if i < 0 {
			n = len(buf)
		}
		if len(r.line)+n > r.maxLine {
			return nil, fmt.Errorf("%w (over %d bytes)", ErrLineTooLong, r.maxLine)
		}
		r.line = append(r.line, buf[:n]...)
		if i < 0 {
			r.r.Discard(n)
			continue
		}
		r.pendingCR = buf[i] == '\r'
		r.r.Discard(i + 1)
		return r.line, nil
	}
}
