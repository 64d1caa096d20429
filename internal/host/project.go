package host

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"meka.dev/meka/agent"
	"meka.dev/meka/session"
)

// ErrNoProject is returned for a project name no project has.
var ErrNoProject = errors.New("no such project")

// checkProject refuses a name no project has; "" (no project) is always
// fine.
func (h *Host) checkProject(ctx context.Context, name string) error {
	if name == "" {
		return nil
	}
	names, err := h.Projects(ctx)
	if err != nil {
		return err
	}
	if !slices.Contains(names, name) {
		return fmt.Errorf("%w: %s (create it with meka projects add %s)", ErrNoProject, name, name)
	}
	return nil
}

// Projects lists the projects a session can be on, by name.
func (h *Host) Projects(ctx context.Context) ([]string, error) {
	if h.opts.Projects == nil {
		return nil, nil
	}
	names, err := h.opts.Projects(ctx)
	if err != nil {
		return nil, fmt.Errorf("list projects: %w", err)
	}
	return names, nil
}

// Memories renders the memories the session sees now (its project's, or
// the user's own on none), as /memories shows them.
func (s *Session) Memories(ctx context.Context) (string, error) {
	if s.h.opts.Memories == nil {
		return "No memories are kept by this store.", nil
	}
	text, err := s.h.opts.Memories(ctx, s.Project())
	if err != nil {
		return "", fmt.Errorf("list memories: %w", err)
	}
	return text, nil
}

// Project returns the project the session is on now; "" for none.
func (s *Session) Project() string { return s.Meta().Project }

// SetProject moves the session to another project ("" for none). A name
// no project has is refused, and so is a move while a turn runs; either
// way the stored description is left as it was. The memories the next
// turn restates are the new project's.
func (s *Session) SetProject(ctx context.Context, name string) error {
	if err := s.h.checkProject(ctx, name); err != nil {
		return fmt.Errorf("set project: %w", err)
	}
	if s.Busy() {
		return fmt.Errorf("set project: %w", agent.ErrBusy)
	}
	if err := s.updateMeta(ctx, func(m *session.Meta) error { m.Project = name; return nil }); err != nil {
		return fmt.Errorf("set project: %w", err)
	}
	return nil
}
