package cli

import (
	"runtime/debug"
	"strings"
)

// Version is meka's version when set at build time with
// -ldflags "-X meka.dev/meka/internal/cli.Version=v1.2.3"; otherwise
// version reads it from the build info.
var Version = ""

// version returns what meka --version prints after "meka ".
func version() string {
	info, _ := debug.ReadBuildInfo()
	return versionOf(Version, info)
}

// versionOf names a build: the version set at link time, else the module
// version the go command stamped (a tag for go install meka.dev/meka@v1.2.3,
// a pseudo-version for a build in a git checkout), else the VCS revision
// and time, else "devel" with the toolchain that built it.
func versionOf(linked string, info *debug.BuildInfo) string {
	if linked != "" {
		return linked
	}
	if info == nil {
		return "devel"
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	v := info.Main.Version
	if v != "" && v != "(devel)" {
		return v
	}
	if rev := settings["vcs.revision"]; rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		out := "devel " + rev
		if settings["vcs.modified"] == "true" {
			out += "+dirty"
		}
		if t := settings["vcs.time"]; t != "" {
			out += " " + t
		}
		return out
	}
	return strings.TrimSpace("devel " + info.GoVersion)
}
