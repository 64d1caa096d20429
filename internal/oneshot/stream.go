package oneshot

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/google/uuid"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/events"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
)

// maxInputLine bounds one line of --input-format stream-json.
const maxInputLine = 8 << 20

// An input line of --input-format stream-json. Claude Code's user lines
// ({"type":"user","message":{"role":"user","content":…}}) are taken as
// they are; meka adds steer, approval, elicitation and interrupt.
type inputLine struct {
	Type    string `json:"type"`
	Message *struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	Text          string         `json:"text"`
	ApprovalID    string         `json:"approval_id"`
	Decision      string         `json:"decision"`
	ElicitationID string         `json:"elicitation_id"`
	Action        string         `json:"action"`
	Content       map[string]any `json:"content"`
}

// text is a user or steer line's words.
func (l inputLine) text() (string, error) {
	if l.Message == nil {
		return l.Text, nil
	}
	var s string
	if json.Unmarshal(l.Message.Content, &s) == nil {
		return s, nil
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(l.Message.Content, &blocks); err != nil {
		return "", fmt.Errorf("message.content is neither text nor a list of blocks")
	}
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type != "text" {
			return "", fmt.Errorf("message.content: a %q block; only text is taken", bl.Type)
		}
		b.WriteString(bl.Text)
	}
	return b.String(), nil
}

var decisions = map[string]permission.Decision{
	"allow": permission.Allow, "allow_always": permission.AlwaysAllow,
	"deny": permission.Deny, "deny_always": permission.AlwaysDeny,
}

func decisionName(d permission.Decision) string {
	for n, v := range decisions {
		if v == d {
			return n
		}
	}
	return "deny"
}

// stream holds the questions a stream-json run has put to its client.
type stream struct {
	j *jsonOut
	s *host.Session

	mu           sync.Mutex
	approvals    map[string]chan permission.Decision
	elicitations map[string]chan host.ElicitResult
}

// ask puts an approval to the client as approval.requested and waits for
// its answer line; the turn's end denies it.
func (st *stream) ask(ctx context.Context, req permission.Request) (permission.Decision, error) {
	id := uuid.Must(uuid.NewV7()).String()
	ch := make(chan permission.Decision, 1)
	st.mu.Lock()
	st.approvals[id] = ch
	st.mu.Unlock()
	defer func() {
		st.mu.Lock()
		delete(st.approvals, id)
		st.mu.Unlock()
	}()
	input := req.Arguments
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	st.j.record(events.ApprovalRequested, map[string]any{"approval_id": id, "call_id": req.CallID, "tool": req.Tool, "title": req.Title,
		"input": input, "options": []string{"allow", "allow_always", "deny", "deny_always"}})
	d, by := permission.Deny, "cancel"
	select {
	case d = <-ch:
		by = "client"
	case <-ctx.Done():
	}
	st.j.record(events.ApprovalResolved, map[string]any{"approval_id": id, "decision": decisionName(d), "by": by})
	return d, nil
}

// elicit puts an MCP server's question to the client.
func (st *stream) elicit(ctx context.Context, e host.Elicitation) (host.ElicitResult, error) {
	id := uuid.Must(uuid.NewV7()).String()
	ch := make(chan host.ElicitResult, 1)
	st.mu.Lock()
	st.elicitations[id] = ch
	st.mu.Unlock()
	defer func() {
		st.mu.Lock()
		delete(st.elicitations, id)
		st.mu.Unlock()
	}()
	st.j.record(events.ElicitationRequested, map[string]any{"elicitation_id": id, "server": e.Server, "mode": e.Mode,
		"message": e.Message, "schema": e.Schema, "url": e.URL})
	r, by := host.ElicitResult{Action: host.ElicitCancel}, "cancel"
	select {
	case r = <-ch:
		by = "client"
	case <-ctx.Done():
	}
	st.j.record(events.ElicitationResolved, map[string]string{"elicitation_id": id, "action": r.Action, "by": by})
	return r, nil
}

// answer delivers an approval or elicitation line; false when nothing
// waits under that id.
func (st *stream) answer(l inputLine) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	switch l.Type {
	case "approval":
		d, ok := decisions[l.Decision]
		if !ok {
			return fmt.Errorf("decision %q: want allow, allow_always, deny or deny_always", l.Decision)
		}
		ch, ok := st.approvals[l.ApprovalID]
		if !ok {
			return fmt.Errorf("no approval %q is waiting", l.ApprovalID)
		}
		delete(st.approvals, l.ApprovalID)
		ch <- d
	default:
		switch l.Action {
		case host.ElicitAccept, host.ElicitDecline, host.ElicitCancel:
		default:
			return fmt.Errorf("action %q: want accept, decline or cancel", l.Action)
		}
		ch, ok := st.elicitations[l.ElicitationID]
		if !ok {
			return fmt.Errorf("no elicitation %q is waiting", l.ElicitationID)
		}
		delete(st.elicitations, l.ElicitationID)
		ch <- host.ElicitResult{Action: l.Action, Content: l.Content}
	}
	return nil
}

