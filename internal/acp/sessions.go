package acp

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"meka.dev/meka/internal/acp/jsonrpc"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/session"
)

// This file serves the session lifecycle: session/new, load, resume,
// fork, list and close.

// checkDirs validates a request's cwd and additional directories: each
// absolute and an existing directory.
func checkDirs(cwd string, dirs []string) (string, []string, error) {
	if !filepath.IsAbs(cwd) {
		return "", nil, invalidParams("cwd must be an absolute path: %q", cwd)
	}
	c, err := host.Canonical(cwd)
	if err != nil {
		return "", nil, invalidParams("cwd must be an existing directory: %v", err)
	}
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		if !filepath.IsAbs(d) {
			return "", nil, invalidParams("additionalDirectories must be absolute paths: %q", d)
		}
		cd, err := host.Canonical(d)
		if err != nil {
			return "", nil, invalidParams("additional directory must be an existing directory: %v", err)
		}
		out = append(out, cd)
	}
	return c, out, nil
}

func (s *server) newSession(ctx context.Context, p *NewSessionRequest) (*NewSessionResponse, error) {
	cwd, dirs, err := checkDirs(p.Cwd, p.AdditionalDirectories)
	if err != nil {
		return nil, err
	}
	if n := len(p.McpServers); n > 0 {
		s.log.Warn("acp: mcpServers ignored: meka's MCP servers come from config.toml", "dropped", n)
	}
	added, err := systemPrompt(p.SystemPrompt)
	if err != nil {
		return nil, err
	}
	o := host.CreateOptions{Cwd: cwd, AdditionalDirs: dirs, Profile: s.opts.DefaultProfile}
	if added != nil {
		o.SystemPrompt = *added
	}
	// The answer goes out once the session is admitted, perhaps before
	// the host is open; it is stored and built afterwards, and a request
	// naming it waits for that (build.go).
	adm, err := s.admission(ctx)
	if err != nil {
		return nil, err
	}
	admitted, err := adm.Admit(o)
	if err != nil {
		return nil, s.sessionError("create session", "", err)
	}
	meta := admitted.Meta()
	chosen := picked{level: admitted.Level(), profile: meta.Profile, approvals: meta.Approvals, project: meta.Project}
	// The project picker lists the host's projects: in the answer when
	// the host is open, else in an update once it is.
	var projects []string
	h := s.openHost()
	if h != nil {
		projects = s.projects()
	}
	s.build(ctx, admitted, len(p.McpServers), h == nil)
	return &NewSessionResponse{SessionID: meta.ID, Modes: s.modes(chosen), ConfigOptions: s.configOptions(chosen, projects)}, nil
}

// open opens a stored session for load or resume: refused for a
// sub-agent's id (before the lock is taken) and for a profile config.toml
// no longer has; its directories become what the client sent once it has
// opened.
func (s *server) open(ctx context.Context, op string, p *LoadSessionRequest) (*host.Session, error) {
	cwd, dirs, err := checkDirs(p.Cwd, p.AdditionalDirectories)
	if err != nil {
		return nil, err
	}
	added, err := systemPrompt(p.SystemPrompt)
	if err != nil {
		return nil, err
	}
	meta, err := s.host.Store().Get(ctx, p.SessionID)
	if err != nil {
		return nil, s.sessionError(op, p.SessionID, err)
	}
	if meta.ParentID != "" {
		return nil, invalidParams("session %s is a sub-agent's session: continue that conversation with agent_followup from its parent", meta.ID)
	}
	if err := s.profileGone(meta); err != nil {
		return nil, err
	}
	if e := s.lookup(meta.ID); e != nil {
		if e.busy() {
			return nil, errBusy("")
		}
		s.drop(meta.ID)
	}
	// The client's workspace wins, replacing (not merging) the roots, once
	// the session has opened: a refused load writes nothing.
	hs, err := s.host.OpenIn(ctx, meta.ID, host.Workspace{Cwd: cwd, AdditionalDirs: dirs, SystemPrompt: added})
	if err != nil {
		return nil, s.sessionError(op, meta.ID, err)
	}
	return hs, nil
}

// profileGone refuses a session whose profile config.toml no longer has:
// the client asked for something meka cannot serve as it stands.
func (s *server) profileGone(meta session.Meta) error {
	if meta.Profile != "" && len(s.opts.Profiles) > 0 && !slices.Contains(s.opts.Profiles, meta.Profile) {
		return invalidParams("session %s runs on profile %q, which config.toml no longer has: restore the profile, or move the session with meka -r %s --profile <name>", meta.ID, meta.Profile, meta.ID)
	}
	return nil
}

