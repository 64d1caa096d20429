package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"meka.dev/meka/internal/skills"
	"meka.dev/meka/internal/tools/fstool"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// loadedSkills remembers the skills a session loaded, so that their text
// survives compaction: the results and messages that carried it are what
// a summary replaces.
type loadedSkills struct {
	mu    sync.Mutex // guards names and texts
	names []string
	texts map[string]string
}

// maxCarried bounds the skill text carried into one summary.
const maxCarried = 16 << 10

func (l *loadedSkills) Add(name, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.texts == nil {
		l.texts = make(map[string]string)
	}
	if _, ok := l.texts[name]; !ok {
		l.names = append(l.names, name)
	}
	l.texts[name] = text
}

// seed reads the skills earlier turns loaded from the log.
func (l *loadedSkills) seed(rows []session.Row) {
	for _, r := range rows {
		switch e := r.Entry.(type) {
		case session.ToolResult:
			if e.Name == skillToolName && e.Status == session.StatusOK {
				var st struct {
					Skill string `json:"skill"`
				}
				if json.Unmarshal(e.State, &st) == nil && st.Skill != "" {
					l.Add(st.Skill, textOf(e.Content))
				}
			}
		}
	}
}

// CompactionText carries the loaded skills' text, newest last, into a
// summary.
func (l *loadedSkills) CompactionText(context.Context) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.names) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Skills loaded in this session, which still apply:\n")
	for i := len(l.names) - 1; i >= 0; i-- {
		t := l.texts[l.names[i]]
		if b.Len()+len(t) > maxCarried {
			fmt.Fprintf(&b, "\n(%d earlier skills left out; load them again with the skill tool.)\n", i+1)
			break
		}
		b.WriteString("\n" + t + "\n")
	}
	return b.String()
}

const (
	skillToolName      = "skill"
	skillWriteToolName = "skill_write"
)

// skillTool loads a skill's body and the list of its other files.
type skillTool struct{ s *Session }

func (t *skillTool) Spec() tool.Spec {
	return tool.Spec{Name: skillToolName, Level: permission.Read, Kind: tool.KindRead, ParallelSafe: true,
		Description: "Load a skill listed under # Skills: returns its instructions and its other files.",
		Schema:      json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}`)}
}

func (t *skillTool) Run(_ context.Context, c tool.Call) (tool.Result, error) {
	var a struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(c.Arguments, &a); err != nil {
		return tool.Errorf("read arguments: %v", err), nil
	}
	sk, ok := skills.Find(t.s.Skills(), a.Name)
	if !ok {
		return tool.Errorf("no skill is named %q", a.Name), nil
	}
	text := skillText(sk)
	t.s.loaded.Add(sk.Name, text)
	r := tool.Text(text)
	r.State, _ = json.Marshal(map[string]string{"skill": sk.Name})
	return r, nil
}

// skillWriteTool creates or updates a skill in meka's store.
type skillWriteTool struct{ s *Session }

func (t *skillWriteTool) Spec() tool.Spec {
	return tool.Spec{Name: skillWriteToolName, Level: permission.Workspace, Kind: tool.KindEdit,
		Description: "Create or replace a skill in meka's store for later sessions: a name (lowercase, digits, hyphens), a one-line description of when to use it, and the instructions.",
		Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"description":{"type":"string"},"body":{"type":"string"}},` +
			`"required":["name","description","body"],"additionalProperties":false}`)}
}

type skillWriteArgs struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Body        string `json:"body"`
}

func (t *skillWriteTool) path(name string) string {
	return filepath.Join(t.s.h.skillStore(), name, skills.FileName)
}

func (t *skillWriteTool) Title(args json.RawMessage) string {
	var a skillWriteArgs
	if json.Unmarshal(args, &a) == nil && a.Name != "" {
		return "Write skill " + a.Name
	}
	return "Write skill"
}

// Locations names the file written, so front doors show the change as an
// edit of it.
func (t *skillWriteTool) Locations(args json.RawMessage, _ string) []tool.Location {
	var a skillWriteArgs
	if json.Unmarshal(args, &a) != nil || !skills.ValidName(a.Name) || t.s.h.skillStore() == "" {
		return nil
	}
	return []tool.Location{{Path: t.path(a.Name)}}
}

func (t *skillWriteTool) Run(_ context.Context, c tool.Call) (tool.Result, error) {
	var a skillWriteArgs
	if err := json.Unmarshal(c.Arguments, &a); err != nil {
		return tool.Errorf("read arguments: %v", err), nil
	}
	a.Description = strings.Join(strings.Fields(a.Description), " ")
	switch {
	case t.s.h.skillStore() == "":
		return tool.Errorf("this meka has no data directory to keep skills in"), nil
	case !skills.ValidName(a.Name):
		return tool.Errorf("skill name %q is not 1 to %d lowercase letters, digits and single hyphens", a.Name, skills.MaxNameLen), nil
	case a.Description == "" || len(a.Description) > skills.MaxDescriptionLen:
		return tool.Errorf("a skill needs a description of 1 to %d characters", skills.MaxDescriptionLen), nil
	case strings.TrimSpace(a.Body) == "":
		return tool.Errorf("a skill needs a body"), nil
	}
	path := t.path(a.Name)
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return tool.Result{}, fmt.Errorf("read skill: %w", err)
	}
	content := skills.Render(a.Name, a.Description, a.Body)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return tool.Result{}, fmt.Errorf("write skill: %w", err)
	}
	if err := os.WriteFile(path, content, 0o644); err != nil {
		return tool.Result{}, fmt.Errorf("write skill: %w", err)
	}
	verb := "Created"
	if old != nil {
		verb = "Updated"
	}
	msg := fmt.Sprintf("%s skill %s in %s. It is listed from the next session (or /reload); /%s invokes it now.", verb, a.Name, path, a.Name)
	if sk, ok := skills.Find(t.s.Skills(), a.Name); ok && sk.Path != path {
		msg += fmt.Sprintf(" Note: %s (a %s skill) has the same name and wins over it.", sk.Path, sk.Source)
	}
	r := tool.Text(msg)
	r.Change = fstool.UnifiedDiff(path, path, string(old), string(content))
	return r, nil
}

// textOf is the text of parts, joined.
func textOf(parts model.Parts) string {
	var b strings.Builder
	for _, p := range parts {
		if t, ok := p.(model.Text); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// skillTools are the skill tools of a session.
func skillTools(s *Session) []tool.Tool {
	return []tool.Tool{&skillTool{s: s}, &skillWriteTool{s: s}}
}
