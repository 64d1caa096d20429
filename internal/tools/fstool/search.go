package fstool

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"

	"meka.dev/meka/permission"
	"meka.dev/meka/tool"
)

const (
	// maxSearchFileBytes: larger files are skipped, and the result says so.
	maxSearchFileBytes = 32 << 20
	// maxMatchChars cuts a matching line in file_search's output.
	maxMatchChars = 300
	// scratchHead is how many matches a scratchpad result shows inline.
	scratchHead = 20
)

// SearchTool is file_search.
type SearchTool struct{ e *env }

var (
	_ tool.Tool    = (*SearchTool)(nil)
	_ tool.Titler  = (*SearchTool)(nil)
	_ tool.Locator = (*SearchTool)(nil)
)

// NewSearch returns file_search alone.
func NewSearch(o Options) *SearchTool { return &SearchTool{newEnv(o)} }

var searchSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "A regular expression (Go RE2 syntax), matched against each line. (?i) makes it case-insensitive."},
    "path": {"type": "string", "description": "A file or directory to search."},
    "glob": {"type": "string", "description": "Search only files matching this glob: without a slash it matches names (*.go), with one paths (src/**/*.ts)."},
    "scratchpad": {"type": "boolean", "description": "Write every match to a scratchpad file instead of stopping at 100."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`)

func (t *SearchTool) Spec() tool.Spec {
	return tool.Spec{
		Name: "file_search",
		Description: "Search file contents for a regular expression, like grep -rn: prints path:line:text. " +
			"Sweeps every workspace root (the working directory first) unless path is given; skips binary files, .git and what .gitignore ignores. " +
			"Stops at 100 matches unless scratchpad is set.",
		Schema:       searchSchema,
		Level:        permission.Read,
		Kind:         tool.KindSearch,
		ParallelSafe: true,
	}
}

func (t *SearchTool) Title(args json.RawMessage) string {
	return title("file_search", args, "pattern")
}

func (t *SearchTool) Locations(args json.RawMessage, cwd string) []tool.Location {
	return pathLocation(args, cwd)
}

type searchArgs struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path"`
	Glob       string `json:"glob"`
	Scratchpad bool   `json:"scratchpad"`
}

func (t *SearchTool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	var a searchArgs
	if r, ok := decode(call, &a); !ok {
		return r, nil
	}
	e := t.e
	m, err := newMatcher(a.Pattern)
	if err != nil {
		return tool.Errorf("file_search: pattern is not a valid regular expression (Go RE2 syntax; escape ( [ . * + ? { | with \\): %v", err), nil
	}
	var g *globMatcher
	if a.Glob != "" {
		if g, err = newGlob(a.Glob); err != nil {
			return tool.Errorf("file_search: glob: %v", err), nil
		}
	}
	ts, notes, refused := e.targets(call, a.Path)
	if refused != nil {
		return *refused, nil
	}

	var sink searchSink
	if a.Scratchpad {
		f, err := e.createScratch(call)
		if err != nil {
			notes = append(notes, "scratchpad was asked for, but this session has none, so the search stopped at the cap as usual.")
			sink = &capSink{cap: e.opts.SearchCap}
		} else {
			defer f.Close()
			sink = &scratchSink{f: f, w: bufio.NewWriterSize(f, 64<<10)}
		}
	} else {
		sink = &capSink{cap: e.opts.SearchCap}
	}

	wctx, cancel := e.budget(ctx)
	defer cancel()
	s := &searcher{m: m, glob: g, cwd: call.Cwd, hide: e.hider(call), workers: e.opts.Workers, perFile: sink.perFile(), budget: e.opts.SearchBudget}
	out := s.run(wctx, ts, sink)
	if ctx.Err() != nil {
		return tool.Result{}, ctx.Err()
	}
	out.timedOut = errors.Is(context.Cause(wctx), errBudget)
	return tool.Text(e.bounded(call, s.report(a, ts, out, sink, notes))), nil
}

