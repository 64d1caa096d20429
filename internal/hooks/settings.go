// Package hooks runs people's commands at the points of a turn that
// Claude Code names (PreToolUse, PostToolUse, UserPromptSubmit, Stop, …),
// configured in Claude Code's own format so that the .claude/settings.json
// files teams already keep work unchanged. It reads the settings, decides
// which hooks a workspace may run (trust), matches tool names in meka's
// and Claude Code's spelling, runs the commands (in parallel, bounded,
// optionally confined), and reads their decisions. It plugs into the
// engine through its seams (Guard, Stop), like a plan dialect.
package hooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"
)

// Events meka fires, with Claude Code's names.
const (
	PreToolUse       = "PreToolUse"
	PostToolUse      = "PostToolUse"
	UserPromptSubmit = "UserPromptSubmit"
	Stop             = "Stop"
	SubagentStop     = "SubagentStop"
	SessionStart     = "SessionStart"
	SessionEnd       = "SessionEnd"
	PreCompact       = "PreCompact"
	Notification     = "Notification"
)

// Known lists the events meka fires. Settings may name others (Claude
// Code has dozens); they are kept out of the set, not refused.
var Known = []string{PreToolUse, PostToolUse, UserPromptSubmit, Stop, SubagentStop,
	SessionStart, SessionEnd, PreCompact, Notification}

// DefaultTimeout bounds a hook that names no timeout, as Claude Code does.
const DefaultTimeout = 60 * time.Second

// Hook is one command to run for an event.
type Hook struct {
	Event string
	// Matcher is the entry's matcher as written; "" matches everything.
	Matcher string
	re      *regexp.Regexp // nil: matches everything
	Command string
	Timeout time.Duration
	// Confine runs the command under the session's confinement instead of
	// as the person's own command.
	Confine bool
	// Source is the file the hook came from ("config" for meka's).
	Source string
	// Workspace is set for hooks from a workspace's files, which run only
	// once the workspace is trusted.
	Workspace bool
}

// Settings are the hook entries of one file, in Claude Code's shape:
//
//	{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "...", "timeout": 30}]}]}}
//
// Confine (top level, per entry or per hook) is meka's own key; other
// tools ignore it.
type Settings struct {
	Confine bool               `json:"confine,omitempty"`
	Events  map[string][]Entry `json:"-"`
}

// Entry is one matcher and its hooks.
type Entry struct {
	Matcher string    `json:"matcher,omitempty"`
	Hooks   []Handler `json:"hooks"`
	Confine bool      `json:"confine,omitempty"`
}

// Handler is one hook of an entry. Timeout is in seconds.
type Handler struct {
	Type    string  `json:"type"`
	Command string  `json:"command"`
	Timeout float64 `json:"timeout,omitempty"`
	Confine *bool   `json:"confine,omitempty"`
}

