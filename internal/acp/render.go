package acp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/model"
	"meka.dev/meka/plan"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// This file renders a session's live events as session/update
// notifications. Events arrive one at a time (the engine serializes
// them), from the turn's goroutine, so everything a turn renders is on
// the wire before its prompt is answered.

// consoleWindow bounds the trailing output a console block shows while a
// command runs.
const consoleWindow = 8 << 10

// callState is what rendering remembers of one tool call.
type callState struct {
	id       string // the id in the client's thread
	name     string
	kind     tool.Kind
	path     string // the first location, for diffs
	terminal bool   // announced as a terminal (_meta.terminal_info)
	streamed bool   // live output went out
	output   string // the trailing consoleWindow of live output
}

func (e *entry) onEvent(ev agent.Event) {
	ctx := e.s.base
	send := func(u SessionUpdate) { e.s.notify(ctx, e.id, u) }
	switch ev := ev.(type) {
	case agent.TurnStarted:
		e.turnStarted(ev, send)
	case agent.TextChunk:
		send(e.chunk(TagAgentMessage, TextBlock(ev.Text)))
	case agent.ThoughtChunk:
		send(e.chunk(TagAgentThought, TextBlock(ev.Text)))
	case agent.UserMessage:
		if ev.Message.Source == session.SourceSteer {
			e.endMessage()
			for _, b := range userBlocks(ev.Message.Parts) {
				send(e.chunk(TagUserMessage, b))
			}
			e.endMessage()
		}
	case agent.ToolCallStarted:
		e.endMessage()
		send(e.callStarted(ev))
	case agent.ToolCallOutput:
		if u, ok := e.callOutput(ev); ok {
			send(u)
		}
	case agent.ToolCallProgress:
		// A sub-agent's recent calls, whole: clients replace a call's
		// content rather than append to it. A client that shows
		// sub-agents as sessions sees them there instead.
		if e.s.caps().Subagents != nil {
			break
		}
		if cs := e.call(ev.CallID); cs != nil {
			send(ToolCallUpdate{ToolCallID: cs.id, Content: []ToolCallContent{{Type: "content", Content: ptr(TextBlock(strings.Join(ev.Lines, "\n")))}}})
		}
	case agent.ToolCallFinished:
		if u, ok := e.callFinished(ev); ok {
			send(u)
		}
	case agent.Notice:
		send(e.notice(ev.Notice))
	case agent.HookFinished:
		send(e.notice(ev.Run.Notice()))
	case agent.Usage:
		// A provider round ended: its reply was one message.
		e.endMessage()
		e.spent(ev.Turn.Cost)
		if ev.Window > 0 {
			send(e.usageUpdate(ev.ContextTokens, ev.Window))
		}
	case agent.CompactionStarted:
		send(e.compactionStarted(ev))
	case agent.CompactionFailed:
		if u, ok := e.compactionFailed(ev); ok {
			send(u)
		}
	case agent.Compacted:
		for _, u := range e.compaction(ev.Summary, liveFacts(ev), true) {
			send(u)
		}
	case plan.Changed:
		if e.s.caps().Plan != nil {
			send(planOp(ev))
		} else {
			send(planUpdate(ev))
		}
	case agent.TurnEnded:
		e.mu.Lock()
		e.costBefore = e.cost
		e.mu.Unlock()
		e.childIdle(ev.Result)
	}
}

// spent sets what the session has cost from what the turn (or a
// compaction outside one) has cost so far: its sub-agents' and its
// compaction's calls included, as the turn's usage counts them.
func (e *entry) spent(turn float64) {
	e.mu.Lock()
	e.cost = e.costBefore + turn
	e.mu.Unlock()
}

// usageUpdate is the gauge, with what the session has cost so far when
// the model's prices are known.
func (e *entry) usageUpdate(used, size int) UsageUpdate {
	u := UsageUpdate{Used: used, Size: size}
	e.mu.Lock()
	if e.cost > 0 {
		u.Cost = &Cost{Amount: e.cost, Currency: "USD"}
	}
	e.mu.Unlock()
	return u
}