type parsedLine struct {
	n    int
	line inputLine
	err  error
}

// readLines parses in's lines until its end; the channel closes then.
func readLines(in io.Reader, out chan<- parsedLine) {
	defer close(out)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxInputLine)
	n := 0
	for sc.Scan() {
		n++
		b := sc.Bytes()
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		var l inputLine
		err := json.Unmarshal(b, &l)
		out <- parsedLine{n: n, line: l, err: err}
	}
	if err := sc.Err(); err != nil {
		out <- parsedLine{n: n + 1, err: err}
	}
}

// RunStream is --oneshot --json --input-format stream-json: a
// conversation of several turns in one process. User lines run as turns
// in order (the first prompt, if any, before them); steer lines reach the
// running turn; approval and elicitation lines answer the questions the
// stream asked. It returns when the input has ended and the last turn is
// over, with the exit status of that turn.
func RunStream(ctx context.Context, s *host.Session, first string, in io.Reader, opts Options) int {
	if opts.Now == nil {
		opts.Now = nowFunc
	}
	if opts.Feed == nil {
		fmt.Fprintln(opts.Stderr, "meka: --json needs a store that keeps the event feed")
		return ExitFailed
	}
	j := newJSONOut(opts.Stdout, opts.Feed, s.ID(), opts.Now, opts.Relay)
	if err := j.start(ctx, s, opts.Resumed, opts.Announced); err != nil {
		fmt.Fprintf(opts.Stderr, "meka: %v\n", err)
		return ExitFailed
	}
	st := &stream{j: j, s: s, approvals: map[string]chan permission.Decision{}, elicitations: map[string]chan host.ElicitResult{}}
	s.SetAsker(permission.AskerFunc(st.ask))
	s.SetElicitor(host.ElicitorFunc(st.elicit))
	defer s.SetAsker(nil)
	defer s.SetElicitor(nil)
	unsubscribe := s.Subscribe(j.event)
	defer unsubscribe()
	stop := make(chan struct{})
	tailed := make(chan struct{})
	go func() {
		defer close(tailed)
		j.tail(ctx, stop)
	}()
	defer func() {
		close(stop)
		<-tailed
	}()

	lines := make(chan parsedLine)
	go readLines(in, lines)
	var queue []string
	if strings.TrimSpace(first) != "" {
		queue = append(queue, first)
	}
	type ended struct {
		res agent.Result
		err error
	}
	done := make(chan ended, 1)
	running, inputOpen := false, true
	code := ExitOK
	for {
		if !running && len(queue) > 0 {
			prompt := queue[0]
			queue = queue[1:]
			running = true
			go func() {
				res, err := s.Run(ctx, session.UserMessage{Parts: model.Parts{model.Text{Text: prompt}}})
				done <- ended{res, err}
			}()
		}
		if !running && !inputOpen {
			return code
		}
		select {
		case pl, ok := <-lines:
			if !ok {
				inputOpen, lines = false, nil
				continue
			}
			if err := st.handle(pl, running, &queue); err != nil {
				j.ephemeral("input.rejected", map[string]any{"line": pl.n, "reason": err.Error()})
			}
		case e := <-done:
			running = false
			res, err := e.res, e.err
			if err != nil && res.Err == nil {
				res.Err = err
			}
			if res.Stop == "" && err != nil {
				res.Stop = agent.StopFailed
			}
			j.end(res)
			r := &renderer{out: io.Discard, err: opts.Stderr}
			code = r.exit(res, err)
		case <-ctx.Done():
			s.Cancel()
			if !running {
				return ExitCanceled
			}
			e := <-done
			j.end(e.res)
			return ExitCanceled
		}
	}
}

// handle acts on one input line.
func (st *stream) handle(pl parsedLine, running bool, queue *[]string) error {
	if pl.err != nil {
		return fmt.Errorf("not a JSON object: %v", pl.err)
	}
	l := pl.line
	switch l.Type {
	case "user", "steer":
		text, err := l.text()
		if err != nil {
			return err
		}
		if strings.TrimSpace(text) == "" {
			return fmt.Errorf("a %s line with no text", l.Type)
		}
		// A steer reaches the running turn; with none running it is the
		// next turn's prompt, as a user line is.
		if l.Type == "steer" && running && st.s.Steer(model.Text{Text: text}) {
			return nil
		}
		*queue = append(*queue, text)
	case "approval", "elicitation":
		return st.answer(l)
	case "interrupt":
		st.s.Cancel()
	default:
		return fmt.Errorf("type %q: want user, steer, approval, elicitation or interrupt", l.Type)
	}
	return nil
}
