// Package skills discovers and parses Agent Skills: a skill is a directory
// holding SKILL.md, YAML front matter (name, description, optional
// allowed-tools and disable-model-invocation) and a Markdown body.
//
// It is pure: it reads the directories it is given and imports nothing
// from meka. Where the directories are and what the model is told is the
// business of internal/prompt and the host.
package skills

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// FileName is the file that makes a directory a skill.
const FileName = "SKILL.md"

// Bounds of the format.
const (
	MaxNameLen        = 64
	MaxDescriptionLen = 1024
)

// ValidName reports whether s is a skill name: 1 to 64 lowercase letters,
// digits and single hyphens, neither first nor last.
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > MaxNameLen || s[0] == '-' || s[len(s)-1] == '-' || strings.Contains(s, "--") {
		return false
	}
	for _, c := range []byte(s) {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// Skill is one parsed skill.
type Skill struct {
	Name        string
	Description string
	// AllowedTools lists the tools the skill expects to use.
	AllowedTools []string
	// DisableModelInvocation keeps the skill off the model's list: only a
	// person invokes it, as /name.
	DisableModelInvocation bool
	// Dir is the skill's directory and Path its SKILL.md.
	Dir, Path string
	// Body is the Markdown after the front matter.
	Body string
	// Source is the label of the location it was found in.
	Source string
}

// frontMatter is SKILL.md's YAML head.
type frontMatter struct {
	Name                   string `yaml:"name"`
	Description            string `yaml:"description"`
	AllowedTools           any    `yaml:"allowed-tools"`
	DisableModelInvocation bool   `yaml:"disable-model-invocation"`
}

// ErrFrontMatter reports a SKILL.md whose front matter is missing or
// malformed.
var ErrFrontMatter = errors.New("bad front matter")

// SplitFrontMatter cuts the YAML front matter off a Markdown file (a
// SKILL.md, a sub-agent's definition): the lines between a first "---"
// line and the next. A leading byte order mark is dropped and CRLF line
// ends read as LF. Without a head opened and closed, ok is false and body
// is the whole text so normalised.
func SplitFrontMatter(data []byte) (head, body []byte, ok bool) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	data = bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	rest, found := bytes.CutPrefix(data, []byte("---\n"))
	if !found {
		return nil, data, false
	}
	if b, found := bytes.CutPrefix(rest, []byte("---\n")); found {
		return nil, b, true // an empty head
	}
	if h, b, found := bytes.Cut(rest, []byte("\n---\n")); found {
		return h, b, true
	}
	if h, found := bytes.CutSuffix(rest, []byte("\n---")); found {
		return h, nil, true
	}
	return nil, data, false
}

// Parse reads a SKILL.md whose directory is named dirName.
func Parse(dirName string, data []byte) (Skill, error) {
	head, body, ok := SplitFrontMatter(data)
	if !ok && !bytes.HasPrefix(body, []byte("---\n")) {
		return Skill{}, fmt.Errorf("%w: SKILL.md must start with a --- line", ErrFrontMatter)
	}
	if !ok {
		return Skill{}, fmt.Errorf("%w: no closing --- line", ErrFrontMatter)
	}
	var fm frontMatter
	if err := yaml.Unmarshal(head, &fm); err != nil {
		return Skill{}, fmt.Errorf("%w: %v", ErrFrontMatter, err)
	}
	s := Skill{Name: fm.Name, Description: strings.TrimSpace(fm.Description), DisableModelInvocation: fm.DisableModelInvocation,
		Body: strings.TrimSpace(string(body))}
	switch {
	case !ValidName(s.Name):
		return Skill{}, fmt.Errorf("%w: name %q is not 1 to %d lowercase letters, digits and hyphens", ErrFrontMatter, s.Name, MaxNameLen)
	case s.Name != dirName:
		return Skill{}, fmt.Errorf("%w: name %q differs from its directory %q", ErrFrontMatter, s.Name, dirName)
	case s.Description == "":
		return Skill{}, fmt.Errorf("%w: no description", ErrFrontMatter)
	case len(s.Description) > MaxDescriptionLen:
		return Skill{}, fmt.Errorf("%w: description longer than %d characters", ErrFrontMatter, MaxDescriptionLen)
	}
	switch v := fm.AllowedTools.(type) {
	case nil:
	case string:
		s.AllowedTools = strings.Fields(strings.ReplaceAll(v, ",", " "))
	case []any:
		for _, t := range v {
			if t, ok := t.(string); ok && t != "" {
				s.AllowedTools = append(s.AllowedTools, t)
			}
		}
	default:
		return Skill{}, fmt.Errorf("%w: allowed-tools is neither a list nor a string", ErrFrontMatter)
	}
	return s, nil
}

