package repl

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	tea "charm.land/bubbletea/v2"

	"meka.dev/meka/internal/host"
)

// elicitation is an MCP server's request for input, answered in the
// composer: Enter sends what is typed, Esc declines.
type elicitation struct {
	e     host.Elicitation
	reply chan host.ElicitResult
}

type (
	elicitMsg     struct{ el *elicitation }
	elicitGoneMsg struct{ el *elicitation }
)

// elicitor is what a Session offers when MCP servers can ask through it
// (a host session does).
type elicitor interface {
	SetElicitor(e host.Elicitor)
}

// elicit is the held session's Elicitor: the request goes to the screen
// and waits for its answer or the call's end.
func (m *screen) elicit(ctx context.Context, e host.Elicitation) (host.ElicitResult, error) {
	el := &elicitation{e: e, reply: make(chan host.ElicitResult, 1)}
	m.send(elicitMsg{el: el})
	select {
	case r := <-el.reply:
		return r, nil
	case <-ctx.Done():
		m.send(elicitGoneMsg{el: el})
		return host.ElicitResult{Action: host.ElicitCancel}, nil
	}
}

// openElicit says what the server asks, into scrollback.
func (m *screen) openElicit(el *elicitation) tea.Cmd {
	m.endReply()
	m.elicits = append(m.elicits, el)
	e := el.e
	lines := []string{m.st.bold(fmt.Sprintf("MCP server %s asks: %s", e.Server, oneLine(e.Message)))}
	if e.Mode == host.ElicitURL {
		lines = append(lines, "  Open "+e.URL, m.st.dim("  Enter when done, Esc declines."))
	} else {
		if f := formFields(e.Schema); f != "" {
			lines = append(lines, "  Fields: "+f)
		}
		lines = append(lines, m.st.dim(`  Type the answer as JSON ({"name": "Ada"}) or name=value pairs, then Enter; Esc declines.`))
	}
	m.commit(lines...)
	return m.ring(&approval{title: "MCP server " + e.Server})
}

// elicitKey answers the oldest open elicitation: Enter with the
// composer's text, Esc declining. It reports whether it took the key.
func (m *screen) elicitKey(keyName string) bool {
	el := m.elicits[0]
	switch keyName {
	case "esc":
		m.settleElicit(el, host.ElicitResult{Action: host.ElicitDecline}, "declined")
		return true
	case "enter":
		if el.e.Mode == host.ElicitURL {
			m.settleElicit(el, host.ElicitResult{Action: host.ElicitAccept}, "done")
			return true
		}
		content, err := parseAnswer(m.comp.value())
		if err != nil {
			m.commit(m.st.dim("  (" + err.Error() + ")"))
			return true
		}
		m.comp.clear()
		m.settleElicit(el, host.ElicitResult{Action: host.ElicitAccept, Content: content}, "answered")
		return true
	}
	return false
}

func (m *screen) settleElicit(el *elicitation, r host.ElicitResult, said string) {
	m.dropElicit(el)
	el.reply <- r
	m.commit(m.st.dim(fmt.Sprintf("(MCP server %s: %s)", el.e.Server, said)))
}

func (m *screen) dropElicit(el *elicitation) {
	for i, x := range m.elicits {
		if x == el {
			m.elicits = append(m.elicits[:i:i], m.elicits[i+1:]...)
			return
		}
	}
}

// parseAnswer reads a form's answer: a JSON object, or name=value pairs
// separated by commas or spaces.
func parseAnswer(text string) (map[string]any, error) {
	t := strings.TrimSpace(text)
	if t == "" {
		return nil, fmt.Errorf("type an answer, or Esc to decline")
	}
	if strings.HasPrefix(t, "{") {
		var v map[string]any
		if err := json.Unmarshal([]byte(t), &v); err != nil {
			return nil, fmt.Errorf("not a JSON object: %v", err)
		}
		return v, nil
	}
	out := map[string]any{}
	for _, f := range strings.FieldsFunc(t, func(r rune) bool { return r == ',' || r == ' ' }) {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not name=value", f)
		}
		out[k] = v
	}
	return out, nil
}

// formFields lists a form schema's fields with their types.
func formFields(schema json.RawMessage) string {
	var s struct {
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return ""
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		names[i] = fmt.Sprintf("%s (%s)", n, s.Properties[n].Type)
	}
	return strings.Join(names, ", ")
}
