package host

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/task"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// reportOutput bounds how much of a task's output its report carries.
const reportOutput = 8 << 10

// startTasks gives the session its task registry and the goroutine that
// delivers reports. Tasks belong to this process's session: they do not
// travel to forks and end when the session closes.
func (s *Session) startTasks() {
	s.taskDone = make(chan struct{}, 1)
	s.idle = make(chan struct{}, 1)
	s.stop = make(chan struct{})
	s.tasks = task.NewRegistry(task.Options{
		Dir:     filepath.Join(s.dataDir, "tasks"),
		Now:     s.h.opts.Now,
		OnStart: func(t task.Task) { s.publish(TaskChanged{Task: t}) },
		OnDone: func(t task.Task) {
			s.publish(TaskChanged{Task: t})
			select {
			case s.taskDone <- struct{}{}:
			default:
			}
		},
	})
	s.reporterDone = make(chan struct{})
	go s.deliverReports()
}

// Task is a background task, as front doors show it.
type Task = task.Task

// TaskChanged announces a background task that started or ended, for
// front doors that show tasks live (meka serve's task.* events).
type TaskChanged struct {
	agent.PluginEvent
	Task task.Task
}

// Tasks returns the session's background tasks.
func (s *Session) Tasks() []task.Task {
	if s.tasks == nil {
		return nil
	}
	return s.tasks.List()
}

// TaskRegistry returns the session's task registry (nil without a data
// directory), for the shell tool.
func (s *Session) TaskRegistry() *task.Registry { return s.tasks }

// TaskState implements TaskLookup.
func (s *Session) TaskState(id string) (exists, reported bool) {
	if s.tasks == nil {
		return false, false
	}
	t, ok := s.tasks.Get(id)
	return ok, ok && t.Reported
}

// deliverReports runs a turn for tasks that ended, as soon as no other
// turn runs. Tasks that end together are reported in one turn.
func (s *Session) deliverReports() {
	defer close(s.reporterDone)
	for {
		select {
		case <-s.stop:
			return
		case <-s.taskDone:
		}
		for {
			err := s.reportEnded()
			if !errors.Is(err, agent.ErrBusy) {
				if err != nil && !errors.Is(err, ErrClosed) {
					s.h.opts.Logger.Warn("deliver task report", "session_id", s.id, "err", err)
				}
				break
			}
			select {
			case <-s.stop:
				return
			case <-s.idle:
			}
		}
	}
}

// reportEnded delivers every ended, unreported task as one turn.
func (s *Session) reportEnded() error {
	var ended []task.Task
	for _, t := range s.tasks.List() {
		if t.Exited() && !t.Reported {
			ended = append(ended, t)
		}
	}
	if len(ended) == 0 {
		return nil
	}
	ids := make([]string, len(ended))
	for i, t := range ended {
		ids[i] = t.ID
	}
	msg := session.UserMessage{
		Parts:  model.Parts{model.Text{Text: task.Report(ended, reportOutput)}},
		Source: session.SourceTask,
		Tasks:  ids,
	}
	return s.runReport(msg, ended)
}

func (s *Session) runReport(msg session.UserMessage, ended []task.Task) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	_, err := s.run(ctx, msg, func() {
		s.tasks.MarkReported(msg.Tasks...)
		for _, t := range ended {
			s.publish(agent.Notice{Notice: session.Notice{Severity: session.SeverityInfo,
				Title: task.StageDirection(t), Description: t.Label}})
		}
	})
	return err
}

// signalIdle tells the reporter a turn ended.
func (s *Session) signalIdle() {
	if s.idle == nil {
		return
	}
	select {
	case s.idle <- struct{}{}:
	default:
	}
}

// ErrNoTask says the session has no background task of that id, and
// ErrTaskEnded that a task to stop had ended already.
var (
	ErrNoTask    = task.ErrUnknown
	ErrTaskEnded = task.ErrNotRunning
)

// StopTask kills a running background task of the session and returns
// once it has ended, with its outcome; ErrTaskEnded when it had
// ended already.
func (s *Session) StopTask(id string) (Task, error) {
	if s.tasks == nil {
		return Task{}, fmt.Errorf("stop task %s: %w", id, ErrNoTask)
	}
	return s.tasks.Kill(id)
}

// TaskTail returns at most limit bytes from the end of a task's output,
// and the output's whole size.
func (s *Session) TaskTail(id string, limit int) (string, int64, error) {
	if s.tasks == nil {
		return "", 0, fmt.Errorf("read task %s: %w", id, ErrNoTask)
	}
	return s.tasks.Tail(id, limit)
}