func (s *server) loadSession(ctx context.Context, p *LoadSessionRequest) (*LoadSessionResponse, error) {
	hs, err := s.open(ctx, "load session", p)
	if err != nil {
		return nil, err
	}
	e := s.register(hs, true)
	e.replay(ctx)
	jsonrpc.AfterResponse(ctx, func() { e.announce(ctx, true) })
	return &LoadSessionResponse{Modes: e.modes(), ConfigOptions: e.configOptions()}, nil
}

func (s *server) resumeSession(ctx context.Context, p *LoadSessionRequest) (*LoadSessionResponse, error) {
	hs, err := s.open(ctx, "resume session", p)
	if err != nil {
		return nil, err
	}
	e := s.register(hs, false)
	jsonrpc.AfterResponse(ctx, func() { e.announce(ctx, true) })
	return &LoadSessionResponse{Modes: e.modes(), ConfigOptions: e.configOptions()}, nil
}

func (s *server) forkSession(ctx context.Context, p *LoadSessionRequest) (*NewSessionResponse, error) {
	cwd, dirs, err := checkDirs(p.Cwd, p.AdditionalDirectories)
	if err != nil {
		return nil, err
	}
	added, err := systemPrompt(p.SystemPrompt)
	if err != nil {
		return nil, err
	}
	h := s.host
	meta, err := h.Store().Get(ctx, p.SessionID)
	if err != nil {
		return nil, s.sessionError("fork session", p.SessionID, err)
	}
	if meta.ParentID != "" {
		return nil, invalidParams("session %s is a sub-agent's session and cannot be forked: continue it with agent_followup from its parent", meta.ID)
	}
	if err := s.profileGone(meta); err != nil {
		return nil, err
	}
	if src, ok := h.Get(meta.ID); ok {
		if src.Busy() {
			return nil, errBusy("")
		}
	} else {
		// Taking the lock proves no other process has the source open; it
		// is given back at once.
		if _, err := h.Open(ctx, meta.ID); err != nil {
			return nil, s.sessionError("fork session", meta.ID, err)
		}
		defer func() { _ = h.CloseSession(context.WithoutCancel(ctx), meta.ID) }()
	}
	hs, err := h.ForkIn(ctx, meta.ID, -1, host.Workspace{Cwd: cwd, AdditionalDirs: dirs, SystemPrompt: added})
	if err != nil {
		return nil, s.sessionError("fork session", meta.ID, err)
	}
	e := s.register(hs, false)
	jsonrpc.AfterResponse(ctx, func() {
		e.announce(ctx, true)
		e.dropped(ctx, len(p.McpServers)) // as on session/new; load and resume drop them silently
	})
	return &NewSessionResponse{SessionID: hs.ID(), Modes: e.modes(), ConfigOptions: e.configOptions()}, nil
}

func (s *server) listSessions(ctx context.Context, p *ListSessionsRequest) (*ListSessionsResponse, error) {
	if err := s.awaitStored(ctx); err != nil {
		return nil, err
	}
	opts := session.ListOptions{Limit: 50}
	if p.Cwd != nil && *p.Cwd != "" {
		c, err := host.Canonical(*p.Cwd)
		if err != nil {
			c = filepath.Clean(*p.Cwd)
		}
		opts.Cwd = c
	}
	if p.Cursor != nil {
		opts.Cursor = *p.Cursor
	}
	page, err := s.host.Store().List(ctx, opts)
	if err != nil {
		if opts.Cursor != "" {
			return nil, invalidParams("invalid cursor")
		}
		return nil, s.sessionError("list sessions", "", err)
	}
	out := &ListSessionsResponse{Sessions: make([]SessionInfo, 0, len(page.Sessions))}
	for _, m := range page.Sessions {
		info := SessionInfo{SessionID: m.ID, Cwd: m.Cwd, AdditionalDirectories: m.AdditionalDirs}
		if m.Title != "" {
			title := m.Title
			info.Title = &title
		}
		if !m.UpdatedAt.IsZero() {
			at := m.UpdatedAt.UTC().Format(time.RFC3339Nano)
			info.UpdatedAt = &at
		}
		out.Sessions = append(out.Sessions, info)
	}
	if page.Next != "" {
		next := page.Next
		out.NextCursor = &next
	}
	return out, nil
}

