package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"meka.dev/meka/internal/config"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/session"
)

// Fork and rewind are operations on a session's rows (see session.Store);
// they need no model, so they open the database only, and take the
// session's lock for a rewind, as a running meka holds it while it writes.

func newForkCmd(g *globals) *cobra.Command {
	var (
		turn            int64
		codeDir, wtName string
	)
	cmd := &cobra.Command{
		Use:   "fork ID [--turn N] [--code DIR | --worktree NAME]",
		Short: "copy a session, whole or through turn N, into a new session",
		Long: `Copy a session's log, whole or through turn N, into a new session in the same
directory, and print the new session's id. The original is left as it is;
continue the copy with meka -r NEWID.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: g.completeSessionIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withSessions(cmd.Context(), g, args[0], func(st session.Store, m session.Meta, last int64) error {
				if m.ParentID != "" {
					// The copy would be a sibling under the same parent that
					// nothing could drive.
					return usageError("session %s is a sub-agent's session and cannot be forked: continue it with agent_followup from its parent", shortSessionID(m.ID))
				}
				through := int64(-1)
				if cmd.Flags().Changed("turn") {
					if turn < 0 || turn > last {
						return usageError("--turn %d: session %s has turns 1 to %d", turn, shortSessionID(m.ID), last)
					}
					through = turn
				}
				f, err := st.Fork(cmd.Context(), m.ID, through)
				if err != nil {
					return &exitError{code: 1, err: err}
				}
				f.Title = session.ForkTitle(m.ID, m.Title, through)
				if wtName != "" {
					if codeDir != "" {
						return usageError("--code DIR and --worktree NAME both say where the fork's files go; give one")
					}
					cp, err := g.checkpointsFor()
					if err != nil {
						return err
					}
					wts, err := g.worktreeOptions()
					if err != nil {
						return err
					}
					keep := through
					if keep < 0 {
						keep = last
					}
					w, dir, err := host.ExportWorktree(cmd.Context(), cp, wts, m.ID, keep, m.Cwd, wtName)
					if err != nil {
						// A fork without its files is not what was asked for.
						_ = st.Delete(context.WithoutCancel(cmd.Context()), f.ID)
						return &exitError{code: 1, err: fmt.Errorf("fork --worktree: %w", err)}
					}
					if dir, err = filepath.EvalSymlinks(dir); err == nil {
						f.Cwd = dir
					}
					fmt.Fprintf(g.stderr, "the fork's files, as after turn %d, are in worktree %s (branch %s) at %s\n", keep, w.Name, w.Branch, dir)
				}
				if codeDir != "" {
					cp, err := g.checkpointsFor()
					if err != nil {
						return err
					}
					keep := through
					if keep < 0 {
						keep = last
					}
					dest, err := filepath.Abs(codeDir)
					if err != nil {
						return usageError("--code %s: %v", codeDir, err)
					}
					if entries, err := os.ReadDir(dest); err == nil && len(entries) > 0 {
						return usageError("--code %s: the directory is not empty; name a new one", codeDir)
					}
					if err := host.ExportFiles(cmd.Context(), cp, m.ID, keep, m.Cwd, dest); err != nil {
						return &exitError{code: 1, err: fmt.Errorf("fork --code: %w", err)}
					}
					if dest, err = filepath.EvalSymlinks(dest); err == nil {
						f.Cwd = dest
					}
					fmt.Fprintf(g.stderr, "the fork's files, as after turn %d, are in %s\n", keep, dest)
				}
				if err := st.Update(cmd.Context(), f); err != nil {
					return &exitError{code: 1, err: err}
				}
				what := "whole"
				if through >= 0 {
					what = fmt.Sprintf("through turn %d", through)
				}
				fmt.Fprintf(g.stderr, "forked session %s (%s); continue it with meka -r %s\n", shortSessionID(m.ID), what, shortSessionID(f.ID))
				fmt.Fprintln(g.stdout, f.ID)
				return nil
			})
		},
	}
	cmd.Flags().Int64Var(&turn, "turn", 0, "copy the turns up to and including N (default: all)")
	cmd.Flags().StringVar(&codeDir, "code", "", "also write the workspace's files as after turn N into this new directory, where the fork then works")
	cmd.Flags().StringVarP(&wtName, "worktree", "w", "", "also write the workspace's files as after turn N into a new git worktree NAME (branch meka/NAME, from the repository's HEAD, the files' differences from it uncommitted), where the fork then works")
	return cmd
}

func newRewindCmd(g *globals) *cobra.Command {
	var (
		turn                     int64
		yes, force               bool
		code, conversation, both bool
		undo                     int64
	)
	cmd := &cobra.Command{
		Use:   "rewind ID --turn N [--code | --conversation | --both]",
		Short: "take a session back to after turn N: its files, its log, or both",
		Long: `Take a session back to after turn N. --conversation drops every later turn
from its log, for good (the checklist, plan and usage are folded from what is
left); --code puts the workspace's files back as they were after turn N, from
the checkpoints taken before each turn changed anything: changed and deleted
files come back and created ones go; --both (the default) does both.

A file changed outside meka since its last checkpoint refuses the rewind,
naming the file, unless --force. A code rewind is itself recorded: it prints
the checkpoint it replaced, and --undo CHECKPOINT puts those files back.
On a terminal meka asks first; otherwise pass --yes. A session another meka
holds open is refused.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: g.completeSessionIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			cp, err := g.checkpointsFor()
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("undo") {
				return withSessions(ctx, g, args[0], func(st session.Store, m session.Meta, last int64) error {
					files, err := host.UndoRewind(ctx, cp, m.ID, undo, force)
					if err != nil {
						return &exitError{code: 1, err: fmt.Errorf("undo rewind: %w", err)}
					}
					fmt.Fprintf(g.stdout, "put back %d files\n", len(files))
					return nil
				})
			}
			if !cmd.Flags().Changed("turn") {
				return usageError("sessions rewind needs --turn N: the last turn to keep")
			}
			n := 0
			for _, b := range []bool{code, conversation, both} {
				if b {
					n++
				}
			}
			if n > 1 {
				return usageError("sessions rewind takes one of --code, --conversation and --both")
			}
			o := host.RewindOptions{Code: code || both || n == 0, Conversation: conversation || both || n == 0, Force: force}
			if o.Code && cp == nil {
				return usageError("sessions rewind --code: %v; rewind the conversation alone with --conversation", host.ErrNoCheckpoints)
			}
			return withSessions(ctx, g, args[0], func(st session.Store, m session.Meta, last int64) error {
				if turn < 0 || turn >= last {
					return usageError("--turn %d: session %s has turns 1 to %d; rewinding keeps turns up to N < %d", turn, shortSessionID(m.ID), last, last)
				}
				var conv, files string
				if o.Conversation {
					rows, err := st.Rows(ctx, m.ID, 0)
					if err != nil {
						return &exitError{code: 1, err: err}
					}
					dropped := 0
					for _, r := range rows {
						if r.Turn > turn {
							dropped++
						}
					}
					conv = fmt.Sprintf("turns %d to %d (%d rows) of session %s", turn+1, last, dropped, shortSessionID(m.ID))
				}
				if o.Code {
					turns, err := host.TurnFiles(ctx, cp, m.ID)
					if err != nil {
						return &exitError{code: 1, err: err}
					}
					n := 0
					for _, tc := range turns {
						if tc.Turn > turn {
							n += len(tc.Changes)
						}
					}
					files = fmt.Sprintf("the workspace's files as after turn %d (%d changes since)", turn, n)
				}
				var question string
				switch {
				case conv != "" && files != "":
					question = "Drop " + conv + " for good and put back " + files
				case conv != "":
					question = "Drop " + conv + " for good"
				default:
					question = "Put back " + files
				}
				if !yes {
					if !g.stdinIsTerminal() {
						return usageError("sessions rewind: %s? pass --yes to confirm", question)
					}
					if !g.confirm(question + "? [y/N] ") {
						return &exitError{code: 1, err: errors.New("rewind cancelled; nothing changed")}
					}
				}
				res, err := host.Rewind(ctx, st, session.Holder{}, cp, m.ID, turn, o)
				if err != nil {
					return &exitError{code: 1, err: fmt.Errorf("rewind session: %w", err)}
				}
				for _, f := range res.Files {
					fmt.Fprintf(g.stdout, "%s %s\n", f.Op, f.Path)
				}
				if res.Undo != 0 {
					fmt.Fprintf(g.stderr, "undo the files with: meka sessions rewind %s --undo %d\n", shortSessionID(m.ID), res.Undo)
				}
				if files != "" {
					fmt.Fprintf(g.stdout, "put back %s\n", files)
				}
				if conv != "" {
					fmt.Fprintf(g.stdout, "dropped %s\n", conv)
				}
				return nil
			})
		},
	}
	cmd.Flags().Int64Var(&turn, "turn", 0, "the last turn to keep")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	cmd.Flags().BoolVar(&code, "code", false, "put back only the files")
	cmd.Flags().BoolVar(&conversation, "conversation", false, "drop only the later turns of the log")
	cmd.Flags().BoolVar(&both, "both", false, "put back the files and drop the later turns (the default)")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite files changed outside meka since its last checkpoint")
	cmd.Flags().Int64Var(&undo, "undo", 0, "put back the files a rewind replaced (the checkpoint it printed)")
	return cmd
}

