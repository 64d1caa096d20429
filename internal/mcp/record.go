package mcp

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"meka.dev/meka/tool"
)

// Def is a server's tool as a session's log records it: what the model is
// sent (Name, Description, Schema, byte for byte), and what routes a call
// and resolves its level (Server, Remote, ReadOnly).
type Def struct {
	Name        string
	Description string
	Schema      json.RawMessage
	Server      string
	Remote      string // the server's own name for the tool
	ReadOnly    bool
}

// Equal reports whether two definitions are the same, bytes of the schema
// included.
func (d Def) Equal(o Def) bool {
	return d.Name == o.Name && d.Description == o.Description && bytes.Equal(d.Schema, o.Schema) &&
		d.Server == o.Server && d.Remote == o.Remote && d.ReadOnly == o.ReadOnly
}

func (rt *remoteTool) def() Def {
	return Def{Name: rt.name, Description: rt.desc, Schema: rt.schema, Server: rt.server, Remote: rt.remote, ReadOnly: rt.readOnly}
}

// Record is the tool set a session's log says its model is offered. The
// zero value records nothing: the servers' tools are then offered as they
// are listed, as for a session stored before sets were recorded. Safe for
// concurrent use.
type Record struct {
	mu   sync.Mutex // guards defs
	defs []Def      // sorted by name
	// state is the record's version shifted left once, with the low bit
	// set while a set is recorded; Source's Version reads it in one load.
	state atomic.Uint64
}

// Set records defs as the set offered.
func (r *Record) Set(defs []Def) {
	defs = slices.Clone(defs)
	slices.SortFunc(defs, func(a, b Def) int { return strings.Compare(a.Name, b.Name) })
	r.mu.Lock()
	r.defs = defs
	r.state.Store((r.state.Load()>>1+1)<<1 | 1)
	r.mu.Unlock()
}

// Clear forgets the recorded set: the servers' tools are offered as
// listed.
func (r *Record) Clear() {
	r.mu.Lock()
	r.defs = nil
	r.state.Store((r.state.Load()>>1 + 1) << 1)
	r.mu.Unlock()
}

// Get returns the recorded set, sorted by name; ok is false when none is.
func (r *Record) Get() (defs []Def, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.defs), r.state.Load()&1 == 1
}

// Reconcile returns the set a session that recorded rec (nil: nothing)
// offers now, sorted by name. A server that listed its tools since the
// process started contributes what it lists. One that is configured and
// has not (starting, failed, disabled) keeps its recorded tools: they are
// still offered and their calls fail as not connected, so the set does not
// shrink because a server is slow or down. A server no longer configured
// contributes nothing. Names two servers share go to the first by name,
// as for the live set.
func (m *Manager) Reconcile(rec []Def) []Def {
	var out []Def
	seen := map[string]bool{}
	add := func(d Def) {
		if !seen[d.Name] {
			seen[d.Name] = true
			out = append(out, d)
		}
	}
	for _, s := range m.servers {
		tools, listed := s.listing()
		if listed && !s.cfg.Disabled {
			for _, rt := range tools {
				add(rt.def())
			}
			continue
		}
		for _, d := range rec {
			if d.Server == s.cfg.Name {
				add(d)
			}
		}
	}
	slices.SortFunc(out, func(a, b Def) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// RecordedSource returns the servers' tools as a session whose log keeps
// rec sees them: the recorded set while one is, each tool routed by name
// to its server when called; the listed set before anything is recorded.
func (m *Manager) RecordedSource(b *Binding, rec *Record) tool.Source {
	return &recorded{m: m, b: b, rec: rec}
}

type recorded struct {
	m   *Manager
	b   *Binding
	rec *Record
}

// Version keeps the two spaces apart by the low bit: the record's
// versions are odd, the manager's (while nothing is recorded) even.
func (r *recorded) Version() uint64 {
	if st := r.rec.state.Load(); st&1 == 1 {
		return st
	}
	return r.m.Version() << 1
}

func (r *recorded) Tools() []tool.Tool {
	defs, ok := r.rec.Get()
	if !ok {
		return (&source{m: r.m, b: r.b}).Tools()
	}
	out := make([]tool.Tool, 0, len(defs))
	for _, d := range defs {
		if len(d.Schema) > 0 && objectSchema(d.Schema) != nil {
			// Recorded before such tools were left out: offering it would
			// fail every request; the next one records it gone.
			continue
		}
		rt := &remoteTool{s: r.m.byName[d.Server], server: d.Server, name: d.Name, remote: d.Remote,
			desc: d.Description, schema: d.Schema, readOnly: d.ReadOnly, titleArg: identifyingArg(d.Schema)}
		out = append(out, &Tool{m: r.m, rt: rt, b: r.b, pinned: true})
	}
	return out
}
