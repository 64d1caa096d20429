package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/bestof"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/oneshot"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

func init() { extraCommands = append(extraCommands, newBestOfCmd) }

func newBestOfCmd(g *globals) *cobra.Command {
	var (
		asJSON, cherryPick, keepAll, fullDiff bool
		pick                                  int
	)
	cmd := &cobra.Command{
		Use:   "best-of N TASK",
		Short: "run a task as N sessions at once, each in its own git worktree, and keep the best",
		Long: fmt.Sprintf(`meka best-of runs TASK as N new sessions at once (2 to %d), each in a git
worktree of its own (best-of-ID-K, branch meka/best-of-ID-K) made from HEAD.
When all have finished it shows, for each candidate, what it changed (the diff
stat), the tests it ran (go test, npm test, pytest, cargo test, make test, ...)
with their exit status, and its final message; then asks which one to keep.

The candidate kept is merged into the current branch (git merge --no-ff, or
--cherry-pick); the other worktrees and their branches are removed (--keep-all
keeps them). The kept one's worktree stays: meka -r SESSION continues its
session there, meka worktrees remove NAME removes it. Answering q keeps every
worktree. Each candidate is a recorded session: meka -r resumes any of them.

With --json, stdout is one JSON object (the run, its candidates, what was
kept) and nothing is merged unless --pick K names a candidate.

It refuses to run outside a git repository or with uncommitted changes to
tracked files (commit or stash them first). A candidate whose turn fails is
reported; if every one fails, meka exits 1.`, bestof.MaxN),
		Example: `  meka best-of 3 "make the flaky TestServe pass"
  meka --permission unrestricted best-of 2 "port the build to CMake"
  meka best-of 4 --json "fix issue 12" > run.json
  meka best-of 3 --json --pick 1 --cherry-pick "add a --verbose flag"`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := strconv.Atoi(args[0])
			if err != nil {
				return usageError("best-of N TASK: N is how many candidates, not %q", args[0])
			}
			if err := bestof.CheckN(n); err != nil {
				return usageError("%v", err)
			}
			task := strings.Join(args[1:], " ")
			if strings.TrimSpace(task) == "" {
				return usageError("best-of needs a task: meka best-of %d \"what to do\"", n)
			}
			if pick < 0 || pick > n {
				return usageError("--pick %d: name a candidate from 1 to %d", pick, n)
			}
			mode := bestof.ModeMerge
			if cherryPick {
				mode = bestof.ModeCherryPick
			}
			return g.runBestOf(cmd.Context(), n, task, bestOfFlags{json: asJSON, pick: pick, mode: mode, keepAll: keepAll, fullDiff: fullDiff})
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print one JSON object on stdout and ask nothing; merge only with --pick")
	f.IntVar(&pick, "pick", 0, "keep candidate K without asking")
	f.BoolVar(&cherryPick, "cherry-pick", false, "bring the kept candidate in with git cherry-pick instead of a merge commit")
	f.BoolVar(&keepAll, "keep-all", false, "keep every candidate's worktree and branch")
	f.BoolVar(&fullDiff, "diff", false, "show each candidate's whole diff, not only its stat")
	return cmd
}

type bestOfFlags struct {
	json, keepAll, fullDiff bool
	pick                    int
	mode                    string
}

func (g *globals) runBestOf(ctx context.Context, n int, task string, fl bestOfFlags) error {
	wo, err := g.worktreeOptions()
	if err != nil {
		return err
	}
	dir, err := g.cwd()
	if err != nil {
		return err
	}
	o := bestof.Options{Worktrees: wo, Progress: g.terminalSafe(g.stderr)}
	// Refused before the database opens or anything is written.
	if _, _, err := o.Check(ctx, dir); err != nil {
		return usageError("%v", err)
	}
	a, err := g.newApp(ctx)
	if err != nil {
		return err
	}
	defer a.close(context.WithoutCancel(ctx))
	a.notices.attach(a.host, g.terminalSafe(g.stderr))
	o.Log = a.host.Store()
	o.Runner = g.bestOfRunner(a)

	res, err := bestof.Run(ctx, o, dir, task, n)
	if errors.Is(err, bestof.ErrRefused) {
		return usageError("%v", err)
	}
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	out := g.terminalSafe(g.stdout)
	var failure error
	switch {
	case ctx.Err() != nil:
		// Interrupted: nothing is asked or removed; the work so far is on
		// the branches.
		if !fl.json {
			_ = bestof.Report(context.WithoutCancel(ctx), o, out, res, false)
		}
		failure = &exitError{code: oneshot.ExitCanceled, err: errors.New("best-of interrupted; the worktrees are kept (meka worktrees list)")}
	case res.AllFailed():
		if !fl.keepAll {
			_ = bestof.CleanUnchanged(ctx, o, res)
		}
		if !fl.json {
			_ = bestof.Report(ctx, o, out, res, fl.fullDiff)
		}
		failure = &exitError{code: 1, err: fmt.Errorf("every candidate failed")}
	default:
		if !fl.json {
			if err := bestof.Report(ctx, o, out, res, fl.fullDiff); err != nil {
				return &exitError{code: 1, err: err}
			}
		}
		k := fl.pick
		if k == 0 && !fl.json {
			if k, err = bestof.Choose(ctx, o, g.stdin, out, res); err != nil {
				failure = &exitError{code: 1, err: err}
			}
		}
		if k > 0 {
			failure = g.keepCandidate(ctx, o, res, k, fl)
		} else if failure == nil && !fl.json {
			fmt.Fprintf(out, "\nNothing merged; every worktree is kept: git merge BRANCH brings one in, meka worktrees remove NAME removes one.\n")
		}
	}
	if fl.json {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return &exitError{code: 1, err: err}
		}
		g.stdout.Write(append(b, '\n'))
	}
	return failure
}

