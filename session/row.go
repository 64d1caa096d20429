package session

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"meka.dev/meka/model"
)

// Row is one entry of a session's log.
type Row struct {
	// Seq orders the rows of a session; assigned by the store.
	Seq int64 `json:"seq"`
	// Turn numbers the turn the row belongs to, from 1.
	Turn  int64     `json:"turn"`
	Time  time.Time `json:"time"`
	Entry Entry     `json:"-"`
}

// Entry is the payload of a row. The variants are UserMessage,
// AssistantMessage, ToolResult, Notice, Compaction, SystemPrompt, ToolSet
// and HookRun.
type Entry interface{ Kind() string }

// User message sources.
const (
	SourceUser     = ""         // typed by a person
	SourceSchedule = "schedule" // a scheduled job's prompt
	SourceTask     = "task"     // background task reports
	SourceSteer    = "steer"    // a message sent mid-turn
	// SourceReminder marks text meka itself put before the model, such as a
	// checklist nudge; it is not the user's words.
	SourceReminder = "reminder"
)

// UserMessage is what the user (or a job, or a task report) said, with
// attachments in place.
type UserMessage struct {
	Parts  model.Parts `json:"parts"`
	Source string      `json:"source,omitempty"`
	// Tasks names the background tasks a SourceTask message reports, so
	// that folds (a checklist item deferred on a task) read it from the log.
	Tasks []string `json:"tasks,omitempty"`
	// Command is the skill a person invoked as /<command> words: Parts
	// keep what they typed, which is what transcripts and replays show,
	// and Expansion what the model reads after it (the skill's body), kept
	// so that a resumed session sends the same bytes.
	Command   string      `json:"command,omitempty"`
	Expansion model.Parts `json:"expansion,omitempty"`
	// Reopen names the deferred checklist items a person picked up with
	// this message (the screen's /plan pick): the checklist's fold reopens
	// them, so that the agent owes them again without being asked to
	// reopen them itself.
	Reopen []string `json:"reopen,omitempty"`
	// Pinned marks words the person asked to keep: a compaction carries
	// them verbatim rather than summarizing them, however many follow.
	Pinned bool `json:"pinned,omitempty"`
}

// ModelParts are the parts the model reads for m: its words, then its
// expansion.
func (m UserMessage) ModelParts() model.Parts {
	if len(m.Expansion) == 0 {
		return m.Parts
	}
	return append(append(model.Parts(nil), m.Parts...), m.Expansion...)
}

// SystemPrompt records the system prompt a session's requests start with
// and what it was built from, so that every request, a resume and a fork
// send the same bytes until the session is started somewhere else, on
// another day, or reloaded.
type SystemPrompt struct {
	Text string `json:"text"`
	// Files are the instruction files loaded, as /status shows them.
	Files []string `json:"files,omitempty"`
	// Cwd, Roots and Day (2006-01-02 in the session's zone) are what the
	// prompt was built for.
	Cwd   string   `json:"cwd"`
	Roots []string `json:"roots,omitempty"`
	Day   string   `json:"day,omitempty"`
	// Client is what a front door's client added (ACP's systemPrompt),
	// the end of Text; a prompt built afresh keeps it.
	Client string `json:"client,omitempty"`
}

// AssistantMessage is one model response: text, thinking and tool calls.
type AssistantMessage struct {
	Parts model.Parts      `json:"parts"`
	Usage model.Usage      `json:"usage"`
	Stop  model.StopReason `json:"stop"`
	Model string           `json:"model,omitempty"`
}

// Tool result statuses.
const (
	StatusOK       = "ok"       // the tool ran and succeeded
	StatusError    = "error"    // the tool ran and reported an error
	StatusRefused  = "refused"  // the call was refused before it ran
	StatusCanceled = "canceled" // the call never finished
	// StatusInterrupted closes a call meka stopped while running (killed,
	// crashed): the call may have had effects, but it has no result.
	StatusInterrupted = "interrupted"
)

// ToolResult answers one tool call.
type ToolResult struct {
	CallID  string      `json:"call_id"`
	Name    string      `json:"name"`
	Status  string      `json:"status"`
	Content model.Parts `json:"content"`
	// Change is what the call changed, such as a unified diff.
	Change string `json:"change,omitempty"`
	// State is structured data a tool records for folds and front doors.
	State json.RawMessage `json:"state,omitempty"`
	// Usage is what the call spent on models itself (a sub-agent's turn),
	// counted in the turn's spend beside its assistant messages'.
	Usage model.Usage `json:"usage,omitzero"`
}

// Accepted reports whether the call ran and succeeded, so that folds may
// apply it.
func (r ToolResult) Accepted() bool { return r.Status == StatusOK }

