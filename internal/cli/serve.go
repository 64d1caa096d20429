package cli

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"meka.dev/meka/internal/config"
	"meka.dev/meka/internal/httpapi"
	"meka.dev/meka/internal/stats"
	"meka.dev/meka/internal/storerec"
)

func init() { extraCommands = append(extraCommands, newServeCmd) }

// newServeCmd is `meka serve`: the HTTP API and the scheduler of a
// standing daemon.
func newServeCmd(g *globals) *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "run the HTTP API and fire scheduled jobs, as a daemon",
		Long: `meka serve is a standing host: it fires the scheduled jobs of sessions nobody
else holds, and lets programs drive sessions over HTTP (sessions, turns, a
durable server-sent event feed, approvals, schedules, tasks).

It listens on [serve] listen (default 127.0.0.1:7878; --listen overrides it,
port 0 picks one; beyond loopback only with [serve] tls_cert and tls_key) and
requires a bearer token on every route but /v1/health,
loopback included. The token lives in serve.token in the data directory
(created 0600; meka serve token prints it); serve.json there says where the
server listens. The OpenAPI document is served at /v1/openapi.json; the web
app at /, signed in with a one-time link from meka serve url.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), g, listen)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "host:port to listen on (default [serve] listen)")
	cmd.AddCommand(newServeURLCmd(g))
	cmd.AddCommand(&cobra.Command{
		Use:   "token",
		Short: "print the bearer token meka serve requires",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := g.dataDirectory()
			if err != nil {
				return err
			}
			tok, err := serveToken(dir)
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			fmt.Fprintln(g.stdout, tok)
			return nil
		},
	})
	return cmd
}

// serveToken reads the token file of a data directory, creating it (0600)
// on first use; a file others can read is refused, as ssh refuses a key.
func serveToken(dataDir string) (string, error) {
	path := filepath.Join(dataDir, "serve.token")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		tok, err := httpapi.NewToken()
		if err != nil {
			f.Close()
			return "", err
		}
		if _, err := f.WriteString(tok + "\n"); err != nil {
			f.Close()
			return "", fmt.Errorf("write token: %w", err)
		}
		return tok, f.Close()
	case !errors.Is(err, fs.ErrExist):
		return "", fmt.Errorf("create token: %w", err)
	}
	b, err := readPrivate(path, "token file")
	if err != nil {
		return "", fmt.Errorf("read token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < 16 {
		return "", fmt.Errorf("the token in %s is shorter than 16 characters", path)
	}
	return tok, nil
}

func runServe(ctx context.Context, g *globals, listen string) error {
	a, err := g.newApp(ctx)
	if err != nil {
		return err
	}
	defer a.close(context.WithoutCancel(ctx))
	dir, err := g.dataDirectory()
	if err != nil {
		return err
	}
	tok, err := serveToken(dir)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	if listen == "" {
		listen = a.cfg.Serve.Listen
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("listen on %s: %w", listen, err)}
	}
	defer l.Close()
	addr := l.Addr().(*net.TCPAddr)
	scheme := "http"
	if a.cfg.Serve.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(a.cfg.Serve.TLSCert, a.cfg.Serve.TLSKey)
		if err != nil {
			return &exitError{code: 1, err: fmt.Errorf("[serve] tls_cert, tls_key: %w", err)}
		}
		l = tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
			// HTTP/2 lets a browser's tabs share one connection.
			NextProtos: []string{"h2", "http/1.1"}})
		scheme = "https"
	} else if !addr.IP.IsLoopback() {
		// The token and the browser's cookie would cross the network in
		// clear text.
		return &exitError{code: 1, err: fmt.Errorf("[serve] listen %s is beyond this machine: set [serve] tls_cert and tls_key, or listen on 127.0.0.1 and reach it over an SSH tunnel", listen)}
	}
	prof, err := a.cfg.ResolveProfile(g.profile, g.getenv)
	if err != nil {
		return usageError("%v", err)
	}
	names := a.cfg.ProfileNames()
	if len(names) == 0 {
		names = []string{prof.Name}
	}
	opts := httpapi.Options{
		Host: a.host, Feed: a.db.feed, Token: tok, Loopback: addr.IP.IsLoopback(),
		Profiles:            names,
		RelayProviderErrors: a.cfg.Serve.RelayProviderErrors,
		Version:             version(),
		IdleTimeout:         a.cfg.Serve.IdleTimeout, SweepInterval: a.cfg.Serve.IdleSweepInterval,
		FeedRetention: a.cfg.Serve.FeedRetention,
		Heartbeat:     a.cfg.Serve.StreamHeartbeat, WriteTimeout: a.cfg.Serve.StreamWriteTimeout,
		Logger: g.logger(), Now: g.now,
		Logins: a.db.logins, Usage: sessionUsage(a.db.spend),
	}
	if a.sched != nil {
		opts.Schedules = a.sched.sched
	}
	if opts.Webhooks, err = webhooks(a.cfg.Serve.Webhooks); err != nil {
		return usageError("%v", err)
	}
	opts.Outbox = a.db.outbox
	srv, err := httpapi.New(opts)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	url := scheme + "://" + addr.String()
	info, _ := json.MarshalIndent(map[string]any{"url": url, "pid": os.Getpid(), "started_at": g.now().UTC().Format(time.RFC3339),
		"token_file": filepath.Join(dir, "serve.token")}, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "serve.json"), append(info, '\n'), 0o600); err != nil {
		return &exitError{code: 1, err: fmt.Errorf("write serve.json: %w", err)}
	}
	defer os.Remove(filepath.Join(dir, "serve.json"))
	fmt.Fprintf(g.stderr, "meka serve: listening on %s\n", url)
	if a.sched != nil {
		a.sched.sched.OnFired(srv.ScheduleFired)
	}
	// A standing daemon fires the jobs of sessions nobody holds (seed 004);
	// the server attaches each session the host opens, whoever opens it.
	a.host.OnOpen(srv.Opened)
	a.sched.takeUnheld()
	defer a.startScheduler(ctx)()
	if err := srv.Serve(ctx, l); err != nil {
		return &exitError{code: 1, err: err}
	}
	return nil
}

// webhooks reads each endpoint's secret file, refusing one others can
// read.
func webhooks(cfgs []config.Webhook) ([]httpapi.Webhook, error) {
	var out []httpapi.Webhook
	for _, c := range cfgs {
		b, err := readPrivate(c.SecretFile, "secret file")
		if err != nil {
			return nil, fmt.Errorf("webhook %s: secret_file: %w", c.Name, err)
		}
		key, err := httpapi.ParseSecret(string(b))
		if err != nil {
			return nil, fmt.Errorf("webhook %s: %s: %w", c.Name, c.SecretFile, err)
		}
		out = append(out, httpapi.Webhook{Name: c.Name, URL: c.URL, Secret: key, Events: c.Events})
	}
	return out, nil
}

// readPrivate reads a file of secrets, refusing one others can read, as
// ssh refuses a key. The mode is checked on the file read, not on the
// path before it.
func readPrivate(path, what string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("the %s %s can be read by others (mode %v); chmod 600 it", what, path, perm)
	}
	return io.ReadAll(f)
}

// newServeURLCmd is `meka serve url`: a one-time login link for the web
// app of the running server. The code is in the URL's fragment, which a
// browser never sends, so it reaches no server log; the page spends it
// once for a session cookie.
func newServeURLCmd(g *globals) *cobra.Command {
	var sessionID string
	cmd := &cobra.Command{
		Use:   "url",
		Short: "print a one-time login link for the web app of the running meka serve",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := g.dataDirectory()
			if err != nil {
				return err
			}
			link, err := serveLoginLink(cmd.Context(), dir, sessionID)
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			fmt.Fprintln(g.stdout, link)
			return nil
		},
	}
	cmd.Flags().StringVar(&sessionID, "session", "", "open this session when the link is followed")
	return cmd
}

// serveLoginLink asks the server that serve.json names for a login code
// with the token, and returns the link: 127.0.0.1 and the server's port,
// the code in the fragment.
func serveLoginLink(ctx context.Context, dataDir, sessionID string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "serve.json"))
	if err != nil {
		return "", fmt.Errorf("no meka serve is running on this data directory (%w)", err)
	}
	var info struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return "", fmt.Errorf("read serve.json: %w", err)
	}
	u, err := url.Parse(info.URL)
	if err != nil || u.Port() == "" {
		return "", fmt.Errorf("serve.json names no server URL: %q", info.URL)
	}
	tok, err := serveToken(dataDir)
	if err != nil {
		return "", err
	}
	if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsUnspecified() {
		u.Host = net.JoinHostPort("127.0.0.1", u.Port())
	}
	req, err := http.NewRequestWithContext(ctx, "POST", u.String()+"/v1/login-links", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	client := http.DefaultClient
	if ip := net.ParseIP(u.Hostname()); u.Scheme == "https" && ip != nil && ip.IsLoopback() {
		// The certificate names the machine's public name, not 127.0.0.1;
		// the token goes only to this machine's loopback.
		client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec
	}
	res, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("ask meka serve for a login code: %w", err)
	}
	defer res.Body.Close()
	var out struct {
		Code  string `json:"code"`
		Title string `json:"title"`
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<16)).Decode(&out); err != nil || res.StatusCode != http.StatusCreated || out.Code == "" {
		return "", fmt.Errorf("meka serve refused a login code: %s %s", res.Status, out.Title)
	}
	frag := url.Values{"code": {out.Code}}
	if sessionID != "" {
		frag.Set("session", sessionID)
	}
	u.Path, u.RawQuery, u.Fragment = "/", "", ""
	return u.String() + "#" + frag.Encode(), nil
}

// sessionUsage is every session's spend, from the query meka stats runs
// (the store adds it up), for the records meka serve shows.
func sessionUsage(src stats.Source) func(context.Context) (map[string]httpapi.Usage, error) {
	if src == nil {
		return nil
	}
	return func(ctx context.Context) (map[string]httpapi.Usage, error) {
		gs, err := src.Spend(ctx, storerec.SpendQuery{By: storerec.SpendBySession})
		if err != nil {
			return nil, err
		}
		out := make(map[string]httpapi.Usage, len(gs))
		for _, g := range gs {
			out[g.Key] = httpapi.Usage{Calls: g.Calls, Input: g.Input, CacheRead: g.CacheRead, CacheWrite: g.CacheWrite,
				Output: g.Output, Cost: g.Cost}
		}
		return out, nil
	}
}