// Location is a directory whose subdirectories are skills.
type Location struct {
	Dir string
	// Source labels the location ("project", "user", "meka").
	Source string
}

// Problem is a skill that was skipped.
type Problem struct {
	Path string
	Err  error
}

// ErrUnreadable marks a skill whose SKILL.md exists but cannot be read,
// as opposed to one that reads but is malformed.
var ErrUnreadable = errors.New("cannot be read")

func (p Problem) Error() string { return fmt.Sprintf("skill %s: %v", p.Path, p.Err) }

// Discover reads the skills of every location, earlier locations winning
// a name found twice, and returns them sorted by name with the skills it
// skipped. A missing location is not a problem.
func Discover(locs []Location) ([]Skill, []Problem) {
	var out []Skill
	var problems []Problem
	seen := make(map[string]bool)
	for _, loc := range locs {
		entries, err := os.ReadDir(loc.Dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				problems = append(problems, Problem{Path: loc.Dir, Err: err})
			}
			continue
		}
		for _, e := range entries {
			dir := filepath.Join(loc.Dir, e.Name())
			if !isDir(e, dir) || seen[e.Name()] {
				continue
			}
			path := filepath.Join(dir, FileName)
			data, err := os.ReadFile(path)
			if errors.Is(err, fs.ErrNotExist) {
				continue // not a skill
			}
			if err != nil {
				problems = append(problems, Problem{Path: path, Err: fmt.Errorf("%w: %w", ErrUnreadable, err)})
				continue
			}
			s, err := Parse(e.Name(), data)
			if err != nil {
				problems = append(problems, Problem{Path: path, Err: err})
				continue
			}
			s.Dir, s.Path, s.Source = dir, path, loc.Source
			seen[s.Name] = true
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, problems
}

func isDir(e fs.DirEntry, path string) bool {
	if e.IsDir() {
		return true
	}
	if e.Type()&fs.ModeSymlink != 0 {
		st, err := os.Stat(path)
		return err == nil && st.IsDir()
	}
	return false
}

// Files lists a skill's other files, relative to its directory, sorted;
// at most limit of them (0 means 100).
func (s Skill) Files(limit int) []string {
	if limit <= 0 {
		limit = 100
	}
	var out []string
	_ = filepath.WalkDir(s.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || len(out) >= limit {
			return filepath.SkipDir
		}
		if d.IsDir() {
			if p != s.Dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if rel, err := filepath.Rel(s.Dir, p); err == nil && rel != FileName {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(out)
	return out
}

// Find returns the skill named name.
func Find(list []Skill, name string) (Skill, bool) {
	for _, s := range list {
		if s.Name == name {
			return s, true
		}
	}
	return Skill{}, false
}

// Render writes a SKILL.md for name, description and body.
func Render(name, description, body string) []byte {
	fm, _ := yaml.Marshal(struct {
		Name        string `yaml:"name"`
		Description string `yaml:"description"`
	}{name, description})
	var b bytes.Buffer
	b.WriteString("---\n")
	b.Write(fm)
	b.WriteString("---\n\n")
	b.WriteString(strings.TrimSpace(body))
	b.WriteString("\n")
	return b.Bytes()
}
