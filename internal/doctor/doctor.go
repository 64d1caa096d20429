// Package doctor is `meka doctor`: it checks what a working meka needs
// (the config and its profile, the profile's endpoint, confinement, the
// data directory and database, MCP servers, language servers), prints
// one table, and says for each failure what to do. The composition root
// gathers the facts only it may read (the config, the environment) and
// hands them over; the probing is here.
package doctor

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Status is a check's outcome.
type Status string

const (
	Pass Status = "ok"
	Warn Status = "warn" // works, with something worth knowing
	Fail Status = "FAIL"
	Skip Status = "skip" // not checked: an earlier check failed, or nothing to check or run
)

// Result is one row of the table.
type Result struct {
	Check  string
	Status Status
	Detail string
	// Fix says what to do; set for Fail and Warn.
	Fix string
}

// Check is one thing to check; it may answer with several rows (one per
// MCP server).
type Check func(ctx context.Context) []Result

// Run runs checks in order, prints the table and a verdict to w, and
// returns the failures.
func Run(ctx context.Context, w io.Writer, checks ...Check) []Result {
	var rows, failed []Result
	for _, c := range checks {
		for _, r := range c(ctx) {
			rows = append(rows, r)
			if r.Status == Fail {
				failed = append(failed, r)
			}
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tRESULT\tDETAIL")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Check, r.Status, oneLine(r.Detail))
		if r.Fix != "" {
			fmt.Fprintf(tw, "\t\t→ %s\n", oneLine(r.Fix))
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	if len(failed) == 0 {
		fmt.Fprintln(w, "All checks passed: meka is ready.")
		return nil
	}
	names := make([]string, len(failed))
	for i, r := range failed {
		names[i] = r.Check
	}
	fmt.Fprintf(w, "%d %s failed: %s. Fix %s and run meka doctor again.\n", len(failed), plural(len(failed), "check", "checks"),
		strings.Join(names, ", "), plural(len(failed), "it", "them"))
	return failed
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
