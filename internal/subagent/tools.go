package subagent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	"meka.dev/meka/agent"
	"meka.dev/meka/permission"
	"meka.dev/meka/tool"
)

// Names of the tools.
const (
	SpawnName    = "agent_spawn"
	FollowupName = "agent_followup"
	SteerName    = "agent_steer"
)

// ProgressLines is how many of a running sub-agent's calls its card shows.
const ProgressLines = 20

// set is what the agent_* tools of one parent session share.
type set struct {
	opts  Options
	slots chan struct{} // one per running sub-agent turn

	mu      sync.Mutex // guards pending
	pending map[string]*pendingRun
}

// pendingRun counts the agent_followup calls of one sub-agent that the
// parent announced and that have not started its turn yet, so that an
// agent_steer of the same round waits for the turn instead of finding the
// sub-agent idle.
type pendingRun struct {
	n    int
	wake chan struct{} // closed at every change, then replaced
}

// observe watches the parent's events: the engine announces every call of
// a round before it runs any.
func (s *set) observe(ev agent.Event) {
	st, ok := ev.(agent.ToolCallStarted)
	if !ok || st.Name != FollowupName {
		return
	}
	// Only a call the engine will run counts, so a steer never waits on
	// one refused at its checks: its arguments must pass the schema.
	var a followupArgs
	dec := json.NewDecoder(bytes.NewReader(st.Arguments))
	dec.DisallowUnknownFields()
	if dec.Decode(&a) != nil || a.AgentID == "" || a.Task == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pending[a.AgentID]
	if p == nil {
		p = &pendingRun{wake: make(chan struct{})}
		s.pending[a.AgentID] = p
	}
	p.n++
}

// settle records that an announced followup of id started its turn or
// ended without one.
func (s *set) settle(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pending[id]
	if p == nil {
		return
	}
	p.n--
	close(p.wake)
	p.wake = make(chan struct{})
	if p.n <= 0 {
		delete(s.pending, id)
	}
}

// expected returns a channel that changes when an announced followup of id
// starts or ends, nil when none is announced.
func (s *set) expected(id string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.pending[id]; p != nil {
		return p.wake
	}
	return nil
}

