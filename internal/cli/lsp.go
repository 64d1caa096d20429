package cli

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"

	"meka.dev/meka/internal/config"
	"meka.dev/meka/internal/lsp"
	"meka.dev/meka/internal/tools/fstool"
	"meka.dev/meka/permission"
)

// newLSP returns the language servers every session of this process
// shares, nil when [lsp] turns them off. They are confined as commands
// are, hidden what commands are hidden (masked), and may write only their
// cache, kept under the data directory so they start warm.
func newLSP(cfg *config.Config, masked []string, dataDir string, log *slog.Logger) *lsp.Manager {
	if cfg.LSP.Off {
		return nil
	}
	cache := ""
	if dataDir != "" {
		cache = filepath.Join(dataDir, "lsp-cache")
	}
	return lsp.New(lsp.Options{
		Servers:        cfg.LSP.Servers,
		Wait:           cfg.LSP.Wait,
		IdleTimeout:    cfg.LSP.IdleTimeout,
		Env:            os.Environ(),
		EnvPassthrough: cfg.Permissions.EnvPassthrough,
		ScrubNames:     keyVariables(cfg),
		Network:        cfg.Permissions.Network,
		Masked:         masked,
		CacheDir:       cache,
		Logger:         log,
	})
}

// diagnoser is the file tools' Diagnoser over the language servers.
type diagnoser struct{ m *lsp.Manager }

var _ fstool.Diagnoser = diagnoser{}

func (d diagnoser) Serves(path string) bool { return d.m.Serves(path) }

func (d diagnoser) Diagnose(ctx context.Context, r fstool.DiagnoseRequest) fstool.Diagnosis {
	rep := d.m.Diagnose(ctx, lsp.Request{Path: r.Path, Root: r.Root, Content: r.Content,
		Unconfined: r.Level >= permission.Unrestricted})
	return fstool.Diagnosis{Text: rep.Format(r.Display), Notice: rep.Notice}
}
