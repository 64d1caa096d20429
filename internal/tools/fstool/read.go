package fstool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"regexp"
	"strings"
	"unicode/utf8"

	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/tool"
)

const (
	// maxLineChars cuts a very long line (minified code) in file_read.
	maxLineChars = 2000
	// readBudget bounds the text one file_read returns; the note says
	// where to continue.
	readBudget = 128 << 10
	// maxTextBytes is the largest file file_read loads.
	maxTextBytes = 32 << 20
	// sniffBytes is how much of a file decides whether it is binary.
	sniffBytes = 8000
)

// ReadTool is file_read.
type ReadTool struct{ e *env }

var (
	_ tool.Tool        = (*ReadTool)(nil)
	_ tool.CallLeveler = (*ReadTool)(nil)
	_ tool.Titler      = (*ReadTool)(nil)
	_ tool.Locator     = (*ReadTool)(nil)
)

// NewRead returns file_read alone.
func NewRead(o Options) *ReadTool { return &ReadTool{newEnv(o)} }

var readSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "The file to read; relative paths resolve against the working directory."},
    "line": {"type": "integer", "minimum": 1, "description": "The first line to show (1-based). Default 1."},
    "limit": {"type": "integer", "minimum": 1, "description": "How many lines to show. Default 2000."},
    "pattern": {"type": "string", "description": "A regular expression (Go RE2 syntax): show only the lines that match it."}
  },
  "required": ["path"],
  "additionalProperties": false
}`)

func (t *ReadTool) Spec() tool.Spec {
	return tool.Spec{
		Name: "file_read",
		Description: "Read a text file, shown with line numbers (the number and a tab are not part of the line). " +
			"Shows up to 2000 lines from `line`; the output says where to continue when more remain. " +
			"`pattern` shows only the lines matching a regular expression. " +
			"Images (PNG, JPEG, GIF, WebP) are shown as images when the model can see them. Binary files are refused.",
		Schema:       readSchema,
		Level:        permission.Read,
		Kind:         tool.KindRead,
		ParallelSafe: true,
	}
}

func (t *ReadTool) Title(args json.RawMessage) string { return title("file_read", args, "path") }

func (t *ReadTool) Locations(args json.RawMessage, cwd string) []tool.Location {
	locs := pathLocation(args, cwd)
	if len(locs) == 1 {
		var a struct{ Line int }
		_ = json.Unmarshal(args, &a)
		locs[0].Line = max(a.Line, 1)
	}
	return locs
}

// CallLevel implements tool.CallLeveler: a path outside the roots needs
// unrestricted.
func (t *ReadTool) CallLevel(call tool.Call) permission.Level {
	return t.e.callLevel(call, permission.Read, false)
}

type readArgs struct {
	Path    string `json:"path"`
	Line    int    `json:"line"`
	Limit   int    `json:"limit"`
	Pattern string `json:"pattern"`
}

func (t *ReadTool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	var a readArgs
	if r, ok := decode(call, &a); !ok {
		return r, nil
	}
	if a.Line < 0 || a.Limit < 0 {
		return tool.Errorf("file_read: line and limit must be positive."), nil
	}
	if a.Line == 0 {
		a.Line = 1
	}
	limitAsked := a.Limit > 0
	if a.Limit == 0 {
		a.Limit = DefaultReadLimit
	}
	var re *regexp.Regexp
	if a.Pattern != "" {
		var err error
		if re, err = regexp.Compile(a.Pattern); err != nil {
			return tool.Errorf("file_read: pattern is not a valid regular expression (Go RE2 syntax): %v", err), nil
		}
	}
	e := t.e
	p, err := e.resolve(call, a.Path, false)
	if err != nil {
		return e.refusal(call, err), nil
	}
	disp := display(p, call.Cwd)

	// Images never go through FS: an editor serves text only.
	if fi, err := os.Stat(p); err == nil {
		switch {
		case fi.IsDir():
			return tool.Errorf("file_read: %s is a directory. List its files with file_find (path: %q, pattern: \"*\").", disp, disp), nil
		case !fi.Mode().IsRegular():
			return tool.Errorf("file_read: %s is not a regular file (%s).", disp, fi.Mode().Type()), nil
		}
		head, _ := e.sniffFile(call, p)
		if isImage(head) {
			return e.image(call, p, disp, head, fi.Size())
		}
		if fi.Size() > maxTextBytes {
			return tool.Errorf("file_read: %s is %s, too large to read whole. Search it with file_search (path: %q) instead.", disp, size(fi.Size()), disp), nil
		}
	}

	// A range asked for is read as a range where the FS serves one (an
	// editor's buffer), so that only those lines travel.
	if re == nil && (a.Line > 1 || limitAsked) {
		if rg, ok := e.fs.(Ranger); ok {
			roots := e.sandboxRoots(call)
			if e.isScratch(p) {
				roots = nil
			}
			data, served, err := rg.ReadLines(ctx, p, a.Line, a.Limit+1, roots)
			if err != nil {
				if ctx.Err() != nil {
					return tool.Result{}, ctx.Err()
				}
				if errors.Is(err, fs.ErrNotExist) {
					return tool.Errorf("file_read: %s does not exist. Find the file with file_find.", disp), nil
				}
				return tool.Errorf("file_read: cannot read %s: %v", disp, err), nil
			}
			if served {
				if isBinary(data) {
					return tool.Errorf("file_read: %s is a binary file (%s); file_read shows text and images only.", disp, contentType(data)), nil
				}
				return tool.Text(formatRange(disp, data, a.Line, a.Limit)), nil
			}
		}
	}
	data, err := e.readFile(ctx, call, e.fs, p)
	if err != nil {
		if ctx.Err() != nil {
			return tool.Result{}, ctx.Err()
		}
		if errors.Is(err, fs.ErrNotExist) {
			return tool.Errorf("file_read: %s does not exist. Find the file with file_find.", disp), nil
		}
		return tool.Errorf("file_read: cannot read %s: %v", disp, err), nil
	}
	if isImage(data) {
		return e.image(call, p, disp, data, int64(len(data)))
	}
	if isBinary(data) {
		return tool.Errorf("file_read: %s is a binary file (%s, %s); file_read shows text and images only.", disp, contentType(data), size(int64(len(data)))), nil
	}
	return tool.Text(formatLines(disp, data, a.Line, a.Limit, re)), nil
}

// image returns an image file as an image part, or a refusal when the
// model cannot see or the file is too big.
func (e *env) image(call tool.Call, p, disp string, head []byte, n int64) (tool.Result, error) {
	typ := contentType(head)
	if !e.vision() {
		return tool.Errorf("file_read: %s is an image (%s, %s), and this session's model cannot see images, so it cannot be read.", disp, typ, size(n)), nil
	}
	if n > e.opts.MaxImageBytes {
		return tool.Errorf("file_read: %s is an image of %s; images are shown up to %s. Make a smaller copy (scaled down or recompressed) and read that.", disp, size(n), size(e.opts.MaxImageBytes)), nil
	}
	data, err := e.readCapped(call, p, e.opts.MaxImageBytes)
	if err != nil {
		return tool.Errorf("file_read: cannot read %s: %v", disp, err), nil
	}
	return tool.Result{Content: []model.Part{
		model.Text{Text: fmt.Sprintf("Image %s (%s, %s)", disp, typ, size(int64(len(data))))},
		model.Image{MediaType: typ, Data: data, Name: disp},
	}}, nil
}

var errTooLarge = errors.New("file grew past the size limit")

// readCapped reads at most limit bytes of p, failing if there are more:
// the file may have grown since it was measured.
func (e *env) readCapped(call tool.Call, p string, limit int64) ([]byte, error) {
	f, err := e.openLocal(call, p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, errTooLarge
	}
	return data, nil
}

func (e *env) sniffFile(call tool.Call, p string) ([]byte, error) {
	f, err := e.openLocal(call, p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, 512)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

// contentType names data's type by its content, without parameters.
func contentType(data []byte) string {
	t := http.DetectContentType(data)
	if i := strings.IndexByte(t, ';'); i >= 0 {
		t = t[:i]
	}
	return t
}

// isImage reports whether data is an image format models accept.
func isImage(data []byte) bool {
	switch contentType(data) {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

// isBinary reports whether data is not text: a NUL byte early on, as grep
// decides, or content that is neither valid UTF-8 nor text by its bytes.
func isBinary(data []byte) bool {
	head := data[:min(len(data), sniffBytes)]
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	if len(data) > sniffBytes {
		// A rune cut at the sample's end is not invalid.
		for i := 1; i < utf8.UTFMax && i <= len(head); i++ {
			if utf8.RuneStart(head[len(head)-i]) {
				if !utf8.FullRune(head[len(head)-i:]) {
					head = head[:len(head)-i]
				}
				break
			}
		}
	}
	if utf8.Valid(head) {
		return false
	}
	return !strings.HasPrefix(contentType(head), "text/")
}

// formatRange renders the lines an FS served of a range, cat -n style
// from line start: at most limit of them (it was asked one more, to know
// whether more remain), within readBudget bytes.
func formatRange(disp string, data []byte, start, limit int) string {
	text := strings.ToValidUTF8(string(data), "\uFFFD")
	if text == "" {
		return fmt.Sprintf("(%s has no line %d: it is empty or shorter)", disp, start)
	}
	var sb strings.Builder
	n, last := start-1, 0
	more := false
	for line := range strings.Lines(text) {
		n++
		if n-start == limit {
			more = true
			break
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if len(line) > maxLineChars {
			line = cutRunes(line, maxLineChars) + fmt.Sprintf("… [line cut at %d of %d bytes]", maxLineChars, len(line))
		}
		row := fmt.Sprintf("%6d\t%s\n", n, line)
		if sb.Len()+len(row) > readBudget && last > 0 {
			more = true
			break
		}
		sb.WriteString(row)
		last = n
	}
	if more {
		fmt.Fprintf(&sb, "\n(Showing lines %d-%d. Continue with line=%d.)", start, last, last+1)
	}
	return sb.String()
}

// formatLines renders data cat -n style from line start, at most limit
// lines (or matching lines when re is set), within readBudget bytes, with
// a note saying where to continue.
func formatLines(disp string, data []byte, start, limit int, re *regexp.Regexp) string {
	text := strings.ToValidUTF8(string(data), "\uFFFD")
	if text == "" {
		return fmt.Sprintf("(%s is empty)", disp)
	}
	total := strings.Count(text, "\n")
	if !strings.HasSuffix(text, "\n") {
		total++
	}
	if start > total {
		return fmt.Sprintf("(%s has %d lines; line %d is past the end)", disp, total, start)
	}
	var sb strings.Builder
	n, shown, last := 0, 0, 0
	more, cut := false, false
	for line := range strings.Lines(text) {
		n++
		if n < start {
			continue
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if re != nil && !re.MatchString(line) {
			continue
		}
		if shown == limit {
			more = true
			break
		}
		if len(line) > maxLineChars {
			line = cutRunes(line, maxLineChars) + fmt.Sprintf("… [line cut at %d of %d bytes]", maxLineChars, len(line))
		}
		row := fmt.Sprintf("%6d\t%s\n", n, line)
		if sb.Len()+len(row) > readBudget && shown > 0 {
			cut = true
			break
		}
		sb.WriteString(row)
		shown++
		last = n
	}
	switch {
	case re != nil && shown == 0:
		return fmt.Sprintf("(no line of %s from line %d matches %q)", disp, start, re.String())
	case re != nil && (more || cut):
		fmt.Fprintf(&sb, "\n(Showing %d matching lines up to line %d of %d; more may match after it: continue with line=%d.)", shown, last, total, last+1)
	case more || cut:
		fmt.Fprintf(&sb, "\n(Showing lines %d-%d of %d. Continue with line=%d.)", start, last, total, last+1)
	}
	return sb.String()
}
