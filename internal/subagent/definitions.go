package subagent

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"meka.dev/meka/internal/skills"
	"meka.dev/meka/permission"
)

// Definition is a named sub-agent: a Markdown file whose YAML front matter
// says what the sub-agent may use and whose body is added to its system
// prompt.
type Definition struct {
	Name        string
	Description string
	// Tools are globs of the tools offered; empty offers every tool.
	Tools   []string
	Profile string
	// Permission caps the sub-agent's level; nil leaves the parent's.
	Permission *permission.Level
	// MaxTurns bounds the model requests of one of its turns; 0 is the
	// host's bound.
	MaxTurns int
	// Prompt is the body, added to the system prompt.
	Prompt string
	// Path is the file it was read from.
	Path string
}

// Sources say where definitions are read from: a session's project
// (.meka/agents, then .claude/agents) before the user's directory
// ($XDG_CONFIG_HOME/meka/agents, passed in by the composition root). The
// first definition of a name wins.
type Sources struct {
	UserDir string
	Logger  *slog.Logger
}

// maxDefinitionSize bounds one definition file.
const maxDefinitionSize = 256 << 10

// ErrUnknown is returned by Find for a name no definition has.
var ErrUnknown = errors.New("no sub-agent definition has this name")

// Load reads the definitions visible from the project directory cwd,
// sorted by name. A file that cannot be read or parsed is skipped with a
// warning: one bad file does not hide the others.
func (s Sources) Load(cwd string) []Definition {
	log := s.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var out []Definition
	seen := make(map[string]bool)
	dirs := []struct {
		dir    string
		claude bool
	}{{filepath.Join(cwd, ".meka", "agents"), false}, {filepath.Join(cwd, ".claude", "agents"), true}}
	if s.UserDir != "" {
		dirs = append(dirs, struct {
			dir    string
			claude bool
		}{s.UserDir, false})
	}
	for _, d := range dirs {
		files, err := filepath.Glob(filepath.Join(d.dir, "*.md"))
		if err != nil {
			continue
		}
		slices.Sort(files)
		for _, f := range files {
			def, err := readDefinition(f, d.claude, log)
			if err != nil {
				log.Warn("skip sub-agent definition", "path", f, "err", err)
				continue
			}
			if seen[def.Name] {
				continue
			}
			seen[def.Name] = true
			out = append(out, def)
		}
	}
	slices.SortFunc(out, func(a, b Definition) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Find returns the definition called name visible from cwd.
func (s Sources) Find(cwd, name string) (Definition, error) {
	for _, d := range s.Load(cwd) {
		if d.Name == name {
			return d, nil
		}
	}
	return Definition{}, fmt.Errorf("%w: %q", ErrUnknown, name)
}

// frontMatter is a definition's YAML header.
type frontMatter struct {
	Name        string    `yaml:"name"`
	Description string    `yaml:"description"`
	Tools       toolsList `yaml:"tools"`
	Profile     string    `yaml:"profile"`
	Permission  string    `yaml:"permission"`
	MaxTurns    int       `yaml:"max_turns"`
}

var knownFields = []string{"name", "description", "tools", "profile", "permission", "max_turns"}

// toolsList reads tools as a YAML list or as one comma-separated string,
// the form Claude Code's files use.
type toolsList []string

func (t *toolsList) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		for _, f := range strings.Split(n.Value, ",") {
			if f = strings.TrimSpace(f); f != "" {
				*t = append(*t, f)
			}
		}
		return nil
	case yaml.SequenceNode:
		var l []string
		if err := n.Decode(&l); err != nil {
			return err
		}
		*t = l
		return nil
	}
	return fmt.Errorf("line %d: tools is a list of tool names or globs", n.Line)
}

// claudeTools maps the tool names of Claude Code's definitions to meka's.
var claudeTools = map[string][]string{
	"Read": {"file_read"}, "Write": {"file_write"}, "Edit": {"file_edit"}, "MultiEdit": {"file_edit"},
	"Grep": {"file_search"}, "Glob": {"file_find"}, "LS": {"file_find"}, "Bash": {"shell_execute"},
	"TodoWrite": {"checklist_*", "update_plan", "patch_plan", "write_todos"},
}

func readDefinition(path string, claude bool, log *slog.Logger) (Definition, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Definition{}, err
	}
	if !fi.Mode().IsRegular() {
		return Definition{}, fmt.Errorf("read definition: %w", fs.ErrInvalid)
	}
	if fi.Size() > maxDefinitionSize {
		return Definition{}, fmt.Errorf("read definition: %d bytes, over the %d-byte bound", fi.Size(), maxDefinitionSize)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Definition{}, fmt.Errorf("read definition: %w", err)
	}
	def, err := ParseDefinition(data, claude, func(field string) {
		log.Debug("ignore unknown field of a sub-agent definition", "path", path, "field", field)
	})
	if err != nil {
		return Definition{}, err
	}
	if def.Name == "" {
		def.Name = strings.TrimSuffix(filepath.Base(path), ".md")
	}
	def.Path = path
	return def, nil
}

// ParseDefinition reads a definition's text; claude maps Claude Code's
// tool names, and unknown is told each front matter field it ignores.
func ParseDefinition(data []byte, claude bool, unknown func(field string)) (Definition, error) {
	head, body, ok := skills.SplitFrontMatter(data)
	if !ok {
		return Definition{Prompt: strings.TrimSpace(string(body))}, nil
	}
	var fm frontMatter
	if err := yaml.Unmarshal(head, &fm); err != nil {
		return Definition{}, fmt.Errorf("parse front matter: %w", err)
	}
	var fields map[string]any
	if err := yaml.Unmarshal(head, &fields); err == nil && unknown != nil {
		names := make([]string, 0, len(fields))
		for k := range fields {
			if !slices.Contains(knownFields, k) {
				names = append(names, k)
			}
		}
		slices.Sort(names)
		for _, k := range names {
			unknown(k)
		}
	}
	def := Definition{Name: strings.TrimSpace(fm.Name), Description: strings.TrimSpace(fm.Description),
		Profile: fm.Profile, MaxTurns: fm.MaxTurns, Prompt: strings.TrimSpace(string(body))}
	if def.Name != "" && !validName(def.Name) {
		return Definition{}, fmt.Errorf("name %q: use letters, digits, '-' and '_'", def.Name)
	}
	if fm.MaxTurns < 0 {
		return Definition{}, fmt.Errorf("max_turns %d: want a positive number", fm.MaxTurns)
	}
	if fm.Permission != "" {
		l, err := permission.ParseLevel(fm.Permission)
		if err != nil {
			return Definition{}, fmt.Errorf("permission: %w", err)
		}
		def.Permission = &l
	}
	for _, t := range fm.Tools {
		if m, ok := claudeTools[t]; claude && ok {
			def.Tools = append(def.Tools, m...)
			continue
		}
		if _, err := filepath.Match(t, ""); err != nil {
			return Definition{}, fmt.Errorf("tools: bad glob %q", t)
		}
		def.Tools = append(def.Tools, t)
	}
	return def, nil
}

func validName(s string) bool {
	if len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
