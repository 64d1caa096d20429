package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

func newSessionsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "sessions", Short: "list, inspect, fork and rewind stored sessions"}

	var dir, cursor, children string
	var all, asJSON bool
	var limit int
	list := &cobra.Command{
		Use:   "list",
		Short: "list sessions, newest first (this directory's unless --cwd or --all)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := g.openDB(cmd.Context(), nil)
			if err != nil {
				return err
			}
			defer db.Close()
			opts := session.ListOptions{Limit: limit, Cursor: cursor}
			if children != "" {
				// A sub-agent's session is hidden from every other listing:
				// it is reached through its parent.
				parent, err := db.Sessions().Get(cmd.Context(), children)
				if err != nil {
					return &exitError{code: 1, err: err}
				}
				opts.Parent = parent.ID
			} else if !all {
				if dir == "" {
					if dir, err = g.cwd(); err != nil {
						return err
					}
				}
				if opts.Cwd, err = host.Canonical(dir); err != nil {
					return usageError("--cwd: %v", err)
				}
			}
			page, err := db.Sessions().List(cmd.Context(), opts)
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			if asJSON {
				return writeJSON(g.stdout, sessionList{Sessions: append([]session.Meta{}, page.Sessions...), Next: page.Next})
			}
			if len(page.Sessions) == 0 && cursor == "" {
				if all {
					fmt.Fprintln(g.stdout, "no sessions yet; start one with meka")
				} else {
					fmt.Fprintf(g.stdout, "no sessions in %s; meka sessions list --all lists every directory's\n", opts.Cwd)
				}
				return nil
			}
			printSessions(g.stdout, page, all || children != "", g.getenv("HOME"))
			return nil
		},
	}
	list.Flags().StringVar(&dir, "cwd", "", "list the sessions of this directory")
	list.Flags().BoolVar(&all, "all", false, "list sessions of every directory")
	list.Flags().IntVar(&limit, "limit", 50, "sessions per page")
	list.Flags().StringVar(&cursor, "cursor", "", "continue a listing from the cursor it printed")
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	list.Flags().StringVar(&children, "children", "", "list the sub-agent sessions of this session (any unique id prefix)")

	var showJSON bool
	show := &cobra.Command{
		Use:   "show ID",
		Short: "print a session's log as a transcript (any unique id prefix)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return showSession(cmd.Context(), g, args[0], showJSON)
		},
	}
	show.Flags().BoolVar(&showJSON, "json", false, "print the rows as JSON, one per line")
	show.ValidArgsFunction = g.completeSessionIDs
	cmd.AddCommand(list, show, newForkCmd(g), newRewindCmd(g), newExportCmd(g), newImportCmd(g))
	return cmd
}

// sessionList is what sessions list --json prints: session.Page with the
// keys in snake_case like the sessions'.
type sessionList struct {
	Sessions []session.Meta `json:"sessions"`
	Next     string         `json:"next,omitempty"`
}

// printSessions prints a page as a table; withDir adds each session's
// directory (home as ~), for listings of more than one directory.
func printSessions(w io.Writer, page session.Page, withDir bool, home string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if withDir {
		fmt.Fprintln(tw, "ID\tUPDATED\tDIRECTORY\tPROFILE\tTITLE")
	} else {
		fmt.Fprintln(tw, "ID\tUPDATED\tPROFILE\tTITLE")
	}
	for _, m := range page.Sessions {
		if withDir {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.ID[:8], m.UpdatedAt.Local().Format(time.DateTime), dirCell(m.Cwd, home, 40), m.Profile, cell(m.Title, 60))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.ID[:8], m.UpdatedAt.Local().Format(time.DateTime), m.Profile, cell(m.Title, 60))
	}
	tw.Flush()
	if page.Next != "" {
		fmt.Fprintf(w, "more: meka sessions list --cursor %s\n", page.Next)
	}
}

