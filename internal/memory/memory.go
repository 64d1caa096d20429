// Package memory gives a session its memories: short notes the model
// writes with memory_write and removes with memory_delete, scoped to the
// session's project (or to the user when it is on none), kept in a Store
// the composition root provides, and restated at the end of every request
// (newest first, with ids, bounded) so the model sees what it knows.
//
// It imports agent, tool, model and permission; the store is an interface
// here, implemented over internal/sqlite by the composition root.
package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"meka.dev/meka/agent"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/tool"
)

// Bounds.
const (
	// MaxText bounds one note.
	MaxText = 1000
	// MaxRestated and MaxRestatedBytes bound the notes each request restates.
	MaxRestated      = 50
	MaxRestatedBytes = 4 << 10
)

// Note is one memory.
type Note struct {
	ID      string
	Text    string
	Updated time.Time
}

// ErrNotFound is what a Store returns for an id its scope does not hold.
var ErrNotFound = errors.New("no such memory")

// Store keeps notes by scope: a project's name, or "" for the user's own.
// Implementations are safe for concurrent use and return ErrNotFound
// (wrapped) for an id the scope does not hold.
type Store interface {
	List(ctx context.Context, scope string, limit int) ([]Note, error)
	Put(ctx context.Context, scope, id, text string) (Note, error)
	Get(ctx context.Context, scope, id string) (Note, error)
	Delete(ctx context.Context, scope, id string) (Note, error)
}

// Options configure a session's memories.
type Options struct {
	Store Store
	// Scope returns the session's project now; "" is the user's scope.
	Scope func() string
}

// New returns the memory tools and the contributor that restates them.
func New(o Options) agent.Extension {
	m := &mem{o: o}
	return agent.Extension{
		Tools:        []tool.Tool{&writeTool{m}, &deleteTool{m}},
		Contributors: []agent.RequestContributor{m},
	}
}

type mem struct{ o Options }

func (m *mem) scope() string {
	if m.o.Scope == nil {
		return ""
	}
	return m.o.Scope()
}

// ScopeName says whose memories a scope holds, for people and the model.
func ScopeName(scope string) string {
	if scope == "" {
		return "your own (no project)"
	}
	return "project " + scope
}

// Render lists notes, newest first, with their ids, within the bounds.
func Render(notes []Note) string {
	var b strings.Builder
	for i, n := range notes {
		line := fmt.Sprintf("- %s: %s\n", n.ID, strings.Join(strings.Fields(n.Text), " "))
		if i == MaxRestated || b.Len()+len(line) > MaxRestatedBytes {
			fmt.Fprintf(&b, "(%d older memories not shown)\n", len(notes)-i)
			break
		}
		b.WriteString(line)
	}
	return b.String()
}

// Contribute restates the scope's memories at the end of every request.
func (m *mem) Contribute(ctx context.Context, _ agent.RequestInfo) []model.Part {
	scope := m.scope()
	notes, err := m.o.Store.List(ctx, scope, MaxRestated+1)
	if err != nil || len(notes) == 0 {
		return nil
	}
	return []model.Part{model.Text{Text: fmt.Sprintf("[Memories: %s; newest first. memory_write with an id replaces one, memory_delete removes one.]\n%s",
		ScopeName(scope), Render(notes))}}
}

// diff is a unified diff of one note's text, from old to new ("" for
// none), as the change a write or delete records.
func diff(id, old, new string) string {
	lines := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	}
	a, b := lines(old), lines(new)
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- memory %s\n+++ memory %s\n", id, id)
	fmt.Fprintf(&sb, "@@ -%s +%s @@\n", hunk(len(a)), hunk(len(b)))
	for _, l := range a {
		sb.WriteString("-" + l + "\n")
	}
	for _, l := range b {
		sb.WriteString("+" + l + "\n")
	}
	return sb.String()
}

func hunk(n int) string {
	if n == 0 {
		return "0,0"
	}
	if n == 1 {
		return "1"
	}
	return fmt.Sprintf("1,%d", n)
}

type writeTool struct{ m *mem }

// CallLevel implements tool.CallLeveler: a memory outlives the session,
// so a session at read writing one is put to the person first when
// approvals are on (as the workspace level's writes are); with them off
// it writes, and the person is told (readNotice).
func (t *writeTool) CallLevel(c tool.Call) permission.Level { return writeLevel(c) }

