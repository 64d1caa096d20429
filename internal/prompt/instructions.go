package prompt

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// DefaultMaxBytes is the instructions budget when Options.MaxBytes is 0.
const DefaultMaxBytes = 32 << 10

// Instruction file names, in the order one directory is searched: the
// override wins over AGENTS.md, which wins over the fallbacks.
const (
	OverrideName = "AGENTS.override.md"
	AgentsName   = "AGENTS.md"
	FallbackName = "CLAUDE.md"
)

// InstructionOptions say where project instructions are found.
type InstructionOptions struct {
	// Cwd is the session's working directory, canonical.
	Cwd string
	// UserFile is the user's own instructions ($XDG_CONFIG_HOME/meka/AGENTS.md),
	// put first; empty or missing adds nothing.
	UserFile string
	// Fallbacks are more names tried after CLAUDE.md ([instructions]
	// fallback_files).
	Fallbacks []string
	// MaxBytes bounds the instructions' total size; default DefaultMaxBytes.
	MaxBytes int
}

func (o InstructionOptions) names() []string {
	names := []string{OverrideName, AgentsName, FallbackName}
	for _, f := range o.Fallbacks {
		if f != "" && !slices.Contains(names, f) {
			names = append(names, f)
		}
	}
	return names
}

func (o InstructionOptions) budget() int {
	if o.MaxBytes > 0 {
		return o.MaxBytes
	}
	return DefaultMaxBytes
}

// File is one instruction file that was loaded.
type File struct {
	Path string `json:"path"`
	// Bytes is how much of it was put before the model.
	Bytes int `json:"bytes"`
	// Cut says the budget ran out inside it; Size is then its whole size.
	Cut  bool `json:"cut,omitempty"`
	Size int  `json:"size,omitempty"`
}

func (f File) String() string {
	if f.Cut {
		return fmt.Sprintf("%s (cut to %d of %d bytes)", f.Path, f.Bytes, f.Size)
	}
	return fmt.Sprintf("%s (%d bytes)", f.Path, f.Bytes)
}

// Instructions are the project instructions put before the model.
type Instructions struct {
	// Text is every file under a heading naming it, user file first, then
	// the project root down to the cwd.
	Text  string
	Files []File
}

// ProjectRoot is the nearest ancestor of cwd (cwd included) holding .git,
// else cwd itself.
func ProjectRoot(cwd string) string {
	for d := cwd; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return cwd
		}
		d = parent
	}
}

// Chain lists the directories from the project root down to cwd.
func Chain(cwd string) []string {
	root := ProjectRoot(cwd)
	var dirs []string
	for d := cwd; ; d = filepath.Dir(d) {
		dirs = append(dirs, d)
		if d == root || filepath.Dir(d) == d {
			break
		}
	}
	slices.Reverse(dirs)
	return dirs
}

