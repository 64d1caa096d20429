package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// HideEnv takes the variables names from this process's environment and
// returns their values, for the caller to keep in memory: they are unset,
// and their entries in the environment block the process started with
// (what /proc/<pid>/environ shows, which unsetting leaves alone) are
// overwritten with NULs, so no child, confined or not, can read a key
// there. Names not set are skipped.
func HideEnv(names []string) (map[string]string, error) {
	values := map[string]string{}
	for _, n := range names {
		if v, ok := os.LookupEnv(n); ok {
			values[n] = v
			os.Unsetenv(n)
		}
	}
	if len(values) == 0 {
		return values, nil
	}
	start, end, err := envBlock()
	if err != nil {
		return values, fmt.Errorf("hide environment: %w", err)
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return values, fmt.Errorf("hide environment: %w", err)
	}
	defer mem.Close()
	block := make([]byte, end-start)
	if _, err := mem.ReadAt(block, start); err != nil {
		return values, fmt.Errorf("hide environment: %w", err)
	}
	off := 0
	for entry := range bytes.SplitSeq(block, []byte{0}) {
		name, _, _ := bytes.Cut(entry, []byte("="))
		if slices.Contains(names, string(name)) {
			if _, err := mem.WriteAt(make([]byte, len(entry)), start+int64(off)); err != nil {
				return values, fmt.Errorf("hide environment: %w", err)
			}
		}
		off += len(entry) + 1
	}
	return values, nil
}

// envBlock returns where the initial environment lies in this process's
// memory: fields 50 and 51 of /proc/self/stat.
func envBlock() (start, end int64, err error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, err
	}
	// The command name (field 2) may hold spaces; it ends at the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("read /proc/self/stat: no command name")
	}
	fields := strings.Fields(string(b[i+1:])) // fields 3 on
	if len(fields) < 49 {
		return 0, 0, fmt.Errorf("read /proc/self/stat: %d fields, want 51", len(fields)+2)
	}
	if start, err = strconv.ParseInt(fields[47], 10, 64); err != nil {
		return 0, 0, fmt.Errorf("read /proc/self/stat: %w", err)
	}
	if end, err = strconv.ParseInt(fields[48], 10, 64); err != nil {
		return 0, 0, fmt.Errorf("read /proc/self/stat: %w", err)
	}
	if end <= start {
		return 0, 0, fmt.Errorf("read /proc/self/stat: empty environment block")
	}
	return start, end, nil
}

// Undumpable makes this process not dumpable: its /proc files (environ,
// mem, maps, fd) become root's and ptrace needs CAP_SYS_PTRACE, so no
// child of meka at any level reads its memory unless it runs as root with
// every capability (unrestricted, as root). Call it after HideEnv, which
// writes through /proc/self/mem. Confined spawns keep working: the
// helper, dumpable again after its execve, maps its own user namespace.
func Undumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("make meka undumpable: %w", err)
	}
	return nil
}
