// Package checklist is meka's checklist: the list the agent keeps of what
// it has committed to do, and the rule that a turn cannot end while an
// item on it is pending or in progress.
//
// It is a plugin on the engine's seams: three bookkeeping tools
// (checklist_add, checklist_edit, checklist_read), a fold that derives the
// list from the session's accepted calls and task reports and announces
// every change as a plan.Changed, a stop interceptor that sends the model
// back to its open items (three nudges in a row without a tool call, nine
// in a turn), and a compaction contributor that carries the open list into
// the summary. Nothing is injected between turns.
//
// It imports plan, agent, tool, session, model and permission; never the
// host, which wires it in.
package checklist

import (
	"context"

	"meka.dev/meka/agent"
	"meka.dev/meka/plan"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// TaskLookup tells the checklist about a session's background tasks. Its
// method set is the host's, so the host's value serves both.
type TaskLookup interface {
	// TaskState reports whether the task exists and whether its report
	// has been delivered to the session.
	TaskState(id string) (exists, reported bool)
}

// Options configure a Plugin. The zero value is a checklist for a
// session without background tasks.
type Options struct {
	// Tasks reports on the session's background tasks; nil means the
	// session has none, so no deferral can name one.
	Tasks TaskLookup
	// Denied reports whether the [tools] filters remove a tool (the
	// registry's Denied). When they remove any of the three tools the
	// whole feature is off, since a list that can be added to but not
	// edited (or not read) is a trap: no tool is offered, the list is
	// empty to every reader, no change is announced and no turn is held,
	// even for items the log holds from before. nil denies nothing.
	Denied func(name string) bool
}

// Plugin is one session's checklist. Build a new one for every engine.
type Plugin struct {
	opts Options
	fold *Fold
	stop *interceptor
}

// New returns a session's checklist with an empty list; the engine's
// replay of the log fills it.
func New(opts Options) *Plugin {
	p := &Plugin{opts: opts}
	p.fold = &Fold{enabled: p.Enabled}
	p.stop = &interceptor{p: p}
	return p
}

// ToolNames are the checklist's tools; the feature needs all three.
var ToolNames = []string{addName, editName, readName}

// Enabled reports whether the filters leave every tool the feature needs.
func (p *Plugin) Enabled() bool {
	return len(DeniedTools(p.opts.Denied)) == 0
}

// DeniedTools returns the checklist tools denied removes, in ToolNames'
// order; any of them turns the feature off. The composition root uses it
// to say so at startup.
func DeniedTools(denied func(name string) bool) []string {
	var out []string
	for _, n := range ToolNames {
		if denied != nil && denied(n) {
			out = append(out, n)
		}
	}
	return out
}

// Tools returns checklist_add, checklist_edit and checklist_read, or none
// when the feature is off.
func (p *Plugin) Tools() []tool.Tool {
	if !p.Enabled() {
		return nil
	}
	return []tool.Tool{addTool{p}, editTool{p}, readTool{p}}
}

// Fold returns the fold that derives the list; give it to the engine's
// Folds.
func (p *Plugin) Fold() *Fold { return p.fold }

// Interceptor returns the stop interceptor that holds a turn while an
// item is open.
func (p *Plugin) Interceptor() agent.StopInterceptor { return p.stop }

// Compactor returns the contributor that copies the list into a
// compaction summary.
func (p *Plugin) Compactor() agent.CompactionContributor { return compactor{p} }

// Items returns the items on the list, in order.
func (p *Plugin) Items() []plan.Item { return p.fold.Items() }

// Compose returns everything the checklist adds to an engine, as the other
// dialects' Compose does.
func (p *Plugin) Compose() agent.Extension {
	return agent.Extension{
		Tools:        p.Tools(),
		Interceptors: []agent.StopInterceptor{p.Interceptor()},
		Compactors:   []agent.CompactionContributor{p.Compactor()},
		Folds:        []session.Fold{p.Fold()},
	}
}

func (p *Plugin) taskState(id string) (exists, reported bool) {
	if p.opts.Tasks == nil {
		return false, false
	}
	return p.opts.Tasks.TaskState(id)
}

// compactor carries the list into a compaction summary, verbatim: the
// calls that built it are what the summary replaces.
type compactor struct{ p *Plugin }

// CompactionHeading opens the list in a compaction summary.
const CompactionHeading = "The checklist when the conversation was compacted (ids as checklist_edit takes them):"

func (c compactor) CompactionText(context.Context) string {
	items := c.p.Items()
	if len(items) == 0 {
		return ""
	}
	return CompactionHeading + "\n" + lines(items)
}
