package schedule

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"meka.dev/meka/agent"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
)

// indexLimit bounds the jobs the [Scheduled] index lists.
const indexLimit = 20

// Contributor returns the [Scheduled] index of a session's jobs, put
// before the model on every request so that it sees what is already
// scheduled and which jobs cannot fire. level is the session's level now.
// A change in whether a job can fire is announced once, on the next
// request after it happens.
func (s *Scheduler) Contributor(sessionID string, level func() permission.Level) agent.RequestContributor {
	return &contributor{s: s, sessionID: sessionID, level: level}
}

type contributor struct {
	s         *Scheduler
	sessionID string
	level     func() permission.Level

	mu   sync.Mutex        // guards last
	last map[string]string // job id → its NOT FIRING reason at the last request
}

func (c *contributor) Contribute(ctx context.Context, _ agent.RequestInfo) []model.Part {
	s := c.s
	jobs, err := s.opts.Store.List(ctx, c.sessionID)
	if err != nil {
		s.log.Warn("list jobs for [Scheduled]", "session_id", c.sessionID, "err", err)
		return nil
	}
	level := permission.Unrestricted
	if c.level != nil {
		level = c.level()
	}
	now := s.opts.Now()
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	short := UniquePrefixes(ids)

	var b strings.Builder
	reasons := make(map[string]string, len(jobs))
	for i, j := range jobs {
		reason := s.NotFiring(j, level)
		reasons[j.ID] = reason
		if i >= indexLimit {
			continue
		}
		fmt.Fprintf(&b, "- %s %s", short[i], j.Describe())
		if j.Recurring() {
			fmt.Fprintf(&b, ", next %s", FormatTime(j.NextAt, j.Location()))
		}
		fmt.Fprintf(&b, " (%s), ", Until(j.NextAt, now, s.formatDuration))
		switch g, err := j.ParsedGate(); {
		case err != nil || g == nil:
			b.WriteString("ungated")
		case g.Check.IsCommand():
			b.WriteString("gated (command)")
		default:
			b.WriteString("gated (tool " + g.Check.Tool + ")")
		}
		if reason != "" {
			b.WriteString(" — NOT FIRING: " + reason)
		}
		b.WriteByte('\n')
	}
	if len(jobs) > indexLimit {
		fmt.Fprintf(&b, "- … and %d more; schedule_list shows every one.\n", len(jobs)-indexLimit)
	}

	c.mu.Lock()
	var changes []string
	if c.last != nil {
		for i, j := range jobs {
			prev, seen := c.last[j.ID]
			cur := reasons[j.ID]
			switch {
			case !seen || prev == cur:
			case cur == "":
				changes = append(changes, fmt.Sprintf("job %s can fire again", short[i]))
			default:
				changes = append(changes, fmt.Sprintf("job %s is now NOT FIRING: %s", short[i], cur))
			}
		}
	}
	c.last = reasons
	c.mu.Unlock()

	if len(jobs) == 0 {
		return nil
	}
	head := "[Scheduled] This session's jobs (schedule_list shows them in full, schedule_cancel stops one):\n"
	text := head + b.String()
	if len(changes) > 0 {
		text += "Changed since the last request: " + strings.Join(changes, "; ") + ".\n"
	}
	return []model.Part{model.Text{Text: strings.TrimRight(text, "\n")}}
}
