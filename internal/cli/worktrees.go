package cli

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"meka.dev/meka/internal/sandbox"
	"meka.dev/meka/internal/worktree"
	"meka.dev/meka/session"
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
	g.recoverWorktrees(ctx, o, dir)
	w, err := o.Create(ctx, dir, g.worktree)
	if err != nil {
		return usageError("--worktree %s: %v", g.worktree, err)
	}
	fmt.Fprintf(g.stderr, "meka: worktree %s (branch %s) at %s\n", w.Name, w.Branch, w.Path)
	g.workdir = w.Path
	return nil
}

// recoverWorktrees ends what a killed meka left running in the
// repository's worktrees: the commands its sessions' turns started, which
// outlive it in process groups of their own and may hold git's locks
// there, as resuming those sessions would. worktree.List then clears the
// locks nobody holds any more. A failure leaves things as they were: git
// names a lock it trips on.
func (g *globals) recoverWorktrees(ctx context.Context, o worktree.Options, dir string) {
	wts, err := o.List(ctx, dir)
	if err != nil || len(wts) == 0 {
		return
	}
	dataDir, err := g.dataDirectory()
	if err != nil {
		return
	}
	db, err := g.openDB(ctx, nil)
	if err != nil {
		return
	}
	defer db.Close()
	killed := 0
	for _, w := range wts {
		cwd, err := filepath.EvalSymlinks(w.Path)
		if err != nil {
			continue
		}
		// Sub-agents' sessions too: an isolated one works in a worktree.
		page, err := db.Sessions().List(ctx, session.ListOptions{Cwd: cwd, SubAgents: true, Limit: 1000})
		if err != nil {
			continue
		}
		for _, m := range page.Sessions {
			n, _ := sandbox.KillRecorded(filepath.Join(dataDir, "sessions", m.ID, "running"))
			killed += n
		}
	}
	if killed > 0 {
		o.List(ctx, dir)
	}
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
			g.recoverWorktrees(cmd.Context(), o, dir)
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