// Notice severities.
const (
	SeverityInfo    = "info"
	SeverityWarning = "warning"
	SeverityError   = "error"
)

// Notice is something front doors show between messages: a stage
// direction, a warning, an error.
type Notice struct {
	Severity    string `json:"severity"`
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
}

// HookRun records one run of a person's hook (a command configured in
// Claude Code's format): when it ran, what it was, how it ended and what
// it decided, so that resume, fork and every front door show the same.
type HookRun struct {
	// Event is the hook event (PreToolUse, Stop, ...); Matcher the entry's
	// matcher as written; Tool the tool name it matched, for tool events.
	Event   string `json:"event"`
	Matcher string `json:"matcher,omitempty"`
	Tool    string `json:"tool,omitempty"`
	CallID  string `json:"call_id,omitempty"`
	// Source is the settings file the hook came from.
	Source  string `json:"source"`
	Command string `json:"command"`
	// Exit is the exit status, -1 when the hook did not exit by itself.
	Exit int `json:"exit"`
	// Decision is what the run decided: "block", "deny", "ask", "allow",
	// "stop", "error", or "" for none.
	Decision   string `json:"decision,omitempty"`
	Reason     string `json:"reason,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	// Output is the run's stdout and stderr, bounded.
	Stdout    string `json:"stdout,omitempty"`
	Stderr    string `json:"stderr,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	Confined  bool   `json:"confined,omitempty"`
}

// Notice is how front doors show a hook run between messages: one line
// saying what ran, on what, how it ended and why.
func (h HookRun) Notice() Notice {
	var b strings.Builder
	b.WriteString("Hook " + h.Event)
	if h.Tool != "" {
		b.WriteString(" (" + h.Tool + ")")
	}
	b.WriteString(": " + h.Command)
	switch h.Decision {
	case "":
		fmt.Fprintf(&b, " ran (exit %d, %d ms)", h.Exit, h.DurationMS)
	case "error":
		b.WriteString(" failed: " + h.Reason)
	default:
		fmt.Fprintf(&b, " decided %s (exit %d, %d ms)", h.Decision, h.Exit, h.DurationMS)
	}
	n := Notice{Severity: SeverityInfo, Title: b.String(), Description: h.Reason}
	if h.Decision == "error" {
		n.Severity, n.Description = SeverityWarning, ""
	}
	return n
}

// Compaction replaces the rows before KeptFrom with Summary when the
// conversation is sent to the model, and records every fold's state at
// this point.
type Compaction struct {
	Summary  string `json:"summary"`
	KeptFrom int64  `json:"kept_from"`
	// Checkpoint maps a fold's name to its state at the boundary.
	Checkpoint map[string]json.RawMessage `json:"checkpoint,omitempty"`
	// Trigger is "auto" or "manual"; Focus what a person asked the
	// summary to keep (/compact focus); Dropped what the summary replaced.
	Trigger string   `json:"trigger,omitempty"`
	Focus   string   `json:"focus,omitempty"`
	Dropped *Dropped `json:"dropped,omitempty"`
}

// Dropped is what one compaction took out of the model's view: the turns
// and rows it summarized, and how many bytes of them were tool output.
type Dropped struct {
	Turns           int `json:"turns"`
	Messages        int `json:"messages"`
	ToolOutputs     int `json:"tool_outputs"`
	Bytes           int `json:"bytes"`
	ToolOutputBytes int `json:"tool_output_bytes"`
}

// String says what was dropped in one line, as /context and sessions
// show print it.
func (d Dropped) String() string {
	return fmt.Sprintf("%d turns, %d messages, %d tool outputs (%s of %s)",
		d.Turns, d.Messages, d.ToolOutputs, byteSize(d.ToolOutputBytes), byteSize(d.Bytes))
}

// Describe says in one line how a compaction came about and what it
// dropped, as /context and sessions show print it.
func (c Compaction) Describe() string {
	var b strings.Builder
	b.WriteString("compaction")
	if c.Trigger != "" {
		b.WriteString(" (" + c.Trigger)
		if c.Focus != "" {
			fmt.Fprintf(&b, ", focus %q", c.Focus)
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, ", kept from row %d", c.KeptFrom)
	if c.Dropped != nil {
		b.WriteString(": dropped " + c.Dropped.String())
	}
	return b.String()
}

func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// ToolSet records a change of the tools a source outside meka (the MCP
// servers) offers the model, so that resume and fork offer the same
// definitions the log says the model was sent. A source's first row lists
// its whole set; later ones only what was added or changed, and the names
// removed. Folding a source's rows in order gives its set at any row.
type ToolSet struct {
	// Source names the set ("mcp").
	Source string `json:"source"`
	// Tools are the tools added, or changed, by name.
	Tools   []ToolDef `json:"tools,omitempty"`
	Removed []string  `json:"removed,omitempty"`
}

// ToolDef is one recorded tool: what the model is sent, and what routes a
// call to the server that runs it.
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema"`
	// Server names the server and Remote is its own name for the tool.
	Server string `json:"server,omitempty"`
	Remote string `json:"remote,omitempty"`
	// ReadOnly is the server's readOnlyHint when the set was recorded.
	ReadOnly bool `json:"read_only,omitempty"`
}