// keepCandidate merges candidate k and removes the others' worktrees
// unless --keep-all.
func (g *globals) keepCandidate(ctx context.Context, o bestof.Options, res *bestof.Result, k int, fl bestOfFlags) error {
	if err := bestof.Pick(ctx, o, res, k, fl.mode); err != nil {
		return &exitError{code: 1, err: err}
	}
	c, _ := res.Candidate(k)
	var cleanErr error
	if !fl.keepAll {
		cleanErr = bestof.Clean(ctx, o, res, k)
	}
	if !fl.json {
		out := g.terminalSafe(g.stdout)
		into := res.Branch
		if into == "" {
			into = "HEAD"
		}
		fmt.Fprintf(out, "\nCandidate %d (%s) is in %s, now at %s.\n", k, fl.mode, into, shortSessionID(res.MergedHead))
		if len(res.Removed) > 0 {
			fmt.Fprintf(out, "Removed worktrees and branches: %s.\n", strings.Join(res.Removed, ", "))
		}
		fmt.Fprintf(out, "Kept worktree %s: meka -r %s continues its session there; meka worktrees remove %s when done.\n",
			c.Worktree, shortSessionID(c.SessionID), c.Worktree)
	}
	if cleanErr != nil {
		return &exitError{code: 1, err: cleanErr}
	}
	return nil
}

// bestOfRunner runs each candidate as a new session in its worktree, as
// --oneshot runs one, and closes it after its turn so that meka -r can
// take it up.
func (g *globals) bestOfRunner(a *app) bestof.Runner {
	return func(ctx context.Context, dir, task string) bestof.Outcome {
		s, err := a.host.Create(ctx, host.CreateOptions{Cwd: dir, Profile: g.profile, Project: g.project})
		if err != nil {
			return bestof.Outcome{Err: err}
		}
		defer a.host.CloseSession(context.WithoutCancel(ctx), s.ID())
		out := bestof.Outcome{SessionID: s.ID()}
		res, err := s.Run(ctx, session.UserMessage{Parts: model.Parts{model.Text{Text: task}}})
		if err == nil && res.Stop == agent.StopFailed {
			if err = res.Err; err == nil {
				err = errors.New("the turn failed")
			}
		}
		var perr *model.Error
		switch {
		case errors.As(err, &perr):
			out.Err = errors.New(perr.Display())
		case err != nil:
			out.Err = err
		case res.Stop == agent.StopCanceled:
			out.Err = context.Canceled
		case res.Stop != agent.StopEndTurn:
			out.Stopped = string(res.Stop)
		}
		return out
	}
}
