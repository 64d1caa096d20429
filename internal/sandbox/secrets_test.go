//go:build linux

package sandbox

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// hideMarker makes the test binary hide MEKA_TEST_KEY and then print
// what its /proc/self/environ holds, as meka does at start.
const hideMarker = "__meka_hide"

func runHide() {
	values, err := HideEnv([]string{"MEKA_TEST_KEY"})
	if err != nil {
		os.Stdout.WriteString("error: " + err.Error())
		os.Exit(1)
	}
	environ, err := os.ReadFile("/proc/self/environ")
	if err != nil {
		os.Stdout.WriteString("error: " + err.Error())
		os.Exit(1)
	}
	os.Stdout.WriteString("kept=" + values["MEKA_TEST_KEY"] + "\ngetenv=" + os.Getenv("MEKA_TEST_KEY") + "\n")
	os.Stdout.Write(environ)
	os.Exit(0)
}

func TestHideEnv(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, hideMarker)
	cmd.Env = []string{"BEFORE=1", "MEKA_TEST_KEY=sk-hidden-value", "AFTER=2", "GORACE=atexit_sleep_ms=0"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	s := string(out)
	head, environ, _ := strings.Cut(s, "\ngetenv=")
	if head != "kept=sk-hidden-value" || !strings.HasPrefix(environ, "\n") {
		t.Errorf("the key was not kept in memory and unset:\n%q", s)
	}
	if strings.Contains(environ, "sk-hidden") || strings.Contains(environ, "MEKA_TEST_KEY") {
		t.Errorf("/proc/self/environ still shows the key:\n%q", environ)
	}
	if !strings.Contains(environ, "BEFORE=1") || !strings.Contains(environ, "AFTER=2") {
		t.Errorf("/proc/self/environ lost the other variables:\n%q", environ)
	}
}