func showSession(ctx context.Context, g *globals, id string, asJSON bool) error {
	db, err := g.openDB(ctx, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	m, err := db.Sessions().Get(ctx, id)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	rows, err := db.Sessions().Rows(ctx, m.ID, 0)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	if asJSON {
		enc := json.NewEncoder(g.stdout)
		for _, r := range rows {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	fmt.Fprintf(g.stdout, "session %s\ntitle:   %s\ncwd:     %s\nprofile: %s\nlevel:   %s\ncreated: %s\n",
		m.ID, m.Title, m.Cwd, m.Profile, m.Permission, m.CreatedAt.Local().Format(time.DateTime))
	if len(m.AdditionalDirs) > 0 {
		fmt.Fprintf(g.stdout, "dirs:    %s\n", strings.Join(m.AdditionalDirs, ", "))
	}
	if m.ParentID != "" {
		fmt.Fprintf(g.stdout, "parent:  %s (call %s)\n", m.ParentID, m.ParentCallID)
		if m.Agent != "" {
			fmt.Fprintf(g.stdout, "agent:   %s\n", m.Agent)
		}
	}
	if err := printChildren(ctx, g.stdout, db.Sessions(), m.ID); err != nil {
		return &exitError{code: 1, err: err}
	}
	Transcript(g.stdout, rows)
	return nil
}

// printChildren lists a session's sub-agent sessions, oldest first, with
// the call that spawned each; nothing when it has none.
func printChildren(ctx context.Context, w io.Writer, store session.Store, id string) error {
	var kids []session.Meta
	opts := session.ListOptions{Parent: id, Limit: 1000}
	for range 100 { // at most 100 pages: a bound, not a limit anyone meets
		page, err := store.List(ctx, opts)
		if err != nil {
			return fmt.Errorf("list sub-agents: %w", err)
		}
		kids = append(kids, page.Sessions...)
		if page.Next == "" {
			break
		}
		opts.Cursor = page.Next
	}
	if len(kids) == 0 {
		return nil
	}
	slices.SortStableFunc(kids, func(a, b session.Meta) int { return a.CreatedAt.Compare(b.CreatedAt) })
	fmt.Fprintf(w, "sub-agents (%d):\n", len(kids))
	for _, k := range kids {
		label := k.Title
		if k.Agent != "" {
			label = k.Agent + ": " + label
		}
		fmt.Fprintf(w, "  %s  call %s  %s\n", k.ID, k.ParentCallID, cell(label, 60))
	}
	return nil
}

// Transcript writes rows as a readable transcript.
func Transcript(w io.Writer, rows []session.Row) {
	turn := int64(-1)
	for _, r := range rows {
		if r.Turn != turn {
			turn = r.Turn
			fmt.Fprintf(w, "\n── turn %d ──\n", turn)
		}
		switch e := r.Entry.(type) {
		case session.UserMessage:
			who := "user"
			if e.Source != "" {
				who = e.Source
			}
			if e.Pinned {
				who += " (pinned)"
			}
			fmt.Fprintf(w, "%s: %s\n", who, partsString(e.Parts))
		case session.AssistantMessage:
			for _, p := range e.Parts {
				switch p := p.(type) {
				case model.Text:
					fmt.Fprintf(w, "assistant: %s\n", p.Text)
				case model.Thinking:
					if p.Text != "" {
						fmt.Fprintf(w, "thinking: %s\n", p.Text)
					}
				case model.ToolCall:
					fmt.Fprintf(w, "call %s %s %s\n", p.ID, p.Name, p.Arguments)
				}
			}
		case session.ToolResult:
			fmt.Fprintf(w, "result %s %s [%s]: %s\n", e.CallID, e.Name, e.Status, cell(partsString(e.Content), 400))
			if e.Change != "" {
				fmt.Fprintln(w, e.Change)
			}
		case session.Notice:
			line := fmt.Sprintf("[%s] %s", e.Severity, e.Title)
			if e.Description != "" {
				line += ": " + e.Description
			}
			fmt.Fprintln(w, line)
		case session.Compaction:
			fmt.Fprintf(w, "[%s]\n%s\n", e.Describe(), e.Summary)
		}
	}
	// A call with no result is running now, or its process died; the next
	// open of the session closes it as interrupted.
	for _, c := range agent.OrphanCalls(rows) {
		fmt.Fprintf(w, "result %s %s [no result]: still running, or meka stopped while it ran (closed as interrupted when the session is next opened)\n", c.ID, c.Name)
	}
}

func partsString(ps model.Parts) string {
	var out []string
	for _, p := range ps {
		switch p := p.(type) {
		case model.Text:
			out = append(out, p.Text)
		case model.Image:
			out = append(out, fmt.Sprintf("[image %s %s]", p.MediaType, p.Name))
		case model.Resource:
			out = append(out, fmt.Sprintf("[resource %s]", p.URI))
		}
	}
	return strings.Join(out, " ")
}

// cell cuts s to n runes on one line, marking the cut.
// dirCell is a directory cut from the left to n characters, home as ~:
// its end is what tells two directories apart.
func dirCell(dir, home string, n int) string {
	if home != "" && (dir == home || strings.HasPrefix(dir, home+"/")) {
		dir = "~" + dir[len(home):]
	}
	r := []rune(dir)
	if len(r) <= n {
		return dir
	}
	return "…" + string(r[len(r)-n+1:])
}

func cell(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
