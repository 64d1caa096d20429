package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"meka.dev/meka/model"
	"meka.dev/meka/tool"
)

// What a front door holding a session (the screen's /schedule) asks of
// the scheduler, answered as the schedule tools answer the model.

// Jobs returns a session's jobs.
func (s *Scheduler) Jobs(ctx context.Context, sessionID string) ([]Job, error) {
	jobs, err := s.opts.Store.List(ctx, sessionID)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return jobs, nil
}

// Cancel cancels one of a session's jobs by its id or a unique prefix and
// says what it did. Another session's job is not found.
func (s *Scheduler) Cancel(ctx context.Context, sessionID, idPrefix string) (string, error) {
	args, err := json.Marshal(map[string]string{"id": idPrefix})
	if err != nil {
		return "", err
	}
	res, err := (&cancelTool{s: s}).Run(ctx, tool.Call{Name: CancelToolName, Arguments: args, SessionID: sessionID})
	if err != nil {
		return "", err
	}
	text := strings.TrimPrefix(model.Message{Parts: res.Content}.Text(), CancelToolName+": ")
	if res.IsError {
		return "", errors.New(strings.ReplaceAll(text, "; schedule_list shows them", ""))
	}
	return text, nil
}
