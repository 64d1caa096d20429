// Package tool defines what a tool is to meka: the Tool interface, the
// Spec every tool declares (schema, level, kind, title, parallel safety,
// bookkeeping), argument validation against the schema, the Registry with
// its deny filters, and the permission gate applied at dispatch.
//
// It imports model and permission only.
package tool

import (
	"context"
	"encoding/json"

	"meka.dev/meka/model"
	"meka.dev/meka/permission"
)

// Kind is what a tool does, in the Agent Client Protocol's vocabulary.
type Kind string

const (
	KindRead    Kind = "read"
	KindEdit    Kind = "edit"
	KindDelete  Kind = "delete"
	KindMove    Kind = "move"
	KindSearch  Kind = "search"
	KindExecute Kind = "execute"
	KindThink   Kind = "think"
	KindFetch   Kind = "fetch"
	KindOther   Kind = "other"
)

// Spec is what a tool declares about itself.
type Spec struct {
	Name        string
	Description string
	// Schema is the JSON schema of the arguments; calls are validated
	// against it before Run. Only these keywords are understood, and a
	// schema using another is refused at registration: type, properties,
	// required, additionalProperties, items, enum, const, minItems,
	// maxItems, minLength, maxLength, minimum, maximum, pattern (Go
	// regexp syntax), allOf, anyOf, oneOf, and the annotations
	// description, title, default, examples and $schema.
	Schema json.RawMessage
	// Level is what the session must hold for a call to run.
	Level permission.Level
	Kind  Kind
	// ParallelSafe calls of one round may run concurrently.
	ParallelSafe bool
	// Bookkeeping tools keep the agent's own records (checklists, plans):
	// a round spent only on them is refunded against MaxTurns and the
	// repeat guard ignores them.
	Bookkeeping bool
	// ServerValidated says another program (an MCP server) validates the
	// arguments: a schema the validator cannot express is passed to the
	// model as it is instead of being refused, and calls go unchecked here.
	ServerValidated bool
}

// ModelSpec is the spec as the model is told it.
func (s Spec) ModelSpec() model.ToolSpec {
	return model.ToolSpec{Name: s.Name, Description: s.Description, Parameters: s.Schema}
}

// Tool is a capability the model can call. Run is called only with
// arguments that validated against Spec().Schema and only when the
// session's level allows it.
//
// Two error channels: a Result with IsError is feedback the model can act
// on; a returned error means the infrastructure failed and ends the turn.
type Tool interface {
	Spec() Spec
	Run(ctx context.Context, call Call) (Result, error)
}

// Titler is implemented by tools whose calls have a title better than
// their name: the name and the argument that identifies the call.
type Titler interface {
	Title(args json.RawMessage) string
}

// Locator is implemented by tools that touch files.
type Locator interface {
	// Locations returns the absolute paths a call touches; relative paths
	// resolve against cwd.
	Locations(args json.RawMessage, cwd string) []Location
}

// CallLeveler is implemented by tools some of whose calls need more than
// the tool's level, such as a file tool given a path outside the
// workspace roots, which only the unrestricted level may touch. With
// approvals on, the gate puts such a call to the asker as it does any call
// above the session's level; with approvals off it lets the tool refuse
// the call itself, in its own words.
type CallLeveler interface {
	// CallLevel returns the level call needs; call.Level is the
	// session's level.
	CallLevel(call Call) permission.Level
}

// Location is a file a call touches, with the line it starts at if any.
type Location struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty"`
}

// Call is one invocation.
type Call struct {
	ID        string
	Name      string
	Arguments json.RawMessage
	SessionID string
	// Cwd is the session's canonical working directory.
	Cwd string
	// Level is the session's level at dispatch.
	Level permission.Level
	// Output receives live output (a shell's), for front doors; it may be
	// nil and must not be called after Run returns.
	Output func(chunk string)
	// Progress replaces what front doors show of the running call with
	// lines, whole each time (a sub-agent's recent calls); like Output it
	// may be nil and must not be called after Run returns.
	Progress func(lines []string)
}

// Result is what a call produced.
type Result struct {
	Content []model.Part
	IsError bool
	// Change records what the call changed, such as a unified diff.
	Change string
	// State is structured data for folds and front doors; it is persisted.
	State json.RawMessage
	// Usage is what the call spent on models (a sub-agent's turn); the
	// engine adds it to the turn's usage.
	Usage model.Usage
	// Notice, when set, is a sentence for the person, not the model: the
	// engine records it as a notice after the result (a session at read
	// that wrote a memory, which outlives it).
	Notice string
}

// Text returns a result of one text part.
func Text(s string) Result { return Result{Content: []model.Part{model.Text{Text: s}}} }

// Errorf returns an error result: feedback the model can act on.
func Errorf(format string, args ...any) Result {
	r := Text(sprintf(format, args...))
	r.IsError = true
	return r
}

// Title returns the title of a call of t.
func Title(t Tool, args json.RawMessage) string {
	if ti, ok := t.(Titler); ok {
		if s := ti.Title(args); s != "" {
			return s
		}
	}
	return t.Spec().Name
}

// Locations returns the locations a call of t touches, nil if it does not
// say.
func Locations(t Tool, args json.RawMessage, cwd string) []Location {
	if l, ok := t.(Locator); ok {
		return l.Locations(args, cwd)
	}
	return nil
}
