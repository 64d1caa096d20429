package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"meka.dev/meka/internal/config"
	"meka.dev/meka/internal/postgres"
	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/session"
)

func init() { extraCommands = append(extraCommands, newMigrateCmd) }

func newMigrateCmd(g *globals) *cobra.Command {
	var to string
	var force bool
	cmd := &cobra.Command{
		Use:   "migrate --to postgres URL",
		Short: "copy this data directory's sessions and jobs into a PostgreSQL database",
		Long: `Copy the SQLite database of the data directory (sessions with every row,
sub-agents' sessions, scheduled jobs) into a PostgreSQL database, for hosts
on several machines to share. Ids, sequence numbers and times are kept, so
a copied session resumes where it was; locks and job leases are not copied.

The target must be empty unless --force; with --force, sessions and jobs
already there are kept and only the others are copied, so running the copy
again changes nothing. Stop the meka processes using the data directory
first. Then set [store] url (or $MEKA_DATABASE_URL) to the same URL.`,
		Example: `  meka migrate --to postgres postgres://meka@db.example/meka`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to != "postgres" {
				return usageError("--to %q: the one target is postgres", to)
			}
			if err := config.CheckStoreURL(args[0]); err != nil || args[0] == "" {
				return usageError("%q: want a postgres:// or postgresql:// URL", args[0])
			}
			return g.migrate(cmd.Context(), args[0], force)
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the target store: postgres")
	cmd.Flags().BoolVar(&force, "force", false, "copy into a database that already holds sessions or jobs, keeping them")
	cmd.MarkFlagRequired("to")
	return cmd
}

// migrate copies the data directory's SQLite database into url.
func (g *globals) migrate(ctx context.Context, url string, force bool) error {
	dir, err := g.dataDirectory()
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "meka.db")
	if _, err := os.Stat(path); err != nil {
		return &exitError{code: 1, err: fmt.Errorf("no SQLite database to copy: %w", err)}
	}
	src, err := sqlite.Open(ctx, path, sqlite.Options{Logger: g.logger()})
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	defer src.Close()
	dst, err := postgres.Open(ctx, url, postgres.Options{Logger: g.logger()})
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	defer dst.Close()

	sessions, jobs, err := dst.Counts(ctx)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	if (sessions > 0 || jobs > 0) && !force {
		return &exitError{code: 1, err: fmt.Errorf("the target database is not empty (%d sessions, %d jobs); --force copies into it, keeping what is there", sessions, jobs)}
	}

	metas, err := allSessions(ctx, src.Sessions())
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	var copied, kept, rows int
	done := make(map[string]bool, len(metas))
	byID := make(map[string]session.Meta, len(metas))
	for _, m := range metas {
		byID[m.ID] = m
	}
	// copyOne copies a session after its parent, which its row references.
	var copyOne func(m session.Meta, depth int) error
	copyOne = func(m session.Meta, depth int) error {
		if done[m.ID] {
			return nil
		}
		if p, ok := byID[m.ParentID]; ok && depth < len(metas) {
			if err := copyOne(p, depth+1); err != nil {
				return err
			}
		}
		rs, err := src.Sessions().Rows(ctx, m.ID, 0)
		if err != nil {
			return err
		}
		ok, err := dst.ImportSession(ctx, m, rs)
		if err != nil {
			return err
		}
		done[m.ID] = true
		if ok {
			copied++
			rows += len(rs)
		} else {
			kept++
		}
		return nil
	}
	for _, m := range metas {
		if err := copyOne(m, 0); err != nil {
			return &exitError{code: 1, err: fmt.Errorf("copy session %s: %w", m.ID, err)}
		}
	}
	srcJobs, err := src.Schedules().List(ctx, "")
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	var jobsCopied int
	for _, j := range srcJobs {
		ok, err := dst.ImportJob(ctx, postgres.Job(j))
		if err != nil {
			return &exitError{code: 1, err: err}
		}
		if ok {
			jobsCopied++
		}
	}
	notes, err := copyMemories(ctx, src, dst)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	fmt.Fprintf(g.stdout, "Copied %d sessions (%d rows) and %d jobs", copied, rows, jobsCopied)
	if notes > 0 {
		fmt.Fprintf(g.stdout, " and %d projects and memories", notes)
	}
	if kept > 0 || jobsCopied < len(srcJobs) {
		fmt.Fprintf(g.stdout, "; %d sessions and %d jobs were there already", kept, len(srcJobs)-jobsCopied)
	}
	fmt.Fprintln(g.stdout, ".")
	return nil
}

// allSessions lists every session, sub-agents' included.
func allSessions(ctx context.Context, st session.Store) ([]session.Meta, error) {
	var out []session.Meta
	opts := session.ListOptions{SubAgents: true, Limit: 1000}
	for range 1 << 20 {
		page, err := st.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Sessions...)
		if page.Next == "" {
			return out, nil
		}
		opts.Cursor = page.Next
	}
	return nil, fmt.Errorf("list sessions: the listing does not end")
}

// copyMemories copies the projects and every scope's memories, and
// returns how many of them were new to the target.
func copyMemories(ctx context.Context, src *sqlite.DB, dst *postgres.DB) (int, error) {
	ps, err := src.Projects().List(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	scopes := []string{""}
	for _, p := range ps {
		ok, err := dst.ImportProject(ctx, postgres.Project(p))
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
		scopes = append(scopes, p.Name)
	}
	for _, scope := range scopes {
		ms, err := src.Memories().List(ctx, scope, 0)
		if err != nil {
			return n, err
		}
		for _, m := range ms {
			ok, err := dst.ImportMemory(ctx, postgres.Memory(m))
			if err != nil {
				return n, err
			}
			if ok {
				n++
			}
		}
	}
	return n, nil
}
