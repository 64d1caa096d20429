package cli

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"meka.dev/meka/internal/worktree"
)

func init() { extraCommands = append(extraCommands, newWorktreesCmd) }

// worktreeOptions puts meka's worktrees under the data directory.
func (g *globals) worktreeOptions() (worktree.Options, error) {
	dir, err := g.dataDirectory()
	if err != nil {
		return worktree.Options{}, err
	}
	return worktree.Options{Dir: filepath.Join(dir, "worktrees")}, nil
}

// enterWorktree is -w NAME: the worktree is made, and sessions start in
// it, so their confinement roots are its directory.
func (g *globals) enterWorktree(ctx context.Context) error {
	o, err := g.worktreeOptions()
	if err != nil {
		return err
	}
	dir, err := g.cwd()
	if err != nil {
		return err
	}
	w, err := o.Create(ctx, dir, g.worktree)
	if err != nil {
		return usageError("--worktree %s: %v", g.worktree, err)
	}
	fmt.Fprintf(g.stderr, "meka: worktree %s (branch %s) at %s\n", w.Name, w.Branch, w.Path)
	g.workdir = w.Path
	return nil
}

func newWorktreesCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "worktrees", Short: "list and remove the git worktrees meka -w made for this repository"}
	list := &cobra.Command{
		Use:   "list",
		Short: "meka's worktrees of this repository",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := g.worktreeOptions()
			if err != nil {
				return err
			}
			dir, err := g.cwd()
			if err != nil {
				return err
			}
			wts, err := o.List(cmd.Context(), dir)
			if err != nil {
				return usageError("%v", err)
			}
			for _, w := range wts {
				fmt.Fprintf(g.stdout, "%s\t%s\t%s\n", w.Name, w.Branch, w.Path)
			}
			return nil
		},
	}
	var force, keepBranch bool
	remove := &cobra.Command{
		Use:   "remove NAME",
		Short: "remove a worktree and its branch meka/NAME (--keep-branch keeps the branch)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := g.worktreeOptions()
			if err != nil {
				return err
			}
			dir, err := g.cwd()
			if err != nil {
				return err
			}
			if err := o.Remove(cmd.Context(), dir, args[0], force, keepBranch); err != nil {
				return &exitError{code: 1, err: err}
			}
			fmt.Fprintf(g.stdout, "removed worktree %s\n", args[0])
			return nil
		},
	}
	remove.Flags().BoolVar(&force, "force", false, "remove it even with uncommitted changes")
	remove.Flags().BoolVar(&keepBranch, "keep-branch", false, "keep the branch meka/NAME")
	cmd.AddCommand(list, remove)
	return cmd
}
