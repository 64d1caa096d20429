package checklist_test

import (
	"encoding/json"
	"strings"
	"testing"

	"meka.dev/meka/model"
	"meka.dev/meka/plan/checklist"
	"meka.dev/meka/tool"
)

// Each checklist call has a title a person reads, and none when its
// arguments say nothing that can be named.
func TestToolTitles(t *testing.T) {
	tools := map[string]tool.Tool{}
	for _, tl := range checklist.New(checklist.Options{}).Tools() {
		tools[tl.Spec().Name] = tl
	}
	for _, tc := range []struct{ name, args, want string }{
		{"checklist_add", `{"items":["one","two"]}`, "Checklist: add 2 items"},
		{"checklist_add", `{"items":["one"]}`, "Checklist: add 1 item"},
		{"checklist_add", `{"items":[]}`, ""},
		{"checklist_add", `{"items":`, ""},
		{"checklist_edit", `{"id":"c1","status":"in_progress"}`, "Checklist: c1 in progress"},
		{"checklist_edit", `{"id":"c2","text":"better words"}`, "Checklist: edit c2"},
		{"checklist_edit", `{"status":"completed"}`, ""},
		{"checklist_edit", `{"id":`, ""},
	} {
		tl, ok := tools[tc.name]
		if !ok {
			t.Fatalf("no tool %s", tc.name)
		}
		got := ""
		if tt, ok := tl.(interface{ Title(json.RawMessage) string }); ok {
			got = tt.Title(json.RawMessage(tc.args))
		}
		if got != tc.want {
			t.Errorf("%s %s: title %q, want %q", tc.name, tc.args, got, tc.want)
		}
	}
}

// A refused add names the item at fault by its place in the call, from 1.
func TestAddRefusalNamesTheItem(t *testing.T) {
	for _, tl := range checklist.New(checklist.Options{}).Tools() {
		if tl.Spec().Name != "checklist_add" {
			continue
		}
		res, err := tl.Run(t.Context(), tool.Call{ID: "c1", Name: "checklist_add",
			Arguments: json.RawMessage(`{"items":["fine",{"text":"done already","status":"completed"}]}`)})
		if err != nil {
			t.Fatal(err)
		}
		var text string
		for _, p := range res.Content {
			if tx, ok := p.(model.Text); ok {
				text += tx.Text
			}
		}
		if want := `item 2: a new item is pending or in_progress, not "completed"`; !res.IsError || !strings.Contains(text, want) {
			t.Errorf("refusal %q, want it to say %q", text, want)
		}
		return
	}
	t.Fatal("no checklist_add")
}
