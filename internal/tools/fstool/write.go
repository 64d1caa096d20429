package fstool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"meka.dev/meka/permission"
	"meka.dev/meka/tool"
)

// WriteTool is file_write.
type WriteTool struct{ e *env }

// EditTool is file_edit.
type EditTool struct{ e *env }

var (
	_ tool.Tool        = (*WriteTool)(nil)
	_ tool.CallLeveler = (*WriteTool)(nil)
	_ tool.CallLeveler = (*EditTool)(nil)
	_ tool.Titler      = (*WriteTool)(nil)
	_ tool.Locator     = (*WriteTool)(nil)
	_ tool.Tool        = (*EditTool)(nil)
	_ tool.Titler      = (*EditTool)(nil)
	_ tool.Locator     = (*EditTool)(nil)
)

// NewWrite returns file_write alone.
func NewWrite(o Options) *WriteTool { return &WriteTool{newEnv(o)} }

// NewEdit returns file_edit alone.
func NewEdit(o Options) *EditTool { return &EditTool{newEnv(o)} }

// ChangeState is the State a write or an edit records: the file and the
// size of its change.
type ChangeState struct {
	Path    string `json:"path"`
	Created bool   `json:"created,omitempty"`
	Added   int    `json:"added"`
	Removed int    `json:"removed"`
}

var writeSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "The file to write; relative paths resolve against the working directory. Missing directories are created."},
    "content": {"type": "string", "description": "The file's whole new content."}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`)

var editSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "The file to edit; relative paths resolve against the working directory."},
    "old": {"type": "string", "description": "The exact text to replace, whitespace and line breaks included. It must occur exactly once unless replace_all is set."},
    "new": {"type": "string", "description": "The text to put in its place."},
    "replace_all": {"type": "boolean", "description": "Replace every occurrence of old. Default false."}
  },
  "required": ["path", "old", "new"],
  "additionalProperties": false
}`)

func (t *WriteTool) Spec() tool.Spec {
	return tool.Spec{
		Name:        "file_write",
		Description: "Create a file or replace its whole content. To change part of an existing file, use file_edit.",
		Schema:      writeSchema,
		Level:       permission.Workspace,
		Kind:        tool.KindEdit,
	}
}

func (t *EditTool) Spec() tool.Spec {
	return tool.Spec{
		Name: "file_edit",
		Description: "Replace text in a file: `old` must occur in the file exactly once, matching it character for character " +
			"(copy it from file_read's output without the line-number prefix), unless `replace_all` is set to change every occurrence.",
		Schema: editSchema,
		Level:  permission.Workspace,
		Kind:   tool.KindEdit,
	}
}

// CallLevel implements tool.CallLeveler: a path outside the roots needs
// unrestricted.
func (t *WriteTool) CallLevel(call tool.Call) permission.Level {
	return t.e.callLevel(call, permission.Workspace, true)
}

// CallLevel implements tool.CallLeveler.
func (t *EditTool) CallLevel(call tool.Call) permission.Level {
	return t.e.callLevel(call, permission.Workspace, true)
}

func (t *WriteTool) Title(args json.RawMessage) string { return title("file_write", args, "path") }
func (t *EditTool) Title(args json.RawMessage) string  { return title("file_edit", args, "path") }

func (t *WriteTool) Locations(args json.RawMessage, cwd string) []tool.Location {
	return pathLocation(args, cwd)
}

func (t *EditTool) Locations(args json.RawMessage, cwd string) []tool.Location {
	return pathLocation(args, cwd)
}

// open reads the file a write or an edit will change, choosing the route
// its write will take.
func (e *env) open(ctx context.Context, call tool.Call, p string) (data []byte, r Route, exists bool, err error) {
	if rt, ok := e.fs.(Router); ok {
		data, r, err = rt.Route(ctx, p)
	} else {
		data, err = e.readFile(ctx, call, e.fs, p)
		r = Route{FS: e.fs}
	}
	if r.FS == nil {
		r.FS = e.fs
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, r, false, nil
	}
	return data, r, err == nil, err
}

// commit writes content through r and describes the change.
func (e *env) commit(ctx context.Context, call tool.Call, p string, r Route, old []byte, existed bool, content string) (tool.Result, error) {
	disp := display(p, call.Cwd)
	if err := e.writeFile(ctx, call, r.FS, p, []byte(content)); err != nil {
		if ctx.Err() != nil {
			return tool.Result{}, ctx.Err()
		}
		return tool.Errorf("%s: cannot write %s: %v", call.Name, disp, err), nil
	}
	oldName, newName := "a/"+filepath.ToSlash(disp), "b/"+filepath.ToSlash(disp)
	if filepath.IsAbs(disp) {
		oldName, newName = disp, disp
	}
	if !existed {
		oldName = "/dev/null"
	}
	var diff string
	if isBinary(old) {
		diff = fmt.Sprintf("Binary files %s and %s differ\n", oldName, newName)
	} else {
		diff = UnifiedDiff(oldName, newName, string(old), content)
	}
	added, removed := DiffStat(diff)
	st, _ := json.Marshal(ChangeState{Path: p, Created: !existed, Added: added, Removed: removed})
	return tool.Result{Change: diff, State: st}, nil
}

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

