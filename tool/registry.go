package tool

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"
	"sync"
)

// Registry holds the tools a session may offer. It is safe for concurrent
// use.
type Registry struct {
	mu      sync.RWMutex // guards tools, schemas and order
	tools   map[string]Tool
	schemas map[string]*schema // compiled once, at Add
	order   []string
	deny    []string
	allow   []string // empty allows every tool
}

// NewRegistry returns a registry that hides every tool whose name matches
// one of the deny globs (path.Match syntax, e.g. "shell_*").
func NewRegistry(deny ...string) *Registry {
	return &Registry{tools: make(map[string]Tool), schemas: make(map[string]*schema), deny: deny}
}

// Allow restricts the tools added from now on to those matching one of
// globs (path.Match syntax), bookkeeping tools excepted: a sub-agent
// definition's allow-list names capabilities, and a checklist is how the
// agent keeps its word, not a capability. No globs allows every tool.
func (r *Registry) Allow(globs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.allow = globs
}

func (r *Registry) allowed(s Spec) bool {
	if len(r.allow) == 0 || s.Bookkeeping {
		return true
	}
	for _, g := range r.allow {
		if ok, _ := path.Match(g, s.Name); ok {
			return true
		}
	}
	return false
}

// Add registers tools. A tool the deny filters match, or the allow-list
// does not, is silently left out: filtering is how a user disables a
// feature. Adding a second tool of the same name is a programming error.
func (r *Registry) Add(tools ...Tool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range tools {
		name := t.Spec().Name
		if r.denied(name) || !r.allowed(t.Spec()) {
			continue
		}
		if _, ok := r.tools[name]; ok {
			return fmt.Errorf("add tool %s: already registered", name)
		}
		sch, err := compileSchema(t.Spec())
		if err != nil {
			return fmt.Errorf("add tool %s: %w", name, err)
		}
		r.tools[name], r.schemas[name] = t, sch
		r.order = append(r.order, name)
	}
	return nil
}

// Denied reports whether the filters remove name.
func (r *Registry) Denied(name string) bool {
	return r.denied(name)
}

func (r *Registry) denied(name string) bool {
	for _, g := range r.deny {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// Get returns the tool called name.
func (r *Registry) Get(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tools[name]
	return t, ok
}

// Tools returns the registered tools in the order they were added.
func (r *Registry) Tools() []Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Tool, 0, len(r.order))
	for _, n := range r.order {
		out = append(out, r.tools[n])
	}
	return out
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := slices.Clone(r.order)
	sort.Strings(names)
	return names
}

// Validate returns nil when args satisfy the schema of the registered
// tool called name, else an error written for the model to correct its
// call (see Validator.Validate).
func (r *Registry) Validate(name string, args json.RawMessage) error {
	r.mu.RLock()
	sch, ok := r.schemas[name]
	r.mu.RUnlock()
	if !ok {
		return fmt.Errorf("unknown tool %q", name)
	}
	return sch.check(args)
}
