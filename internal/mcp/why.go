package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// errStartTimeout is a server that did not answer initialize within its
// startup_timeout.
var errStartTimeout = errors.New("no answer to initialize")

// why says in a few words why a connection failed or ended, for notices,
// stderr and the model, so that nobody needs -v to learn it. It never
// carries the command line, its arguments or the URL, which can hold
// secrets: those are cut from an error it does not recognise. The log has
// the error whole.
func (s *server) why(err error) string {
	var dns *net.DNSError
	switch {
	case errors.Is(err, errStartTimeout):
		return fmt.Sprintf("it did not answer initialize within %s (its startup_timeout)", s.cfg.StartupTimeout)
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return "its command was not found"
	case errors.Is(err, fs.ErrPermission):
		return "its command cannot be run: permission denied"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "the connection was refused: nothing listens at its url"
	case errors.As(err, &dns):
		return "the host name of its url does not resolve"
	case errors.Is(err, sdk.ErrConnectionClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return s.withStderr("it closed the connection")
	}
	msg := err.Error()
	for code := 400; code < 600; code++ {
		if text := http.StatusText(code); text != "" && strings.HasSuffix(msg, ": "+text) {
			return fmt.Sprintf("it answered HTTP %d %s", code, text)
		}
	}
	return s.withStderr(s.redact(msg))
}

// withStderr adds the last line a stdio server wrote to its standard
// error, which is where servers say why they stop.
func (s *server) withStderr(what string) string {
	if s.cfg.URL != "" {
		return what
	}
	lines := strings.Split(strings.TrimSpace(s.stderr.String()), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if last == "" {
		return what
	}
	if r := []rune(last); len(r) > 200 {
		last = string(r[:199]) + "…"
	}
	b, _ := json.Marshal(s.redact(last))
	return what + "; its stderr ends " + string(b)
}

// redact cuts the server's command, arguments and url out of msg.
func (s *server) redact(msg string) string {
	secrets := append([]string{s.cfg.Command, s.cfg.URL, os.Expand(s.cfg.URL, s.m.opts.Getenv)}, s.cfg.Args...)
	for _, v := range s.cfg.Env {
		secrets = append(secrets, v)
	}
	for _, v := range s.cfg.Headers {
		secrets = append(secrets, os.Expand(v, s.m.opts.Getenv))
	}
	for _, x := range secrets {
		if len(x) >= 3 {
			msg = strings.ReplaceAll(msg, x, "…")
		}
	}
	return msg
}