func (t *WriteTool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	var a writeArgs
	if r, ok := decode(call, &a); !ok {
		return r, nil
	}
	e := t.e
	p, err := e.resolve(call, a.Path, true)
	if err != nil {
		return e.refusal(call, err), nil
	}
	disp := display(p, call.Cwd)
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		return tool.Errorf("file_write: %s is a directory; give the path of a file.", disp), nil
	}
	old, route, existed, err := e.open(ctx, call, p)
	if err != nil {
		if ctx.Err() != nil {
			return tool.Result{}, ctx.Err()
		}
		return tool.Errorf("file_write: cannot read %s before writing it: %v", disp, err), nil
	}
	if existed && string(old) == a.Content {
		return tool.Text(fmt.Sprintf("%s already has this content; nothing was written.", disp)), nil
	}
	res, err := e.commit(ctx, call, p, route, old, existed, a.Content)
	if err != nil || res.IsError {
		return res, err
	}
	lines := strings.Count(a.Content, "\n")
	if a.Content != "" && !strings.HasSuffix(a.Content, "\n") {
		lines++
	}
	var msg string
	if existed {
		add, rem := DiffStat(res.Change)
		msg = fmt.Sprintf("Wrote %s (%d lines; +%d -%d).", disp, lines, add, rem)
	} else {
		msg = fmt.Sprintf("Created %s (%d lines).", disp, lines)
	}
	diags, notice := e.diagnose(ctx, call, p, disp, []byte(a.Content))
	res.Content = tool.Text(withDiagnostics(withNote(msg, route.note()), diags)).Content
	res.Notice = notice
	return res, nil
}

func withNote(msg, note string) string {
	if note == "" {
		return msg
	}
	return msg + " " + note
}

type editArgs struct {
	Path       string `json:"path"`
	Old        string `json:"old"`
	New        string `json:"new"`
	ReplaceAll bool   `json:"replace_all"`
}

func (t *EditTool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	var a editArgs
	if r, ok := decode(call, &a); !ok {
		return r, nil
	}
	if a.Old == "" {
		return tool.Errorf("file_edit: old is empty. Quote the text to replace in old; to insert text, quote a neighbouring line in old and repeat it in new with the addition. To create a file or replace all of it, use file_write."), nil
	}
	if a.Old == a.New {
		return tool.Errorf("file_edit: old and new are the same, so the edit would change nothing."), nil
	}
	e := t.e
	p, err := e.resolve(call, a.Path, true)
	if err != nil {
		return e.refusal(call, err), nil
	}
	disp := display(p, call.Cwd)
	data, route, existed, err := e.open(ctx, call, p)
	if err != nil {
		if ctx.Err() != nil {
			return tool.Result{}, ctx.Err()
		}
		return tool.Errorf("file_edit: cannot read %s: %v", disp, err), nil
	}
	if !existed {
		return tool.Errorf("file_edit: %s does not exist. Create it with file_write, or find the file you meant with file_find.", disp), nil
	}
	if isBinary(data) {
		return tool.Errorf("file_edit: %s is a binary file (%s); file_edit changes text only.", disp, contentType(data)), nil
	}
	content := string(data)
	old, new := a.Old, a.New
	n := strings.Count(content, old)
	if n == 0 && strings.Contains(content, "\r\n") && !strings.Contains(old, "\r") {
		// The file has Windows line endings, which file_read does not show.
		crOld := strings.ReplaceAll(old, "\n", "\r\n")
		if m := strings.Count(content, crOld); m > 0 {
			old, new, n = crOld, strings.ReplaceAll(new, "\n", "\r\n"), m
		}
	}
	switch {
	case n == 0:
		return tool.Errorf("%s", notFound(disp, content, a.Old)), nil
	case n > 1 && !a.ReplaceAll:
		return tool.Errorf("file_edit: old occurs %d times in %s (%s), so the edit is ambiguous and nothing was changed. "+
			"Add surrounding lines to old so it matches exactly one place, or set replace_all to true to replace all %d.",
			n, disp, occurrenceLines(content, old), n), nil
	}
	var updated string
	if a.ReplaceAll {
		updated = strings.ReplaceAll(content, old, new)
	} else {
		updated = strings.Replace(content, old, new, 1)
	}
	res, err := e.commit(ctx, call, p, route, data, true, updated)
	if err != nil || res.IsError {
		return res, err
	}
	add, rem := DiffStat(res.Change)
	what := "1 occurrence"
	if n > 1 {
		what = fmt.Sprintf("%d occurrences", n)
	}
	diags, notice := e.diagnose(ctx, call, p, disp, []byte(updated))
	res.Content = tool.Text(withDiagnostics(withNote(fmt.Sprintf("Edited %s: replaced %s (+%d -%d lines).", disp, what, add, rem), route.note()), diags)).Content
	res.Notice = notice
	return res, nil
}

