package session_test

import (
	"strings"
	"testing"

	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

func TestTitleOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    session.Entry
		want string
	}{
		{"text", session.UserMessage{Parts: model.Parts{model.Text{Text: "fix the build"}}}, "fix the build"},
		{"whitespace collapsed", session.UserMessage{Parts: model.Parts{model.Text{Text: "  fix\n\tthe   build \n"}}}, "fix the build"},
		{"attachments by name", session.UserMessage{Parts: model.Parts{
			model.Text{Text: "explain"},
			model.Resource{URI: "file:///w/a.go", Name: "a.go", Text: "package a"},
			model.Image{MediaType: "image/png", Data: []byte{1}},
			model.Text{Text: "please"},
		}}, "explain @a.go please"},
		{"pointer", &session.UserMessage{Parts: model.Parts{model.Text{Text: "hi"}}}, "hi"},
		{"cut", session.UserMessage{Parts: model.Parts{model.Text{Text: strings.Repeat("é", 300)}}}, strings.Repeat("é", session.TitleLimit)},
		{"image only", session.UserMessage{Parts: model.Parts{model.Image{MediaType: "image/png"}}}, ""},
		{"steer", session.UserMessage{Parts: model.Parts{model.Text{Text: "hi"}}, Source: session.SourceSteer}, ""},
		{"task report", session.UserMessage{Parts: model.Parts{model.Text{Text: "done"}}, Source: session.SourceTask}, ""},
		{"reminder", session.UserMessage{Parts: model.Parts{model.Text{Text: "items open"}}, Source: session.SourceReminder}, ""},
		{"schedule", session.UserMessage{Parts: model.Parts{model.Text{Text: "check CI"}}, Source: session.SourceSchedule}, ""},
		{"assistant", session.AssistantMessage{Parts: model.Parts{model.Text{Text: "hi"}}}, ""},
	} {
		if got := session.TitleOf(tc.e); got != tc.want {
			t.Errorf("%s: TitleOf = %q, want %q", tc.name, got, tc.want)
		}
	}
}