// chunk is a content chunk of the message being streamed under tag: a
// message runs until endMessage, and each tag is a message of its own.
func (e *entry) chunk(tag string, b ContentBlock) ContentChunk {
	e.mu.Lock()
	defer e.mu.Unlock()
	id := e.messages[tag]
	if id == "" {
		e.msgN++
		id = fmt.Sprintf("msg_%s_%d", e.msgToken, e.msgN)
		e.messages[tag] = id
	}
	return ContentChunk{Tag: tag, Content: b, MessageID: id}
}

// endMessage ends the messages being streamed: the next chunk starts a
// new one.
func (e *entry) endMessage() {
	e.mu.Lock()
	clear(e.messages)
	e.mu.Unlock()
}

func (e *entry) turnStarted(ev agent.TurnStarted, send func(SessionUpdate)) {
	e.endMessage()
	e.mu.Lock()
	clear(e.calls)
	titled := e.titled
	if ev.Input.Source == session.SourceUser && !titled {
		e.titled = true
	}
	e.mu.Unlock()
	switch ev.Input.Source {
	case session.SourceUser:
		if !titled {
			if t := e.session().Meta().Title; t != "" {
				send(SessionInfoUpdate{Title: &t})
			}
		}
	case session.SourceSchedule:
		// The transcript shows what triggered a scheduled turn.
		for _, b := range userBlocks(ev.Input.Parts) {
			send(e.chunk(TagUserMessage, b))
		}
		e.endMessage()
	}
	if e.parent != nil && ev.Input.Source != session.SourceSchedule {
		// A sub-agent's session shows the task it was given, as its
		// user's words.
		for _, b := range userBlocks(ev.Input.Parts) {
			send(e.chunk(TagUserMessage, b))
		}
		e.endMessage()
	}
}

// userBlocks renders a user message's parts: text, resources as links
// named as the editor named them, images as images.
func userBlocks(parts model.Parts) []ContentBlock {
	var out []ContentBlock
	for _, p := range parts {
		switch p := p.(type) {
		case model.Text:
			out = append(out, TextBlock(p.Text))
		case model.Resource:
			name := p.Name
			if name == "" {
				name = lastSegment(p.URI)
			}
			out = append(out, ContentBlock{Type: "resource_link", URI: p.URI, Name: name, MimeType: p.MimeType})
		case model.Image:
			out = append(out, ContentBlock{Type: "image", MimeType: p.MediaType, Data: base64.StdEncoding.EncodeToString(p.Data)})
		}
	}
	return out
}

func kindOf(k tool.Kind) string {
	if k == "" {
		return string(tool.KindOther)
	}
	return string(k)
}

func locations(ls []tool.Location) []ToolCallLocation {
	out := make([]ToolCallLocation, 0, len(ls))
	for _, l := range ls {
		loc := ToolCallLocation{Path: l.Path}
		if l.Line > 0 {
			line := l.Line
			loc.Line = &line
		}
		out = append(out, loc)
	}
	return out
}

// terminalOutput reports whether the client draws agent-owned terminals.
func (c ClientCapabilities) terminalOutput() bool {
	v, _ := c.Meta["terminal_output"].(bool)
	return v
}

func (e *entry) callStarted(ev agent.ToolCallStarted) ToolCall {
	cs := &callState{name: ev.Name, kind: ev.Kind}
	if len(ev.Locations) > 0 {
		cs.path = ev.Locations[0].Path
	}
	e.mu.Lock()
	cs.id = e.ids.assign(ev.CallID)
	e.calls[ev.CallID] = cs
	cwd := e.hs.Meta().Cwd
	e.mu.Unlock()
	tc := ToolCall{ToolCallID: cs.id, Title: ev.Title, Name: ev.Name, Kind: kindOf(ev.Kind), Status: "in_progress",
		Locations: locations(ev.Locations), RawInput: rawJSON(ev.Arguments)}
	if tc.Title == "" {
		tc.Title = ev.Name
	}
	if ev.Kind == tool.KindExecute && e.s.caps().terminalOutput() {
		cs.terminal = true
		tc.Content = []ToolCallContent{{Type: "terminal", TerminalID: cs.id}}
		tc.Meta = Meta{"terminal_info": map[string]any{"terminal_id": cs.id, "cwd": cwd}}
	}
	return tc
}