func writeLevel(c tool.Call) permission.Level {
	if c.Level == permission.Read {
		return permission.Workspace
	}
	return permission.Read
}

// readNotice is the notice of a memory written or removed at read, where
// nothing else the session does outlives it.
func readNotice(c tool.Call, what string) string {
	if c.Level != permission.Read {
		return ""
	}
	return fmt.Sprintf("%s, at the read level: memories outlive the session and are restated to later ones", what)
}

// writeSchema bounds text by MaxText, the bound Run checks.
var writeSchema = json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"text":{"type":"string","minLength":1,"maxLength":%d},"id":{"type":"string"}},`+
	`"required":["text"],"additionalProperties":false}`, MaxText))

func (t *writeTool) Spec() tool.Spec {
	return tool.Spec{Name: "memory_write", Level: permission.Read, Kind: tool.KindEdit,
		Description: "Remember a note for later sessions of this project (yours on none); with id, replace that note.",
		Schema:      writeSchema}
}

func (t *writeTool) Run(ctx context.Context, c tool.Call) (tool.Result, error) {
	var a struct {
		Text string `json:"text"`
		ID   string `json:"id"`
	}
	if err := json.Unmarshal(c.Arguments, &a); err != nil {
		return tool.Errorf("read arguments: %v", err), nil
	}
	a.Text = strings.TrimSpace(a.Text)
	if a.Text == "" || len(a.Text) > MaxText {
		return tool.Errorf("a memory is 1 to %d characters", MaxText), nil
	}
	scope := t.m.scope()
	old := ""
	if a.ID != "" {
		n, err := t.m.o.Store.Get(ctx, scope, a.ID)
		if errors.Is(err, ErrNotFound) {
			return tool.Errorf("no memory %s in %s; leave id out to add one", a.ID, ScopeName(scope)), nil
		}
		if err != nil {
			return tool.Result{}, fmt.Errorf("write memory: %w", err)
		}
		old = n.Text
	}
	n, err := t.m.o.Store.Put(ctx, scope, a.ID, a.Text)
	if errors.Is(err, ErrNotFound) {
		return tool.Errorf("no memory %s in %s; leave id out to add one", a.ID, ScopeName(scope)), nil
	}
	if err != nil {
		return tool.Result{}, fmt.Errorf("write memory: %w", err)
	}
	verb := "Remembered"
	if a.ID != "" {
		verb = "Replaced"
	}
	r := tool.Text(fmt.Sprintf("%s %s in %s.", verb, n.ID, ScopeName(scope)))
	r.Change = diff(n.ID, old, n.Text)
	r.Notice = readNotice(c, fmt.Sprintf("memory_write %s memory %s in %s", strings.ToLower(verb), n.ID, ScopeName(scope)))
	return r, nil
}

type deleteTool struct{ m *mem }

// CallLevel implements tool.CallLeveler as memory_write's does.
func (t *deleteTool) CallLevel(c tool.Call) permission.Level { return writeLevel(c) }

func (t *deleteTool) Spec() tool.Spec {
	return tool.Spec{Name: "memory_delete", Level: permission.Read, Kind: tool.KindDelete,
		Description: "Forget a note by id.",
		Schema:      json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}`)}
}

func (t *deleteTool) Run(ctx context.Context, c tool.Call) (tool.Result, error) {
	var a struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(c.Arguments, &a); err != nil {
		return tool.Errorf("read arguments: %v", err), nil
	}
	scope := t.m.scope()
	n, err := t.m.o.Store.Delete(ctx, scope, a.ID)
	if errors.Is(err, ErrNotFound) {
		return tool.Errorf("no memory %s in %s", a.ID, ScopeName(scope)), nil
	}
	if err != nil {
		return tool.Result{}, fmt.Errorf("delete memory: %w", err)
	}
	r := tool.Text(fmt.Sprintf("Forgot %s.", n.ID))
	r.Change = diff(n.ID, n.Text, "")
	r.Notice = readNotice(c, fmt.Sprintf("memory_delete forgot memory %s in %s", n.ID, ScopeName(scope)))
	return r, nil
}
