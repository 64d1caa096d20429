package agent

import (
	"context"
	"encoding/json"
	"strings"

	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// retainFold is the engine's own compaction contributor: what a summary
// must never paraphrase. The session's first message (the task as the
// person put it), every message they pinned, and the body of every skill
// in use are carried verbatim after the summary, and its state rides each
// boundary's checkpoint, so the tenth compaction keeps them as the first
// did, on resume and fork too. The system prompt (AGENTS.md, the
// environment) needs nothing here: every request sends it whole.
type retainFold struct {
	st retained
}

type retained struct {
	First  string          `json:"first,omitempty"`
	Pinned []string        `json:"pinned,omitempty"`
	Skills []retainedSkill `json:"skills,omitempty"`
}

type retainedSkill struct {
	Name string `json:"name"`
	Body string `json:"body"`
}

const retainName = "retained"

func (f *retainFold) Name() string { return retainName }
func (f *retainFold) Reset()       { f.st = retained{} }

func (f *retainFold) Restore(state json.RawMessage) error {
	f.st = retained{}
	return json.Unmarshal(state, &f.st)
}

func (f *retainFold) Checkpoint() (json.RawMessage, error) { return json.Marshal(f.st) }

func (f *retainFold) Apply(s session.Step) {
	m, ok := s.Entry.(session.UserMessage)
	if !ok {
		return
	}
	if m.Source != session.SourceUser && m.Source != session.SourceSchedule {
		return
	}
	words := partsText(m.Parts)
	if f.st.First == "" && words != "" {
		f.st.First = words
	} else if m.Pinned && words != "" {
		f.st.Pinned = append(f.st.Pinned, words)
	}
	if m.Command != "" && len(m.Expansion) > 0 {
		body := partsText(m.Expansion)
		for i, sk := range f.st.Skills {
			if sk.Name == m.Command {
				f.st.Skills = append(f.st.Skills[:i:i], f.st.Skills[i+1:]...)
				break
			}
		}
		f.st.Skills = append(f.st.Skills, retainedSkill{Name: m.Command, Body: body})
	}
}

// CompactionText is the retained text, tagged so the model tells the
// person's words from the summary's.
func (f *retainFold) CompactionText(context.Context) string {
	if f.st.First == "" && len(f.st.Pinned) == 0 && len(f.st.Skills) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Kept verbatim across compactions (the person's own words and the skills in use):\n")
	if f.st.First != "" {
		b.WriteString("<first-user-message>\n" + f.st.First + "\n</first-user-message>\n")
	}
	for _, p := range f.st.Pinned {
		b.WriteString("<pinned-user-message>\n" + p + "\n</pinned-user-message>\n")
	}
	for _, sk := range f.st.Skills {
		b.WriteString("<skill name=\"" + sk.Name + "\">\n" + sk.Body + "\n</skill>\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// partsText is the text a person's parts carry, an embedded file as the
// tag the model read it in.
func partsText(parts model.Parts) string {
	var out []string
	for _, p := range parts {
		switch p := p.(type) {
		case model.Text:
			if p.Text != "" {
				out = append(out, p.Text)
			}
		case model.Resource:
			if p.Text != "" {
				out = append(out, "<resource uri=\""+p.URI+"\">"+p.Text+"</resource>")
			}
		}
	}
	return strings.Join(out, "\n")
}
