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
	mu      sync.RWMutex // guards tools, schemas, order, sources and version
	tools   map[string]Tool
	schemas map[string]*schema // compiled once, at Add; nil for a passed-through schema
	order   []string
	deny    []string
	allow   []string // empty allows every tool
	sources []*source
	// version counts changes of the set: Adds and sources that moved.
	version uint64
}

// source is a Source and what the registry last took from it.
type source struct {
	src     Source
	version uint64
	names   []string // the tools it contributed, in order
	loaded  bool
	skipped func(name string, err error)
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
		sch, err := compile(t.Spec())
		if err != nil {
			return fmt.Errorf("add tool %s: %w", name, err)
		}
		r.tools[name], r.schemas[name] = t, sch
		r.order = append(r.order, name)
	}
	r.version++
	return nil
}

// compile compiles a spec's schema; a server-validated schema the
// validator cannot express compiles to nil, which accepts any arguments.
func compile(s Spec) (*schema, error) {
	sch, err := compiledSchemas.get(s)
	if err != nil && s.ServerValidated {
		return nil, nil
	}
	return sch, err
}

// compiledSchemas keeps what each schema text compiled to: every session
// of a process registers the same tools, and a compiled schema is never
// changed, so sessions share it.
var compiledSchemas = schemaCache{m: make(map[string]compiled)}

// schemaCacheCap bounds the texts kept; past it (MCP servers whose tools
// keep changing) the cache starts over.
const schemaCacheCap = 1024

type schemaCache struct {
	mu sync.Mutex
	m  map[string]compiled
}

type compiled struct {
	s   *schema
	err error
}

func (c *schemaCache) get(s Spec) (*schema, error) {
	c.mu.Lock()
	got, ok := c.m[string(s.Schema)]
	c.mu.Unlock()
	if ok {
		return got.s, got.err
	}
	got.s, got.err = compileSchema(s)
	c.mu.Lock()
	if len(c.m) >= schemaCacheCap {
		clear(c.m)
	}
	c.m[string(s.Schema)] = got
	c.mu.Unlock()
	return got.s, got.err
}

// AddSource adds a changing set of tools. Its tools are taken on every
// read after its Version moves; one whose name is taken, denied, or whose
// schema does not compile is left out and reported to skipped (which may
// be nil), called with the registry's lock held.
func (r *Registry) AddSource(src Source, skipped func(name string, err error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sources = append(r.sources, &source{src: src, skipped: skipped})
	r.syncLocked()
}

// sync takes the current tools of every source whose version moved.
func (r *Registry) sync() {
	r.mu.RLock()
	stale := false
	for _, s := range r.sources {
		if !s.loaded || s.src.Version() != s.version {
			stale = true
			break
		}
	}
	r.mu.RUnlock()
	if stale {
		r.mu.Lock()
		r.syncLocked()
		r.mu.Unlock()
	}
}

func (r *Registry) syncLocked() {
	for _, s := range r.sources {
		v := s.src.Version()
		if s.loaded && v == s.version {
			continue
		}
		for _, n := range s.names {
			delete(r.tools, n)
			delete(r.schemas, n)
		}
		r.order = slices.DeleteFunc(r.order, func(n string) bool { return slices.Contains(s.names, n) })
		s.names = s.names[:0]
		for _, t := range s.src.Tools() {
			name := t.Spec().Name
			var err error
			switch _, taken := r.tools[name]; {
			case r.denied(name) || !r.allowed(t.Spec()):
				continue
			case taken:
				err = fmt.Errorf("add tool %s: already registered", name)
			default:
				var sch *schema
				if sch, err = compile(t.Spec()); err == nil {
					r.tools[name], r.schemas[name] = t, sch
					r.order = append(r.order, name)
					s.names = append(s.names, name)
					continue
				}
				err = fmt.Errorf("add tool %s: %w", name, err)
			}
			if s.skipped != nil {
				s.skipped(name, err)
			}
		}
		s.version, s.loaded = v, true
		r.version++
	}
}

// Version counts the changes of the registered set; it moves when a tool
// is added or a source's set changed.
func (r *Registry) Version() uint64 {
	r.sync()
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.version
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
	r.sync()
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tools[name]
	return t, ok
}

// Tools returns the registered tools in the order they were added.
func (r *Registry) Tools() []Tool {
	r.sync()
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
	r.sync()
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
	r.sync()
	r.mu.RLock()
	sch, ok := r.schemas[name]
	r.mu.RUnlock()
	if !ok {
		return fmt.Errorf("unknown tool %q", name)
	}
	return sch.check(args)
}
