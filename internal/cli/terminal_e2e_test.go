//go:build linux

package cli_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"meka.dev/meka/internal/testenv"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

// openPTY returns a pseudo-terminal's controlling side and its terminal.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		testenv.Skip(t, "no pseudo-terminal here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, s
}

// A reply written to a terminal cannot retitle it, write to the
// clipboard or clear it; colour passes. To a pipe it passes whole.
func TestModelTextNeutralisedOnATerminal(t *testing.T) {
	const reply = "before\x1b]0;pwned\x07\x1b]52;c;ZWNobyBoaQ==\x07\x1b[2Jafter \x1b[31mred\x1b[0m"
	text, _ := json.Marshal(reply)
	s, err := script.Parse([]byte(`{"rounds":[{"text":` + string(text) + `}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.NewServer(t, s)
	env := isolatedEnv(t, "OPENAI_API_KEY=k", "OPENAI_BASE_URL="+srv.URL+"/v1")
	master, tty := openPTY(t)
	cmd := exec.Command(mekaBinary(t), "--oneshot", "hi")
	cmd.Dir, cmd.Env = t.TempDir(), env
	cmd.Stdout, cmd.Stderr = tty, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var out bytes.Buffer
	io.Copy(&out, master) // ends with EIO once the child closed the terminal
	if err := cmd.Wait(); err != nil {
		t.Fatalf("meka: %v\n%q", err, out.String())
	}
	got := out.String()
	if !strings.Contains(got, "beforeafter \x1b[31mred\x1b[0m") || strings.Contains(got, "pwned") || strings.Contains(got, "]52;") || strings.Contains(got, "[2J") {
		t.Fatalf("terminal got %q", got)
	}

	// The same reply through a pipe is byte for byte the model's.
	srv2 := modeltest.NewServer(t, s)
	env2 := isolatedEnv(t, "OPENAI_API_KEY=k", "OPENAI_BASE_URL="+srv2.URL+"/v1")
	stdout, _, code := run(t, t.TempDir(), env2, "--oneshot", "hi")
	if code != 0 || stdout != reply+"\n" {
		t.Fatalf("pipe got %d %q", code, stdout)
	}
}