func (s *set) acquire(ctx context.Context) error {
	select {
	case s.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *set) release() { <-s.slots }

// run runs one turn of c for call, pushing the sub-agent's calls as the
// call's progress, and turns its outcome into the call's result. started
// is called once the turn runs.
func (s *set) run(ctx context.Context, call tool.Call, c Child, task string, started func()) tool.Result {
	p := &progress{push: call.Progress}
	unsub := c.Subscribe(func(ev agent.Event) {
		switch ev := ev.(type) {
		case agent.TurnStarted:
			if started != nil {
				started()
				started = nil
			}
		case agent.ToolCallStarted:
			// A nested sub-agent's own list stays on its card: only its
			// agent_spawn line reaches this one.
			p.add(line(ev))
		}
	})
	res, err := c.Run(ctx, task)
	unsub()
	p.stop()
	if started != nil {
		started() // the turn never started; whoever waits on it is let go
	}
	id := c.ID()
	wt, isolated := s.settleWorktree(ctx, c)
	state, _ := json.Marshal(map[string]any{"agent_id": id, "stop": res.Stop, "usage": res.Usage})
	switch {
	case ctx.Err() != nil || res.Stop == agent.StopCanceled:
		r := tool.Errorf("The sub-agent %s was canceled before it finished.%s", id, wt.sentence(isolated))
		r.Usage, r.State = res.Usage, state
		return r
	case err != nil || res.Stop == agent.StopFailed:
		if err == nil {
			err = res.Err
		}
		why := "it failed"
		if err != nil {
			why = err.Error()
		}
		r := tool.Errorf("The sub-agent %s failed: %s. Its session is kept: agent_followup with agent_id %s can give it another try, or do the work yourself.%s", id, why, id, wt.sentence(isolated))
		r.Usage, r.State = res.Usage, state
		return r
	}
	out := map[string]any{"agent_id": id, "report": s.bounded(call, res.Reply)}
	if res.Stop != agent.StopEndTurn {
		out["stopped"] = fmt.Sprintf("the sub-agent's turn ended early (%s); the report is its last reply", res.Stop)
	}
	if isolated {
		out["worktree"] = wt
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	r := tool.Text(string(b))
	r.Usage, r.State = res.Usage, state
	return r
}

// settleWorktree settles the worktree of an isolated child after its turn; ok is
// false for a child in its parent's workspace.
func (s *set) settleWorktree(ctx context.Context, c Child) (worktreeResult, bool) {
	i, ok := c.(Isolated)
	if !ok {
		return worktreeResult{}, false
	}
	// Settled even when the turn was canceled: the worktree outlives it.
	r, ok, err := i.Settle(context.WithoutCancel(ctx))
	if !ok {
		return worktreeResult{}, false
	}
	r.DiffStat = clip(r.DiffStat, maxDiffStat)
	w := worktreeResult{WorktreeReport: r}
	switch {
	case err != nil:
		s.opts.Logger.Warn("settle sub-agent worktree", "session_id", c.ID(), "err", err)
		w.Note = fmt.Sprintf("meka could not tell what the worktree holds (%v): it is kept; look at it with git, or meka worktrees remove it", err)
		w.Kept = true
	case r.Kept:
		w.Note = "the worktree holds the sub-agent's changes and is kept: review them there (git -C PATH diff, git log), merge its branch or cherry-pick from it, then meka worktrees remove it"
	default:
		w.Note = "the sub-agent changed nothing, so its worktree and branch were removed; agent_followup makes them again"
	}
	return w, true
}

// worktreeResult is the worktree part of an isolated sub-agent's result.
type worktreeResult struct {
	WorktreeReport
	Note string `json:"note"`
}

// maxDiffStat bounds the diff stat a result carries.
const maxDiffStat = 4 << 10

// sentence is the worktree part of an error result.
func (w worktreeResult) sentence(isolated bool) string {
	if !isolated {
		return ""
	}
	if !w.Kept {
		return " " + w.Note + "."
	}
	s := fmt.Sprintf(" It worked in the git worktree %s (branch %s): %s.", w.Path, w.Branch, w.Note)
	if w.DiffStat != "" {
		s += "\n" + w.DiffStat
	}
	return s
}

// line is how a sub-agent's call reads in its parent's card.
func line(ev agent.ToolCallStarted) string {
	t := strings.Join(strings.Fields(ev.Title), " ")
	if t == "" {
		t = ev.Name
	} else if !strings.HasPrefix(t, ev.Name) {
		t = ev.Name + " " + t
	}
	return clip(t, 200)
}

// progress is a running sub-agent's rolling list of calls.
type progress struct {
	mu    sync.Mutex // guards lines and done; held while pushing, so pushes keep their order
	lines []string
	done  bool
	push  func([]string)
}

func (p *progress) add(l string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done || p.push == nil {
		return
	}
	p.lines = append(p.lines, l)
	if n := len(p.lines); n > ProgressLines {
		p.lines = append([]string(nil), p.lines[n-ProgressLines:]...)
	}
	p.push(append([]string(nil), p.lines...))
}

// stop ends the pushes: the call's Progress must not be used after Run.
func (p *progress) stop() {
	p.mu.Lock()
	p.done = true
	p.mu.Unlock()
}

// Report bounds: past maxReport the whole goes to the scratchpad and the
// result keeps a head.
const (
	maxReport  = 64 << 10
	reportHead = 8 << 10
)

func (s *set) bounded(call tool.Call, text string) string {
	if len(text) <= maxReport {
		return text
	}
	head := clip(text, reportHead)
	if s.opts.ScratchDir != "" {
		if err := os.MkdirAll(s.opts.ScratchDir, 0o700); err == nil {
			stamp := s.opts.Now().UTC().Format("20060102T150405")
			if f, err := os.CreateTemp(s.opts.ScratchDir, fmt.Sprintf("%s-%s-*.md", call.Name, stamp)); err == nil {
				_, werr := f.WriteString(text)
				if cerr := f.Close(); werr == nil && cerr == nil {
					return fmt.Sprintf("%s\n[Report cut at %d of %d bytes. The whole report is in the scratchpad file %s: read it with file_read.]", head, len(head), len(text), f.Name())
				}
				os.Remove(f.Name())
			}
		}
	}
	return fmt.Sprintf("%s\n[Report cut at %d of %d bytes.]", head, len(head), len(text))
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

func decode[T any](call tool.Call) (T, error) {
	var a T
	if err := json.Unmarshal(call.Arguments, &a); err != nil {
		return a, fmt.Errorf("decode %s arguments: %w", call.Name, err)
	}
	return a, nil
}

// spawnTool is agent_spawn.
type spawnTool struct{ s *set }

type spawnArgs struct {
	Task        string            `json:"task"`
	Description string            `json:"description"`
	Agent       string            `json:"agent"`
	Profile     string            `json:"profile"`
	Permission  *permission.Level `json:"permission"`
	Isolation   string            `json:"isolation"`
}

func (t *spawnTool) Spec() tool.Spec {
	return tool.Spec{
		Name:        SpawnName,
		Description: spawnDescription(t.s.opts.Definitions),
		Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "task": {"type": "string", "minLength": 1, "description": "The work, with everything the sub-agent needs to know."},
    "description": {"type": "string", "maxLength": 200, "description": "A short label for the work (3-6 words), shown to the user."},
    "agent": {"type": "string", "description": "A named sub-agent definition to run, from the list above."},
    "profile": {"type": "string", "description": "The model profile to run on; the session's by default."},
    "permission": {"type": "string", "enum": ["none", "read", "workspace", "unrestricted"], "description": "A lower level for the sub-agent."},
    "isolation": {"type": "string", "enum": ["worktree"], "description": "worktree: it writes only in a new git worktree of the last commit, on its own branch; kept for review if changed (path, branch, diff stat in the result), else removed. Needs git."}
  },
  "required": ["task"],
  "additionalProperties": false
}`),
		Level:        permission.Read,
		Kind:         tool.KindOther,
		ParallelSafe: true,
	}
}

func (t *spawnTool) Title(raw json.RawMessage) string {
	var a spawnArgs
	if json.Unmarshal(raw, &a) != nil {
		return ""
	}
	for _, s := range []string{a.Description, a.Agent, a.Task} {
		if s = strings.Join(strings.Fields(s), " "); s != "" {
			return clip(s, 80)
		}
	}
	return ""
}

func (t *spawnTool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	a, err := decode[spawnArgs](call)
	if err != nil {
		return tool.Result{}, err
	}
	o := SpawnOptions{CallID: call.ID, Title: t.Title(call.Arguments), Agent: a.Agent, Profile: a.Profile, Permission: a.Permission, Isolation: a.Isolation}
	if a.Agent != "" {
		def, ok := t.s.definition(a.Agent)
		if !ok {
			return tool.Errorf("agent_spawn: there is no sub-agent definition called %q. %s", a.Agent, t.s.known()), nil
		}
		if o.Profile == "" {
			o.Profile = def.Profile
		}
		if def.Permission != nil && (o.Permission == nil || *def.Permission < *o.Permission) {
			o.Permission = def.Permission
		}
	}
	if err := t.s.acquire(ctx); err != nil {
		return tool.Errorf("agent_spawn was canceled while waiting for a free sub-agent slot."), nil
	}
	defer t.s.release()
	c, err := t.s.opts.Spawner.Spawn(ctx, o)
	if err != nil {
		return tool.Errorf("agent_spawn could not start the sub-agent: %v", err), nil
	}
	return t.s.run(ctx, call, c, a.Task, nil), nil
}

func (s *set) definition(name string) (Definition, bool) {
	for _, d := range s.opts.Definitions {
		if d.Name == name {
			return d, true
		}
	}
	return Definition{}, false
}

func (s *set) known() string {
	if len(s.opts.Definitions) == 0 {
		return "No definitions exist: leave agent out."
	}
	names := make([]string, len(s.opts.Definitions))
	for i, d := range s.opts.Definitions {
		names[i] = d.Name
	}
	return "The definitions are: " + strings.Join(names, ", ") + "."
}

// Bounds of the definitions listed in agent_spawn's description.
const (
	listedDefinitions = 30
	listedBytes       = 4 << 10
	listedDescription = 200
)

func spawnDescription(defs []Definition) string {
	var b strings.Builder
	b.WriteString(`Delegate self-contained work to a sub-agent: a fresh agent with its own conversation, checklist and limits, and your tools, that works until done and returns {agent_id, report}, its final reply. It sees none of this conversation: the task must say everything it needs. Use it for work that would fill your context (a wide search, a review, an independent change); calls in one reply run in parallel. Its level never exceeds yours; its approvals reach the user like yours. agent_followup gives it more work, its conversation kept.`)
	if len(defs) == 0 {
		return b.String()
	}
	b.WriteString("\n\nNamed sub-agents (pass the name as agent):")
	listed := 0
	for _, d := range defs {
		entry := "\n- " + d.Name
		if desc := strings.Join(strings.Fields(d.Description), " "); desc != "" {
			entry += ": " + clip(desc, listedDescription)
		}
		if listed == listedDefinitions || b.Len()+len(entry) > listedBytes {
			break
		}
		b.WriteString(entry)
		listed++
	}
	if rest := len(defs) - listed; rest > 0 {
		fmt.Fprintf(&b, "\n(and %d more, not listed here)", rest)
	}
	return b.String()
}

// followupTool is agent_followup.
type followupTool struct{ s *set }

type followupArgs struct {
	AgentID string `json:"agent_id"`
	Task    string `json:"task"`
}

func (t *followupTool) Spec() tool.Spec {
	return tool.Spec{
		Name:        FollowupName,
		Description: "Give a sub-agent you spawned another task: it runs a new turn with its conversation and checklist kept, and returns {agent_id, report} like agent_spawn.",
		Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "agent_id": {"type": "string", "minLength": 1, "description": "The agent_id agent_spawn returned."},
    "task": {"type": "string", "minLength": 1, "description": "What to do next."}
  },
  "required": ["agent_id", "task"],
  "additionalProperties": false
}`),
		Level:        permission.Read,
		Kind:         tool.KindOther,
		ParallelSafe: true,
	}
}

