package hooks

// claudeNames maps meka's tool names to Claude Code's, so that a matcher
// written for Claude Code ("Bash", "Edit|Write") matches meka's tools. An
// MCP tool is mcp__server__tool in both.
var claudeNames = map[string][]string{
	"shell_execute": {"Bash"},
	"file_write":    {"Write"},
	"file_edit":     {"Edit", "MultiEdit"},
	"file_read":     {"Read"},
	"file_find":     {"Glob"},
	"file_search":   {"Grep"},
	"agent_spawn":   {"Task", "Agent"},
}

// ClaudeName returns Claude Code's name for a meka tool, or name itself.
func ClaudeName(name string) string {
	if n, ok := claudeNames[name]; ok {
		return n[0]
	}
	return name
}

// Set is the hooks a session runs, by event.
type Set struct {
	// Workspace is the project root the workspace files were read from.
	Workspace string
	byEvent   map[string][]Hook
	all       []Hook
	files     []string // workspace files that had hooks
}

func (s *Set) add(hs []Hook) {
	if s.byEvent == nil {
		s.byEvent = map[string][]Hook{}
	}
	for _, h := range hs {
		s.byEvent[h.Event] = append(s.byEvent[h.Event], h)
		s.all = append(s.all, h)
	}
}

// All lists every hook, in the order of its source and event.
func (s *Set) All() []Hook {
	if s == nil {
		return nil
	}
	return s.all
}

// Has reports whether any hook is set for event.
func (s *Set) Has(event string) bool { return s != nil && len(s.byEvent[event]) > 0 }

// Untrust removes the workspace's hooks from s and returns them: an
// untrusted workspace's hooks are listed, not run.
func (s *Set) Untrust() []Hook {
	if s == nil {
		return nil
	}
	var kept, dropped []Hook
	for _, h := range s.all {
		if h.Workspace {
			dropped = append(dropped, h)
		} else {
			kept = append(kept, h)
		}
	}
	if len(dropped) == 0 {
		return nil
	}
	s.all, s.byEvent, s.files = nil, nil, nil
	s.add(kept)
	return dropped
}

// Match is a hook matched for a call, with the name it matched by.
type Match struct {
	Hook
	// Name is the tool name the matcher matched: meka's, or Claude Code's
	// when the matcher spells it so. It is tool_name on the hook's stdin.
	Name string
}

// Match returns the hooks of event whose matcher matches target (a tool
// name, or the event's own target such as "startup"), deduplicating
// identical commands as Claude Code does. A matcher that matches
// everything reports Claude Code's name of a tool, for which scripts
// written for Claude Code test.
func (s *Set) Match(event, target string) []Match {
	if s == nil {
		return nil
	}
	hs := s.byEvent[event]
	if len(hs) == 0 {
		return nil
	}
	var out []Match
	for _, h := range hs {
		name, ok := h.matches(target)
		if !ok {
			continue
		}
		dup := false
		for _, m := range out {
			if m.Command == h.Command && m.Confine == h.Confine {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, Match{Hook: h, Name: name})
		}
	}
	return out
}

func (h Hook) matches(target string) (string, bool) {
	if h.re == nil {
		return ClaudeName(target), true
	}
	if h.re.MatchString(target) {
		return target, true
	}
	for _, n := range claudeNames[target] {
		if h.re.MatchString(n) {
			return n, true
		}
	}
	return "", false
}
