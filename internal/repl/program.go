package repl

import (
	"context"
	"io"
	"os"
	"sync"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/permission"
	"meka.dev/meka/plan"
)

// runScreen runs the bubbletea program until the user quits.
func runScreen(ctx context.Context, s Session, opts Options) (Session, error) {
	m := newScreen(ctx, s, opts)
	out := &frameWriter{w: opts.Out}
	var output io.Writer = out
	if f, ok := opts.Out.(*os.File); ok {
		// bubbletea reads the window's size from its output's descriptor.
		output = frameFile{frameWriter: out, f: f}
	}
	popts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithOutput(output), tea.WithInput(opts.In), tea.WithoutSignalHandler()}
	if opts.Width > 0 && opts.Height > 0 {
		popts = append(popts, tea.WithWindowSize(opts.Width, opts.Height))
	}
	// The colour profile is the door's decision (NO_COLOR was read by the
	// composition root); naming it skips bubbletea's detection, which
	// costs about 20 ms of the time to the first frame. The screen's own
	// styles are the eight basic colours. At 120 frames a second the
	// first frame waits at most 8 ms for the renderer's tick.
	profile := colorprofile.ANSI
	if !opts.Color {
		profile = colorprofile.Ascii
	}
	popts = append(popts, tea.WithColorProfile(profile), tea.WithFPS(120))
	if opts.Environ != nil {
		popts = append(popts, tea.WithEnvironment(opts.Environ))
	}
	p := tea.NewProgram(m, popts...)
	m.send = p.Send
	out.first = func() {
		// Off the writer's goroutine: Send waits for the event loop, which
		// may itself be writing.
		go func() {
			p.Send(firstFrameMsg{})
			if opts.Ready != nil {
				opts.Ready()
			}
		}()
	}
	m.hold(s)
	defer m.release()
	_, err := p.Run()
	return m.sess, err
}

// hold makes s the session on screen: its events and approvals come here.
func (m *screen) hold(s Session) {
	m.release()
	m.sess = s
	m.plan = currentPlan(s)
	m.spent, m.turnCost = spent(s.Rows()), 0
	sid := s.ID()
	send := m.send
	m.unsub = s.Subscribe(func(ev agent.Event) { send(eventMsg{sid: sid, ev: ev}) })
	s.SetAsker(permission.AskerFunc(m.ask))
	if e, ok := s.(elicitor); ok {
		e.SetElicitor(host.ElicitorFunc(m.elicit))
	}
}

func (m *screen) release() {
	if m.unsub != nil {
		m.unsub()
		m.unsub = nil
		m.sess.SetAsker(nil)
		if e, ok := m.sess.(elicitor); ok {
			e.SetElicitor(nil)
		}
	}
}

// planner is what a Session offers when it can say what its plan adds up
// to now (a host session does).
type planner interface {
	Plan() (plan.Changed, bool)
}

// currentPlan is the plan s's log adds up to: what a resumed, rewound or
// forked session shows before its next change.
func currentPlan(s Session) plan.Changed {
	if p, ok := s.(planner); ok {
		if c, ok := p.Plan(); ok {
			return c
		}
	}
	return plan.Changed{}
}

// frameWriter is the program's output; its first write is the first
// frame, after which commits may print.
type frameWriter struct {
	w     io.Writer
	once  sync.Once
	first func()
}

func (f *frameWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	f.once.Do(func() {
		if f.first != nil {
			f.first()
		}
	})
	return n, err
}

// frameFile is a frameWriter over a terminal, which bubbletea sizes and
// puts in raw mode through its descriptor.
type frameFile struct {
	*frameWriter
	f *os.File
}

func (x frameFile) Read(p []byte) (int, error) { return x.f.Read(p) }
func (x frameFile) Close() error               { return nil }
func (x frameFile) Fd() uintptr                { return x.f.Fd() }
