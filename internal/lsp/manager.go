package lsp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"meka.dev/meka/internal/sandbox"
)

// Defaults for Options' zero values, and the bounds of a report.
const (
	DefaultWait        = 2 * time.Second
	DefaultIdleTimeout = 10 * time.Minute
	// MaxDiagnostics and MaxTextBytes bound what Format writes.
	MaxDiagnostics = 20
	MaxTextBytes   = 4 << 10
	// maxCrashes is how often a server may exit on its own before its
	// language is off for the workspace until meka restarts.
	maxCrashes = 3
	// maxOpen bounds the documents a server holds open; the least
	// recently changed is closed first.
	maxOpen = 64
	// startTimeout bounds a server's answer to initialize (or the wait,
	// when longer).
	startTimeout = 30 * time.Second
)

// Options configure a Manager. The zero value of each field means its
// default.
type Options struct {
	// Servers replaces a language's command line, by Language name; an
	// empty one turns the language off.
	Servers map[string][]string
	// Wait bounds how long Diagnose waits for a server; a server that
	// answers nothing within it is dropped.
	Wait time.Duration
	// IdleTimeout stops a server nobody asked for that long.
	IdleTimeout time.Duration
	// AfterFunc schedules a server's idle stop; nil means time.AfterFunc.
	// Tests pass one whose timers they fire themselves.
	AfterFunc func(d time.Duration, f func()) Timer

	// The confinement of every server, as for shell commands: Env is the
	// environment they start from (allow-listed with EnvPassthrough when
	// confined, scrubbed of ScrubNames and credentials when not),
	// Network opens the network, Protected, Masked and Visible are
	// sandbox.Spec's.
	Env            []string
	EnvPassthrough []string
	ScrubNames     []string
	Network        bool
	Protected      []string
	Masked         []string
	Visible        []string
	// CacheDir is the one directory confined servers may write, their
	// XDG_CACHE_HOME, kept across runs so they start warm (gopls's and
	// the go command's caches). Empty: servers are read-only and cache in
	// a temporary directory removed with them.
	CacheDir string

	Logger *slog.Logger
}

// Timer is a timer of Options.AfterFunc; *time.Timer is one.
type Timer interface {
	Stop() bool
	Reset(d time.Duration) bool
}

// Request asks for the diagnostics of one file.
type Request struct {
	// Path is the file's absolute path; Root the workspace folder a server
	// is started in (one per root and language).
	Path, Root string
	// Content is the file's content; nil reads it from disk.
	Content []byte
	// Unconfined lets a server run unconfined where no backend can
	// confine it (the session is at the unrestricted level).
	Unconfined bool
}

// Severity is a diagnostic's, as LSP numbers them.
type Severity int

const (
	SeverityError   Severity = 1
	SeverityWarning Severity = 2
)

func (s Severity) String() string {
	if s == SeverityWarning {
		return "warning"
	}
	return "error"
}

// Diagnostic is one problem a server reported; Line and Column count
// from 1 (Column in UTF-16 units, as LSP counts them).
type Diagnostic struct {
	Line, Column int
	Severity     Severity
	Source       string
	Message      string
}

// Report is what Diagnose found.
type Report struct {
	// Server names the server that answered ("gopls"); empty when no
	// server serves the file.
	Server string
	// Fresh is set when Diagnostics are the server's for this content.
	Fresh bool
	// Diagnostics are the errors and warnings, in the server's order.
	Diagnostics []Diagnostic
	// Note says, for the model, why there are no fresh diagnostics.
	Note string
	// Notice says, for the person, that a server was dropped.
	Notice string
}

// A Manager runs the language servers of a process. It is safe for
// concurrent use; Close stops every server.
type Manager struct {
	opts Options
	log  *slog.Logger
	wg   sync.WaitGroup // the servers' goroutines

	mu sync.Mutex // guards servers, off, crashes, notices, closed
	// servers are the running servers.
	servers map[key]*server
	// off holds why a server stays off until meka restarts.
	off     map[key]string
	crashes map[key]int
	// notices are drops nobody was waiting to hear of, told to the next
	// caller for the same key.
	notices map[key]string
	closed  bool
}

