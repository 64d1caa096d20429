package acp

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
)

// This file serves the session's pickers: the permission level as ACP
// modes and as config options beside the profile and approvals, and
// session/set_mode and session/set_config_option.

var levelDescriptions = map[permission.Level]string{
	permission.None:         "No tool runs.",
	permission.Read:         "Read and search; commands run confined, writing nowhere.",
	permission.Workspace:    "Edit files and run commands inside the workspace.",
	permission.Unrestricted: "Any file and any command, unconfined.",
}

func levelName(l permission.Level) string {
	n := l.String()
	return strings.ToUpper(n[:1]) + n[1:]
}

// picked is what a session's pickers show as chosen.
type picked struct {
	level     permission.Level
	profile   string
	approvals bool
	project   string
}

// pickedOf reads a session's choices.
func pickedOf(hs *host.Session) picked {
	p := picked{level: hs.Level(), profile: hs.Meta().Profile, approvals: hs.Approvals(), project: hs.Project()}
	if p.profile == "" {
		p.profile = hs.Profile().Name
	}
	return p
}

// modes is the permission picker.
func (e *entry) modes() *SessionModeState { return e.s.modes(pickedOf(e.session())) }

// configOptions lists permission, profile, project and approvals.
func (e *entry) configOptions() []SessionConfigOption {
	return e.s.configOptions(pickedOf(e.session()), e.s.projects())
}

func (s *server) modes(p picked) *SessionModeState {
	ms := &SessionModeState{CurrentModeID: p.level.String()}
	for _, l := range s.opts.Levels {
		ms.AvailableModes = append(ms.AvailableModes, SessionMode{ID: l.String(), Name: levelName(l), Description: levelDescriptions[l]})
	}
	return ms
}

// configOptions lists permission, profile, project (where a project
// exists, projects naming them) and approvals, in that order. approvals
// is a boolean where the client renders one, else an on/off select.
func (s *server) configOptions(p picked, projects []string) []SessionConfigOption {
	perm := SessionConfigOption{ID: "permission", Name: "Permission", Category: "mode", Type: "select",
		Description: "What tools may do in this session.", CurrentValue: p.level.String()}
	for _, l := range s.opts.Levels {
		perm.Options = append(perm.Options, SessionConfigSelectOption{Value: l.String(), Name: levelName(l), Description: levelDescriptions[l]})
	}
	prof := SessionConfigOption{ID: "profile", Name: "Profile", Category: "model", Type: "select",
		Description: "The model profile the session runs on.", CurrentValue: p.profile}
	names := s.opts.Profiles
	if !slices.Contains(names, p.profile) {
		names = append([]string{p.profile}, names...)
	}
	for _, n := range names {
		prof.Options = append(prof.Options, SessionConfigSelectOption{Value: n, Name: n})
	}
	appr := SessionConfigOption{ID: "approvals", Name: "Approvals",
		Description: "Ask before a tool call the permission level does not allow, instead of refusing it."}
	if caps := s.caps(); caps.Session != nil && caps.Session.ConfigOptions != nil && caps.Session.ConfigOptions.Boolean != nil {
		appr.Type, appr.CurrentValue = "boolean", p.approvals
	} else {
		appr.Type, appr.CurrentValue = "select", onOff(p.approvals)
		appr.Options = []SessionConfigSelectOption{{Value: "on", Name: "On"}, {Value: "off", Name: "Off"}}
	}
	opts := []SessionConfigOption{perm, prof}
	if len(projects) > 0 {
		opts = append(opts, projectOption(p.project, projects))
	}
	return append(opts, appr)
}

// noProject is the project picker's value for no project: no project
// name can have parentheses.
const noProject = "(none)"

// projects lists the projects' names for the project picker; none when
// they cannot be listed, which is logged.
func (s *server) projects() []string {
	names, err := s.host.Projects(s.base)
	if err != nil {
		s.log.Error("acp: list projects", "err", err)
	}
	return names
}

// projectOption is the project picker among names.
func projectOption(current string, names []string) SessionConfigOption {
	if current == "" {
		current = noProject
	}
	o := SessionConfigOption{ID: "project", Name: "Project", Type: "select", CurrentValue: current,
		Description: "The project the session is on: its memories are the ones the model sees."}
	o.Options = append(o.Options, SessionConfigSelectOption{Value: noProject, Name: "No project"})
	for _, n := range names {
		o.Options = append(o.Options, SessionConfigSelectOption{Value: n, Name: n})
	}
	return o
}

