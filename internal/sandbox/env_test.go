package sandbox

import (
	"slices"
	"testing"
)

func TestScrubEnv(t *testing.T) {
	env := []string{
		"PATH=/usr/bin",
		"HOME=/home/me",
		"OPENAI_API_KEY=sk-1",
		"anthropic_api_key=sk-2",
		"GITHUB_TOKEN=ghp",
		"AWS_SECRET=x",
		"MY_PROVIDER_KEY=k",
		"TOKENIZER=keep",
		"API_KEYS_DIR=keep",
		"broken",
		"=nameless",
	}
	got := ScrubEnv(env, []string{"MY_PROVIDER_KEY"})
	want := []string{"PATH=/usr/bin", "HOME=/home/me", "TOKENIZER=keep", "API_KEYS_DIR=keep"}
	if !slices.Equal(got, want) {
		t.Errorf("ScrubEnv = %q, want %q", got, want)
	}
	if env[2] != "OPENAI_API_KEY=sk-1" {
		t.Error("ScrubEnv modified its input")
	}
}