// matcher finds the lines a pattern matches. pre is the pattern in
// multi-line mode, run over a whole file so that files without a match
// cost one scan; re confirms a line on its own.
type matcher struct {
	re, pre *regexp.Regexp
	// lit is the pattern when it is a plain string, searched for
	// without the regexp machinery.
	lit []byte
}

func newMatcher(pattern string) (*matcher, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	m := &matcher{re: re}
	if prefix, complete := re.LiteralPrefix(); complete && prefix != "" && !strings.Contains(prefix, "\n") {
		m.lit = []byte(prefix)
	}
	// \A and \z mean the line's ends line by line but the file's in a
	// whole-file scan, which could miss a line: scan line by line then.
	if !strings.Contains(pattern, `\A`) && !strings.Contains(pattern, `\z`) {
		if m.pre, err = regexp.Compile("(?m:" + pattern + ")"); err != nil {
			m.pre = nil
		}
	}
	return m, nil
}

// lines calls hit for each line of data the pattern matches, at most
// limit (0: no limit), with its 1-based number, and returns how many.
func (m *matcher) lines(data []byte, limit int, hit func(n int, line []byte)) int {
	count := 0
	if m.pre == nil {
		n := 0
		for len(data) > 0 {
			n++
			line := data
			if i := bytes.IndexByte(data, '\n'); i >= 0 {
				line, data = data[:i], data[i+1:]
			} else {
				data = nil
			}
			if m.re.Match(line) {
				count++
				hit(n, trimCR(line))
				if count == limit {
					break
				}
			}
		}
		return count
	}
	// A line that matches on its own also matches at the same offset in
	// multi-line mode (^, $ and \b see a newline as they see the line's
	// ends), so the first whole-file match is never past the next
	// matching line; a match spanning lines is confirmed line by line.
	n, counted := 1, 0
	for off := 0; off < len(data); {
		var ms, me int
		if m.lit != nil {
			i := bytes.Index(data[off:], m.lit)
			if i < 0 {
				break
			}
			ms, me = off+i, off+i+len(m.lit)
		} else {
			loc := m.pre.FindIndex(data[off:])
			if loc == nil {
				break
			}
			ms, me = off+loc[0], off+loc[1]
		}
		ls := off + bytes.LastIndexByte(data[off:ms], '\n') + 1
		le := len(data)
		if i := bytes.IndexByte(data[ms:], '\n'); i >= 0 {
			le = ms + i
		}
		if ls > le { // an empty match just after a line's end
			ls = le
		}
		line := data[ls:le]
		if me <= le || m.re.Match(line) {
			n += bytes.Count(data[counted:ls], []byte{'\n'})
			counted = ls
			count++
			hit(n, trimCR(line))
			if count == limit {
				break
			}
		}
		off = le + 1
	}
	return count
}

func trimCR(b []byte) []byte { return bytes.TrimSuffix(b, []byte{'\r'}) }

// searchSink receives each file's matching lines in walk order. emit
// returns false to stop the search.
type searchSink interface {
	emit(lines []string) bool
	// perFile is the most lines one file need report; 0 means all.
	perFile() int
}

// capSink keeps the first cap matches and stops at the one after.
type capSink struct {
	cap   int
	lines []string
	files int
	over  bool
}

func (s *capSink) perFile() int { return s.cap + 1 }

func (s *capSink) emit(lines []string) bool {
	if len(lines) == 0 {
		return true
	}
	s.files++
	room := s.cap - len(s.lines)
	if len(lines) > room {
		s.lines = append(s.lines, lines[:room]...)
		s.over = true
		return false
	}
	s.lines = append(s.lines, lines...)
	return true
}

// scratchSink writes every match to a scratchpad file, keeping a head.
type scratchSink struct {
	f     *os.File
	w     *bufio.Writer
	head  []string
	n     int
	files int
	err   error
}

func (s *scratchSink) perFile() int { return 0 }

func (s *scratchSink) emit(lines []string) bool {
	if len(lines) == 0 {
		return true
	}
	s.files++
	for _, l := range lines {
		if len(s.head) < scratchHead {
			s.head = append(s.head, l)
		}
		s.n++
		if s.err == nil {
			_, s.err = s.w.WriteString(l + "\n")
		}
	}
	return true
}

