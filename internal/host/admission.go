package host

import (
	"fmt"

	"github.com/google/uuid"

	"meka.dev/meka/permission"
	"meka.dev/meka/session"
)

// Admission decides whether a session may be created as asked from the
// configuration and the filesystem alone, so that a front door can answer
// a creation, or refuse it, before the host and its database are open,
// and store the session once they are (Host.Start). A host admits with
// the one its Options make (Host.Admission); a front door answering
// before the host is open makes one from the same configuration.
type Admission struct {
	Permissions Permissions
	// Home and WorkspaceHome are Options.Home and WorkspaceHome.
	Home          string
	WorkspaceHome bool
	// Profile resolves a profile's name ("" for the default).
	Profile func(name string) (string, error)
}

// Admitted is a creation an Admission accepted: the session to store.
type Admitted struct {
	meta  session.Meta
	level permission.Level
	ws    Workspace
}

// Meta is the session as it will be stored, its id included.
func (a *Admitted) Meta() session.Meta { return a.meta }

// Level is the permission level the session starts at.
func (a *Admitted) Level() permission.Level { return a.level }

// Admit checks a creation: its directories exist (recorded canonically),
// its level is enabled and, at the workspace level, its workspace is not
// / or the home directory, and its profile resolves. Its project, which
// only the database knows, is checked as it is stored. A session that
// names no id gets one here, in the stores' format, so that a front door
// can name it before it is stored.
func (a Admission) Admit(o CreateOptions) (*Admitted, error) {
	cwd, err := Canonical(o.Cwd)
	if err != nil {
		return nil, fmt.Errorf("create session: %w", err)
	}
	dirs := make([]string, 0, len(o.AdditionalDirs))
	for _, d := range o.AdditionalDirs {
		c, err := Canonical(d)
		if err != nil {
			return nil, fmt.Errorf("create session: additional directory: %w", err)
		}
		dirs = append(dirs, c)
	}
	level := a.Permissions.Default
	if o.Permission != nil {
		level = *o.Permission
	}
	if !a.Permissions.Offers(level) {
		return nil, fmt.Errorf("create session: %w: %s", ErrLevelNotEnabled, level)
	}
	if err := a.checkWorkspace(cwd, level); err != nil {
		return nil, fmt.Errorf("create session: %w", err)
	}
	profile, err := a.Profile(o.Profile)
	if err != nil {
		return nil, fmt.Errorf("create session: %w", err)
	}
	id := o.ID
	if id == "" {
		u, err := uuid.NewRandom()
		if err != nil {
			return nil, fmt.Errorf("create session: %w", err)
		}
		id = u.String()
	}
	ad := &Admitted{level: level, meta: session.Meta{
		ID: id, Cwd: cwd, AdditionalDirs: dirs, Profile: profile, Project: o.Project,
		Permission: level.String(), Approvals: a.Permissions.Approvals, ParentID: o.ParentID,
	}}
	if o.SystemPrompt != "" {
		ad.ws.SystemPrompt = &o.SystemPrompt
	}
	return ad, nil
}

// Admission is the host's own: its Options' policy and profiles.
func (h *Host) Admission() Admission { return h.admission }
