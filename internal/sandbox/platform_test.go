package sandbox

import (
	"errors"
	"strings"
	"testing"
)

// Off Linux a confined level is refused at start-up, saying what to do;
// unrestricted, and every level on Linux, are not.
func TestRefuseOn(t *testing.T) {
	for _, goos := range []string{"darwin", "windows", "freebsd"} {
		for _, mode := range []Mode{ReadOnly, Workspace} {
			err := RefuseOn(goos, mode)
			if !errors.Is(err, ErrNoConfinement) || !errors.Is(err, ErrUnsupportedOS) {
				t.Fatalf("RefuseOn(%s, %v) = %v, want ErrUnsupportedOS", goos, mode, err)
			}
			for _, want := range []string{goos, mode.String(), "--permission unrestricted", "Linux", "never runs them unconfined"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("RefuseOn(%s, %v) = %q, which does not say %q", goos, mode, err, want)
				}
			}
		}
		if err := RefuseOn(goos, Unrestricted); err != nil {
			t.Errorf("RefuseOn(%s, unrestricted) = %v", goos, err)
		}
	}
	for _, mode := range []Mode{ReadOnly, Workspace, Unrestricted} {
		if err := RefuseOn("linux", mode); err != nil {
			t.Errorf("RefuseOn(linux, %v) = %v", mode, err)
		}
	}
}

// The probe Unavailable leaves confines nothing and names why for every
// backend; unrestricted still runs.
func TestForcedProbeConfinesNothing(t *testing.T) {
	p := forcedProbe("MEKA_SANDBOX=off")
	for _, mode := range []Mode{ReadOnly, Workspace} {
		for _, network := range []bool{false, true} {
			_, err := p.available(mode, network)
			if !errors.Is(err, ErrNoConfinement) || strings.Count(err.Error(), "MEKA_SANDBOX=off") != len(Backends) {
				t.Errorf("available(%v, network %v) = %v, want ErrNoConfinement naming the reason for each backend", mode, network, err)
			}
		}
	}
	for _, b := range Backends {
		if g := p.guarantees(b); g.Writes || g.Metadata || g.Signals || g.Network || g.Secrets {
			t.Errorf("guarantees(%s) = %+v, want none", b, g)
		}
	}
	if b, err := p.available(Unrestricted, false); b != "" || err != nil {
		t.Errorf("available(unrestricted) = %q, %v", b, err)
	}
	if d := p.describe(false); !strings.HasPrefix(d, "none:") {
		t.Errorf("describe = %q", d)
	}
}
