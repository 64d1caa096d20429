package agent

import (
	"slices"
	"strings"

	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// toolSpecs rebuilds the specs the model is sent when the registry
// changed since they were built (a source such as an MCP server moved),
// and reports the change of names as a notice; ok is false when the set
// of names is the one the model was last sent, or it was sent none yet.
func (e *Engine) toolSpecs() (change session.Notice, ok bool) {
	v := e.opts.Tools.Version()
	e.specsMu.Lock()
	defer e.specsMu.Unlock()
	if e.specs != nil && v == e.specsVersion {
		return session.Notice{}, false
	}
	tools := e.opts.Tools.Tools()
	specs := make([]model.ToolSpec, len(tools))
	names := make([]string, len(tools))
	for i, t := range tools {
		specs[i] = t.Spec().ModelSpec()
		names[i] = specs[i].Name
	}
	slices.Sort(names)
	// Only a set the model was sent can have changed for it.
	first := !e.specsSent
	before := e.specNames
	e.specs, e.specsVersion, e.specNames = specs, v, names
	if first || slices.Equal(before, names) {
		return session.Notice{}, false
	}
	var added, removed []string
	for _, n := range names {
		if _, found := slices.BinarySearch(before, n); !found {
			added = append(added, n)
		}
	}
	for _, n := range before {
		if _, found := slices.BinarySearch(names, n); !found {
			removed = append(removed, n)
		}
	}
	var desc []string
	if len(added) > 0 {
		desc = append(desc, "now offered: "+strings.Join(added, ", "))
	}
	if len(removed) > 0 {
		desc = append(desc, "withdrawn: "+strings.Join(removed, ", "))
	}
	return session.Notice{Severity: session.SeverityInfo, Title: "The tools changed",
		Description: strings.Join(desc, "; ")}, true
}

// currentSpecs returns the specs the model is sent.
func (e *Engine) currentSpecs() []model.ToolSpec {
	e.specsMu.Lock()
	defer e.specsMu.Unlock()
	e.specsSent = true
	return e.specs
}