// withSessions opens the database and finds the session id names (any
// unique prefix) and its last turn.
func withSessions(ctx context.Context, g *globals, id string, f func(st session.Store, m session.Meta, lastTurn int64) error) error {
	db, err := g.openDB(ctx, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	return findSession(ctx, db, id, f)
}

func findSession(ctx context.Context, db *database, id string, f func(st session.Store, m session.Meta, lastTurn int64) error) error {
	st := db.Sessions()
	m, err := st.Get(ctx, id)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	tail, err := st.Tail(ctx, m.ID, 1)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	var last int64
	if len(tail) > 0 {
		last = tail[0].Turn
	}
	return f(st, m, last)
}

// stdinIsTerminal reports whether a person can be asked on stdin.
func (g *globals) stdinIsTerminal() bool {
	if g.isTerminal != nil {
		return g.isTerminal()
	}
	f, ok := g.stdin.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// confirm asks question on stderr and reads a yes from stdin.
func (g *globals) confirm(question string) bool {
	fmt.Fprint(g.stderr, question)
	line, _ := bufio.NewReader(g.stdin).ReadString('\n')
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes"
}

// defaultCheckpointBytes bounds checkpoints when [checkpoints] max_bytes
// is not set.
const defaultCheckpointBytes = 1 << 30

// checkpointOptions are the host's [checkpoints]; nil when they are off,
// or git, which keeps them, is missing.
func checkpointOptions(cfg *config.Config, dataDir string) *host.CheckpointOptions {
	if cfg.Checkpoints.Off || dataDir == "" {
		return nil
	}
	if _, err := exec.LookPath("git"); err != nil {
		return nil
	}
	o := &host.CheckpointOptions{Dir: filepath.Join(dataDir, "checkpoints"),
		MaxBytes: cfg.Checkpoints.MaxBytes, MaxFileBytes: cfg.Checkpoints.MaxFileBytes}
	if o.MaxBytes == 0 {
		o.MaxBytes = defaultCheckpointBytes
	}
	return o
}

// checkpointsFor reads the config for sessions rewind's checkpoints.
func (g *globals) checkpointsFor() (*host.CheckpointOptions, error) {
	cfg, err := g.loadConfig()
	if err != nil {
		return nil, err
	}
	dataDir, _ := g.dataDirectory()
	return checkpointOptions(cfg, dataDir), nil
}
