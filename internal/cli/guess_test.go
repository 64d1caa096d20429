package cli

import (
	"runtime/debug"
	"testing"
)

func TestVersionOf(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		linked string
		info   *debug.BuildInfo
		want   string
	}{
		{"linked", "v1.2.3", &debug.BuildInfo{Main: debug.Module{Version: "v9.9.9"}}, "v1.2.3"},
		{"go install at a tag", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.4.0"}}, "v0.4.0"},
		{"checkout", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261201145516-9507dc18967d+dirty"}}, "v0.0.0-20261201145516-9507dc18967d+dirty"},
		{"vcs only", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(
			"vcs.revision", "9507dc18967db8042199baacc68d19e9b95f7d46", "vcs.time", "2026-12-01T14:55:16Z", "vcs.modified", "true")},
			"devel 9507dc18967d+dirty 2026-12-01T14:55:16Z"},
		{"nothing stamped", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "devel go1.26.8"},
		{"no build info", "", nil, "devel"},
	} {
		if got := versionOf(tc.linked, tc.info); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
