//go:build linux

package sandbox

import (
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
			ws, tmp := b.TempDir(), b.TempDir()
			spec := col
			spec.Args, spec.Env, spec.Dir, spec.Writable, spec.TempDir = []string{"true"}, []string{testPath}, ws, []string{ws}, tmp
			// CPU time says what the machine's load does not: wall time
			// on a shared machine waits for a core too.
			var cpu time.Duration
			for b.Loop() {
				cmd, err := Command(b.Context(), spec)
				if err != nil {
					b.Fatal(err)
				}
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
				cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