// ParseSettings reads the "hooks" object of a settings file (the rest of
// the file is another tool's business). name is used in errors.
func ParseSettings(name string, data []byte) (Settings, error) {
	var file struct {
		Hooks json.RawMessage `json:"hooks"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		return Settings{}, fmt.Errorf("%s: %w", name, err)
	}
	if len(file.Hooks) == 0 || string(file.Hooks) == "null" {
		return Settings{}, nil
	}
	return parseHooks(name, file.Hooks)
}

// KeyError is a hooks object's problem at one key, so a caller that knows
// where the object came from (meka's config file) can say on which line.
type KeyError struct {
	File  string // the settings file, or "config.toml: [hooks]"
	Event string // the event key, or "confine"
	Entry int    // the entry's index in the event's array; -1 for the event itself
	Field string // below the entry, e.g. "matcher" or "hooks[1].command"
	Msg   string
}

// Key is the dotted key below hooks, e.g. PreToolUse[0].hooks[1].command.
func (e *KeyError) Key() string {
	k := e.Event
	if e.Entry >= 0 {
		k += fmt.Sprintf("[%d]", e.Entry)
	}
	if e.Field != "" {
		k += "." + e.Field
	}
	return k
}

func (e *KeyError) Error() string { return fmt.Sprintf("%s: hooks.%s: %s", e.File, e.Key(), e.Msg) }

// parseHooks reads a hooks object: event names to entries, and meka's
// confine key.
func parseHooks(name string, raw json.RawMessage) (Settings, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return Settings{}, fmt.Errorf("%s: hooks: want an object of event names: %w", name, err)
	}
	s := Settings{Events: map[string][]Entry{}}
	for ev, v := range obj {
		if ev == "confine" {
			if err := json.Unmarshal(v, &s.Confine); err != nil {
				return Settings{}, &KeyError{File: name, Event: "confine", Entry: -1, Msg: "want true or false"}
			}
			continue
		}
		var entries []Entry
		if err := json.Unmarshal(v, &entries); err != nil {
			return Settings{}, &KeyError{File: name, Event: ev, Entry: -1, Msg: "want an array of {matcher, hooks} entries: " + err.Error()}
		}
		for i, e := range entries {
			if e.Matcher != "" && e.Matcher != "*" {
				if _, err := regexp.Compile(e.Matcher); err != nil {
					return Settings{}, &KeyError{File: name, Event: ev, Entry: i, Field: "matcher", Msg: err.Error()}
				}
			}
			for j, h := range e.Hooks {
				if h.Type != "command" {
					// Claude Code's prompt, http and agent hooks are not
					// commands meka can run; skipping them silently would
					// hide a guard, so say so.
					return Settings{}, &KeyError{File: name, Event: ev, Entry: i, Field: fmt.Sprintf("hooks[%d].type", j), Msg: fmt.Sprintf("meka runs only \"command\" hooks, not %q", h.Type)}
				}
				if h.Command == "" {
					return Settings{}, &KeyError{File: name, Event: ev, Entry: i, Field: fmt.Sprintf("hooks[%d].command", j), Msg: "empty"}
				}
				if h.Timeout < 0 {
					return Settings{}, &KeyError{File: name, Event: ev, Entry: i, Field: fmt.Sprintf("hooks[%d].timeout", j), Msg: fmt.Sprintf("want seconds, not %v", h.Timeout)}
				}
			}
		}
		s.Events[ev] = entries
	}
	return s, nil
}

// FromConfig converts meka's [hooks] table, decoded from TOML into plain
// maps and slices, into Settings: the same shape as Claude Code's JSON.
func FromConfig(file string, table map[string]any) (Settings, error) {
	raw, err := json.Marshal(table)
	if err != nil {
		return Settings{}, fmt.Errorf("%s: [hooks]: %w", file, err)
	}
	return parseHooks(file+": [hooks]", raw)
}

// hooks flattens s into hooks from source.
func (s Settings) hooks(source string, workspace bool) []Hook {
	var out []Hook
	events := make([]string, 0, len(s.Events))
	for ev := range s.Events {
		events = append(events, ev)
	}
	slices.Sort(events)
	for _, ev := range events {
		if !slices.Contains(Known, ev) {
			continue
		}
		for _, e := range s.Events[ev] {
			var re *regexp.Regexp
			if e.Matcher != "" && e.Matcher != "*" {
				// Anchored: Claude Code's "Edit" matches Edit, not
				// NotebookEdit.
				re = regexp.MustCompile("^(?:" + e.Matcher + ")$")
			}
			for _, h := range e.Hooks {
				t := DefaultTimeout
				if h.Timeout > 0 {
					t = time.Duration(h.Timeout * float64(time.Second))
				}
				confine := s.Confine || e.Confine
				if h.Confine != nil {
					confine = *h.Confine
				}
				out = append(out, Hook{Event: ev, Matcher: e.Matcher, re: re, Command: h.Command,
					Timeout: t, Confine: confine, Source: source, Workspace: workspace})
			}
		}
	}
	return out
}

// WorkspaceFiles are a workspace's settings files, relative to its root,
// in the order their hooks are listed.
var WorkspaceFiles = []string{".claude/settings.json", ".claude/settings.local.json", ".meka/settings.json"}

// Sources says where to read hooks from.
type Sources struct {
	// Config is meka's [hooks] table, already parsed, and ConfigFile the
	// file it came from.
	Config     Settings
	ConfigFile string
	// Home is the person's home directory (~/.claude/settings.json);
	// empty skips it.
	Home string
	// Workspace is the session's project root; empty skips its files.
	Workspace string
}

// Discover reads every source's hooks. A missing file is no error; a file
// that cannot be parsed is, naming it, and its hooks are left out while
// the others load.
func Discover(src Sources) (*Set, error) {
	set := &Set{Workspace: src.Workspace}
	var errs []error
	if src.ConfigFile != "" || len(src.Config.Events) > 0 {
		name := src.ConfigFile
		if name == "" {
			name = "config"
		}
		set.add(src.Config.hooks(name, false))
	}
	read := func(path string, workspace bool) {
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		if err != nil {
			errs = append(errs, err)
			return
		}
		s, err := ParseSettings(path, data)
		if err != nil {
			errs = append(errs, err)
			return
		}
		set.add(s.hooks(path, workspace))
		if workspace {
			set.files = append(set.files, path)
		}
	}
	if src.Home != "" {
		read(filepath.Join(src.Home, ".claude", "settings.json"), false)
	}
	if src.Workspace != "" {
		for _, f := range WorkspaceFiles {
			p := filepath.Join(src.Workspace, filepath.FromSlash(f))
			if src.Home != "" && p == filepath.Join(src.Home, ".claude", "settings.json") {
				continue // the workspace is the home directory: read once
			}
			read(p, true)
		}
	}
	return set, errors.Join(errs...)
}