func (s *scratchSink) close() error {
	if s.err == nil {
		s.err = s.w.Flush()
	}
	if err := s.f.Close(); s.err == nil {
		s.err = err
	}
	return s.err
}

// searcher runs one file_search: a walker hands files, numbered in walk
// order, to a bounded pool of workers; a sequencer passes their results
// to the sink in walk order, so the cap keeps the first matches whatever
// the workers' timing.
type searcher struct {
	m       *matcher
	glob    *globMatcher
	cwd     string
	hide    func(string) bool // what walks pass over (env.hider)
	workers int
	perFile int
	budget  time.Duration
	large   atomic.Int64 // files skipped as too large
}

// rootSpan is where one target's files fall in the walk's numbering.
type rootSpan struct {
	reached, complete bool
	first, end        int
}

type searchOutcome struct {
	spans    []rootSpan
	emitted  int  // files passed to the sink, a prefix of the walk
	stopped  bool // the sink stopped the search
	timedOut bool
}

func (s *searcher) run(ctx context.Context, ts []target, sink searchSink) searchOutcome {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	workers := s.workers
	if workers <= 0 {
		workers = min(max(2*runtime.GOMAXPROCS(0), 4), 16)
	}
	seq := &sequencer{pending: make(map[int]fileResult), sink: sink, stop: func() { stop(errStopped) }}
	type job struct {
		n int
		p string
	}
	jobs := make(chan job, 4*workers)
	var g errgroup.Group
	g.SetLimit(workers)
	for range workers {
		g.Go(func() error {
			var buf []byte
			for j := range jobs {
				if ctx.Err() != nil {
					seq.done(j.n, fileResult{skipped: true})
					continue
				}
				var lines []string
				lines, buf = s.searchFile(j.p, buf)
				seq.done(j.n, fileResult{lines: lines})
			}
			return nil
		})
	}
	spans := make([]rootSpan, len(ts))
	idx := 0
	for i, t := range ts {
		if ctx.Err() != nil {
			break
		}
		spans[i] = rootSpan{reached: true, first: idx}
		visit := func(p string, d fs.DirEntry) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			// Regular files only: symlinks may lead out of the roots, and
			// a FIFO would block.
			if !d.Type().IsRegular() {
				return nil
			}
			if s.glob != nil && !t.file && !s.glob.match(relSlash(t.path, p), d.Name()) {
				return nil
			}
			jobs <- job{idx, p}
			idx++
			return nil
		}
		var err error
		if t.file {
			var fi fs.FileInfo
			if fi, err = os.Stat(t.path); err == nil {
				err = visit(t.path, fs.FileInfoToDirEntry(fi))
			}
		} else {
			err = walkDir(ctx, t.path, "", ancestorIgnores(t.path), s.hide, visit)
		}
		spans[i].end = idx
		spans[i].complete = err == nil
		if err != nil {
			break
		}
	}
	close(jobs)
	g.Wait()
	seq.mu.Lock()
	defer seq.mu.Unlock()
	return searchOutcome{spans: spans, emitted: seq.next, stopped: seq.stopped}
}

var errStopped = errors.New("search stopped at the match cap")

type fileResult struct {
	lines   []string
	skipped bool
}

// sequencer passes results to the sink in walk order.
type sequencer struct {
	mu      sync.Mutex // guards the fields below
	next    int
	pending map[int]fileResult
	stopped bool // the sink stopped, or a file was skipped: emit no more
	sink    searchSink
	stop    func()
}

func (q *sequencer) done(n int, r fileResult) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stopped {
		return
	}
	q.pending[n] = r
	for {
		r, ok := q.pending[q.next]
		if !ok {
			return
		}
		delete(q.pending, q.next)
		if r.skipped {
			q.stopped = true
			return
		}
		q.next++
		if !q.sink.emit(r.lines) {
			q.stopped = true
			q.stop()
			return
		}
	}
}

