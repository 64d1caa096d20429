package hooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"meka.dev/meka/session"
)

// Output is the JSON a hook may print on exit 0, as Claude Code reads it.
// Unknown keys are ignored.
type Output struct {
	Continue       *bool  `json:"continue"`
	StopReason     string `json:"stopReason"`
	SuppressOutput bool   `json:"suppressOutput"`
	SystemMessage  string `json:"systemMessage"`
	Decision       string `json:"decision"`
	Reason         string `json:"reason"`
	Specific       struct {
		HookEventName            string          `json:"hookEventName"`
		PermissionDecision       string          `json:"permissionDecision"`
		PermissionDecisionReason string          `json:"permissionDecisionReason"`
		AdditionalContext        string          `json:"additionalContext"`
		UpdatedInput             json.RawMessage `json:"updatedInput"`
	} `json:"hookSpecificOutput"`
}

// Permission decisions of a PreToolUse hook, least restrictive first.
const (
	Allow = "allow"
	Ask   = "ask"
	Deny  = "deny"
)

// Decision is what the runs of one event decided together.
type Decision struct {
	// Block: exit 2 or "decision":"block" (or a PreToolUse deny). Reason
	// is what the model (or, for a prompt, the person) is told.
	Block  bool
	Reason string
	// Permission is the most restrictive permissionDecision given: deny
	// over ask over allow; "" when none was.
	Permission       string
	PermissionReason string
	// UpdatedInput replaces a tool call's arguments (the last hook's that
	// gave one).
	UpdatedInput json.RawMessage
	// Context is text for the model: additionalContext, and for
	// UserPromptSubmit and SessionStart a hook's plain stdout.
	Context []string
	// Stop is "continue": false: the turn ends once the hooks ran, with
	// StopReason shown to the person.
	Stop       bool
	StopReason string
	// Notices are for the person: systemMessage, and hooks that failed
	// (any exit status but 0 and 2, a timeout, a hook that never started).
	Notices []session.Notice
	// Runs records every run, one row each.
	Runs []session.HookRun
}

// Entries returns the rows d records: its runs, then its notices.
func (d Decision) Entries() []session.Entry {
	out := make([]session.Entry, 0, len(d.Runs)+len(d.Notices))
	for _, r := range d.Runs {
		out = append(out, r)
	}
	for _, n := range d.Notices {
		out = append(out, n)
	}
	return out
}

// maxRecorded bounds each stream of a run as its row keeps it.
const maxRecorded = 4 << 10

func clip(s string) (string, bool) {
	if len(s) <= maxRecorded {
		return s, false
	}
	cut := maxRecorded
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut-- // keep whole UTF-8 sequences
	}
	return s[:cut], true
}

var restrictive = map[string]int{"": 0, Allow: 1, Ask: 2, "defer": 2, Deny: 3}

// Decide reads the outcomes of one event's hooks.
func Decide(event, callID string, outs []Outcome) Decision {
	var d Decision
	for _, o := range outs {
		run := session.HookRun{Event: event, Matcher: o.Matcher, CallID: callID, Source: o.Source,
			Command: o.Command, Exit: o.Exit, DurationMS: o.Duration.Milliseconds(), Confined: o.Confine}
		if isToolEvent(event) {
			run.Tool = o.Name
		}
		var t1, t2 bool
		run.Stdout, t1 = clip(o.Stdout)
		run.Stderr, t2 = clip(o.Stderr)
		run.Truncated = o.Truncated || t1 || t2
		fail := func(what string) {
			run.Decision = "error"
			run.Reason = what
			d.Notices = append(d.Notices, session.Notice{Severity: session.SeverityWarning,
				Title: fmt.Sprintf("%s hook %s", event, what), Description: o.Command + describe(o.Stderr)})
		}
		switch {
		case o.Err != nil:
			fail("could not run: " + o.Err.Error())
		case o.TimedOut:
			fail(fmt.Sprintf("timed out after %s and was killed", o.Timeout))
		case o.Canceled:
			run.Decision = "canceled"
		case o.Exit == 2:
			run.Decision = "block"
			run.Reason = strings.TrimSpace(o.Stderr)
			if run.Reason == "" {
				run.Reason = fmt.Sprintf("blocked by a %s hook (%s)", event, o.Command)
			}
			d.Block = true
			d.Reason = join(d.Reason, run.Reason)
		case o.Exit != 0:
			fail(fmt.Sprintf("failed with exit status %d", o.Exit))
		default:
			d.read(event, o, &run)
		}
		d.Runs = append(d.Runs, run)
	}
	return d
}

func describe(stderr string) string {
	s := strings.TrimSpace(stderr)
	if s == "" {
		return ""
	}
	s, _ = clip(s)
	return ": " + s
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	return a + "\n" + b
}

func isToolEvent(event string) bool { return event == PreToolUse || event == PostToolUse }

// read takes a successful run's stdout: Claude Code's JSON when it is
// JSON, plain text otherwise.
func (d *Decision) read(event string, o Outcome, run *session.HookRun) {
	out := bytes.TrimSpace([]byte(o.Stdout))
	var j Output
	if len(out) == 0 || out[0] != '{' || json.Unmarshal(out, &j) != nil {
		if len(out) > 0 && (event == UserPromptSubmit || event == SessionStart) {
			d.Context = append(d.Context, string(out))
		}
		return
	}
	if j.SuppressOutput {
		run.Stdout = ""
	}
	if j.SystemMessage != "" {
		d.Notices = append(d.Notices, session.Notice{Severity: session.SeverityInfo,
			Title: j.SystemMessage, Description: fmt.Sprintf("from a %s hook: %s", event, o.Command)})
	}
	if c := j.Specific.AdditionalContext; c != "" {
		d.Context = append(d.Context, c)
	}
	if len(j.Specific.UpdatedInput) > 0 && string(j.Specific.UpdatedInput) != "null" {
		d.UpdatedInput = j.Specific.UpdatedInput
	}
	perm, reason := j.Specific.PermissionDecision, j.Specific.PermissionDecisionReason
	if event == PreToolUse && perm == "" {
		// The deprecated spelling: approve and block.
		switch j.Decision {
		case "approve":
			perm, reason = Allow, j.Reason
		case "block":
			perm, reason = Deny, j.Reason
		}
	}
	if event == PreToolUse && perm != "" {
		if perm == "defer" {
			perm = Ask
		}
		if _, ok := restrictive[perm]; ok {
			run.Decision, run.Reason = perm, reason
			if restrictive[perm] > restrictive[d.Permission] {
				d.Permission = perm
			}
			if perm == Deny {
				d.Block = true
				d.Reason = join(d.Reason, orDefault(reason, fmt.Sprintf("denied by a PreToolUse hook (%s)", o.Command)))
			} else if reason != "" {
				d.PermissionReason = join(d.PermissionReason, reason)
			}
		}
	} else if j.Decision == "block" {
		run.Decision, run.Reason = "block", j.Reason
		d.Block = true
		d.Reason = join(d.Reason, orDefault(j.Reason, fmt.Sprintf("blocked by a %s hook (%s)", event, o.Command)))
	}
	if j.Continue != nil && !*j.Continue {
		run.Decision, run.Reason = "stop", j.StopReason
		d.Stop = true
		d.StopReason = join(d.StopReason, orDefault(j.StopReason, fmt.Sprintf("stopped by a %s hook (%s)", event, o.Command)))
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
