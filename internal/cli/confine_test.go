package cli

import (
	"errors"
	"strings"
	"testing"

	"meka.dev/meka/permission"
)

// Off Linux a front door refuses to start at a confined level (a usage
// error, exit 2, saying what to do); on Linux, and at none or
// unrestricted anywhere, it starts.
func TestRefuseUnconfinable(t *testing.T) {
	for _, goos := range []string{"darwin", "windows"} {
		g := &globals{goos: goos}
		for _, l := range []permission.Level{permission.Read, permission.Workspace} {
			err := g.refuseUnconfinable(l)
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "--permission unrestricted") || !strings.Contains(err.Error(), goos) {
				t.Errorf("%s at %v: %v, want a usage error saying what to do", goos, l, err)
			}
		}
		for _, l := range []permission.Level{permission.None, permission.Unrestricted} {
			if err := g.refuseUnconfinable(l); err != nil {
				t.Errorf("%s at %v: %v", goos, l, err)
			}
		}
	}
	g := &globals{goos: "linux"}
	for _, l := range permission.Levels {
		if err := g.refuseUnconfinable(l); err != nil {
			t.Errorf("linux at %v: %v", l, err)
		}
	}
}

func TestSandboxEnvRefusesOtherValues(t *testing.T) {
	g := &globals{getenv: func(string) string { return "on" }}
	if err := g.applySandboxEnv(); err == nil || !strings.Contains(err.Error(), "MEKA_SANDBOX") {
		t.Fatalf("MEKA_SANDBOX=on: %v", err)
	}
	g.getenv = func(string) string { return "" }
	if err := g.applySandboxEnv(); err != nil {
		t.Fatal(err)
	}
}
