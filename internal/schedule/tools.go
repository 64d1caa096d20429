package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"meka.dev/meka/internal/schedule/cron"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// Tool names.
const (
	CreateToolName = "schedule_create"
	ListToolName   = "schedule_list"
	CancelToolName = "schedule_cancel"
)

// Tools returns schedule_create, schedule_list and schedule_cancel. They
// serve every session: a call's session, level and directory come with it.
func (s *Scheduler) Tools() []tool.Tool {
	return []tool.Tool{&createTool{s}, &listTool{s}, &cancelTool{s}}
}

type createTool struct{ s *Scheduler }

const createDescription = `Schedule a future turn of this session: the prompt comes back to you as a user message when the job fires, so write it for a reader with no context. Give exactly one of: every (recurring: "15m", "1h 30m", "2d"; m is minutes, M months), cron (five fields, Vixie semantics, in the configured time zone), at (RFC 3339) or in (this long from now: "20m").

A gate runs a check before each occurrence and fires the turn, with the check's output, only when "when" holds. check: {"command": "..."} (sh -c; unrestricted level) or {"tool": "name", "arguments": {...}} (a read-level tool). when: "changed" (output differs from the last check; fires the first time), "succeeded" (exit 0 / no tool error), {"matches": "regex"}, or {"at": "/json/pointer", "is": ...} on a JSON result. A "changed" check must print the same when nothing happened: no timestamps or unsorted lists.

The reply gives the next fire in local time: check it is what you meant.`

var createSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "prompt": {"type": "string", "minLength": 1},
    "every": {"type": "string"},
    "cron": {"type": "string", "description": "Five-field cron expression, e.g. \"0 9 * * 1-5\"."},
    "at": {"type": "string"},
    "in": {"type": "string"},
    "isolation": {"type": "string", "enum": ["worktree"], "description": "worktree: each turn runs as a sub-agent in a fresh git worktree of the last commit, kept for review if changed. Needs git."},
    "gate": {
      "type": "object",
      "properties": {
        "check": {
          "type": "object",
          "properties": {
            "command": {"type": "string"},
            "tool": {"type": "string"},
            "arguments": {"type": "object"}
          },
          "additionalProperties": false
        },
        "when": {
          "anyOf": [
            {"type": "string", "enum": ["changed", "succeeded"]},
            {"type": "object", "properties": {"matches": {"type": "string"}}, "required": ["matches"], "additionalProperties": false},
            {"type": "object", "properties": {
              "at": {"type": "string"},
              "is": {"anyOf": [
                {"type": "string", "enum": ["changed", "not-empty", "empty", "true", "false"]},
                {"type": "object", "properties": {"equals": {}}, "required": ["equals"], "additionalProperties": false}
              ]}
            }, "required": ["at", "is"], "additionalProperties": false}
          ]
        }
      },
      "required": ["check", "when"],
      "additionalProperties": false
    }
  },
  "required": ["prompt"],
  "additionalProperties": false
}`)

func (t *createTool) Spec() tool.Spec {
	return tool.Spec{Name: CreateToolName, Description: createDescription, Schema: createSchema,
		Level: permission.Read, Kind: tool.KindOther}
}

type createArgs struct {
	Prompt string          `json:"prompt"`
	Every  *string         `json:"every"`
	Cron   *string         `json:"cron"`
	At     *string         `json:"at"`
	In     *string         `json:"in"`
	Gate   json.RawMessage `json:"gate"`
	// Isolation is IsolationWorktree or empty.
	Isolation string `json:"isolation"`
}

func (t *createTool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	j, g, err := t.s.Create(ctx, call.SessionID, call.Cwd, call.Level, call.Arguments)
	var refused *RefusedError
	switch {
	case errors.As(err, &refused):
		return tool.Errorf("%s", refused.Msg), nil
	case err != nil:
		return tool.Result{}, err
	}
	return tool.Text(createdReply(j, g)), nil
}

// RefusedError is a job creation refused for a reason the caller can fix,
// said as schedule_create says it.
type RefusedError struct{ Msg string }

func (e *RefusedError) Error() string { return e.Msg }

// Create makes a job for a session from schedule_create's arguments, as
// the tool does: the HTTP API's POST /v1/sessions/{id}/schedule calls it
// too. A refusal the caller can fix is a *RefusedError.
func (s *Scheduler) Create(ctx context.Context, sessionID, cwd string, level permission.Level, args json.RawMessage) (Job, *Gate, error) {
	refuse := func(format string, v ...any) (Job, *Gate, error) {
		return Job{}, nil, &RefusedError{Msg: fmt.Sprintf(format, v...)}
	}
	var a createArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return refuse("schedule_create: %v", err)
	}
	if level == permission.None {
		return refuse("schedule_create was refused: at the none level no job fires, so none is created.")
	}
	if strings.TrimSpace(a.Prompt) == "" {
		return refuse("schedule_create: prompt is empty; say what the turn should do.")
	}
	now := s.opts.Now()
	j, err := s.schedule(a, now)
	if err != nil {
		return refuse("schedule_create: %v", err)
	}
	j.SessionID, j.Prompt, j.Cwd, j.Level = sessionID, a.Prompt, cwd, level.String()
	switch a.Isolation {
	case "":
	case IsolationWorktree:
		if s.opts.Isolation == nil {
			return refuse("schedule_create: isolation %q is not available here; leave it out.", a.Isolation)
		}
		if err := s.opts.Isolation(ctx, cwd); err != nil {
			return refuse("schedule_create: isolation %q needs a git repository with a commit: %v. Leave isolation out to run in the workspace itself.", a.Isolation, err)
		}
		j.Isolation = a.Isolation
	default:
		return refuse("schedule_create: isolation %q: the one kind is %q.", a.Isolation, IsolationWorktree)
	}

	var g *Gate
	if len(a.Gate) > 0 && string(a.Gate) != "null" {
		if g, err = ParseGate(a.Gate); err != nil {
			return refuse("schedule_create: %v", err)
		}
		if msg := s.admitGate(g, tool.Call{SessionID: sessionID, Cwd: cwd, Level: level}); msg != "" {
			return refuse("schedule_create: %s", msg)
		}
		j.Gate = g.JSON()
	}

	j, err = s.opts.Store.Create(ctx, j, s.opts.MaxJobs)
	switch {
	case errors.Is(err, ErrTooManyJobs):
		return refuse("schedule_create was refused: this session already has %d jobs, the [schedule] max_jobs limit. Cancel one with schedule_cancel first.", s.opts.MaxJobs)
	case errors.Is(err, session.ErrNotFound):
		return refuse("schedule_create: this session is not stored, so it cannot own a job.")
	case err != nil:
		return Job{}, nil, fmt.Errorf("schedule_create: %w", err)
	}
	return j, g, nil
}

// Delete removes a job by full id whoever holds it: a cancel always wins.
func (s *Scheduler) Delete(ctx context.Context, id string) (bool, error) {
	ok, err := s.opts.Store.Delete(ctx, id)
	if ok {
		s.forget(id)
	}
	return ok, err
}

// schedule resolves the one schedule field a call gives into a job's kind,
// spec and first occurrence.
func (s *Scheduler) schedule(a createArgs, now time.Time) (Job, error) {
	var given []string
	for name, v := range map[string]*string{"every": a.Every, "cron": a.Cron, "at": a.At, "in": a.In} {
		if v != nil {
			given = append(given, name)
		}
	}
	sort.Strings(given)
	switch len(given) {
	case 0:
		return Job{}, errors.New("give one of every, cron, at or in")
	case 1:
	default:
		return Job{}, fmt.Errorf("give only one of every, cron, at or in, not %s", strings.Join(given, " and "))
	}
	loc := s.opts.Location
	j := Job{Zone: loc.String()}
	switch {
	case a.Every != nil:
		d, err := s.opts.ParseDuration(*a.Every)
		if err != nil {
			return Job{}, fmt.Errorf("every: %w", err)
		}
		j.Kind, j.Spec, j.Interval, j.NextAt = KindEvery, strings.TrimSpace(*a.Every), d, now.Add(d)
	case a.In != nil:
		d, err := s.opts.ParseDuration(*a.In)
		if err != nil {
			return Job{}, fmt.Errorf("in: %w", err)
		}
		j.Kind, j.NextAt = KindOnce, now.Add(d)
	case a.At != nil:
		at, err := parseAt(strings.TrimSpace(*a.At), loc)
		if err != nil {
			return Job{}, err
		}
		if !at.After(now) {
			return Job{}, fmt.Errorf("at %s is not in the future (it is now %s)", *a.At, now.In(loc).Format(time.RFC3339))
		}
		j.Kind, j.NextAt = KindOnce, at
	default:
		c, err := cron.Parse(*a.Cron)
		if err != nil {
			return Job{}, err
		}
		next, ok := c.Next(now, loc)
		if !ok {
			return Job{}, fmt.Errorf("cron %q never fires in %s: every time it matches falls in a daylight-saving gap", *a.Cron, loc)
		}
		j.Kind, j.Spec, j.NextAt = KindCron, c.String(), next
	}
	j.NextAt = j.NextAt.UTC()
	return j, nil
}

// parseAt reads an RFC 3339 instant; a date and time without an offset
// is read in loc.
func parseAt(s string, loc *time.Location) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("at %q is not an RFC 3339 time such as 2026-08-11T15:22:00+02:00", s)
}

// admitGate checks a new gate against the bar it must clear, returning
// why it is refused or "".
func (s *Scheduler) admitGate(g *Gate, call tool.Call) string {
	if g.Check.IsCommand() {
		if call.Level < permission.Unrestricted {
			return fmt.Sprintf("a command gate runs unconfined on a timer, so it needs the unrestricted level and this session has %s. Use a tool gate (a tool that resolves to read), or ask the user to raise the level.", call.Level)
		}
		return ""
	}
	name := g.Check.Tool
	if name == ShellToolName && !s.opts.Confined() {
		return "shell_execute cannot be confined on this machine, so it cannot be a gate; a command gate needs the unrestricted level."
	}
	if s.opts.Firer == nil {
		return fmt.Sprintf("no tool %s is available to this session.", name)
	}
	t, needs, ok := s.opts.Firer.Tool(call.SessionID, name)
	if !ok {
		return fmt.Sprintf("no tool %s is available to this session.", name)
	}
	if needs > permission.Read {
		return fmt.Sprintf("%s needs the %s level; a gate asks a question, so it may only call a tool that resolves to read.", name, needs)
	}
	v, err := tool.NewValidator([]tool.Tool{t})
	if err != nil {
		return fmt.Sprintf("the arguments of %s cannot be checked: %v", name, err)
	}
	if err := v.Validate(name, g.Check.Arguments); err != nil {
		return fmt.Sprintf("gate.check.arguments for %s: %v", name, err)
	}
	return ""
}

// createdReply is schedule_create's answer: the id and the resolved next
// fire in absolute local time.
func createdReply(j Job, g *Gate) string {
	loc := j.Location()
	var when string
	switch j.Kind {
	case KindOnce:
		when = "once at " + FormatTime(j.NextAt, loc)
	case KindEvery:
		when = fmt.Sprintf("every %s, next at %s", j.Spec, FormatTime(j.NextAt, loc))
	default:
		when = fmt.Sprintf("cron %q in %s, next at %s", j.Spec, j.Zone, FormatTime(j.NextAt, loc))
	}
	reply := fmt.Sprintf("Created job %s (%s).", ShortID(j.ID), when)
	if j.Isolation == IsolationWorktree {
		reply += " Each of its turns runs in a fresh git worktree of this workspace, as a sub-agent session of this one; a worktree with changes is kept."
	}
	if g != nil {
		reply += fmt.Sprintf(" Before each occurrence its gate runs the %s and the turn happens only when %s.", checkNoun(g), g.When)
		if !g.Check.IsCommand() && g.When.Kind == WhenSucceeded {
			reply += ` Note: most tools never report an error, so "succeeded" holds on nearly every evaluation; {"at": ..., "is": ...} on the result is usually what you want.`
		}
	}
	return reply
}

func checkNoun(g *Gate) string {
	if g.Check.IsCommand() {
		return fmt.Sprintf("command %q", g.Check.Command)
	}
	return "tool " + g.Check.Tool
}

type listTool struct{ s *Scheduler }

func (t *listTool) Spec() tool.Spec {
	return tool.Spec{Name: ListToolName,
		Description: "List this session's scheduled jobs in full: id, schedule, next fire, gate, prompt, and NOT FIRING with the reason when a job cannot fire now.",
		Schema:      json.RawMessage(`{"type": "object", "properties": {}, "additionalProperties": false}`),
		Level:       permission.Read, Kind: tool.KindRead, ParallelSafe: true}
}

func (t *listTool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	s := t.s
	jobs, err := s.opts.Store.List(ctx, call.SessionID)
	if err != nil {
		return tool.Result{}, fmt.Errorf("schedule_list: %w", err)
	}
	if len(jobs) == 0 {
		return tool.Text("This session has no scheduled jobs."), nil
	}
	now := s.opts.Now()
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	short := UniquePrefixes(ids)
	var b strings.Builder
	noun := "jobs"
	if len(jobs) == 1 {
		noun = "job"
	}
	fmt.Fprintf(&b, "%d %s:\n", len(jobs), noun)
	for i, j := range jobs {
		loc := j.Location()
		fmt.Fprintf(&b, "\n%s  %s", short[i], j.Describe())
		if j.Recurring() {
			fmt.Fprintf(&b, ", next at %s", FormatTime(j.NextAt, loc))
		}
		fmt.Fprintf(&b, " (%s)\n", Until(j.NextAt, now, s.formatDuration))
		if g, err := j.ParsedGate(); err == nil && g != nil {
			fmt.Fprintf(&b, "  gate: %s\n", g.Describe())
		}
		if !j.LastFiredAt.IsZero() {
			fmt.Fprintf(&b, "  last fired: %s\n", FormatTime(j.LastFiredAt, loc))
		}
		if reason := s.NotFiring(j, call.Level); reason != "" {
			fmt.Fprintf(&b, "  NOT FIRING: %s\n", reason)
		}
		fmt.Fprintf(&b, "  prompt: %s\n", j.Prompt)
	}
	return tool.Text(strings.TrimRight(b.String(), "\n")), nil
}

// Until says roughly how far off t is from now, in its two largest
// units: "in 12m", "in 24d 1h", "due now", "3m overdue".
func Until(t, now time.Time, format func(time.Duration) string) string {
	d := t.Sub(now)
	switch {
	case d >= time.Second:
		return "in " + format(rough(d))
	case d > -time.Second:
		return "due now"
	}
	return format(rough(-d)) + " overdue"
}

// rough truncates d to its two largest units of days, hours, minutes,
// seconds.
func rough(d time.Duration) time.Duration {
	switch {
	case d >= 24*time.Hour:
		return d.Truncate(time.Hour)
	case d >= time.Hour:
		return d.Truncate(time.Minute)
	case d >= time.Minute:
		return d.Truncate(time.Minute)
	}
	return d.Truncate(time.Second)
}

type cancelTool struct{ s *Scheduler }

func (t *cancelTool) Spec() tool.Spec {
	return tool.Spec{Name: CancelToolName,
		Description: "Cancel one of this session's scheduled jobs by its id or any unique prefix of it. The job is deleted, even while a host is running it.",
		Schema: json.RawMessage(`{"type": "object", "properties": {"id": {"type": "string", "minLength": 1, "description": "The job's id or a unique prefix."}},
  "required": ["id"], "additionalProperties": false}`),
		Level: permission.Read, Kind: tool.KindDelete}
}

func (t *cancelTool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	s := t.s
	var a struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(call.Arguments, &a); err != nil {
		return tool.Errorf("schedule_cancel: %v", err), nil
	}
	jobs, err := s.opts.Store.List(ctx, call.SessionID)
	if err != nil {
		return tool.Result{}, fmt.Errorf("schedule_cancel: %w", err)
	}
	prefix := strings.ToLower(strings.TrimSpace(a.ID))
	var found []Job
	for _, j := range jobs {
		if prefix != "" && strings.HasPrefix(j.ID, prefix) {
			found = append(found, j)
		}
	}
	switch len(found) {
	case 0:
		return tool.Errorf("schedule_cancel: no job of this session has an id beginning %q; schedule_list shows them.", a.ID), nil
	case 1:
	default:
		ids := make([]string, len(found))
		for i, j := range found {
			ids[i] = j.ID
		}
		return tool.Errorf("schedule_cancel: %q is the beginning of several jobs' ids (%s); give more of it.", a.ID, strings.Join(ids, ", ")), nil
	}
	j := found[0]
	ok, err := s.opts.Store.Delete(ctx, j.ID)
	if err != nil {
		return tool.Result{}, fmt.Errorf("schedule_cancel: %w", err)
	}
	s.forget(j.ID)
	if !ok {
		return tool.Errorf("schedule_cancel: job %s is already gone.", ShortID(j.ID)), nil
	}
	return tool.Text(fmt.Sprintf("Cancelled job %s (%s).", ShortID(j.ID), j.Describe())), nil
}

// UniquePrefixes returns, for each id, its shortest prefix that is at
// least its first UUID segment and that no other id in ids begins with:
// ids widen only where that is needed to stay apart. Repeated ids get the
// same prefix.
func UniquePrefixes(ids []string) []string {
	uniq := make([]string, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			uniq = append(uniq, id)
		}
	}
	sort.Strings(uniq)
	width := make(map[string]int, len(uniq))
	for i, id := range uniq {
		n := len(ShortID(id))
		for _, k := range []int{i - 1, i + 1} {
			if k >= 0 && k < len(uniq) {
				n = max(n, commonPrefix(id, uniq[k])+1)
			}
		}
		width[id] = min(n, len(id))
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id[:width[id]]
	}
	return out
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
