package cli

import (
	"strings"
	"time"

	"github.com/spf13/cobra"

	"meka.dev/meka/internal/stats"
)

func init() { extraCommands = append(extraCommands, newStatsCmd) }

func newStatsCmd(g *globals) *cobra.Command {
	var asJSON bool
	var since, by string
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "tokens (input, cached, output) and cost the log records, by day, session, project or model",
		Long: "stats adds up the model calls every session recorded: tokens and the estimated cost, from the\n" +
			"prices in force when each call was made (a call of a model without a price adds no cost).\n" +
			"Days begin at midnight in the local zone ($TZ).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o := stats.Options{By: by, Location: time.Local, Now: g.now}
			if since != "" {
				t, err := stats.ParseSince(since, time.Local)
				if err != nil {
					return &exitError{code: 2, err: err}
				}
				o.Since = t
			}
			db, err := g.openDB(cmd.Context(), nil)
			if err != nil {
				return err
			}
			defer db.Close()
			r, err := stats.Run(cmd.Context(), db.spend, o)
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			if asJSON {
				return stats.WriteJSON(g.stdout, r)
			}
			return stats.WriteText(g.stdout, r)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "write the report as JSON")
	cmd.Flags().StringVar(&since, "since", "", "count calls from this date on (2026-08-01, local midnight) or RFC 3339 time")
	cmd.Flags().StringVar(&by, "by", "day", "group by "+strings.Join(stats.Bys, ", "))
	_ = cmd.RegisterFlagCompletionFunc("by", cobra.FixedCompletions(stats.Bys, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