// switchProject moves the session onto another project, refused while a
// turn is in flight and for a name no project has, the row left as it was.
func (e *entry) switchProject(ctx context.Context, name string) error {
	if name == noProject {
		name = ""
	}
	e.mu.Lock()
	busy := e.inFlight || e.switching || e.hs.Busy()
	hs := e.hs
	e.mu.Unlock()
	if busy {
		return errBusy("project")
	}
	err := hs.SetProject(ctx, name)
	switch {
	case errors.Is(err, host.ErrNoProject):
		return invalidParams("unknown project %q", name)
	case errors.Is(err, agent.ErrBusy):
		return errBusy("project")
	case err != nil:
		return e.s.sessionError("switch project", e.id, err)
	}
	return nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// level parses a mode id among the enabled levels.
func (s *server) level(id string) (permission.Level, error) {
	l, err := permission.ParseLevel(id)
	if err != nil || !slices.Contains(s.opts.Levels, l) {
		names := make([]string, len(s.opts.Levels))
		for i, l := range s.opts.Levels {
			names[i] = l.String()
		}
		return 0, invalidParams("unknown or disabled permission level %q (enabled: %s)", id, strings.Join(names, ", "))
	}
	return l, nil
}

// bypassMode is the mode clients written for Claude Code set to allow
// everything without asking (Harbor's permission_mode allow may be one).
// meka takes it as the highest confined level enabled with approvals off:
// nothing is asked and nothing runs unconfined. Only unrestricted, chosen
// by name, runs commands unconfined.
const bypassMode = "bypassPermissions"

// bypassLevel is the level bypassMode stands for.
func (s *server) bypassLevel() (permission.Level, error) {
	for _, l := range []permission.Level{permission.Workspace, permission.Read} {
		if slices.Contains(s.opts.Levels, l) {
			return l, nil
		}
	}
	return 0, invalidParams("%s needs the workspace or read level enabled", bypassMode)
}

// modeLevel parses a mode id, bypassMode included, and reports whether it
// was bypassMode.
func (s *server) modeLevel(id string) (permission.Level, bool, error) {
	if id == bypassMode {
		l, err := s.bypassLevel()
		return l, true, err
	}
	l, err := s.level(id)
	return l, false, err
}

func (s *server) setMode(ctx context.Context, p *SetSessionModeRequest) (struct{}, error) {
	l, bypass, err := s.modeLevel(p.ModeID)
	if err != nil {
		return struct{}{}, err
	}
	e, err := s.ensure(ctx, p.SessionID)
	if err != nil {
		return struct{}{}, err
	}
	hs := e.session()
	hs.Touch()
	if err := hs.SetLevel(ctx, l); err != nil {
		return struct{}{}, s.sessionError("set mode", e.id, err)
	}
	if bypass {
		if err := hs.SetApprovals(ctx, false); err != nil {
			return struct{}{}, s.sessionError("set approvals", e.id, err)
		}
	}
	s.notify(s.base, e.id, CurrentModeUpdate{CurrentModeID: l.String()})
	s.notify(s.base, e.id, ConfigOptionUpdate{ConfigOptions: e.configOptions()})
	e.confinementNotice(s.base, l)
	return struct{}{}, nil
}

func (s *server) setConfigOption(ctx context.Context, p *SetSessionConfigOptionRequest) (*SetSessionConfigOptionResponse, error) {
	e, err := s.ensure(ctx, p.SessionID)
	if err != nil {
		return nil, err
	}
	e.session().Touch()
	var b bool
	var v string
	if p.Type == "boolean" || (len(p.Value) > 0 && (string(p.Value) == "true" || string(p.Value) == "false")) {
		if err := json.Unmarshal(p.Value, &b); err != nil {
			return nil, invalidParams("value must be a boolean for a boolean option")
		}
		v = onOff(b)
	} else if err := json.Unmarshal(p.Value, &v); err != nil {
		return nil, invalidParams("value must be a value id (a string)")
	}
	switch p.ConfigID {
	case "permission":
		l, bypass, err := s.modeLevel(v)
		if err != nil {
			return nil, err
		}
		if err := e.session().SetLevel(ctx, l); err != nil {
			return nil, s.sessionError("set permission", e.id, err)
		}
		if bypass {
			if err := e.session().SetApprovals(ctx, false); err != nil {
				return nil, s.sessionError("set approvals", e.id, err)
			}
		}
		s.notify(s.base, e.id, CurrentModeUpdate{CurrentModeID: l.String()})
		e.confinementNotice(s.base, l)
	case "approvals":
		if v != "on" && v != "off" {
			return nil, invalidParams("approvals is on or off, not %q", v)
		}
		if err := e.session().SetApprovals(ctx, v == "on"); err != nil {
			return nil, s.sessionError("set approvals", e.id, err)
		}
	case "profile":
		if err := e.switchProfile(ctx, v); err != nil {
			return nil, err
		}
	case "project":
		if err := e.switchProject(ctx, v); err != nil {
			return nil, err
		}
	default:
		return nil, invalidParams("unknown config option %q", p.ConfigID)
	}
	return &SetSessionConfigOptionResponse{ConfigOptions: e.configOptions()}, nil
}

// switchProfile moves the session onto another profile: its row
// changes, so the move holds for every later turn from any surface.
func (e *entry) switchProfile(ctx context.Context, name string) error {
	s := e.s
	if !slices.Contains(s.opts.Profiles, name) {
		return invalidParams("unknown profile %q", name)
	}
	e.mu.Lock()
	if e.inFlight || e.switching || e.hs.Busy() {
		e.mu.Unlock()
		return errBusy("profile")
	}
	hs := e.hs
	if hs.Meta().Profile == name {
		e.mu.Unlock()
		return nil
	}
	e.switching = true
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.switching = false
		e.mu.Unlock()
	}()
	old := hs.Meta().Profile
	if err := hs.Update(ctx, func(m *session.Meta) { m.Profile = name }); err != nil {
		return s.sessionError("switch profile", e.id, err)
	}
	next, err := s.host.Reopen(ctx, e.id)
	if err != nil {
		// Put the row back; the session reopens as it was.
		s.log.Error("acp: switch profile", "session_id", e.id, "err", err)
		if back, err2 := s.host.Open(ctx, e.id); err2 == nil {
			_ = back.Update(ctx, func(m *session.Meta) { m.Profile = old })
			if back, err2 = s.host.Reopen(ctx, e.id); err2 == nil {
				e.attach(back)
			}
		}
		return s.sessionError("switch profile", e.id, err)
	}
	e.attach(next)
	return nil
}