// occurrenceLines lists the lines where s occurs in content, the first ten.
func occurrenceLines(content, s string) string {
	var lines []string
	line, off := 1, 0
	for len(lines) < 10 {
		i := strings.Index(content[off:], s)
		if i < 0 {
			break
		}
		line += strings.Count(content[off:off+i], "\n")
		lines = append(lines, fmt.Sprint(line))
		line += strings.Count(s, "\n")
		off += i + len(s)
	}
	if len(lines) == 1 {
		return "line " + lines[0]
	}
	more := ""
	if strings.Count(content[off:], s) > 0 {
		more = ", …"
	}
	return "lines " + strings.Join(lines, ", ") + more
}

// notFound explains a zero-match edit and says where to look.
func notFound(disp, content, old string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "file_edit: old was not found in %s, so nothing was changed. old must match the file exactly, including indentation, whitespace and line breaks.", disp)
	switch {
	case looksNumbered(old):
		sb.WriteString(" old seems to include the line numbers file_read shows (a number and a tab before each line); they are not part of the file, so leave them out.")
	case fuzzyLine(content, old) > 0:
		fmt.Fprintf(&sb, " Text that differs from old only in whitespace starts at line %d: copy it exactly as file_read shows it (tabs and spaces as they are).", fuzzyLine(content, old))
	default:
		if first, lines := firstLineAt(content, old); len(lines) > 0 {
			fmt.Fprintf(&sb, " Its first line %q appears at %s, but the lines after it differ from old.", first, lines)
		}
	}
	fmt.Fprintf(&sb, " Read the current text with file_read (for example with pattern set to a word from old) and quote it exactly.")
	return sb.String()
}

// looksNumbered reports whether every non-empty line of s starts like a
// line of file_read's output.
func looksNumbered(s string) bool {
	seen := false
	for l := range strings.Lines(s) {
		l = strings.TrimRight(l, "\r\n")
		if l == "" {
			continue
		}
		t := strings.TrimLeft(l, " ")
		i := 0
		for i < len(t) && t[i] >= '0' && t[i] <= '9' {
			i++
		}
		if i == 0 || i >= len(t) || t[i] != '\t' {
			return false
		}
		seen = true
	}
	return seen
}

// fuzzyLine returns the line where old occurs in content when runs of
// whitespace are treated as equal, or 0.
func fuzzyLine(content, old string) int {
	nc, offs := squashSpace(content)
	no, _ := squashSpace(old)
	no = strings.TrimSpace(no)
	if no == "" {
		return 0
	}
	i := strings.Index(nc, no)
	if i < 0 {
		return 0
	}
	return strings.Count(content[:offs[i]], "\n") + 1
}

// squashSpace replaces each run of whitespace with one space; offs maps
// each byte of the result to its offset in s.
func squashSpace(s string) (string, []int) {
	var sb strings.Builder
	offs := make([]int, 0, len(s))
	space := false
	for i, r := range s {
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f' {
			if !space {
				sb.WriteByte(' ')
				offs = append(offs, i)
			}
			space = true
			continue
		}
		space = false
		n := sb.Len()
		sb.WriteRune(r)
		for range sb.Len() - n {
			offs = append(offs, i)
		}
	}
	return sb.String(), offs
}

// firstLineAt finds where old's first non-blank line occurs in content,
// ignoring indentation.
func firstLineAt(content, old string) (string, string) {
	first := ""
	for l := range strings.Lines(old) {
		if t := strings.TrimSpace(l); t != "" {
			first = t
			break
		}
	}
	if first == "" {
		return "", ""
	}
	var at []string
	n := 0
	for l := range strings.Lines(content) {
		n++
		if strings.Contains(l, first) {
			at = append(at, fmt.Sprint(n))
			if len(at) == 5 {
				break
			}
		}
	}
	if len(at) == 0 {
		return first, ""
	}
	if len(at) == 1 {
		return first, "line " + at[0]
	}
	return first, "lines " + strings.Join(at, ", ")
}
