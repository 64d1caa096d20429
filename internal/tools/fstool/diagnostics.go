package fstool

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"

	"meka.dev/meka/permission"
	"meka.dev/meka/tool"
)

// A Diagnoser reports a file's errors and warnings as a language server
// sees them (internal/lsp, which the composition root wires in). It must
// be safe for concurrent use and return within its own bound.
type Diagnoser interface {
	// Serves reports whether a server reads path's language.
	Serves(path string) bool
	// Diagnose returns what to tell of path with content.
	Diagnose(ctx context.Context, req DiagnoseRequest) Diagnosis
}

// DiagnoseRequest asks for the diagnostics of one file.
type DiagnoseRequest struct {
	// Path is the file's absolute path, Root the workspace root holding
	// it, Display its name as the result shows it.
	Path, Root, Display string
	Content             []byte
	// Level is the session's, at dispatch.
	Level permission.Level
}

// Diagnosis is what a Diagnoser found.
type Diagnosis struct {
	// Text is for the model, appended to the result; empty says nothing.
	Text string
	// Notice is for the person: a server that was dropped.
	Notice string
}

// diagnose returns the diagnostics of p, just written with content, to
// append to the result, and a notice for the person; both empty when no
// Diagnoser serves p.
func (e *env) diagnose(ctx context.Context, call tool.Call, p, disp string, content []byte) (text, notice string) {
	d := e.opts.Diagnostics
	if d == nil || !d.Serves(p) {
		return "", ""
	}
	got := d.Diagnose(ctx, DiagnoseRequest{Path: p, Root: e.rootOf(call, p), Display: disp, Content: content, Level: call.Level})
	return got.Text, got.Notice
}

// withDiagnostics appends diagnostics to a result's message.
func withDiagnostics(msg, diags string) string {
	if diags == "" {
		return msg
	}
	return msg + "\n\n" + diags
}

// rootOf returns the root holding p: the workspace folder its language
// server is started in.
func (e *env) rootOf(call tool.Call, p string) string {
	best := ""
	if r, err := e.roots(call); err == nil {
		for _, root := range r.All() {
			if within(p, root) && len(root) > len(best) {
				best = root
			}
		}
	}
	if best == "" && call.Cwd != "" && within(p, call.Cwd) {
		best = call.Cwd
	}
	if best == "" {
		best = filepath.Dir(p)
	}
	return best
}

func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// DiagnosticsTool is diagnostics: a file's errors and warnings as its
// language server sees them, without changing it.
type DiagnosticsTool struct{ e *env }

var (
	_ tool.Tool        = (*DiagnosticsTool)(nil)
	_ tool.CallLeveler = (*DiagnosticsTool)(nil)
	_ tool.Titler      = (*DiagnosticsTool)(nil)
	_ tool.Locator     = (*DiagnosticsTool)(nil)
)

var diagnosticsSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "The file to check; relative paths resolve against the working directory."}
  },
  "required": ["path"],
  "additionalProperties": false
}`)

func (t *DiagnosticsTool) Spec() tool.Spec {
	return tool.Spec{
		Name: "diagnostics",
		Description: "A file's errors and warnings from its language server. file_write and file_edit already add them; " +
			"ask again when a server was still loading or the file changed another way.",
		Schema:       diagnosticsSchema,
		Level:        permission.Read,
		Kind:         tool.KindRead,
		ParallelSafe: true,
	}
}

func (t *DiagnosticsTool) Title(args json.RawMessage) string {
	return title("diagnostics", args, "path")
}

func (t *DiagnosticsTool) Locations(args json.RawMessage, cwd string) []tool.Location {
	return pathLocation(args, cwd)
}

// CallLevel implements tool.CallLeveler: a path outside the roots needs
// unrestricted.
func (t *DiagnosticsTool) CallLevel(call tool.Call) permission.Level {
	return t.e.callLevel(call, permission.Read, false)
}

func (t *DiagnosticsTool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	var a struct {
		Path string `json:"path"`
	}
	if r, ok := decode(call, &a); !ok {
		return r, nil
	}
	e := t.e
	p, err := e.resolve(call, a.Path, false)
	if err != nil {
		return e.refusal(call, err), nil
	}
	disp := display(p, call.Cwd)
	if !e.opts.Diagnostics.Serves(p) {
		return tool.Errorf("diagnostics: no language server reads %s (a server for its language is not on PATH, or [lsp] turns it off).", disp), nil
	}
	data, err := e.readFile(ctx, call, e.fs, p)
	if err != nil {
		if ctx.Err() != nil {
			return tool.Result{}, ctx.Err()
		}
		if errors.Is(err, fs.ErrNotExist) {
			return tool.Errorf("diagnostics: %s does not exist.", disp), nil
		}
		return tool.Errorf("diagnostics: cannot read %s: %v", disp, err), nil
	}
	got := e.opts.Diagnostics.Diagnose(ctx, DiagnoseRequest{Path: p, Root: e.rootOf(call, p), Display: disp, Content: data, Level: call.Level})
	if ctx.Err() != nil {
		return tool.Result{}, ctx.Err()
	}
	text := got.Text
	if text == "" {
		text = "Diagnostics: no language server reported on " + disp + " (its server was stopped earlier, as a notice said, or the session's level cannot run it confined)."
	}
	r := tool.Text(text)
	r.Notice = got.Notice
	return r, nil
}
