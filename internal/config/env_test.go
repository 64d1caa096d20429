package config

import (
	"reflect"
	"strings"
	"testing"
)

type mapEnv map[string]string

func (m mapEnv) get(k string) string { return m[k] }

func TestZeroConfigProfile(t *testing.T) {
	tests := []struct {
		name string
		env  mapEnv
		want Profile
		ok   bool
	}{
		{"nothing", mapEnv{"MEKA_MODEL": "x"}, Profile{}, false},
		{"openai", mapEnv{"OPENAI_API_KEY": "k"},
			Profile{Name: "default", Provider: ProviderOpenAI, Model: "gpt-4.1", APIKeyEnv: "OPENAI_API_KEY", Vision: true, ConnectTimeout: DefaultConnectTimeout, FirstTokenTimeout: DefaultFirstTokenTimeout, StreamIdleTimeout: DefaultStreamIdleTimeout}, true},
		{"openai with url and model", mapEnv{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://127.0.0.1:8080/v1", "MEKA_MODEL": "qwen"},
			Profile{Name: "default", Provider: ProviderOpenAI, Model: "qwen", BaseURL: "http://127.0.0.1:8080/v1", BaseURLEnv: "OPENAI_BASE_URL", APIKeyEnv: "OPENAI_API_KEY", Vision: true, ConnectTimeout: DefaultConnectTimeout, FirstTokenTimeout: DefaultFirstTokenTimeout, StreamIdleTimeout: DefaultStreamIdleTimeout}, true},
		{"anthropic", mapEnv{"ANTHROPIC_API_KEY": "k", "OPENAI_BASE_URL": "ignored"},
			Profile{Name: "default", Provider: ProviderAnthropic, Model: "claude-sonnet-4-5", APIKeyEnv: "ANTHROPIC_API_KEY", Vision: true, ConnectTimeout: DefaultConnectTimeout, FirstTokenTimeout: DefaultFirstTokenTimeout, StreamIdleTimeout: DefaultStreamIdleTimeout}, true},
		{"anthropic with url and model", mapEnv{"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "https://proxy", "MEKA_MODEL": "claude-opus-4-1"},
			Profile{Name: "default", Provider: ProviderAnthropic, Model: "claude-opus-4-1", BaseURL: "https://proxy", BaseURLEnv: "ANTHROPIC_BASE_URL", APIKeyEnv: "ANTHROPIC_API_KEY", Vision: true, ConnectTimeout: DefaultConnectTimeout, FirstTokenTimeout: DefaultFirstTokenTimeout, StreamIdleTimeout: DefaultStreamIdleTimeout}, true},
		{"both: openai first", mapEnv{"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "o"},
			Profile{Name: "default", Provider: ProviderOpenAI, Model: "gpt-4.1", APIKeyEnv: "OPENAI_API_KEY", Vision: true, ConnectTimeout: DefaultConnectTimeout, FirstTokenTimeout: DefaultFirstTokenTimeout, StreamIdleTimeout: DefaultStreamIdleTimeout}, true},
	}
	for _, tt := range tests {
		p, ok := ZeroConfigProfile(tt.env.get)
		if ok != tt.ok || !reflect.DeepEqual(p, tt.want) {
			t.Errorf("%s: ZeroConfigProfile = %+v, %v; want %+v, %v", tt.name, p, ok, tt.want, tt.ok)
		}
	}
}

func TestNoProfileHelp(t *testing.T) {
	help := NoProfileHelp()
	for _, want := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MEKA_MODEL", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
		"~/.config/meka/config.toml", "MEKA_CONFIG", "XDG_CONFIG_HOME", "[profiles.main]"} {
		if !strings.Contains(help, want) {
			t.Errorf("NoProfileHelp does not mention %q", want)
		}
	}
	// The example it prints must be a working config.
	_, example, ok := strings.Cut(help, "\n\n  default_profile")
	if !ok {
		t.Fatal("no example block")
	}
	var doc strings.Builder
	for _, line := range strings.Split("  default_profile"+example, "\n") {
		doc.WriteString(strings.TrimPrefix(line, "  "))
		doc.WriteByte('\n')
	}
	c, err := Parse("example.toml", []byte(doc.String()))
	if err != nil {
		t.Fatalf("the example does not parse: %v\n%s", err, doc.String())
	}
	if p, err := c.Profile(""); err != nil || p.Provider != ProviderAnthropic {
		t.Errorf("example profile = %+v, %v", p, err)
	}
}

func TestPaths(t *testing.T) {
	tests := []struct {
		env                  mapEnv
		config, def, dataDir string
	}{
		{mapEnv{"HOME": "/home/u"}, "/home/u/.config/meka/config.toml", "/home/u/.config/meka/config.toml", "/home/u/.local/share/meka"},
		{mapEnv{"HOME": "/home/u", "XDG_CONFIG_HOME": "/xdg/c", "XDG_DATA_HOME": "/xdg/d"},
			"/xdg/c/meka/config.toml", "/xdg/c/meka/config.toml", "/xdg/d/meka"},
		{mapEnv{"HOME": "/home/u", "XDG_CONFIG_HOME": "rel", "XDG_DATA_HOME": "rel"}, // relative XDG values are ignored
			"/home/u/.config/meka/config.toml", "/home/u/.config/meka/config.toml", "/home/u/.local/share/meka"},
		{mapEnv{"HOME": "/home/u", "MEKA_CONFIG": "/etc/meka.toml", "MEKA_DATA_DIR": "/var/meka", "XDG_DATA_HOME": "/xdg/d"},
			"/etc/meka.toml", "/home/u/.config/meka/config.toml", "/var/meka"},
		{mapEnv{}, "", "", ""},
	}
	for _, tt := range tests {
		if got := ConfigPath(tt.env.get); got != tt.config {
			t.Errorf("ConfigPath(%v) = %q, want %q", tt.env, got, tt.config)
		}
		if got := DefaultPath(tt.env.get); got != tt.def {
			t.Errorf("DefaultPath(%v) = %q, want %q", tt.env, got, tt.def)
		}
		if got := DataDir(tt.env.get); got != tt.dataDir {
			t.Errorf("DataDir(%v) = %q, want %q", tt.env, got, tt.dataDir)
		}
	}
}

// A provider's name resolves to its profile from the environment unless a
// configured profile has that name.
func TestResolveEnvProvider(t *testing.T) {
	env := mapEnv{"OPENAI_API_KEY": "o", "ANTHROPIC_API_KEY": "a", "ANTHROPIC_BASE_URL": "https://proxy"}
	c := Default()
	p, err := c.ResolveProfile("anthropic", env.get)
	want := Profile{Name: "anthropic", Provider: ProviderAnthropic, Model: "claude-sonnet-4-5", BaseURL: "https://proxy", BaseURLEnv: "ANTHROPIC_BASE_URL", APIKeyEnv: "ANTHROPIC_API_KEY", Vision: true,
		ConnectTimeout: DefaultConnectTimeout, FirstTokenTimeout: DefaultFirstTokenTimeout, StreamIdleTimeout: DefaultStreamIdleTimeout}
	if err != nil || !reflect.DeepEqual(p, want) {
		t.Fatalf("ResolveProfile(anthropic) = %+v, %v", p, err)
	}
	c.Profiles["mine"] = Profile{Name: "mine", Provider: ProviderScript}
	if p, err := c.ResolveProfile("openai", env.get); err != nil || p.Provider != ProviderOpenAI || p.Name != "openai" {
		t.Fatalf("with profiles configured: %+v, %v", p, err)
	}
	c.Profiles["openai"] = Profile{Name: "openai", Provider: ProviderOpenAI, Model: "local", BaseURL: "http://127.0.0.1:1/v1"}
	c.Profiles["cloud"] = Profile{Name: "cloud", Provider: ProviderAnthropic, Model: "m"}
	if p, err := c.ResolveProfile("openai", env.get); err != nil || p.Model != "local" {
		t.Fatalf("a configured profile named openai: %+v, %v", p, err)
	}
	// docs/config.md: defaults < file < environment. The variable gives a
	// profile that sets no base_url its endpoint, and never overrides one
	// that does.
	if p, err := c.ResolveProfile("cloud", env.get); err != nil || p.BaseURL != "https://proxy" || p.BaseURLEnv != "ANTHROPIC_BASE_URL" {
		t.Fatalf("a file profile without base_url: %+v, %v", p, err)
	}
	if p, _ := c.ResolveProfile("openai", mapEnv{"OPENAI_BASE_URL": "http://elsewhere/v1"}.get); p.BaseURL != "http://127.0.0.1:1/v1" || p.BaseURLEnv != "" {
		t.Fatalf("the variable overrode the file's base_url: %+v", p)
	}
	// The Responses API lives under the same root as Chat Completions.
	c.Profiles["resp"] = Profile{Name: "resp", Provider: ProviderOpenAIResponses, Model: "gpt-5.5"}
	if p, err := c.ResolveProfile("resp", mapEnv{"OPENAI_BASE_URL": "http://gateway/v1"}.get); err != nil || p.BaseURL != "http://gateway/v1" || p.BaseURLEnv != "OPENAI_BASE_URL" {
		t.Fatalf("an openai-responses profile without base_url: %+v, %v", p, err)
	}
}

func TestNeedsKey(t *testing.T) {
	for _, tc := range []struct {
		p    Profile
		want bool
	}{
		{Profile{Provider: ProviderAnthropic}, true},
		{Profile{Provider: ProviderAnthropic, BaseURL: "https://proxy"}, true},
		{Profile{Provider: ProviderOpenAI}, true},
		{Profile{Provider: ProviderOpenAI, BaseURL: "http://127.0.0.1:11434/v1"}, false},
		{Profile{Provider: ProviderScript}, false},
	} {
		if got := tc.p.NeedsKey(); got != tc.want {
			t.Errorf("%+v.NeedsKey() = %v", tc.p, got)
		}
	}
}