func (e *entry) call(providerID string) *callState {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls[providerID]
}

// callOutput streams a running command's output: appended to the
// terminal, or a console block of its trailing window. The shell tool
// already paces chunks (at most one per 150 ms).
func (e *entry) callOutput(ev agent.ToolCallOutput) (SessionUpdate, bool) {
	cs := e.call(ev.CallID)
	if cs == nil || ev.Chunk == "" {
		return nil, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	cs.streamed = true
	if cs.terminal {
		return ToolCallUpdate{ToolCallID: cs.id, Meta: Meta{"terminal_output": map[string]any{"terminal_id": cs.id, "data": ev.Chunk}}}, true
	}
	// Only the trailing window is ever shown, so only it is kept.
	cs.output = tail(cs.output+ev.Chunk, consoleWindow)
	return ToolCallUpdate{ToolCallID: cs.id, Content: []ToolCallContent{console(cs.output)}}, true
}

// shellState is the part of shell_execute's recorded state rendering
// needs.
type shellState struct {
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal"`
}

func (e *entry) callFinished(ev agent.ToolCallFinished) (SessionUpdate, bool) {
	cs := e.call(ev.CallID)
	if cs == nil {
		e.mu.Lock()
		cs = &callState{id: e.ids.assign(ev.CallID), name: ev.Result.Name}
		e.mu.Unlock()
	}
	r := ev.Result
	u := ToolCallUpdate{ToolCallID: cs.id, RawOutput: rawOutput(r)}
	canceled := r.Status == session.StatusCanceled
	if !canceled {
		u.Status = status(r.Status)
		u.Content = resultContent(cs, r)
	}
	if cs.terminal {
		exit := map[string]any{"terminal_id": cs.id, "exit_code": nil, "signal": nil}
		var st shellState
		if json.Unmarshal(r.State, &st) == nil {
			if st.ExitCode >= 0 {
				exit["exit_code"] = st.ExitCode
			}
			if st.Signal != "" {
				exit["signal"] = st.Signal
			}
		}
		u.Meta = Meta{"terminal_exit": exit}
		if !cs.streamed {
			// Nothing was streamed: the terminal gets the whole output.
			u.Meta["terminal_output"] = map[string]any{"terminal_id": cs.id, "data": resultText(r)}
		}
		u.Content = nil
		return u, true
	}
	// A call a cancel stopped is left for the client to mark.
	return u, !canceled
}

func status(s string) string {
	if s == session.StatusOK {
		return "completed"
	}
	return "failed"
}

// resultContent is a result as the client shows it: a command's output in
// a console block, an edit's change as a diff, anything else as it is.
func resultContent(cs *callState, r session.ToolResult) []ToolCallContent {
	var out []ToolCallContent
	switch {
	case cs.kind == tool.KindExecute:
		out = append(out, console(resultText(r)))
	case r.Change != "" && cs.path != "" && r.Status == session.StatusOK:
		out = append(out, diffContent(cs.path, r.Change)...)
		if len(out) == 0 {
			out = append(out, codeBlock("diff", r.Change))
		}
		if t := resultText(r); t != "" {
			out = append(out, ToolCallContent{Type: "content", Content: ptr(TextBlock(t))})
		}
	case r.Change != "" && r.Status == session.StatusOK:
		// A change with no file (a memory): the diff as a code block.
		out = append(out, codeBlock("diff", r.Change))
		if t := resultText(r); t != "" {
			out = append(out, ToolCallContent{Type: "content", Content: ptr(TextBlock(t))})
		}
	default:
		for _, p := range r.Content {
			switch p := p.(type) {
			case model.Text:
				out = append(out, ToolCallContent{Type: "content", Content: ptr(TextBlock(p.Text))})
			case model.Image:
				out = append(out, ToolCallContent{Type: "content", Content: &ContentBlock{Type: "image", MimeType: p.MediaType, Data: base64.StdEncoding.EncodeToString(p.Data)}})
			}
		}
	}
	return out
}

func resultText(r session.ToolResult) string {
	var b strings.Builder
	for _, p := range r.Content {
		if t, ok := p.(model.Text); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func ptr[T any](v T) *T { return &v }

// console is output in a fenced console block.
func console(s string) ToolCallContent { return codeBlock("console", s) }

func codeBlock(lang, s string) ToolCallContent {
	fence := "```"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return ToolCallContent{Type: "content", Content: ptr(TextBlock(fence + lang + "\n" + s + fence))}
}

// tail returns the last n bytes of s, from a line start when one is near.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	t := s[len(s)-n:]
	if i := strings.IndexByte(t, '\n'); i >= 0 && i < len(t)-1 {
		return t[i+1:]
	}
	return t
}

// rawOutput is a result as structured data: its status, text and state.
func rawOutput(r session.ToolResult) json.RawMessage {
	out := map[string]any{"status": r.Status, "output": resultText(r)}
	if len(r.State) > 0 && json.Valid(r.State) {
		out["state"] = json.RawMessage(r.State)
	}
	b, _ := json.Marshal(out)
	return b
}

func rawJSON(b json.RawMessage) json.RawMessage {
	if len(b) == 0 || !json.Valid(b) {
		return json.RawMessage("{}")
	}
	return b
}

// notice renders an advisory meka raised: a notice where the client
// presents them, else a [meka]-prefixed chunk. A background task's report
// carries the tasks it names in _meta.background.tasks, or without
// notices is the parenthesized stage direction a replay says.
func (e *entry) notice(n session.Notice) SessionUpdate {
	caps := e.s.caps()
	tasks := e.reportedTasks(n.Title)
	// The engine's notice carries the provider's text, or a connection
	// error naming base_url; the relay policy keeps both to meka's log.
	n = host.RelayNotice(n, e.s.opts.RelayProviderErrors)
	if caps.Session != nil && caps.Session.Notices != nil {
		sev := n.Severity
		switch sev {
		case "":
			sev = session.SeverityInfo
		case session.SeverityError:
			// The protocol's notices are info or warning.
			sev = session.SeverityWarning
		}
		u := NoticeUpdate{Severity: sev, Title: n.Title, Description: n.Description}
		if len(tasks) > 0 {
			u.Meta = Meta{"background": map[string]any{"tasks": tasks}}
		}
		return u
	}
	if len(tasks) > 0 {
		return ContentChunk{Tag: TagAgentMessage, Content: TextBlock("(" + n.Title + ")\n"), MessageID: e.noticeID()}
	}
	prefix := "[meka] "
	if n.Severity == session.SeverityWarning || n.Severity == session.SeverityError {
		prefix = "[meka warn] "
	}
	text := prefix + n.Title
	if n.Description != "" {
		text += "\n" + n.Description
	}
	return ContentChunk{Tag: TagAgentMessage, Content: TextBlock(text + "\n"), MessageID: e.noticeID()}
}

// noticeID is the message id of a notice said as a chunk: a message of
// its own, between the messages around it.
func (e *entry) noticeID() string {
	e.endMessage()
	id := e.chunk(TagAgentMessage, ContentBlock{}).MessageID
	e.endMessage()
	return id
}

// reportedTasks returns the session's background tasks a stage direction
// names ("Background task 7f3a1c22 finished after 12m 4s"), as JSON.
func (e *entry) reportedTasks(title string) []json.RawMessage {
	if !strings.HasPrefix(title, "Background task") {
		return nil
	}
	var out []json.RawMessage
	for _, t := range e.session().Tasks() {
		if t.ID != "" && strings.Contains(title, t.ID) {
			if b, err := json.Marshal(t); err == nil {
				out = append(out, b)
			}
		}
	}
	return out
}

// compactionID numbers the next compaction of the session.
func (e *entry) compactionID() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.compactions++
	id := fmt.Sprintf("compaction-%d", e.compactions)
	if !e.ids.fresh {
		id = e.ids.assign(id)
	}
	return id
}

const (
	compactingTitle = "Compacting the conversation"
	compactedTitle  = "Compacted the conversation: older turns were summarized"
)

// compactionFacts is _meta.compaction: meka's facts about one
// compaction, the fields of the HTTP API's context.compacted event.
func compactionFacts(id string, facts map[string]any) Meta {
	f := map[string]any{"compaction_id": id}
	for k, v := range facts {
		f[k] = v
	}
	return Meta{"compaction": f}
}

// liveFacts are a finished compaction's facts.
func liveFacts(ev agent.Compacted) map[string]any {
	f := map[string]any{
		"trigger": ev.Trigger, "status": "completed", "kept_from_row": ev.KeptFrom,
		"rows_summarized": ev.RowsSummarized, "kept_turns": ev.KeptTurns,
		"tokens_before": ev.TokensBefore, "tokens_after": ev.TokensAfter,
		"checklist_carried": carriesPlan(ev.Checkpoint), "dropped": ev.Dropped,
	}
	if ev.Focus != "" {
		f["focus"] = ev.Focus
	}
	return f
}

// recordedFacts are what a compaction's row says of it, for a replay.
func recordedFacts(c session.Compaction) map[string]any {
	f := map[string]any{"status": "completed", "kept_from_row": c.KeptFrom, "checklist_carried": carriesPlan(c.Checkpoint)}
	if c.Trigger != "" {
		f["trigger"] = c.Trigger
	}
	if c.Focus != "" {
		f["focus"] = c.Focus
	}
	if c.Dropped != nil {
		f["dropped"] = *c.Dropped
	}
	return f
}

// carriesPlan reports whether a checkpoint carries a checklist or plan
// with items past the boundary: the plan dialects' folds record a list
// of "items".
func carriesPlan(checkpoint map[string]json.RawMessage) bool {
	for _, name := range []string{"checklist", "update_plan", "write_todos"} {
		var st struct {
			Items []json.RawMessage `json:"items"`
		}
		if json.Unmarshal(checkpoint[name], &st) == nil && len(st.Items) > 0 {
			return true
		}
	}
	return false
}

// compactionNative reports whether the client renders compaction_update.
func (e *entry) compactionNative() bool {
	caps := e.s.caps()
	return caps.Session != nil && caps.Session.Compaction != nil
}

// compactionStarted opens a live compaction: a compaction_update in
// progress where the client renders one, else a think tool call.
func (e *entry) compactionStarted(ev agent.CompactionStarted) SessionUpdate {
	id := e.compactionID()
	e.mu.Lock()
	e.compacting = id
	e.mu.Unlock()
	facts := map[string]any{"trigger": ev.Trigger, "tokens_before": ev.TokensBefore}
	if e.compactionNative() {
		return CompactionUpdate{CompactionID: id, Status: "in_progress", Meta: compactionFacts(id, facts)}
	}
	return ToolCall{ToolCallID: id, Title: compactingTitle, Kind: string(tool.KindThink), Status: "in_progress", Meta: compactionFacts(id, facts)}
}

// compactionFailed closes the live compaction as failed or cancelled.
func (e *entry) compactionFailed(ev agent.CompactionFailed) (SessionUpdate, bool) {
	e.mu.Lock()
	id := e.compacting
	e.compacting = ""
	e.mu.Unlock()
	if id == "" {
		return nil, false
	}
	status, reason, title := "failed", "The compaction failed; the conversation is unchanged.", "Compaction failed"
	if ev.Canceled {
		status, reason, title = "cancelled", "The compaction was cancelled; the conversation is unchanged.", "Interrupted"
	}
	facts := map[string]any{"status": status}
	if ev.Err != nil && !ev.Canceled {
		facts["error"] = host.RelayNotice(session.Notice{Title: ev.Err.Error()}, e.s.opts.RelayProviderErrors).Title
	}
	meta := compactionFacts(id, facts)
	if e.compactionNative() {
		return CompactionUpdate{CompactionID: id, Status: status, Error: reason, Meta: meta}, true
	}
	raw, _ := json.Marshal(meta["compaction"])
	return ToolCallUpdate{ToolCallID: id, Title: &title, Status: "failed", RawOutput: raw, Meta: meta,
		Content: []ToolCallContent{{Type: "content", Content: ptr(TextBlock(reason))}}}, true
}

// compaction renders a finished compaction: live, it completes the one
// compactionStarted opened; in a replay it is opened and completed at
// once. facts go out as _meta.compaction, and as the card's rawOutput.
func (e *entry) compaction(summary string, facts map[string]any, live bool) []SessionUpdate {
	var out []SessionUpdate
	id := ""
	if live {
		e.mu.Lock()
		id, e.compacting = e.compacting, ""
		e.mu.Unlock()
	}
	if id == "" {
		id = e.compactionID()
		if e.compactionNative() {
			if live {
				out = append(out, CompactionUpdate{CompactionID: id, Status: "in_progress", Meta: compactionFacts(id, map[string]any{"trigger": facts["trigger"]})})
			}
		} else {
			out = append(out, ToolCall{ToolCallID: id, Title: compactingTitle, Kind: string(tool.KindThink), Status: "in_progress"})
		}
	}
	meta := compactionFacts(id, facts)
	if e.compactionNative() {
		return append(out, CompactionUpdate{CompactionID: id, Status: "completed", Summary: []ContentBlock{TextBlock(summary)}, Meta: meta})
	}
	done := compactedTitle
	raw := map[string]any{"summary_chars": len(summary)}
	for k, v := range meta["compaction"].(map[string]any) {
		raw[k] = v
	}
	rawJSON, _ := json.Marshal(raw)
	return append(out, ToolCallUpdate{ToolCallID: id, Title: &done, Status: "completed", RawOutput: rawJSON, Meta: meta,
		Content: []ToolCallContent{{Type: "content", Content: ptr(TextBlock(summary))}}})
}

// planOp renders a plan change as a plan operation, the plan named by its
// dialect; an emptied list, or a stale one, removes it.
func planOp(c plan.Changed) SessionUpdate {
	if c.Stale {
		// As the legacy plan empties (planUpdate), the plan goes.
		return PlanRemovedUpdate{PlanID: c.Dialect, Meta: Meta{"stale": true}}
	}
	if len(c.Items) == 0 {
		return PlanRemovedUpdate{PlanID: c.Dialect}
	}
	return PlanOpUpdate{Plan: PlanContent{Type: "items", PlanID: c.Dialect, Entries: planUpdate(c).Entries}}
}

// planUpdate renders a plan change as ACP's three-state plan; an emptied
// list is an empty plan.
func planUpdate(c plan.Changed) PlanUpdate {
	if c.Stale {
		// Seed 003: a new user turn clears a write_todos list until the
		// agent updates it, so the panel never shows a plan for a request
		// the person has moved past; _meta says why it is empty.
		return PlanUpdate{Entries: []PlanEntry{}, Meta: Meta{"stale": true}}
	}
	entries := make([]PlanEntry, 0, len(c.Items))
	for _, pe := range plan.Panel(c.Items) {
		entries = append(entries, PlanEntry{Content: pe.Content, Priority: "medium", Status: string(pe.Status)})
	}
	return PlanUpdate{Entries: entries}
}

// diffContent turns a unified diff into the protocol's diff content, one
// per hunk: the hunk's old lines and new lines (oldText absent for a new
// file).
func diffContent(path, unified string) []ToolCallContent {
	var out []ToolCallContent
	created := false
	var oldB, newB strings.Builder
	in := false
	flush := func() {
		if !in {
			return
		}
		d := ToolCallContent{Type: "diff", Path: path, NewText: ptr(newB.String())}
		if !created {
			d.OldText = ptr(oldB.String())
		}
		out = append(out, d)
		oldB.Reset()
		newB.Reset()
	}
	for _, line := range strings.SplitAfter(unified, "\n") {
		switch {
		case strings.HasPrefix(line, "--- "):
			created = strings.HasPrefix(line, "--- /dev/null")
		case strings.HasPrefix(line, "+++ "):
		case strings.HasPrefix(line, "@@"):
			flush()
			in = true
		case !in || line == "":
		case strings.HasPrefix(line, `\`):
		case line[0] == '+':
			newB.WriteString(line[1:])
		case line[0] == '-':
			oldB.WriteString(line[1:])
		case line[0] == ' ':
			oldB.WriteString(line[1:])
			newB.WriteString(line[1:])
		}
	}
	flush()
	return out
}
