package host_test

import (
	"strings"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/sandbox"
	"meka.dev/meka/internal/task"
	"meka.dev/meka/session"
)

func TestBackgroundTaskReportIsATurn(t *testing.T) {
	f := newFixture(t, `[{"text":"noted the build result"}]`)
	h := f.host(t)
	s, err := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan agent.Event, 64)
	defer s.Subscribe(func(ev agent.Event) { events <- ev })()

	tk, err := s.TaskRegistry().Start(task.Spec{Label: "the build", Command: "echo built; exit 3", Dir: s.Meta().Cwd, Mode: sandbox.Unrestricted})
	if err != nil {
		t.Fatal(err)
	}
	var notice session.Notice
	for ev := range events {
		if n, ok := ev.(agent.Notice); ok {
			notice = n.Notice
		}
		if end, ok := ev.(agent.TurnEnded); ok {
			if end.Result.Reply != "noted the build result" {
				t.Fatalf("turn %+v", end.Result)
			}
			break
		}
	}
	if !strings.HasPrefix(notice.Title, "Background task "+tk.ID+" finished after ") || notice.Description != "the build" {
		t.Fatalf("notice %+v", notice)
	}
	msgs := f.prov.Requests()[0].Messages
	text := msgs[len(msgs)-1].Text()
	if !strings.Contains(text, "exited with code 3") || !strings.Contains(text, "built") {
		t.Fatalf("report %q", text)
	}
	rows := s.Engine().Rows()
	um, ok := rows[1].Entry.(session.UserMessage) // after the system prompt
	if !ok || um.Source != session.SourceTask || len(um.Tasks) != 1 || um.Tasks[0] != tk.ID {
		t.Fatalf("report row %+v", rows[0].Entry)
	}
	if exists, reported := s.TaskState(tk.ID); !exists || !reported {
		t.Fatalf("task state %v %v", exists, reported)
	}
}
