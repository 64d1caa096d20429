package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// RunVar is the environment variable every tracked command carries: the
// token its note in the running directory names, so that the processes of
// a command whose holder died are found even when the holder died before
// it learnt their process group.
const RunVar = "MEKA_RUN"

// Tracked is a command noted in a running directory (see Track).
type Tracked struct {
	note, token string
}

// Track notes in dir, before cmd starts, that this process runs it, and
// puts the note's token in cmd's environment (RunVar), which every process
// the command starts inherits. If this process dies without killing the
// command, KillRecorded in the next process to hold the session kills what
// it left: the processes carrying the token, and its process group once
// Started has noted it. There is no window: the note exists before the
// fork. Call Forget once the command and its group are gone. A note that
// cannot be written only loses that.
func Track(dir string, cmd *exec.Cmd) *Tracked {
	t := track(dir)
	if t.token != "" {
		cmd.Env = append(cmd.Env, t.env()) // the last value wins
	}
	return t
}

// env is the environment entry that carries t's token.
func (t *Tracked) env() string { return RunVar + "=" + t.token }

// track writes the note of Track; its caller puts the token in the
// command's environment.
func track(dir string) *Tracked {
	t := &Tracked{}
	if dir == "" {
		return t
	}
	var b [12]byte
	rand.Read(b[:])
	t.token = hex.EncodeToString(b[:])
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return t
	}
	note := filepath.Join(dir, "run-"+t.token)
	if err := os.WriteFile(note, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return t
	}
	t.note = note
	return t
}

// Started adds the command's process group (led by pgid, the command's
// pid) to the note: a process that left the token behind (env -i) but not
// the group is still found.
func (t *Tracked) Started(pgid int) {
	if t.note == "" {
		return
	}
	body := fmt.Sprintf("%d %d %s", os.Getpid(), pgid, startTime(pgid))
	// Written aside and renamed: a reader sees the old note or the new.
	tmp := t.note + ".new"
	if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
		return
	}
	if err := os.Rename(tmp, t.note); err != nil {
		os.Remove(tmp)
	}
}

// Forget removes the note.
func (t *Tracked) Forget() {
	if t.note != "" {
		os.Remove(t.note)
	}
}

// KillRecorded kills what the commands dir notes left running when their
// recording process died, and forgets them; it returns how many notes had
// something to kill. A group whose leader's pid now names another process
// (its start time differs) is left unharmed.
func KillRecorded(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("kill recorded groups: %w", err)
	}
	killed := 0
	for _, e := range entries {
		note := filepath.Join(dir, e.Name())
		token, tracked := strings.CutPrefix(e.Name(), "run-")
		if tracked && strings.HasSuffix(token, ".new") {
			os.Remove(note) // a rename that never happened
			continue
		}
		b, err := os.ReadFile(note)
		if err != nil {
			continue
		}
		fields := strings.Fields(string(b))
		if len(fields) == 0 {
			os.Remove(note)
			continue
		}
		if h, _ := strconv.Atoi(fields[0]); h == os.Getpid() || alive(fields[0]) {
			continue // its holder runs and kills it itself
		}
		// A group: "holder pgid start" in a tracked note once started,
		// or "holder start" in a note named by its pgid (meka before
		// Track).
		pgid, start := 0, ""
		switch {
		case tracked && len(fields) == 3:
			pgid, _ = strconv.Atoi(fields[1])
			start = fields[2]
		case !tracked && len(fields) == 2:
			pgid, _ = strconv.Atoi(e.Name())
			start = fields[1]
		}
		hit := false
		// A leader gone leaves its group's pid unused while members
		// remain; a leader of another start time is another process.
		if now := startTime(pgid); pgid > 1 && (now == "" || now == start) {
			hit = killGroup(pgid) == nil
		}
		if tracked && killCarrying(RunVar+"="+token) {
			hit = true
		}
		if hit {
			killed++
		}
		os.Remove(note)
	}
	return killed, nil
}

// killCarrying kills every process whose environment holds entry, pass
// after pass until a pass finds none (a process may fork while a pass
// runs), and reports whether it killed any.
func killCarrying(entry string) bool {
	signalled := map[int]bool{}
	for range 16 {
		if signalCarrying([]byte(entry), signalled) == 0 {
			break
		}
	}
	return len(signalled) > 0
}

// startTime returns field 22 of /proc/pid/stat (when the process started,
// in clock ticks since boot), "" when there is no such process.
func startTime(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(string(b[i+1:])) // field 3 on
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
}
