package helper

import (
	"reflect"
	"testing"
)

func TestArgsRoundTrip(t *testing.T) {
	for _, s := range []Spec{
		{Path: "/usr/bin/true"},
		{Path: "/bin/sh", Writable: []string{"/w", "/odd/--", "/new\nline", "/a=b"}, Protected: []string{"/w/.git/hooks"},
			Sockets: []string{"/run/x.sock"}, Masked: []string{"/data", "/config"}, Visible: []string{"/data/sessions/s/scratch"}, Mount: true, Network: true, MapIDs: true, UID: 4242, GID: 0, Landlock: true},
	} {
		args := []string{"sh", "-c", "echo --", "--", "p=/x"}
		a := s.Args(args)
		if a[0] != Marker {
			t.Fatalf("Args starts with %q, want the marker", a[0])
		}
		got, gotArgs, err := parse(a[1:])
		if err != nil {
			t.Fatalf("parse(%q): %v", a, err)
		}
		if !reflect.DeepEqual(got, s) || !reflect.DeepEqual(gotArgs, args) {
			t.Errorf("round trip of %+v %q = %+v %q", s, args, got, gotArgs)
		}
	}
}

func TestServeArgsRoundTrip(t *testing.T) {
	s := Spec{Writable: []string{"/w"}, Mount: true, Landlock: true, Serve: true, TempRoot: "/tmp/meka-shell-1-2"}
	a := s.Args(nil)
	got, args, err := parse(a[1:])
	if err != nil || !reflect.DeepEqual(got, s) || args != nil {
		t.Errorf("round trip of %+v = %+v %q, %v", s, got, args, err)
	}
	// A launcher runs no command of its own.
	if _, _, err := parse([]string{"z", "p=/bin/true", "--"}); err == nil {
		t.Error("a launcher with a program parsed")
	}
	if _, _, err := parse([]string{"z", "--", "true"}); err == nil {
		t.Error("a launcher with a command parsed")
	}
}

func TestParseRefuses(t *testing.T) {
	for _, a := range [][]string{
		{"p=/bin/true"},                      // no command
		{"p=/bin/true", "--"},                // an empty command
		{"w=/w", "--", "true"},               // no program
		{"p=/bin/true", "x=1", "--", "true"}, // unknown field
		{"p=/bin/true", "u=1", "--", "true"}, // no gid
		{"p=/bin/true", "u=a:1", "--", "true"},
	} {
		if _, _, err := parse(a); err == nil {
			t.Errorf("parse(%q) succeeded", a)
		}
	}
}