func (UserMessage) Kind() string      { return "user" }
func (AssistantMessage) Kind() string { return "assistant" }
func (ToolResult) Kind() string       { return "tool_result" }
func (Notice) Kind() string           { return "notice" }
func (Compaction) Kind() string       { return "compaction" }
func (SystemPrompt) Kind() string     { return "system_prompt" }
func (ToolSet) Kind() string          { return "tool_set" }
func (HookRun) Kind() string          { return "hook" }

// EncodeEntry returns an entry's kind and JSON payload, as stores keep them.
func EncodeEntry(e Entry) (kind string, payload []byte, err error) {
	payload, err = json.Marshal(e)
	if err != nil {
		return "", nil, fmt.Errorf("encode %s row: %w", e.Kind(), err)
	}
	return e.Kind(), payload, nil
}

// DecodeEntry is the inverse of EncodeEntry.
func DecodeEntry(kind string, payload []byte) (Entry, error) {
	var e Entry
	var err error
	switch kind {
	case "user":
		var v UserMessage
		err, e = json.Unmarshal(payload, &v), &v
	case "assistant":
		var v AssistantMessage
		err, e = json.Unmarshal(payload, &v), &v
	case "tool_result":
		var v ToolResult
		err, e = json.Unmarshal(payload, &v), &v
	case "notice":
		var v Notice
		err, e = json.Unmarshal(payload, &v), &v
	case "compaction":
		var v Compaction
		err, e = json.Unmarshal(payload, &v), &v
	case "system_prompt":
		var v SystemPrompt
		err, e = json.Unmarshal(payload, &v), &v
	case "tool_set":
		var v ToolSet
		err, e = json.Unmarshal(payload, &v), &v
	case "hook":
		var v HookRun
		err, e = json.Unmarshal(payload, &v), &v
	default:
		return nil, fmt.Errorf("decode row: unknown kind %q", kind)
	}
	if err != nil {
		return nil, fmt.Errorf("decode %s row: %w", kind, err)
	}
	return deref(e), nil
}

// deref turns the pointer DecodeEntry filled into the value variants are
// used as.
func deref(e Entry) Entry {
	switch v := e.(type) {
	case *UserMessage:
		return *v
	case *AssistantMessage:
		return *v
	case *ToolResult:
		return *v
	case *Notice:
		return *v
	case *Compaction:
		return *v
	case *SystemPrompt:
		return *v
	case *ToolSet:
		return *v
	case *HookRun:
		return *v
	}
	return e
}

// MarshalJSON writes a row with its kind, for `meka sessions show --json`.
func (r Row) MarshalJSON() ([]byte, error) {
	kind, payload, err := EncodeEntry(r.Entry)
	if err != nil {
		return nil, err
	}
	type wire struct {
		Seq   int64           `json:"seq"`
		Turn  int64           `json:"turn"`
		Time  time.Time       `json:"time"`
		Kind  string          `json:"kind"`
		Entry json.RawMessage `json:"entry"`
	}
	return json.Marshal(wire{r.Seq, r.Turn, r.Time, kind, payload})
}

func (r *Row) UnmarshalJSON(b []byte) error {
	var w struct {
		Seq   int64           `json:"seq"`
		Turn  int64           `json:"turn"`
		Time  time.Time       `json:"time"`
		Kind  string          `json:"kind"`
		Entry json.RawMessage `json:"entry"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	e, err := DecodeEntry(w.Kind, w.Entry)
	if err != nil {
		return err
	}
	*r = Row{Seq: w.Seq, Turn: w.Turn, Time: w.Time, Entry: e}
	return nil
}

// TitleOf returns the title a user message gives a session, "" for any
// other entry: a person's words (not a job's prompt, a task report or a
// reminder), with attachments as @name and whitespace collapsed. The host
// and every store title sessions with it, so they agree.
func TitleOf(e Entry) string {
	u, ok := deref(e).(UserMessage)
	if !ok || u.Source != SourceUser {
		return ""
	}
	var words []string
	for _, p := range u.Parts {
		switch p := p.(type) {
		case model.Text:
			words = append(words, p.Text)
		case model.Resource:
			words = append(words, "@"+p.Name)
		}
	}
	return Title(strings.Join(strings.Fields(strings.Join(words, " ")), " "))
}
