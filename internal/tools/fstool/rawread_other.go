//go:build !unix

package fstool

import (
	"bytes"
	"errors"
	"io"
	"os"
)

var errTooBig = errors.New("file too large to search")

// readRaw reads the file at p into buf (reused).
func readRaw(p string, buf []byte, limit int) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return buf[:0], err
	}
	defer f.Close()
	b := bytes.NewBuffer(buf[:0])
	if _, err := io.Copy(b, io.LimitReader(f, int64(limit)+1)); err != nil {
		return buf[:0], err
	}
	if b.Len() > limit {
		return buf[:0], errTooBig
	}
	return b.Bytes(), nil
}
