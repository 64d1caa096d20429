//go:build linux

package sandbox

import (
	"io"
	"os"
	"testing"
	"time"
)

// BenchmarkTrue is the cost of confinement per command: spawn to exit of
// true at workspace on each backend, as shell_execute runs it (a temp dir
// of its own, meka's data and config directories masked with the
// session's scratchpad showing through, through Launch and so a
// launcher), against unrestricted;
// and, for comparison, as Command builds it (a helper or bubblewrap per
// command: "direct").
func BenchmarkTrue(b *testing.B) {
	type column struct {
		name   string
		spec   Spec
		direct bool
	}
	cols := []column{{name: "unrestricted", spec: Spec{Mode: Unrestricted}}}
	for _, g := range Check() {
		if g.Holds(false) {
			spec := Spec{Mode: Workspace, Backend: g.Backend}
			cols = append(cols, column{"workspace/" + g.Backend, spec, false}, column{"workspace/" + g.Backend + "/direct", spec, true})
		}
	}
	for _, col := range cols {
		b.Run(col.name, func(b *testing.B) {
			ws, state := b.TempDir(), b.TempDir()
			scratch := state + "/data/sessions/s/scratch"
			if err := os.MkdirAll(scratch, 0o700); err != nil {
				b.Fatal(err)
			}
			if err := os.MkdirAll(state+"/config", 0o700); err != nil {
				b.Fatal(err)
			}
			spec := col.spec
			spec.Args, spec.Env, spec.Dir, spec.Writable = []string{"true"}, []string{testPath}, ws, []string{ws}
			spec.Masked, spec.Visible = []string{state + "/data", state + "/config"}, []string{scratch}
			// CPU time says what the machine's load does not: wall time
			// on a shared machine waits for a core too. It is the
			// command's own (and, direct, its helper's or bubblewrap's).
			var cpu time.Duration
			for b.Loop() {
				spec.TempDir = ""
				if spec.Mode != Unrestricted {
					tmp, err := MkShellTemp()
					if err != nil {
						b.Fatal(err)
					}
					spec.TempDir = tmp
				}
				var run *Running
				var err error
				if col.direct {
					cmd, cerr := Command(b.Context(), spec)
					if cerr != nil {
						b.Fatal(cerr)
					}
					run, err = Start(cmd, io.Discard, io.Discard)
				} else {
					run, err = Launch(b.Context(), spec, "", io.Discard, io.Discard)
				}
				if err != nil {
					b.Fatal(err)
				}
				if err := run.Wait(); err != nil {
					b.Fatal(err)
				}
				st, _ := run.Status()
				cpu += st.CPU
				if spec.TempDir != "" {
					os.RemoveAll(spec.TempDir)
				}
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