func (t *followupTool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	a, err := decode[followupArgs](call)
	if err != nil {
		return tool.Result{}, err
	}
	var once sync.Once
	settle := func() { once.Do(func() { t.s.settle(a.AgentID) }) }
	defer settle()
	if err := t.s.acquire(ctx); err != nil {
		return tool.Errorf("agent_followup was canceled while waiting for a free sub-agent slot."), nil
	}
	defer t.s.release()
	c, err := t.s.opts.Spawner.Child(ctx, a.AgentID)
	if err != nil {
		return tool.Errorf("agent_followup: %v. Pass an agent_id that agent_spawn returned in this session.", err), nil
	}
	return t.s.run(ctx, call, c, a.Task, settle), nil
}

// steerTool is agent_steer.
type steerTool struct{ s *set }

type steerArgs struct {
	AgentID string `json:"agent_id"`
	Text    string `json:"text"`
}

func (t *steerTool) Spec() tool.Spec {
	return tool.Spec{
		Name:        SteerName,
		Description: "Send a message to a sub-agent while it runs (an agent_followup of it in the same reply): it reads the message with its next tool results, or when it next tries to stop. Returns at once; refused when the sub-agent is not running.",
		Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "agent_id": {"type": "string", "minLength": 1},
    "text": {"type": "string", "minLength": 1}
  },
  "required": ["agent_id", "text"],
  "additionalProperties": false
}`),
		Level:        permission.Read,
		Kind:         tool.KindOther,
		ParallelSafe: true,
	}
}

func (t *steerTool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	a, err := decode[steerArgs](call)
	if err != nil {
		return tool.Result{}, err
	}
	c, err := t.s.opts.Spawner.Child(ctx, a.AgentID)
	if err != nil {
		return tool.Errorf("agent_steer: %v. Pass an agent_id that agent_spawn returned in this session.", err), nil
	}
	msg := "[Message from the agent that delegated this task to you]\n" + a.Text
	for range 64 { // each wait is a followup of this round starting or ending
		if c.Steer(msg) {
			return tool.Text(fmt.Sprintf("Delivered to sub-agent %s: it reads the message with its next tool results or when it next tries to stop.", c.ID())), nil
		}
		wait := t.s.expected(a.AgentID)
		if wait == nil {
			break
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return tool.Errorf("agent_steer was canceled before the sub-agent started."), nil
		}
	}
	return tool.Errorf("agent_steer: the sub-agent %s is idle, not running a turn, so nothing would read the message. Use agent_followup to give it more work.", c.ID()), nil
}
