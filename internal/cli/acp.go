package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"meka.dev/meka/internal/acp"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/sandbox"
	"meka.dev/meka/permission"
)

func init() { extraCommands = append(extraCommands, newACPCmd) }

// newACPCmd is `meka acp`: the Agent Client Protocol on stdio. stdout is
// the protocol; logs go to stderr.
func newACPCmd(g *globals) *cobra.Command {
	var (
		cont        bool
		resume      string
		workspace   []string
		readableDir []string
	)
	cmd := &cobra.Command{
		Use:   "acp",
		Short: "Serve the Agent Client Protocol on stdio, for editors",
		Long: `meka acp speaks the Agent Client Protocol (JSON-RPC 2.0, one message per line)
on stdin and stdout, for an editor that spawns it. Each session/new starts a
session on the default profile (--profile picks it); session/load and
session/resume reopen stored ones. Logs go to stderr (-v, -vv).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case cont:
				return usageError("meka acp does not take -c: the client names the session (session/load or session/resume)")
			case resume != "":
				return usageError("meka acp does not take -r: the client names the session (session/load or session/resume)")
			case g.project != "":
				return usageError("meka acp does not take --project: a session starts on no project; move it with session/set_config_option")
			}
			return runACP(cmd.Context(), g, workspace, readableDir)
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&cont, "continue", "c", false, "refused: the client names the session")
	f.StringVarP(&resume, "resume", "r", "", "refused: the client names the session")
	f.StringArrayVar(&workspace, "additional-workspace-directory", nil, "add a directory to every session's workspace (repeatable)")
	f.StringArrayVar(&readableDir, "additional-readable-directory", nil, "let every session read a directory beyond its workspace (repeatable)")
	_ = f.MarkHidden("continue")
	_ = f.MarkHidden("resume")
	return cmd
}

func runACP(ctx context.Context, g *globals, workspace, readable []string) error {
	g.clientDirs = true
	pre, err := g.prepare()
	if err != nil {
		return err
	}
	cfg := pre.cfg
	prof, err := cfg.ResolveProfile(g.profile, g.getenv)
	if err != nil {
		return usageError("%v", err)
	}
	names := cfg.ProfileNames()
	if len(names) == 0 {
		names = []string{prof.Name}
	}
	// The database opens once the editor asks for more than initialize
	// and session/new, which are answered from the configuration; the
	// server waits for it before any other request, and its error (with
	// its exit code) ends the run.
	var (
		a         *app
		stopSched = func() {}
		openErr   error
	)
	open := func(ctx context.Context) (*host.Host, error) {
		if a, openErr = g.open(ctx, pre); openErr != nil {
			return nil, openErr
		}
		stopSched = a.startScheduler(ctx)
		// Said once on stderr too, where a harness's logs keep it.
		if gap := confinementGap(pre.perms.Default, cfg.Permissions.Network); gap != "" {
			fmt.Fprintf(g.stderr, "meka acp: %s\n", gap)
		}
		if err := a.host.AddRoots(workspace, readable); err != nil {
			openErr = usageError("%v", err)
			return nil, openErr
		}
		return a.host, nil
	}
	// The probes run in child processes, mostly on the other core, and
	// the first session waits for them: start them with the handshake.
	sandbox.Warm(g.probeCacheDir())
	// session/new is answered from the configuration, not the host.
	adm := g.admission(pre)
	err = acp.Serve(ctx, g.stdin, g.stdout, acp.Options{
		Open:                open,
		Admission:           &adm,
		Version:             version(),
		Profiles:            names,
		DefaultProfile:      g.profile,
		Vision:              prof.Vision,
		Levels:              cfg.Permissions.Enabled,
		RelayProviderErrors: cfg.Serve.RelayProviderErrors,
		Confinement:         func(l permission.Level) string { return confinementGap(l, cfg.Permissions.Network) },
		IdleTimeout:         cfg.Serve.IdleTimeout,
		SweepInterval:       cfg.Serve.IdleSweepInterval,
		Logger:              g.logger(),
	})
	// Serve has waited for open, so a, stopSched and openErr are settled.
	stopSched()
	if a != nil {
		a.close(context.WithoutCancel(ctx))
	}
	if openErr != nil {
		return openErr
	}
	if err != nil && ctx.Err() == nil {
		return &exitError{code: 1, err: err}
	}
	return nil
}
