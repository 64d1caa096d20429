package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// stdinCeiling bounds a piped prompt when the profile sets no
// max_request_bytes.
const stdinCeiling = 16 << 20

// oneshotPrompt is the prompt --oneshot sends: the argument, stdin's text
// when something is piped in (`echo … | meka --oneshot`), or both, stdin
// as the context and the argument as the ask (`cat log | meka --oneshot
// "why did it fail?"`). `-` as the whole argument reads stdin even from a
// terminal. limit is the profile's max_request_bytes (0: none).
func (g *globals) oneshotPrompt(arg string, limit int) (string, error) {
	explicit := strings.TrimSpace(arg) == "-"
	if explicit {
		arg = ""
	}
	var piped string
	if explicit || g.stdinPiped() {
		text, err := readBounded(g.stdin, limit)
		if err != nil {
			return "", err
		}
		piped = text
	}
	switch {
	case strings.TrimSpace(piped) == "":
		if strings.TrimSpace(arg) == "" {
			if explicit {
				return "", usageError("--oneshot -: stdin was empty")
			}
			return "", usageError("--oneshot needs a prompt: meka --oneshot \"what to do\", or pipe it in")
		}
		return arg, nil
	case strings.TrimSpace(arg) == "":
		return piped, nil
	}
	return "<stdin>\n" + strings.TrimRight(piped, "\n") + "\n</stdin>\n\n" + arg, nil
}

// readBounded reads r whole, refusing more than limit bytes (the
// ceiling when limit is 0) with the limit's name.
func readBounded(r io.Reader, limit int) (string, error) {
	max := limit
	if max <= 0 {
		max = stdinCeiling
	}
	b, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if err != nil {
		return "", fmt.Errorf("read stdin: %w", err)
	}
	if len(b) > max {
		if limit > 0 {
			return "", usageError("stdin is over this profile's max_request_bytes of %d: send less, or raise max_request_bytes", limit)
		}
		return "", usageError("stdin is over %d bytes: send less", max)
	}
	return string(b), nil
}

// stdinPiped reports whether stdin is a pipe or a file with the input
// for this run, not a terminal and not an empty device (/dev/null).
func (g *globals) stdinPiped() bool {
	if g.stdin == nil || g.stdinIsTerminal() {
		return false
	}
	f, ok := g.stdin.(*os.File)
	if !ok {
		return true // a reader the caller gave
	}
	st, err := f.Stat()
	if err != nil {
		return false
	}
	m := st.Mode()
	return m&os.ModeNamedPipe != 0 || m.IsRegular() || m&os.ModeSocket != 0
}

var errStreamFormat = errors.New("--input-format: want text or stream-json")
