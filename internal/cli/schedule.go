package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"meka.dev/meka/internal/config"
	"meka.dev/meka/internal/schedule"
	"meka.dev/meka/internal/schedule/cron"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
)

func init() { extraCommands = append(extraCommands, newScheduleCmd) }

// Cell widths of `meka schedule list`, in characters.
const (
	scheduleCell = 28
	promptCell   = 48
)

func newScheduleCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "list, inspect and cancel scheduled jobs; check what a schedule means",
		Long: `Jobs are turns the agent scheduled for itself (schedule_create). They live in
the database and fire only while a meka that keeps running holds their session
open: the terminal (meka, meka -c, meka -r ID), meka acp and meka serve.
meka --oneshot and these commands never fire a job. A job that came due meanwhile fires once when
such a meka next holds its session (a one-shot job only within [schedule]
missed_grace).

  meka schedule list                  every session's jobs
  meka schedule list --session 0b5c   one session's, by id or unique prefix
  meka schedule show 7f3a1b2c         one job in full
  meka schedule cancel 7f3a1b2c       by id or any unique prefix
  meka schedule next --cron "0 9 * * 1-5" --count 3`,
	}

	var sessionID string
	list := &cobra.Command{
		Use:   "list",
		Short: "list jobs: id, session, schedule, next fire, gate, prompt",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withSchedules(cmd.Context(), g, func(db *database) error {
				return listJobs(cmd.Context(), g.stdout, db, sessionID, g.now())
			})
		},
	}
	list.Flags().StringVar(&sessionID, "session", "", "only this session's jobs (id or unique prefix)")
	_ = list.RegisterFlagCompletionFunc("session", g.completeSessionFlag)

	show := &cobra.Command{
		Use:   "show ID",
		Short: "print one job in full (any unique id prefix)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			level, err := g.fallbackLevel(cfg)
			if err != nil {
				return err
			}
			return withSchedules(cmd.Context(), g, func(db *database) error {
				return showJob(cmd.Context(), g.stdout, db, args[0], jobView{
					now: g.now(), fallback: level, enabled: cfg.Permissions.Enabled, confined: confined(),
				})
			})
		},
	}

	cancel := &cobra.Command{
		Use:   "cancel ID",
		Short: "cancel a job (any unique id prefix)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withSchedules(cmd.Context(), g, func(db *database) error {
				return cancelJob(cmd.Context(), g.stdout, db, args[0])
			})
		},
	}

	var n nextFlags
	next := &cobra.Command{
		Use:   "next (--cron EXPR | --every DUR) [--from RFC3339] [--count N] [--tz ZONE]",
		Short: "print when a cron expression or an interval fires next",
		Long: `Print the next fire times strictly after --from (default now), one RFC 3339
line each in the zone's offset. --every prints from + DUR, from + 2·DUR, and so
on. An expression meka rejects is reported with the reason, and exit status 2.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runNext(g, n) },
	}
	f := next.Flags()
	f.StringVar(&n.cron, "cron", "", "five-field cron expression")
	f.StringVar(&n.every, "every", "", "interval, e.g. 30m or 1h 30m")
	f.StringVar(&n.from, "from", "", "RFC 3339 time to count from (default now)")
	f.IntVar(&n.count, "count", 5, "how many fire times")
	f.StringVar(&n.tz, "tz", "", "IANA time zone (default [schedule] timezone, else local)")

	cmd.AddCommand(list, show, cancel, next)
	return cmd
}

// withSchedules runs f with the database open.
func withSchedules(ctx context.Context, g *globals, f func(db *database) error) error {
	db, err := g.openDB(ctx, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	return f(db)
}

// fallbackLevel is the level of a session whose row records none: this
// process's --permission, else [permissions] default.
func (g *globals) fallbackLevel(cfg *config.Config) (permission.Level, error) {
	if g.permission == "" {
		return cfg.Permissions.Default, nil
	}
	l, err := permission.ParseLevel(g.permission)
	if err != nil {
		return 0, usageError("--permission: %v", err)
	}
	return l, nil
}

func listJobs(ctx context.Context, w io.Writer, db *database, sessionPrefix string, now time.Time) error {
	sessionID := ""
	if sessionPrefix != "" {
		m, err := db.Sessions().Get(ctx, sessionPrefix)
		if err != nil {
			return sessionError(sessionPrefix, err)
		}
		sessionID = m.ID
	}
	jobs, err := db.Schedules().List(ctx, sessionID)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	if len(jobs) == 0 {
		if sessionID != "" {
			fmt.Fprintf(w, "No scheduled jobs in session %s.\n", schedule.ShortID(sessionID))
		} else {
			fmt.Fprintln(w, "No scheduled jobs.")
		}
		return nil
	}
	ids := make([]string, len(jobs))
	sessions := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i], sessions[i] = j.ID, j.SessionID
	}
	short := schedule.UniquePrefixes(ids)
	if sessionID != "" {
		// Uniqueness was computed over this session's rows, but show and
		// cancel scan every job: refuse to print a prefix another
		// session's job makes ambiguous.
		if err := checkPrefixes(ctx, db, ids, short); err != nil {
			return err
		}
	}
	sessShort, err := sessionPrefixes(ctx, db, sessions)
	if err != nil {
		return &exitError{code: 1, err: err}
	}

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSESSION\tSCHEDULE\tNEXT\tGATE\tPROMPT")
	for i, j := range jobs {
		next := schedule.Until(j.NextAt, now, config.FormatDuration)
		if j.Held != "" {
			next = "parked"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", short[i], sessShort[j.SessionID],
			bound(j.Brief(), scheduleCell), next, j.GateKind(), bound(j.Prompt, promptCell))
	}
	return tw.Flush()
}

// bound cuts s to n characters on one line, marking a cut with "…".
func bound(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// checkPrefixes fails closed when a printed job prefix would resolve to
// more than one job, naming the ids that collide.
func checkPrefixes(ctx context.Context, db *database, ids, short []string) error {
	var clashes []string
	for i, p := range short {
		found, err := db.Schedules().WithPrefix(ctx, p, 10)
		if err != nil {
			return &exitError{code: 1, err: err}
		}
		if len(found) > 1 {
			others := make([]string, 0, len(found))
			for _, j := range found {
				if j.ID != ids[i] {
					others = append(others, fmt.Sprintf("%s (session %s)", j.ID, j.SessionID))
				}
			}
			clashes = append(clashes, fmt.Sprintf("%s also begins %s", strings.Join(others, ", "), p))
		}
	}
	if len(clashes) > 0 {
		return &exitError{code: 1, err: fmt.Errorf("the listing would print job ids that are ambiguous among all jobs: %s; run meka schedule list without --session, or use the full ids",
			strings.Join(clashes, "; "))}
	}
	return nil
}

// sessionPrefixes widens session ids until each is unique among those
// printed and resolves to its session among all stored sessions.
func sessionPrefixes(ctx context.Context, db *database, ids []string) (map[string]string, error) {
	short := schedule.UniquePrefixes(ids)
	out := make(map[string]string, len(ids))
	for i, id := range ids {
		if _, ok := out[id]; ok {
			continue
		}
		p := short[i]
		for len(p) < len(id) {
			_, err := db.Sessions().Get(ctx, p)
			if err == nil {
				break
			}
			if !errors.Is(err, session.ErrAmbiguous) {
				return nil, err
			}
			p = id[:len(p)+1]
		}
		out[id] = p
	}
	return out, nil
}

func sessionError(prefix string, err error) error {
	switch {
	case errors.Is(err, session.ErrNotFound):
		return &exitError{code: 1, err: fmt.Errorf("no session has an id beginning %q", prefix)}
	case errors.Is(err, session.ErrAmbiguous):
		return &exitError{code: 1, err: fmt.Errorf("%q is the beginning of several sessions' ids; give more of it", prefix)}
	}
	return &exitError{code: 1, err: err}
}

// findJob resolves an id or unique prefix among every job.
func findJob(ctx context.Context, db *database, prefix string) (schedule.Job, error) {
	found, err := db.Schedules().WithPrefix(ctx, prefix, 10)
	if err != nil {
		return schedule.Job{}, &exitError{code: 1, err: err}
	}
	switch len(found) {
	case 0:
		return schedule.Job{}, &exitError{code: 1, err: fmt.Errorf("no job has an id beginning %q", prefix)}
	case 1:
		return found[0], nil
	}
	ids := make([]string, len(found))
	for i, j := range found {
		ids[i] = j.ID
	}
	return schedule.Job{}, &exitError{code: 1, err: fmt.Errorf("%q is the beginning of several jobs' ids (%s); give more of it", prefix, strings.Join(ids, ", "))}
}

// jobView is what show needs besides the job.
type jobView struct {
	now time.Time
	// fallback is the level of a session whose row records none; enabled
	// are the levels [permissions] allows.
	fallback permission.Level
	enabled  []permission.Level
	confined bool
}

func showJob(ctx context.Context, w io.Writer, db *database, prefix string, v jobView) error {
	j, err := findJob(ctx, db, prefix)
	if err != nil {
		return err
	}
	loc := j.Location()
	at := func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return t.In(loc).Format(time.RFC3339)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	fmt.Fprintf(tw, "job:\t%s\n", j.ID)
	fmt.Fprintf(tw, "session:\t%s\n", j.SessionID)
	fmt.Fprintf(tw, "schedule:\t%s\n", j.Describe())
	fmt.Fprintf(tw, "zone:\t%s\n", j.Zone)
	next := fmt.Sprintf("%s (%s)", at(j.NextAt), schedule.Until(j.NextAt, v.now, config.FormatDuration))
	fmt.Fprintf(tw, "next fire:\t%s\n", next)
	fmt.Fprintf(tw, "last fired:\t%s\n", at(j.LastFiredAt))
	fmt.Fprintf(tw, "created:\t%s\n", at(j.CreatedAt))
	level := j.Level
	if level == "" {
		level = "(not recorded)"
	}
	fmt.Fprintf(tw, "created at level:\t%s\n", level)
	g, gerr := j.ParsedGate()
	switch {
	case gerr != nil:
		fmt.Fprintf(tw, "gate:\tunreadable: %v\n", gerr)
	case g == nil:
		fmt.Fprintf(tw, "gate:\tnone\n")
	case g.Check.IsCommand():
		fmt.Fprintf(tw, "gate:\tcommand %s\n", g.Check.Command)
		fmt.Fprintf(tw, "when:\t%s\n", g.When)
	default:
		fmt.Fprintf(tw, "gate:\ttool %s %s\n", g.Check.Tool, g.Check.Arguments)
		fmt.Fprintf(tw, "when:\t%s\n", g.When)
	}
	if j.LeaseOwner != "" {
		fmt.Fprintf(tw, "lease:\t%s until %s\n", j.LeaseOwner, at(j.LeaseUntil))
	}
	if j.Held != "" {
		fmt.Fprintf(tw, "parked:\t%s\n", j.Held)
	}
	fmt.Fprintf(tw, "withheld:\t%s\n", withheldLine(ctx, db, j, v))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "prompt:\n%s\n", indent(j.Prompt))
	return nil
}

// withheldLine is show's verdict on whether the job can fire: what this
// process can establish without a host, and "unknown" for the rest.
func withheldLine(ctx context.Context, db *database, j schedule.Job, v jobView) string {
	m, err := db.Sessions().Get(ctx, j.SessionID)
	if err != nil {
		return "unknown: the session's level cannot be read: " + err.Error()
	}
	level := v.fallback
	if m.Permission != "" {
		if level, err = permission.ParseLevel(m.Permission); err != nil {
			return "unknown: the session records an unknown level " + m.Permission
		}
	}
	level = enabledLevel(level, v.enabled)
	verdict := schedule.Withheld(j, level, nil, v.confined)
	switch {
	case verdict.Reason != "":
		return "NOT FIRING: " + verdict.Reason
	case !verdict.Known:
		return "unknown: its tool gate can be resolved only by a host holding the session"
	}
	return "no"
}

// enabledLevel is the level a session at l can actually hold under
// [permissions] enabled: l, or the highest enabled level below it.
func enabledLevel(l permission.Level, enabled []permission.Level) permission.Level {
	if len(enabled) == 0 {
		return l
	}
	best := permission.None
	for _, e := range enabled {
		if e == l {
			return l
		}
		if e < l && e > best {
			best = e
		}
	}
	return best
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

func cancelJob(ctx context.Context, w io.Writer, db *database, prefix string) error {
	j, err := findJob(ctx, db, prefix)
	if err != nil {
		return err
	}
	ok, err := db.Schedules().Delete(ctx, j.ID)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	if !ok {
		return &exitError{code: 1, err: fmt.Errorf("job %s is already gone", schedule.ShortID(j.ID))}
	}
	fmt.Fprintf(w, "Cancelled job %s (%s).\n", schedule.ShortID(j.ID), j.Describe())
	return nil
}

type nextFlags struct {
	cron, every, from, tz string
	count                 int
}

func runNext(g *globals, n nextFlags) error {
	if (n.cron == "") == (n.every == "") {
		return usageError("give one of --cron and --every")
	}
	if n.count < 1 {
		return usageError("--count %d: want at least 1", n.count)
	}
	var loc *time.Location
	if n.tz != "" {
		var err error
		if loc, err = time.LoadLocation(n.tz); err != nil {
			return usageError("--tz %q: %v", n.tz, err)
		}
	} else {
		cfg, err := g.loadConfig()
		if err != nil {
			return err
		}
		loc = cfg.Schedule.Location
		if cfg.Schedule.Timezone == "" || loc == nil {
			loc = localZone(g.getenv)
		}
	}
	from := g.now()
	if n.from != "" {
		var err error
		if from, err = time.Parse(time.RFC3339, n.from); err != nil {
			return usageError("--from %q is not an RFC 3339 time such as 2026-08-11T15:22:00+02:00", n.from)
		}
	}
	var next func(time.Time) (time.Time, bool)
	if n.cron != "" {
		s, err := cron.Parse(n.cron)
		if err != nil {
			return usageError("%v", err)
		}
		next = func(t time.Time) (time.Time, bool) { return s.Next(t, loc) }
	} else {
		d, err := config.ParseDuration(n.every)
		if err != nil {
			return usageError("--every: %v", err)
		}
		next = func(t time.Time) (time.Time, bool) { return t.Add(d), true }
	}
	return printNext(g.stdout, next, from, n.count, loc)
}

// printNext writes count fire times after from, one RFC 3339 line each in
// loc's offset.
func printNext(w io.Writer, next func(time.Time) (time.Time, bool), from time.Time, count int, loc *time.Location) error {
	buf := make([]byte, 0, 32*min(count, 4096))
	t := from
	for i := range count {
		var ok bool
		if t, ok = next(t); !ok {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			return &exitError{code: 1, err: fmt.Errorf("no fire time after the %d printed in %s: every time it matches falls in a daylight-saving gap", i, loc)}
		}
		buf = t.In(loc).AppendFormat(buf, time.RFC3339)
		buf = append(buf, '\n')
		if len(buf) > 64<<10 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	_, err := w.Write(buf)
	return err
}
