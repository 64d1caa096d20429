package credential

import (
	"path"
	"testing"
)

func TestGlobPasses(t *testing.T) {
	keys := []string{"OPENAI_API_KEY", "MY_PROVIDER_KEY"}
	for _, tc := range []struct {
		glob string
		pass bool
	}{
		{"*", true},
		{"*_TOKEN", true},
		{"*_token", true},
		{"GITHUB_*", true},
		{"NPM_CONFIG_*", true},
		{"*KEY", true},
		{"MY_PROVIDER_KEY", true},
		{"MY_*_KEY", true},
		{"*_SECR?T", true},
		{"*_[A-Z]OKEN", true},
		{"*_[^X]OKEN", true},
		{"A*B*_SECRET", true},
		{"GOFLAGS", false},
		{"NPM_CONFIG_REGISTRY", false},
		{"*_PATH", false},
		{"NPM_CONFIG_*_URL", false},
		{"*_TOKENS", false},
		{"*_[^Tt]OKEN", false},
		{"GITHUB_TOKEN_FILE", false},
		{"LC_?", false},
	} {
		w, ok := GlobPasses(tc.glob, keys)
		if ok != tc.pass {
			t.Errorf("GlobPasses(%q) = %q %v, want %v", tc.glob, w, ok, tc.pass)
			continue
		}
		if !ok {
			continue
		}
		// The example is a name the glob matches, stripped.
		if m, _ := path.Match(tc.glob, w); !m || !(Name(w) || w == keys[0] || w == keys[1]) {
			t.Errorf("GlobPasses(%q) gave %q, which it does not pass or is no credential", tc.glob, w)
		}
	}
}

func FuzzGlobPasses(f *testing.F) {
	for _, g := range []string{"*", "GITHUB_*", "*_[^T]OKEN", `\*_TOKEN`, "[a-]x*"} {
		f.Add(g)
	}
	f.Fuzz(func(t *testing.T, glob string) {
		if _, err := path.Match(glob, ""); err != nil || len(glob) > 40 {
			return
		}
		w, ok := GlobPasses(glob, nil)
		if ok {
			if m, _ := path.Match(glob, w); !m || !Name(w) {
				t.Fatalf("GlobPasses(%q) gave %q", glob, w)
			}
		}
	})
}
