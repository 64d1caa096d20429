package lsp_test

import (
	"os"
	"testing"
	"time"

	"meka.dev/meka/internal/lsp"
)

// BenchmarkGoplsDiagnostics is the latency of diagnostics after an edit
// to a Go module: first, with a new server (its start, initialize, the
// workspace's load, the first publication; gopls's cache directory kept
// between iterations as meka keeps it under the data directory), and
// warm, an edit to a file the running server has open, alternating a
// type error and its fix.
func BenchmarkGoplsDiagnostics(b *testing.B) {
	needGopls(b)
	cache := b.TempDir()
	opts := lsp.Options{Wait: 2 * time.Minute, Env: os.Environ(), CacheDir: cache}
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			m := lsp.New(opts)
			root, path := goModule(b, broken)
			b.StartTimer()
			r := m.Diagnose(b.Context(), lsp.Request{Path: path, Root: root, Content: []byte(broken), Unconfined: true})
			b.StopTimer()
			if !r.Fresh || len(r.Diagnostics) == 0 {
				b.Fatalf("report = %+v", r)
			}
			m.Close()
			b.StartTimer()
		}
	})
	b.Run("warm", func(b *testing.B) {
		m := lsp.New(opts)
		defer m.Close()
		root, path := goModule(b, broken)
		if r := m.Diagnose(b.Context(), lsp.Request{Path: path, Root: root, Content: []byte(broken), Unconfined: true}); !r.Fresh {
			b.Fatalf("report = %+v", r)
		}
		contents := []string{fixed, broken}
		i := 0
		for b.Loop() {
			c := contents[i%2]
			i++
			r := m.Diagnose(b.Context(), lsp.Request{Path: path, Root: root, Content: []byte(c), Unconfined: true})
			if !r.Fresh || (c == broken) != (len(r.Diagnostics) > 0) {
				b.Fatalf("edit %d: report = %+v", i, r)
			}
		}
	})
}