// searchFile returns the matching lines of the file at p, formatted
// path:line:text, or nil for a binary, unreadable or too large file. buf
// is the worker's read buffer, returned for reuse.
func (s *searcher) searchFile(p string, buf []byte) ([]string, []byte) {
	data, err := readRaw(p, buf, maxSearchFileBytes)
	if cap(data) > 4<<20 {
		buf = nil // let a large file's buffer go
	} else {
		buf = data[:0]
	}
	if errors.Is(err, errTooBig) {
		s.large.Add(1)
		return nil, buf
	}
	if err != nil || bytes.IndexByte(data[:min(len(data), sniffBytes)], 0) >= 0 {
		return nil, buf
	}
	var out []string
	var disp string
	s.m.lines(data, s.perFile, func(n int, line []byte) {
		if disp == "" {
			disp = display(p, s.cwd)
		}
		text := strings.ToValidUTF8(string(line[:min(len(line), maxMatchChars+utf8.UTFMax)]), "\uFFFD")
		if len(line) > maxMatchChars {
			text = cutRunes(text, maxMatchChars) + "…"
		}
		out = append(out, disp+":"+strconv.Itoa(n)+":"+text)
	})
	return out, buf
}

// report renders the outcome for the model.
func (s *searcher) report(a searchArgs, ts []target, out searchOutcome, sink searchSink, notes []string) string {
	var sb strings.Builder
	where := "the workspace roots"
	if a.Path != "" {
		where = a.Path
	}
	// Roots the sink never saw a file of count as not searched.
	var left []string
	for i, sp := range out.spans {
		if !sp.reached || out.emitted < sp.first || out.emitted == sp.first && (sp.end > sp.first || !sp.complete) {
			left = append(left, ts[i].path)
		}
	}
	switch k := sink.(type) {
	case *capSink:
		for _, l := range k.lines {
			sb.WriteString(l + "\n")
		}
		switch {
		case len(k.lines) == 0 && !out.timedOut:
			fmt.Fprintf(&sb, "No matches for %q in %s.", a.Pattern, where)
		case k.over:
			fmt.Fprintf(&sb, "(Stopped at the %d-match cap; more matches exist.", k.cap)
			if len(left) > 0 {
				fmt.Fprintf(&sb, " %s of %d went unsearched: %s.", plural(len(left), "root", "roots"), len(ts), strings.Join(left, ", "))
			}
			sb.WriteString(" Narrow the pattern, pass path or glob to search one place, or set scratchpad to true to get every match.)")
		default:
			fmt.Fprintf(&sb, "(%s in %s)", plural(len(k.lines), "match", "matches"), plural(k.files, "file", "files"))
		}
	case *scratchSink:
		err := k.close()
		switch {
		case k.n == 0:
			os.Remove(k.f.Name())
			fmt.Fprintf(&sb, "No matches for %q in %s.", a.Pattern, where)
		case err != nil:
			os.Remove(k.f.Name())
			fmt.Fprintf(&sb, "%s in %s, but writing them to the scratchpad failed: %v. The first %d:\n", plural(k.n, "match", "matches"), plural(k.files, "file", "files"), err, len(k.head))
			sb.WriteString(strings.Join(k.head, "\n"))
		default:
			fmt.Fprintf(&sb, "%s in %s; all of them are in the scratchpad file %s (read it with file_read). The first %d:\n", plural(k.n, "match", "matches"), plural(k.files, "file", "files"), k.f.Name(), len(k.head))
			sb.WriteString(strings.Join(k.head, "\n"))
		}
	}
	if out.timedOut {
		fmt.Fprintf(&sb, "\n(The search stopped after its %s budget, so the matches are partial", s.budget)
		if len(left) > 0 {
			fmt.Fprintf(&sb, "; %s of %d went unsearched: %s", plural(len(left), "root", "roots"), len(ts), strings.Join(left, ", "))
		}
		sb.WriteString(". Pass path or glob to search less at once.)")
	}
	if n := s.large.Load(); n > 0 {
		fmt.Fprintf(&sb, "\n(Skipped %s over %s.)", plural(int(n), "file", "files"), size(maxSearchFileBytes))
	}
	for _, n := range notes {
		sb.WriteString("\n(" + n + ")")
	}
	return sb.String()
}
