package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"meka.dev/meka/internal/archive"
)

// newExportCmd is `meka sessions export`.
func newExportCmd(g *globals) *cobra.Command {
	var format, output string
	cmd := &cobra.Command{
		Use:   "export ID",
		Short: "write a session out: json (an archive import restores), markdown (a transcript) or atif (a trajectory for benchmark harnesses)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			write, err := exporter(format)
			if err != nil {
				return err
			}
			db, err := g.openDB(cmd.Context(), nil)
			if err != nil {
				return err
			}
			defer db.Close()
			s, err := archive.Load(cmd.Context(), db.Sessions(), args[0])
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			w := g.stdout
			if output != "" && output != "-" {
				f, err := os.Create(output)
				if err != nil {
					return &exitError{code: 1, err: err}
				}
				defer f.Close()
				w = f
			}
			if err := write(w, s, g.now()); err != nil {
				return &exitError{code: 1, err: fmt.Errorf("export %s: %w", s.Meta.ID, err)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "json", "json, markdown or atif")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to this file instead of stdout")
	cmd.ValidArgsFunction = g.completeSessionIDs
	return cmd
}

// exporter is the writer of an export format.
func exporter(format string) (func(io.Writer, archive.Session, time.Time) error, error) {
	switch format {
	case "json":
		return archive.WriteJSON, nil
	case "markdown", "md":
		return func(w io.Writer, s archive.Session, _ time.Time) error { return archive.WriteMarkdown(w, s) }, nil
	case "atif":
		return func(w io.Writer, s archive.Session, _ time.Time) error { return archive.WriteATIF(w, s, version()) }, nil
	}
	return nil, usageError("--format %q: want json, markdown or atif", format)
}

// newImportCmd is `meka sessions import`.
func newImportCmd(g *globals) *cobra.Command {
	var from string
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "make a new session from an archive (meka sessions export), a Claude Code session file (--from claude) or a Codex rollout file (--from codex)",
		Long: `Make a new session from a file, to continue with meka -r ID.

  meka sessions import archive.jsonl          an archive meka sessions export wrote
  meka sessions import --from claude FILE     a Claude Code session (~/.claude/projects/<dir>/<id>.jsonl)
  meka sessions import --from codex FILE      a Codex rollout (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl)

A file that cannot be read whole is refused with the line and the reason, and
nothing is written. Another agent's tool calls keep their names; their results
are text.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return importSession(cmd.Context(), g, args[0], from)
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "claude or codex: read that agent's session file instead of a meka archive")
	return cmd
}

func importSession(ctx context.Context, g *globals, path, from string) error {
	if from != "" && from != "claude" && from != "codex" {
		return usageError("--from %q: want claude or codex", from)
	}
	f, err := os.Open(path)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	defer f.Close()
	var s archive.Session
	if from == "" {
		_, s, err = archive.ReadJSON(f)
	} else {
		s, err = archive.ReadFrom(from, f)
	}
	if err != nil {
		var le *archive.LineError
		if errors.As(err, &le) {
			return &exitError{code: 1, err: fmt.Errorf("%s:%d: %v; nothing was imported", path, le.Line, le.Err)}
		}
		return &exitError{code: 1, err: fmt.Errorf("%s: %v; nothing was imported", path, err)}
	}
	// A session's directory must exist here to be resumed; another
	// machine's is replaced by this one.
	if st, err := os.Stat(s.Meta.Cwd); s.Meta.Cwd == "" || !filepath.IsAbs(s.Meta.Cwd) || err != nil || !st.IsDir() {
		if s.Meta.Cwd, err = g.cwd(); err != nil {
			return err
		}
	}
	if s.Meta.Permission == "" {
		s.Meta.Permission = "read"
	}
	db, err := g.openDB(ctx, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	m, err := archive.Import(ctx, db.Sessions(), s)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("import %s: %w", path, err)}
	}
	whose := "meka"
	if from != "" {
		whose = from
	}
	fmt.Fprintf(g.stdout, "imported %s session %s as %s (%d rows); continue it with meka -r %s\n", whose, s.Origin, m.ID, len(s.Rows), m.ID[:8])
	return nil
}