// key is one server: a workspace, a language, and whether it is confined.
type key struct {
	root, lang string
	confined   bool
}

// New returns a Manager; it starts nothing until Diagnose is called.
func New(opts Options) *Manager {
	if opts.Wait <= 0 {
		opts.Wait = DefaultWait
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.AfterFunc == nil {
		opts.AfterFunc = func(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Manager{opts: opts, log: log, servers: map[key]*server{}, off: map[key]string{},
		crashes: map[key]int{}, notices: map[key]string{}}
}

// Serves reports whether a server is configured for path's language and
// found on PATH, so a caller can skip a file no server reads.
func (m *Manager) Serves(path string) bool {
	lang, _ := languageOf(path)
	if lang == nil {
		return false
	}
	argv := m.command(lang)
	if len(argv) == 0 {
		return false
	}
	_, err := m.lookPath(argv[0])
	return err == nil
}

func (m *Manager) command(lang *Language) []string {
	if c, ok := m.opts.Servers[lang.Name]; ok {
		return c
	}
	return lang.Command
}

// lookPath finds name in the PATH of the servers' environment, as the
// command will, and returns its path.
func (m *Manager) lookPath(name string) (string, error) {
	if strings.ContainsRune(name, filepath.Separator) {
		if fi, err := os.Stat(name); err != nil || fi.IsDir() {
			return "", fmt.Errorf("%s: not found", name)
		}
		return name, nil
	}
	path := ""
	for _, kv := range m.opts.Env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not on PATH", name)
}

// Server is the server meka would start for one of Languages, as meka
// doctor lists it.
type Server struct {
	Language string
	// Command is its command line, the configured one when Configured;
	// empty when the configuration turns the language off.
	Command    []string
	Configured bool
	// Path is where Command's program was found; Err says why it was not.
	Path string
	Err  error
	// Version is the arguments that make the program print its version:
	// the Language's, for its default program; nil otherwise.
	Version []string
}

// Servers lists the server of each of Languages, in order, and where its
// program is found. It starts nothing.
func (m *Manager) Servers() []Server {
	out := make([]Server, len(Languages))
	for i := range Languages {
		lang := &Languages[i]
		s := Server{Language: lang.Name, Command: m.command(lang)}
		_, s.Configured = m.opts.Servers[lang.Name]
		if len(s.Command) == 0 {
			out[i] = s
			continue
		}
		s.Path, s.Err = m.lookPath(s.Command[0])
		if filepath.Base(s.Command[0]) == lang.Command[0] {
			s.Version = lang.Version
		}
		out[i] = s
	}
	return out
}

// Diagnose returns path's errors and warnings as its language's server
// sees them with req.Content, starting the server if it is not running.
// It returns within the wait (or when ctx ends); a server that answers
// nothing within it is dropped, and the report's Notice says so. A file
// no server serves gives the zero Report.
func (m *Manager) Diagnose(ctx context.Context, req Request) Report {
	lang, id := languageOf(req.Path)
	if lang == nil {
		return Report{}
	}
	argv := m.command(lang)
	if len(argv) == 0 {
		return Report{}
	}
	if _, err := m.lookPath(argv[0]); err != nil {
		return Report{}
	}
	content := req.Content
	if content == nil {
		data, err := os.ReadFile(req.Path)
		if err != nil {
			return Report{}
		}
		content = data
	}
	mode := sandbox.ReadOnly
	if m.opts.CacheDir != "" {
		mode = sandbox.Workspace
	}
	confined := true
	if _, err := sandbox.AvailableNetwork(mode, m.opts.Network); err != nil {
		if !req.Unconfined {
			m.log.Debug("lsp: no confinement for a server", "lang", lang.Name, "err", err)
			return Report{}
		}
		confined, mode = false, sandbox.Unrestricted
	}
	root := req.Root
	if root == "" {
		root = filepath.Dir(req.Path)
	}
	k := key{root: root, lang: lang.Name, confined: confined}
	name := filepath.Base(argv[0])

	ctx, cancel := context.WithTimeoutCause(ctx, m.opts.Wait, errWaited)
	defer cancel()
	s, notice, err := m.server(k, argv, mode)
	if s == nil {
		if err != nil {
			notice = joinNotice(notice, fmt.Sprintf("language server %s could not start: %v", name, err))
			return Report{Server: name, Note: name + " could not start", Notice: notice}
		}
		return Report{Notice: notice}
	}
	rep := s.diagnose(ctx, req.Path, id, string(content))
	rep.Server = name
	rep.Notice = joinNotice(notice, rep.Notice)
	return rep
}

// server returns the running server of k, starting it; a notice left for
// k is taken with it. A nil server with a nil error means k is off.
func (m *Manager) server(k key, argv []string, mode sandbox.Mode) (*server, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	notice := m.notices[k]
	delete(m.notices, k)
	if m.closed {
		return nil, notice, nil
	}
	if _, off := m.off[k]; off {
		return nil, notice, nil
	}
	if s := m.servers[k]; s != nil {
		if s.acquire() {
			return s, notice, nil
		}
		delete(m.servers, k) // stopping: a new one takes its place
	}
	s, err := m.start(k, argv, mode)
	if err != nil {
		m.log.Info("lsp: server did not start", "lang", k.lang, "root", k.root, "err", err)
		m.off[k] = err.Error()
		return nil, notice, err
	}
	s.acquire()
	m.servers[k] = s
	return s, notice, nil
}

// dropped is told by a server that it ended: exited on its own (crashed),
// was dropped as hung, or stopped when idle. The notice of a hung server
// is returned to the caller that dropped it; a crash's is left for the
// next caller of its key (the one waiting, if any).
func (m *Manager) dropped(s *server, why dropReason, detail string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.servers[s.key] == s {
		delete(m.servers, s.key)
	}
	if m.closed || why == dropIdle {
		return ""
	}
	name, k := s.name, s.key
	var notice string
	switch why {
	case dropHung:
		m.off[k] = "hung"
		notice = fmt.Sprintf("language server %s did not answer within %s and was stopped; diagnostics for %s files in %s are off until meka restarts",
			name, m.opts.Wait, k.lang, k.root)
	case dropCrash:
		m.crashes[k]++
		if m.crashes[k] >= maxCrashes {
			m.off[k] = "crashed"
			notice = fmt.Sprintf("language server %s exited (%s), %d times now; diagnostics for %s files in %s are off until meka restarts",
				name, detail, m.crashes[k], k.lang, k.root)
		} else {
			notice = fmt.Sprintf("language server %s exited (%s); it is started again at the next edit", name, detail)
		}
	}
	m.log.Info("lsp: server dropped", "lang", k.lang, "root", k.root, "why", why.String(), "detail", detail, "stderr", s.stderr.String())
	if why == dropCrash {
		m.notices[k] = joinNotice(m.notices[k], notice)
		return ""
	}
	return notice
}

// leave keeps a notice for the next caller of s's key.
func (m *Manager) leave(s *server, notice string) {
	if notice == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.notices[s.key] = joinNotice(m.notices[s.key], notice)
}

// Running returns how many servers run, for tests and meka doctor.
func (m *Manager) Running() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.servers)
}

// Close stops every server and waits for them.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	servers := make([]*server, 0, len(m.servers))
	for _, s := range m.servers {
		servers = append(servers, s)
	}
	m.servers = map[key]*server{}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(func() { s.stop(true) })
	}
	wg.Wait()
	m.wg.Wait()
	return nil
}

func joinNotice(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// errWaited ends a Diagnose call's wait, told apart from its caller's
// own deadline.
var errWaited = errors.New("lsp: the wait is over")
