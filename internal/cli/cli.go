// Package cli is meka's composition root: it parses the command line,
// reads the config file and the environment (the only package that does),
// and builds every object the subcommands need.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"meka.dev/meka/internal/config"
	"meka.dev/meka/internal/telemetry"
	"meka.dev/meka/model"
)

// exitError carries an exit status out of a subcommand.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// usageError is a mistake in how meka was called or configured: exit 2.
func usageError(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

// globals are the root flags every subcommand sees.
type globals struct {
	// tel exports telemetry; nil when it is off.
	tel *telemetry.Telemetry
	// books are the profiles' rate-limit books (rateBook), clients their
	// HTTP clients by connect timeout (httpClient).
	booksMu    sync.Mutex
	books      map[string]*model.RateBook
	clients    map[time.Duration]*http.Client
	configFile string
	dataDir    string
	// worktree is -w NAME; workdir the worktree it made, where sessions
	// start.
	worktree, workdir string
	profile           string
	permission        string
	project           string
	verbose           int
	// workspaceHome lets a session in / or $HOME run at workspace.
	workspaceHome bool
	// clientDirs is set by front doors whose sessions take their
	// directory from a client (acp), not from meka's own.
	clientDirs bool
	// commandNames are the subcommands taken off the root when --oneshot
	// made every word a prompt; refuseMistake still knows them.
	commandNames []string
	// jsonEvents and inputFormat are --oneshot's --json and
	// --input-format.
	jsonEvents  bool
	inputFormat string

	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	now            func() time.Time // the wall clock; tests pin it
	isTerminal     func() bool      // whether stdin is a person; nil: look at stdin
	// goos is the operating system start-up refusals are decided for;
	// empty is runtime.GOOS (tests set another).
	goos string
}

// Main runs meka with args (without the program name) and returns the
// process's exit status.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	g := &globals{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv, now: time.Now}
	if err := g.applySandboxEnv(); err != nil {
		fmt.Fprintf(stderr, "meka: %v\n", err)
		return 2
	}
	root := newRoot(g)
	if oneshotFirst(root, args) {
		promptOnly(root, g)
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "meka: %v\n", ee.err)
		}
		return signalExit(ctx, ee.code)
	}
	// Errors from cobra itself are flag and argument mistakes.
	fmt.Fprintf(stderr, "meka: %v\n", err)
	return 2
}

