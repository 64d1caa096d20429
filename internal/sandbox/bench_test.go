//go:build linux

package sandbox

import (
	"io"
	"os"
	"testing"
	"time"
)

// BenchmarkTrue is the cost of confinement per command: spawn to exit of
// true at workspace on each backend, against unrestricted.
func BenchmarkTrue(b *testing.B) {
	cols := []Spec{{Mode: Unrestricted}}
	for _, g := range Check() {
		if g.Holds(false) {
			cols = append(cols, Spec{Mode: Workspace, Backend: g.Backend})
		}
	}
	for _, col := range cols {
		name := "unrestricted"
		if col.Backend != "" {
			name = "workspace/" + col.Backend
		}
		b.Run(name, func(b *testing.B) {
			ws := b.TempDir()
			spec := col
			spec.Args, spec.Env, spec.Dir, spec.Writable = []string{"true"}, []string{testPath}, ws, []string{ws}
			// CPU time says what the machine's load does not: wall time
			// on a shared machine waits for a core too.
			var cpu time.Duration
			for b.Loop() {
				// As shell_execute runs a command: a temp dir of its own,
				// through Launch.
				tmp, err := MkShellTemp()
				if err != nil {
					b.Fatal(err)
				}
				if spec.Mode != Unrestricted {
					spec.TempDir = tmp
				}
				run, err := Launch(b.Context(), spec, "", io.Discard, io.Discard)
				if err != nil {
					b.Fatal(err)
				}
				if err := run.Wait(); err != nil {
					b.Fatal(err)
				}
				st, _ := run.Status()
				cpu += st.CPU
				os.RemoveAll(tmp)
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