func (s *server) closeSession(ctx context.Context, p *SessionIDRequest) (struct{}, error) {
	s.mu.Lock()
	e := s.sessions[p.SessionID]
	delete(s.sessions, p.SessionID)
	swept := s.swept[p.SessionID]
	delete(s.swept, p.SessionID)
	s.mu.Unlock()
	if e == nil {
		if swept {
			return struct{}{}, nil
		}
		return struct{}{}, jsonrpc.NewError(jsonrpc.InvalidParams, "unknown session "+p.SessionID, map[string]string{"sessionId": p.SessionID})
	}
	e.cancelTurn()
	s.arrivals.latch(e.id)
	s.arrivals.forget(e.id)
	e.detach()
	if err := s.host.CloseSession(context.WithoutCancel(ctx), e.id); err != nil {
		return struct{}{}, s.sessionError("close session", e.id, err)
	}
	return struct{}{}, nil
}

// deleteSession removes a stored session, its log with it. One this
// connection or another process has open is refused: close it first. A
// session that does not exist is gone already, which the protocol counts
// as success.
func (s *server) deleteSession(ctx context.Context, p *SessionIDRequest) (struct{}, error) {
	if p.SessionID == "" {
		return struct{}{}, invalidParams("sessionId is required")
	}
	meta, err := s.host.Store().Get(ctx, p.SessionID)
	if errors.Is(err, session.ErrNotFound) {
		return struct{}{}, nil
	}
	if err != nil {
		return struct{}{}, s.sessionError("delete session", p.SessionID, err)
	}
	if meta.ParentID != "" {
		return struct{}{}, invalidParams("session %s is a sub-agent's session: it goes when its parent %s is deleted", meta.ID, meta.ParentID)
	}
	err = s.host.Delete(ctx, meta.ID)
	var held *session.HeldError
	switch {
	case errors.As(err, &held):
		return struct{}{}, invalidParams("session %s is open in another meka process (%s): close it there first", meta.ID, held.Holder)
	case errors.Is(err, host.ErrSessionHeld):
		return struct{}{}, invalidParams("session %s is open: close it (session/close) before deleting it", meta.ID)
	case errors.Is(err, session.ErrNotFound):
		return struct{}{}, nil
	case err != nil:
		return struct{}{}, s.sessionError("delete session", meta.ID, err)
	}
	s.mu.Lock()
	delete(s.swept, meta.ID)
	s.mu.Unlock()
	return struct{}{}, nil
}

// systemPrompt reads a request's systemPrompt: nil when absent, else the
// text to append. Only the append mode is advertised, and text blocks
// only; anything else is refused before the session is touched.
func systemPrompt(sp *SystemPrompt) (*string, error) {
	if sp == nil {
		return nil, nil
	}
	if sp.Mode != "append" {
		return nil, invalidParams("systemPrompt.mode %q is not supported: meka appends to its own instructions (mode \"append\")", sp.Mode)
	}
	if len(sp.Content) == 0 {
		return nil, invalidParams("systemPrompt.content is empty")
	}
	var parts []string
	for i, b := range sp.Content {
		if b.Type != "text" {
			return nil, invalidParams("systemPrompt.content[%d] is %q: only text blocks are supported", i, b.Type)
		}
		parts = append(parts, b.Text)
	}
	text := strings.Join(parts, "\n\n")
	return &text, nil
}

// lookup returns the connection's entry for a session, nil if it has none.
func (s *server) lookup(id string) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

// drop forgets an entry without closing its session.
func (s *server) drop(id string) {
	s.mu.Lock()
	e := s.sessions[id]
	delete(s.sessions, id)
	s.mu.Unlock()
	if e != nil {
		e.detach()
	}
}

// ensure returns the entry for a request naming a session, reopening one
// the idle sweep released.
func (s *server) ensure(ctx context.Context, id string) (*entry, error) {
	s.mu.Lock()
	e, swept := s.sessions[id], s.swept[id]
	s.mu.Unlock()
	if e != nil {
		return e, nil
	}
	if !swept {
		return nil, jsonrpc.NewError(jsonrpc.InvalidParams, "unknown session "+id, map[string]string{"sessionId": id})
	}
	hs, err := s.host.Open(ctx, id)
	if err != nil {
		return nil, s.sessionError("reopen session", id, err)
	}
	s.mu.Lock()
	delete(s.swept, id)
	s.mu.Unlock()
	return s.register(hs, false), nil
}

// register makes hs one of the connection's sessions. fresh says the
// client has no thread for it from before, so tool calls may keep the
// provider's ids.
func (s *server) register(hs *host.Session, fresh bool) *entry {
	e := newEntry(s, hs, fresh)
	s.mu.Lock()
	old := s.sessions[hs.ID()]
	s.sessions[hs.ID()] = e
	delete(s.swept, hs.ID())
	s.mu.Unlock()
	if old != nil {
		old.detach()
	}
	e.attach(hs)
	return e
}
