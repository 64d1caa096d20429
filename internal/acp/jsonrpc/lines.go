package jsonrpc

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

const (
	// DefaultMaxLineBytes bounds an inbound line when Options.MaxLineBytes is
	// zero: generous, since a prompt can embed large files and images.
	DefaultMaxLineBytes = 256 << 20

	readBufferBytes = 64 << 10
	// headBytes of an oversize line are kept to recover its id; every
	// client seen writes "jsonrpc", "id" and "method" before "params".
	headBytes = 4 << 10
	// keepBufferBytes: a line buffer grown past this is handed to the
	// message rather than kept, so one huge message neither is copied nor
	// pins its memory for the conn's life.
	keepBufferBytes = 4 << 20
)

var errLineTooLong = errors.New("line too long")

// lineReader splits a stream into lines of at most max bytes (the '\n'
// not counted). A longer line is streamed past, never held whole: only its
// first max bytes are ever buffered, and only its head is kept.
type lineReader struct {
	br   *bufio.Reader
	max  int
	buf  []byte // a line longer than br's buffer, being assembled
	head []byte // the first headBytes of the last oversize line
}

func newLineReader(r io.Reader, limit int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, readBufferBytes), max: limit}
}

// next returns the next non-blank line without its terminator;
// errLineTooLong for an oversize line (see head); io.EOF at the end. The
// line is the caller's to keep when owned, else valid until the next call.
func (lr *lineReader) next() (line []byte, owned bool, err error) {
	for {
		line, assembled, err := lr.read()
		if err != nil {
			return nil, false, err
		}
		// A line too big to keep the buffer for is handed over, not copied.
		owned := assembled && cap(lr.buf) > keepBufferBytes
		if owned {
			lr.buf = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(bytes.TrimSpace(line)) > 0 {
			return line, owned, nil
		}
	}
}

// read returns the next line; assembled says it is lr.buf rather than a
// slice of br's buffer.
func (lr *lineReader) read() (line []byte, assembled bool, err error) {
	lr.buf = lr.buf[:0]
	for {
		frag, err := lr.br.ReadSlice('\n')
		n := len(lr.buf) + len(frag)
		if err == nil {
			n-- // the '\n'
		}
		if n > lr.max {
			return nil, false, lr.skip(frag, err)
		}
		switch {
		case err == nil:
			frag = frag[:len(frag)-1]
			if len(lr.buf) == 0 {
				return frag, false, nil // no copy: the common case
			}
			lr.buf = append(lr.buf, frag...)
			return lr.buf, true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			lr.buf = append(lr.buf, frag...)
		case errors.Is(err, io.EOF):
			if n == 0 {
				return nil, false, io.EOF
			}
			// A last line without '\n'; the next call reports io.EOF.
			lr.buf = append(lr.buf, frag...)
			return lr.buf, true, nil
		default:
			return nil, false, err
		}
	}
}

// skip keeps the head of an oversize line whose latest fragment is frag
// (read with error err) and discards the rest of it.
func (lr *lineReader) skip(frag []byte, err error) error {
	lr.head = append(lr.head[:0], lr.buf[:min(len(lr.buf), headBytes)]...)
	lr.head = append(lr.head, frag[:min(len(frag), headBytes-len(lr.head))]...)
	lr.buf = lr.buf[:0]
	if cap(lr.buf) > keepBufferBytes {
		lr.buf = nil
	}
	for err != nil {
		switch {
		case errors.Is(err, io.EOF):
			return errLineTooLong // the next call reports io.EOF
		case !errors.Is(err, bufio.ErrBufferFull):
			return err
		}
		_, err = lr.br.ReadSlice('\n')
	}
	return errLineTooLong
}
