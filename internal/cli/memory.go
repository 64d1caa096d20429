package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/memory"
	"meka.dev/meka/internal/storerec"
)

func init() { extraCommands = append(extraCommands, newProjectsCmd, newMemoriesCmd) }

// memoryStore adapts either store's memories to memory.Store.
type memoryStore struct {
	m interface {
		List(ctx context.Context, project string, limit int) ([]storerec.Memory, error)
		Get(ctx context.Context, project, id string) (storerec.Memory, error)
		Put(ctx context.Context, project, id, text string) (storerec.Memory, error)
		Delete(ctx context.Context, project, id string) (storerec.Memory, error)
	}
}

func note(m storerec.Memory) memory.Note {
	return memory.Note{ID: m.ID, Text: m.Text, Updated: m.UpdatedAt}
}

func noteErr(err error) error {
	if errors.Is(err, storerec.ErrNoMemory) {
		return fmt.Errorf("%w: %w", memory.ErrNotFound, err)
	}
	return err
}

func (s memoryStore) List(ctx context.Context, scope string, limit int) ([]memory.Note, error) {
	ms, err := s.m.List(ctx, scope, limit)
	out := make([]memory.Note, len(ms))
	for i, m := range ms {
		out[i] = note(m)
	}
	return out, err
}

func (s memoryStore) Get(ctx context.Context, scope, id string) (memory.Note, error) {
	m, err := s.m.Get(ctx, scope, id)
	return note(m), noteErr(err)
}

func (s memoryStore) Put(ctx context.Context, scope, id, text string) (memory.Note, error) {
	m, err := s.m.Put(ctx, scope, id, text)
	return note(m), noteErr(err)
}

func (s memoryStore) Delete(ctx context.Context, scope, id string) (memory.Note, error) {
	m, err := s.m.Delete(ctx, scope, id)
	return note(m), noteErr(err)
}

// memoryExtension gives every session the memory tools and the restated
// memories of its project; none when the store keeps no memories.
func memoryExtension(db *database) host.ExtensionFunc {
	return func(env host.Env) (host.Extension, error) {
		if db.memories == nil || env.Project == nil {
			return host.Extension{}, nil
		}
		return memory.New(memory.Options{Store: db.memories, Scope: env.Project}), nil
	}
}

// memoryList renders a scope's memories for /memories.
func memoryList(db *database) func(ctx context.Context, project string) (string, error) {
	if db.memories == nil {
		return nil
	}
	return func(ctx context.Context, project string) (string, error) {
		ns, err := db.memories.List(ctx, project, 0)
		if err != nil {
			return "", err
		}
		if len(ns) == 0 {
			return fmt.Sprintf("No memories in %s.", memory.ScopeName(project)), nil
		}
		return fmt.Sprintf("Memories of %s, newest first:\n%s", memory.ScopeName(project), memory.Render(ns)), nil
	}
}

// projectNames lists the projects for the host; nil when the store keeps
// none.
func projectNames(db *database) func(ctx context.Context) ([]string, error) {
	if db.projects == nil {
		return nil
	}
	return func(ctx context.Context) ([]string, error) {
		ps, err := db.projects.List(ctx)
		names := make([]string, len(ps))
		for i, p := range ps {
			names[i] = p.Name
		}
		return names, err
	}
}

func newProjectsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "projects", Short: "add and list projects, the names sessions and memories belong to"}
	var dir string
	add := &cobra.Command{
		Use:   "add NAME",
		Short: "create a project",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if !validProject(name) {
				return usageError("project name %q: use letters, digits, '.', '_' and '-' (at most 64)", name)
			}
			if dir != "" {
				d, err := filepath.Abs(dir)
				if err != nil {
					return usageError("--dir: %v", err)
				}
				dir = d
			}
			db, err := g.openDB(cmd.Context(), nil)
			if err != nil {
				return err
			}
			defer db.Close()
			if err := db.projects.Add(cmd.Context(), name, dir); err != nil {
				return &exitError{code: 1, err: err}
			}
			fmt.Fprintf(g.stdout, "added project %s\n", name)
			return nil
		},
	}
	add.Flags().StringVar(&dir, "dir", "", "the project's directory")
	list := &cobra.Command{
		Use:   "list",
		Short: "list projects",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := g.openDB(cmd.Context(), nil)
			if err != nil {
				return err
			}
			defer db.Close()
			if db.projects == nil {
				return nil
			}
			ps, err := db.projects.List(cmd.Context())
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			if len(ps) == 0 {
				fmt.Fprintln(g.stdout, "no projects; add one with meka projects add NAME")
				return nil
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tDIR")
			for _, p := range ps {
				fmt.Fprintf(tw, "%s\t%s\n", p.Name, p.Dir)
			}
			return tw.Flush()
		},
	}
	cmd.AddCommand(add, list)
	return cmd
}

func validProject(name string) bool {
	if name == "" || len(name) > 64 || name == "." || name == ".." {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func newMemoriesCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "memories", Short: "list the notes sessions remember"}
	var project string
	list := &cobra.Command{
		Use:   "list",
		Short: "list memories, newest first: yours, or a project's with --project",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := g.openDB(cmd.Context(), nil)
			if err != nil {
				return err
			}
			defer db.Close()
			if db.memories == nil {
				return nil
			}
			if project != "" {
				if err := db.projects.Get(cmd.Context(), project); err != nil {
					return &exitError{code: 1, err: fmt.Errorf("list memories: %w", err)}
				}
			}
			ns, err := db.memories.List(cmd.Context(), project, 0)
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			if len(ns) == 0 {
				fmt.Fprintf(g.stdout, "no memories in %s\n", memory.ScopeName(project))
				return nil
			}
			fmt.Fprint(g.stdout, memory.Render(ns))
			return nil
		},
	}
	list.Flags().StringVar(&project, "project", "", "the project whose memories to list")
	cmd.AddCommand(list)
	return cmd
}
