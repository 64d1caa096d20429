package bestof

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Report writes the candidates for a person: each one's status, session,
// worktree and branch, diff stat, the tests it ran and its summary; full
// adds each one's whole diff.
func Report(ctx context.Context, o Options, w io.Writer, res *Result, full bool) error {
	on := res.Branch
	if on == "" {
		on = "detached HEAD"
	}
	fmt.Fprintf(w, "best-of %d (run %s) from %s at %s: %s\n", len(res.Candidates), res.ID, on, short(res.Base), firstLine(res.Task))
	for _, c := range res.Candidates {
		fmt.Fprintf(w, "\n[%d] %s", c.ID, c.Status)
		if c.Error != "" {
			fmt.Fprintf(w, ": %s", c.Error)
		}
		fmt.Fprintln(w)
		if c.SessionID != "" {
			fmt.Fprintf(w, "    session   %s (meka -r %s)\n", c.SessionID, short(c.SessionID))
		}
		fmt.Fprintf(w, "    worktree  %s (branch %s)\n", c.Worktree, c.Branch)
		if c.Changed() {
			fmt.Fprintf(w, "    changes\n%s\n", indent(c.DiffStat, "      "))
		} else {
			fmt.Fprintln(w, "    changes   none")
		}
		if len(c.Tests) == 0 {
			fmt.Fprintln(w, "    tests     none run")
		}
		for i, t := range c.Tests {
			label := "tests    "
			if i > 0 {
				label = "         "
			}
			fmt.Fprintf(w, "    %s %s (%s)\n", label, firstLine(t.Command), describeTest(t))
		}
		if c.Summary != "" {
			fmt.Fprintf(w, "    summary\n%s\n", indent(c.Summary, "      "))
		}
		if full && c.Changed() {
			d, err := Diff(ctx, o, res, c.ID)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "    diff\n%s\n", indent(d, "      "))
		}
	}
	return nil
}

func describeTest(t TestRun) string {
	switch {
	case t.ExitCode != nil && *t.ExitCode == 0:
		return "passed"
	case t.ExitCode != nil:
		return fmt.Sprintf("failed, exit %d", *t.ExitCode)
	case t.Status == "":
		return "no result"
	}
	return t.Status
}

// maxAnswers bounds how many answers Choose reads before it gives up.
const maxAnswers = 50

// Choose asks which candidate to keep and reads the answers from in: a
// number picks that candidate, "d N" prints its whole diff, "q", an
// empty line or the end of input picks none (0). A candidate that failed
// or changed nothing is refused and asked again.
func Choose(ctx context.Context, o Options, in io.Reader, out io.Writer, res *Result) (int, error) {
	into := res.Branch
	if into == "" {
		into = "HEAD"
	}
	sc := bufio.NewScanner(in)
	for range maxAnswers {
		fmt.Fprintf(out, "\nKeep which candidate? 1-%d merges it into %s, d N shows N's diff, q (or Enter) keeps every worktree: ", len(res.Candidates), into)
		if !sc.Scan() {
			fmt.Fprintln(out)
			return 0, sc.Err()
		}
		ans := strings.TrimSpace(sc.Text())
		if ans == "" || ans == "q" || ans == "quit" {
			return 0, nil
		}
		if rest, ok := strings.CutPrefix(ans, "d"); ok && strings.TrimSpace(rest) != "" {
			k, err := strconv.Atoi(strings.TrimSpace(rest))
			if err != nil {
				fmt.Fprintf(out, "%q is not a candidate's number\n", strings.TrimSpace(rest))
				continue
			}
			d, err := Diff(ctx, o, res, k)
			if err != nil {
				fmt.Fprintln(out, err)
				continue
			}
			if d == "" {
				d = "(no changes)"
			}
			fmt.Fprintln(out, d)
			continue
		}
		k, err := strconv.Atoi(ans)
		c, ok := res.Candidate(k)
		switch {
		case err != nil || !ok:
			fmt.Fprintf(out, "answer a number from 1 to %d, d N or q\n", len(res.Candidates))
		case c.Status == StatusFailed:
			fmt.Fprintf(out, "candidate %d failed; pick another\n", k)
		case !c.Changed():
			fmt.Fprintf(out, "candidate %d changed nothing; pick another\n", k)
		default:
			return k, nil
		}
	}
	return 0, fmt.Errorf("best-of: no usable answer in %d tries", maxAnswers)
}

func indent(s, prefix string) string {
	s = strings.TrimRight(s, "\n")
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
