package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"meka.dev/meka/session"
)

// Fork and rewind are operations on a session's rows (see session.Store);
// they need no model, so they open the database only, and take the
// session's lock for a rewind, as a running meka holds it while it writes.

func newForkCmd(g *globals) *cobra.Command {
	var turn int64
	cmd := &cobra.Command{
		Use:   "fork ID [--turn N]",
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
	return cmd
}

func newRewindCmd(g *globals) *cobra.Command {
	var (
		turn int64
		yes  bool
	)
	cmd := &cobra.Command{
		Use:   "rewind ID --turn N",
		Short: "drop every turn of a session after turn N",
		Long: `Drop every turn of a session after turn N from its log, for good. The
checklist, plan and usage are folded from what is left. On a terminal meka asks
first; otherwise pass --yes. To keep the dropped turns, fork the session first
(meka sessions fork ID). A session another meka holds open is refused.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: g.completeSessionIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("turn") {
				return usageError("sessions rewind needs --turn N: the last turn to keep")
			}
			ctx := cmd.Context()
			return withSessions(ctx, g, args[0], func(st session.Store, m session.Meta, last int64) error {
				if turn < 0 || turn >= last {
					return usageError("--turn %d: session %s has turns 1 to %d; rewinding keeps turns up to N < %d", turn, shortSessionID(m.ID), last, last)
				}
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
				what := fmt.Sprintf("turns %d to %d (%d rows) of session %s", turn+1, last, dropped, shortSessionID(m.ID))
				if !yes {
					if !g.stdinIsTerminal() {
						return usageError("sessions rewind drops %s for good; pass --yes to confirm", what)
					}
					if !g.confirm(fmt.Sprintf("Drop %s for good? [y/N] ", what)) {
						return &exitError{code: 1, err: errors.New("rewind cancelled; nothing changed")}
					}
				}
				lock, err := st.Lock(ctx, m.ID, session.Holder{})
				if err != nil {
					return &exitError{code: 1, err: fmt.Errorf("rewind session: %w", err)}
				}
				defer lock.Release(context.WithoutCancel(ctx))
				if err := st.Rewind(ctx, m.ID, turn); err != nil {
					return &exitError{code: 1, err: fmt.Errorf("rewind session: %w", err)}
				}
				fmt.Fprintf(g.stdout, "dropped %s\n", what)
				return nil
			})
		},
	}
	cmd.Flags().Int64Var(&turn, "turn", 0, "the last turn to keep")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
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