// pick returns the instruction file of dir: the first name that exists as
// a non-empty regular file.
func pick(dir string, names []string) (string, []byte) {
	for _, n := range names {
		p := filepath.Join(dir, n)
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() || st.Size() == 0 {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil || len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		return p, b
	}
	return "", nil
}

// LoadInstructions reads the user's file and one file per directory from
// the project root down to the cwd, within the budget: the file that
// crosses it is cut (and says so), the ones after it are left out.
func LoadInstructions(o InstructionOptions) Instructions {
	var paths []string
	var bodies [][]byte
	if o.UserFile != "" {
		if p, b := pickFile(o.UserFile); p != "" {
			paths, bodies = append(paths, p), append(bodies, b)
		}
	}
	names := o.names()
	for _, d := range Chain(o.Cwd) {
		if p, b := pick(d, names); p != "" {
			paths, bodies = append(paths, p), append(bodies, b)
		}
	}
	var in Instructions
	var sb strings.Builder
	left := o.budget()
	for i, p := range paths {
		if left <= 0 {
			in.Files = append(in.Files, File{Path: p, Cut: true, Size: len(bodies[i])})
			continue
		}
		body, f := cut(bodies[i], left)
		f.Path = p
		left -= f.Bytes
		in.Files = append(in.Files, f)
		fmt.Fprintf(&sb, "## %s\n\n%s\n", p, strings.TrimRight(body, "\n"))
		if f.Cut {
			fmt.Fprintf(&sb, "\n[This file was cut: only %d of its %d bytes fit the instructions budget.]\n", f.Bytes, f.Size)
			left = 0 // the files after a cut one are left out
		}
		sb.WriteString("\n")
	}
	in.Text = strings.TrimRight(sb.String(), "\n")
	return in
}

func pickFile(path string) (string, []byte) {
	p, b := pick(filepath.Dir(path), []string{filepath.Base(path)})
	return p, b
}

// cut returns at most n bytes of b, ending at a line or rune boundary.
func cut(b []byte, n int) (string, File) {
	if len(b) <= n {
		return string(b), File{Bytes: len(b)}
	}
	s := strings.ToValidUTF8(string(b[:n]), "")
	if i := strings.LastIndexByte(s, '\n'); i > n/2 {
		s = s[:i+1]
	}
	return s, File{Bytes: len(s), Cut: true, Size: len(b)}
}

// AttachedPrefix starts the text a subdirectory's instructions are
// attached with; a session's log is scanned for it on resume so that a
// file is attached once per session.
const AttachedPrefix = "Instructions from "

// Attacher attaches the instruction files of directories below the cwd to
// the first file_read or file_edit result that touches them, once per
// session. It is safe for concurrent use.
type Attacher struct {
	cwd    string
	names  []string
	budget int

	mu   sync.Mutex      // guards seen
	seen map[string]bool // directories already looked at
}

// NewAttacher returns an attacher for o's cwd. Files already attached (as
// recorded in earlier results, see Seen) are not attached again.
func NewAttacher(o InstructionOptions) *Attacher {
	return &Attacher{cwd: o.Cwd, names: o.names(), budget: o.budget(), seen: make(map[string]bool)}
}

// Seen records that the result text s (from an earlier call) attached
// files, so they are not attached again.
func (a *Attacher) Seen(s string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for line := range strings.Lines(s) {
		rest, ok := strings.CutPrefix(line, AttachedPrefix)
		if !ok {
			continue
		}
		p, _, _ := strings.Cut(strings.TrimSpace(rest), " (")
		p = strings.TrimSuffix(p, ":")
		if filepath.IsAbs(p) {
			a.seen[filepath.Dir(p)] = true
		}
	}
}

// Attach returns the instructions of the directories between the cwd
// (excluded) and path's directory (included) not looked at before, and
// marks them looked at; "" when there are none.
func (a *Attacher) Attach(path string) string {
	if path == "" {
		return ""
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(a.cwd, path)
	}
	dir := filepath.Clean(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		dir = filepath.Dir(dir)
	}
	rel, err := filepath.Rel(a.cwd, dir)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return ""
	}
	var dirs []string
	for d := dir; d != a.cwd && d != filepath.Dir(d); d = filepath.Dir(d) {
		dirs = append(dirs, d)
	}
	slices.Reverse(dirs)
	a.mu.Lock()
	defer a.mu.Unlock()
	var sb strings.Builder
	left := a.budget
	for _, d := range dirs {
		if a.seen[d] {
			continue
		}
		a.seen[d] = true
		p, b := pick(d, a.names)
		if p == "" || left <= 0 {
			continue
		}
		body, f := cut(b, left)
		left -= f.Bytes
		fmt.Fprintf(&sb, "\n\n%s%s (they apply to files under %s):\n\n%s", AttachedPrefix, p, d, strings.TrimRight(body, "\n"))
		if f.Cut {
			fmt.Fprintf(&sb, "\n[This file was cut: only %d of its %d bytes fit the instructions budget.]", f.Bytes, f.Size)
		}
	}
	return sb.String()
}
