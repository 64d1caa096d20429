package checkpoint_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"meka.dev/meka/internal/checkpoint"
)

// benchRepo is a 10,000-file tree (100 directories of 100 files of about
// 1 KiB) with its first snapshot taken.
func benchRepo(b *testing.B) (string, *checkpoint.Store) {
	root := b.TempDir()
	line := []byte("the quick brown fox jumps over the lazy dog, 0123456789 abcdefghij\n")
	for d := 0; d < 100; d++ {
		dir := filepath.Join(root, fmt.Sprintf("pkg%03d", d))
		os.MkdirAll(dir, 0o755)
		for f := 0; f < 100; f++ {
			body := fmt.Appendf(nil, "file %d/%d\n", d, f)
			for range 15 {
				body = append(body, line...)
			}
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.go", f)), body, 0o644)
		}
	}
	// A repository exists before the session: its files are older than
	// the window in which a stat cannot vouch for a file (a write within
	// the filesystem's timestamp granularity could leave it as it was).
	time.Sleep(checkpoint.RacyWindow)
	s := open(b, root, checkpoint.Options{MaxBytes: 1 << 30})
	if _, err := s.Snapshot(context.Background(), "bench", 0, checkpoint.KindAfter); err != nil {
		b.Fatal(err)
	}
	return root, s
}

func change50(b *testing.B, root string, n int) {
	for i := range 50 {
		p := filepath.Join(root, fmt.Sprintf("pkg%03d", i*2), fmt.Sprintf("f%03d.go", n%100))
		if err := os.WriteFile(p, fmt.Appendf(nil, "turn %d edit %d\n", n, i), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckpointTurn is what checkpoints add to a turn that changes
// 50 of 10,000 files: the snapshot before its first change and the one
// after.
func BenchmarkCheckpointTurn(b *testing.B) {
	needGit(b)
	ctx := context.Background()
	root, s := benchRepo(b)
	var cpu time.Duration
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		turn := int64(n + 1)
		c := processCPU()
		if _, err := s.Snapshot(ctx, "bench", turn, checkpoint.KindBefore); err != nil {
			b.Fatal(err)
		}
		cpu += processCPU() - c
		b.StopTimer()
		change50(b, root, n)
		b.StartTimer()
		c = processCPU()
		if _, err := s.Snapshot(ctx, "bench", turn, checkpoint.KindAfter); err != nil {
			b.Fatal(err)
		}
		cpu += processCPU() - c
	}
	b.ReportMetric(float64(cpu)/float64(b.N)/1e6, "cpu-ms/op")
}

// BenchmarkRewind restores the 50 files a turn changed in a 10,000-file
// tree.
func BenchmarkRewind(b *testing.B) {
	needGit(b)
	ctx := context.Background()
	root, s := benchRepo(b)
	var cpu time.Duration
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		b.StopTimer()
		turn := int64(n + 1)
		s.Snapshot(ctx, "bench", turn, checkpoint.KindBefore)
		change50(b, root, n)
		s.Snapshot(ctx, "bench", turn, checkpoint.KindAfter)
		b.StartTimer()
		c := processCPU()
		res, err := s.Rewind(ctx, "bench", turn, checkpoint.RestoreOptions{Turn: turn + 1})
		if err != nil {
			b.Fatal(err)
		}
		cpu += processCPU() - c
		if len(res.Changes) != 50 {
			b.Fatalf("restored %d files", len(res.Changes))
		}
	}
	b.ReportMetric(float64(cpu)/float64(b.N)/1e6, "cpu-ms/op")
}