func newRoot(g *globals) *cobra.Command {
	var (
		oneshot     bool
		cont        bool
		resume      string
		provider    string
		showVersion bool
	)
	root := &cobra.Command{
		Use:   "meka [flags] [prompt]",
		Short: "meka runs an AI model as an agent in your workspace, and holds it to what it said it would do",
		Long: `meka runs an AI model as an agent that reads, edits and executes in a workspace.

  meka                                    the terminal: a new session in this directory
  meka fix the failing test               the same, starting with that prompt (quotes optional)
  meka --oneshot "fix the failing test"   one turn, reply on stdout (a new session, or -c/-r's); -p too
  cat log | meka --oneshot "why?"        stdin as context; --json: events as JSON Lines
  meka -c | meka -r ID                    continue this directory's latest session | resume one
  meka sessions list                      sessions in this directory (--all: every directory)
  meka acp                                serve the Agent Client Protocol on stdio, for editors
  meka serve                              the HTTP API (sessions, turns, an SSE feed)
  meka doctor                             check config, key, endpoint, sandbox, database, MCP

A first word that looks like a mistyped command is refused rather than sent to
the model; meka -- WORDS sends the words as a prompt whatever they are.

Environment:
  OPENAI_API_KEY, OPENAI_BASE_URL        with no config file, an OpenAI profile (--provider openai)
  ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL  with no config file, an Anthropic profile (--provider anthropic)
  MEKA_MODEL                             the model of those two profiles
  MEKA_CONFIG                            the config file (default $XDG_CONFIG_HOME/meka/config.toml,
                                         else ~/.config/meka/config.toml); keys: docs/config.md
  MEKA_DATA_DIR                          sessions and jobs (default $XDG_DATA_HOME/meka,
                                         else ~/.local/share/meka)
  MEKA_DATABASE_URL                      a PostgreSQL database instead of the SQLite file there
  MEKA_SANDBOX=off                       find no confinement backend, as in a container without
                                         Landlock or user namespaces (read and workspace refuse commands)
  TZ                                     the zone schedules are read in, unless [schedule] timezone
  NO_COLOR, MEKA_PLAIN, ACCESSIBLE       the terminal without colour | without the screen (plain lines)

Exit status:
  0    done; the terminal exits 0 when you quit it (/quit, /exit, Ctrl+C or Ctrl+D
       twice) or its input ends, whatever its turns did
  1    the provider or meka failed, or the session to continue or resume does not exist
  2    bad flags, arguments or configuration (an unknown command or flag, a profile
       whose API key variable is empty)
  3    --oneshot only: the turn stopped short (max_tokens, refusal, a limit, an unfinished plan)
  130  --oneshot only: the turn was interrupted with Ctrl+C (SIGINT; SIGTERM gives 143)`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if showVersion {
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "meka %s\n", version())
				return err
			}
			if err := refuseMistake(cmd, args, g.commandNames); err != nil {
				return err
			}
			if cmd.Flags().Changed("resume") && strings.TrimSpace(resume) == "" {
				// Empty would silently start a new session instead.
				return usageError("--resume needs a session id (any unique prefix of one): meka sessions list shows them, -c continues this directory's latest")
			}
			if provider != "" {
				// A configured profile's name or a provider's own
				// (openai, anthropic): seed 004 schedules
				// "--provider work" from cron.
				if g.profile != "" && g.profile != provider {
					return usageError("--provider and --profile name different profiles (%q, %q)", provider, g.profile)
				}
				g.profile = provider
			}
			prompt := strings.Join(args, " ")
			if g.worktree != "" {
				if cont || resume != "" {
					return usageError("--worktree starts a new session in a new worktree; -c and -r resume one where it was")
				}
				if err := g.enterWorktree(cmd.Context()); err != nil {
					return err
				}
			}
			if oneshot {
				if cont && resume != "" {
					return usageError("--continue and --resume both name a session; give one")
				}
				return runOneshot(cmd.Context(), g, prompt, cont, resume)
			}
			if g.jsonEvents || cmd.Flags().Changed("input-format") {
				return usageError("--json and --input-format are --oneshot's: meka --oneshot --json \"what to do\"")
			}
			return runInteractive(cmd.Context(), g, prompt, cont, resume)
		},
	}
	f := root.PersistentFlags()
	f.StringVar(&g.configFile, "config", "", "config file (default $MEKA_CONFIG, else $XDG_CONFIG_HOME/meka/config.toml)")
	f.StringVar(&g.dataDir, "data-dir", "", "data directory (default $MEKA_DATA_DIR, else $XDG_DATA_HOME/meka)")
	f.StringVar(&g.profile, "profile", "", "model profile to use")
	f.StringVar(&g.permission, "permission", "", "permission level: none, read, workspace or unrestricted")
	f.StringVar(&g.project, "project", "", "project the session belongs to")
	f.BoolVar(&g.workspaceHome, "workspace-home", false, "allow the workspace level in / or your home directory, where commands could change every file below it")
	f.CountVarP(&g.verbose, "verbose", "v", "log to stderr: -v info, -vv debug")
	lf := root.Flags()
	lf.BoolVarP(&oneshot, "oneshot", "p", false, "run one turn and exit: in a new session, or the one -c or -r names; every word after it is the prompt")
	lf.BoolVar(&g.jsonEvents, "json", false, "with --oneshot: stdout is JSON Lines, one event a line (docs/events.schema.json)")
	lf.StringVar(&g.inputFormat, "input-format", "text", "with --oneshot --json: text, or stream-json to read user messages, steers and answers as JSON lines on stdin")
	lf.BoolVarP(&cont, "continue", "c", false, "continue the latest session in this directory")
	lf.StringVarP(&resume, "resume", "r", "", "resume a session by id (any unique prefix)")
	lf.StringVarP(&g.worktree, "worktree", "w", "", "start the session in a new git worktree NAME (branch meka/NAME); meka worktrees list|remove")
	lf.StringVar(&provider, "provider", "", "a configured profile, or openai or anthropic: that provider's profile from the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY) unless the config names a profile so")
	// Our own flag rather than cobra's Version field: cobra prints a custom
	// version line through text/template, whose reflective method lookup
	// turns off the linker's dead-code elimination for the whole binary.
	lf.BoolVar(&showVersion, "version", false, "print meka's version and exit")
	g.registerCompletions(root)

	root.AddCommand(newSessionsCmd(g))
	for _, c := range extraCommands {
		root.AddCommand(c(g))
	}
	refuseUnknownSubcommands(root)
	root.SetFlagErrorFunc(flagError)
	return root
}

// extraCommands are subcommands registered by other files of this package
// (acp, schedule), each a constructor.
var extraCommands []func(*globals) *cobra.Command

// logger returns the logger -v and -vv ask for, writing to stderr.
func (g *globals) logger() *slog.Logger {
	level := slog.LevelWarn
	switch {
	case g.verbose >= 2:
		level = slog.LevelDebug
	case g.verbose == 1:
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: level}))
}

// loadConfig reads the config file: --config (which must exist), else
// $MEKA_CONFIG, else the XDG default (which may be absent).
func (g *globals) loadConfig() (*config.Config, error) {
	path, explicit := g.configFile, g.configFile != ""
	if !explicit {
		path = config.ConfigPath(g.getenv)
		explicit = g.getenv("MEKA_CONFIG") != ""
	}
	cfg, err := config.Load(path)
	if err == nil {
		g.warnInert(cfg)
		return cfg, nil
	}
	if errors.Is(err, os.ErrNotExist) && !explicit {
		return config.Default(), nil
	}
	return nil, usageError("%v", err)
}

// probeCacheDir is where the sandbox keeps its probes' passes across
// runs (sandbox.Warm): the data directory, not created here; "" for none.
func (g *globals) probeCacheDir() string {
	if g.dataDir != "" {
		return g.dataDir
	}
	return config.DataDir(g.getenv)
}

func (g *globals) dataDirectory() (string, error) {
	dir := g.dataDir
	if dir == "" {
		dir = config.DataDir(g.getenv)
	}
	if dir == "" {
		return "", usageError("no data directory: set --data-dir, $MEKA_DATA_DIR or $HOME")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", &exitError{code: 1, err: fmt.Errorf("create data directory: %w", err)}
	}
	return dir, nil
}
