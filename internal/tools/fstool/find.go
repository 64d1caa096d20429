package fstool

import (
	"bufio"
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

// FindTool is file_find.
type FindTool struct{ e *env }

var (
	_ tool.Tool    = (*FindTool)(nil)
	_ tool.Titler  = (*FindTool)(nil)
	_ tool.Locator = (*FindTool)(nil)
)

// NewFind returns file_find alone.
func NewFind(o Options) *FindTool { return &FindTool{newEnv(o)} }

var findSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "A glob. Without a slash it matches file names at any depth (*.go, *_test.go); with one, paths from the directory searched (src/**/*.ts, cmd/*/main.go). ** spans directories, {a,b} is either."},
    "path": {"type": "string", "description": "The directory to search."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`)

func (t *FindTool) Spec() tool.Spec {
	return tool.Spec{
		Name: "file_find",
		Description: "Find files by name with a glob, across every workspace root unless path is given. " +
			"Files .gitignore ignores, and .git, are left out. Counts every match and lists the first 200.",
		Schema:       findSchema,
		Level:        permission.Read,
		Kind:         tool.KindSearch,
		ParallelSafe: true,
	}
}

func (t *FindTool) Title(args json.RawMessage) string { return title("file_find", args, "pattern") }

func (t *FindTool) Locations(args json.RawMessage, cwd string) []tool.Location {
	return pathLocation(args, cwd)
}

type findArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
}

func (t *FindTool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	var a findArgs
	if r, ok := decode(call, &a); !ok {
		return r, nil
	}
	e := t.e
	pattern := a.Pattern
	if filepath.IsAbs(pattern) {
		if a.Path != "" {
			return tool.Errorf("file_find: pattern is an absolute path and path is set too; give the directory in path and a relative pattern."), nil
		}
		a.Path, pattern = splitAbsPattern(pattern, e.rootsFor(call))
	}
	g, err := newGlob(pattern)
	if err != nil {
		return tool.Errorf("file_find: %v", err), nil
	}
	ts, notes, refused := e.targets(call, a.Path)
	if refused != nil {
		return *refused, nil
	}
	if ts[0].file {
		return tool.Errorf("file_find: %s is a file; path must be a directory.", display(ts[0].path, call.Cwd)), nil
	}

	wctx, cancel := e.budget(ctx)
	defer cancel()
	cap := e.opts.FindCap
	var (
		shown   []string
		count   int
		scratch *os.File
		sw      *bufio.Writer
		werr    error
	)
	defer func() {
		if scratch != nil {
			scratch.Close()
		}
	}()
	reached := make([]bool, len(ts))
	for i, tg := range ts {
		if wctx.Err() != nil {
			break
		}
		reached[i] = true
		only := ""
		if pre := g.prefix(); pre != "" {
			only = filepath.Join(tg.path, pre)
		}
		err := walkDir(wctx, tg.path, only, ancestorIgnores(tg.path), e.hider(call), func(p string, d fs.DirEntry) error {
			if !g.match(relSlash(tg.path, p), d.Name()) {
				return nil
			}
			count++
			line := display(p, call.Cwd)
			if count <= cap {
				shown = append(shown, line)
				return nil
			}
			if count == cap+1 && werr == nil {
				if scratch, werr = e.createScratch(call); werr == nil {
					sw = bufio.NewWriter(scratch)
					for _, s := range shown {
						sw.WriteString(s + "\n")
					}
				}
			}
			if sw != nil {
				_, werr = sw.WriteString(line + "\n")
				if werr != nil {
					sw = nil
				}
			}
			return nil
		})
		if err != nil {
			break
		}
	}
	if ctx.Err() != nil {
		return tool.Result{}, ctx.Err()
	}
	if sw != nil {
		if werr = sw.Flush(); werr == nil {
			werr = scratch.Close()
		}
		if werr != nil {
			os.Remove(scratch.Name())
		}
	}

	var sb strings.Builder
	for _, s := range shown {
		sb.WriteString(s + "\n")
	}
	switch {
	case count == 0:
		fmt.Fprintf(&sb, "No files match %q.", a.Pattern)
	case count <= cap:
		fmt.Fprintf(&sb, "(%s)", plural(count, "match", "matches"))
	case scratch != nil && werr == nil:
		fmt.Fprintf(&sb, "(%d matches, showing %d. The full list is in the scratchpad file %s.)", count, cap, scratch.Name())
	default:
		fmt.Fprintf(&sb, "(%d matches, showing %d. Narrow the pattern or pass path to see the rest.)", count, cap)
	}
	if errors.Is(context.Cause(wctx), errBudget) {
		n, left := rootsLeft(ts, reached)
		fmt.Fprintf(&sb, "\n(The search stopped after its %s budget, so the count is partial", e.opts.SearchBudget)
		if n > 0 {
			fmt.Fprintf(&sb, "; %s not searched: %s", plural(n, "root was", "roots were"), left)
		}
		sb.WriteString(". Pass path to search less at once.)")
	}
	for _, n := range notes {
		sb.WriteString("\n(" + n + ")")
	}
	return tool.Text(e.bounded(call, sb.String())), nil
}
