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

func TestConfinedEnv(t *testing.T) {
	env := []string{
		"PATH=/usr/bin", "HOME=/home/me", "LC_ALL=C", "LANG=C.UTF-8",
		"AWS_SECRET_ACCESS_KEY=x", "DATABASE_URL=postgres://u:pw@h/db", "SSH_AUTH_SOCK=/tmp/a",
		"GOFLAGS=-mod=mod", "NPM_CONFIG_CACHE=/c", "NPM_TOKEN=t", "broken",
	}
	// NPM_* matches NPM_TOKEN too, a credential, which stays out (the
	// config refuses such a glob; this holds for any caller).
	got := ConfinedEnv(env, []string{"GOFLAGS", "NPM_*"})
	want := []string{"PATH=/usr/bin", "HOME=/home/me", "LC_ALL=C", "LANG=C.UTF-8", "GOFLAGS=-mod=mod", "NPM_CONFIG_CACHE=/c"}
	if !slices.Equal(got, want) {
		t.Errorf("ConfinedEnv = %q, want %q", got, want)
	}
}
