package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// RecordGroup notes in dir that this process runs the process group pgid
// (a command's group, led by pid pgid) until the returned function runs,
// so that if this process dies without killing it, KillRecorded in the
// next process to hold the session can. A note that cannot be written
// only loses that.
func RecordGroup(dir string, pgid int) (forget func()) {
	if dir == "" {
		return func() {}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return func() {}
	}
	note := filepath.Join(dir, strconv.Itoa(pgid))
	body := fmt.Sprintf("%d %s", os.Getpid(), startTime(pgid))
	if err := os.WriteFile(note, []byte(body), 0o600); err != nil {
		return func() {}
	}
	return func() { os.Remove(note) }
}

// KillRecorded kills the process groups dir notes whose recording process
// has died, and forgets them; it returns how many it signalled. A group
// whose leader's pid now names another process (its start time differs)
// is forgotten unharmed.
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
		pgid, err := strconv.Atoi(e.Name())
		note := filepath.Join(dir, e.Name())
		if err != nil || pgid <= 1 {
			os.Remove(note)
			continue
		}
		b, err := os.ReadFile(note)
		if err != nil {
			continue
		}
		holder, start, _ := strings.Cut(string(b), " ")
		if h, _ := strconv.Atoi(holder); h == os.Getpid() || alive(holder) {
			continue // its holder runs and kills it itself
		}
		if now := startTime(pgid); now != "" && now != start {
			os.Remove(note) // the pid is another process's now
			continue
		}
		if err := killGroup(pgid); err == nil {
			killed++
		}
		os.Remove(note)
	}
	return killed, nil
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
