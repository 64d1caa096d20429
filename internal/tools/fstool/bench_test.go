package fstool

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/internal/testenv"
	"meka.dev/meka/permission"
	"meka.dev/meka/tool"
)

// benchTree writes 10,000 source-like files (100 directories of 100,
// about 3 KiB each), 50 of which hold the needle once.
func benchTree(b *testing.B) string {
	b.Helper()
	root := tempDir(b)
	var body strings.Builder
	for i := range 80 {
		fmt.Fprintf(&body, "func handler%d(w http.ResponseWriter, r *http.Request) { log.Printf(\"%%v\", r) }\n", i)
	}
	filler := body.String()
	n := 0
	for d := range 100 {
		dir := filepath.Join(root, fmt.Sprintf("pkg%03d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			content := filler
			if (d*100+f)%200 == 7 {
				content = filler[:len(filler)/2] + "// needle_x42 is here\n" + filler[len(filler)/2:]
				n++
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.go", f)), []byte(content), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	if n != 50 {
		b.Fatalf("%d needles", n)
	}
	return root
}

func BenchmarkFileSearch(b *testing.B) {
	root := benchTree(b)
	tl := NewSearch(Options{Roots: newRoots(b, root, nil, nil)})
	call := tool.Call{Name: "file_search", Arguments: []byte(`{"pattern":"needle_x42"}`), Cwd: root, Level: permission.Workspace}
	b.ResetTimer()
	for b.Loop() {
		res, err := tl.Run(b.Context(), call)
		if err != nil || res.IsError {
			b.Fatal(err, text(res))
		}
		if out := text(res); !strings.HasSuffix(out, "(50 matches in 50 files)") {
			b.Fatalf("unexpected result: %s", out)
		}
	}
}

// BenchmarkSearchVsGrep runs file_search and grep -rn by turns on the same
// tree, so that load from elsewhere on the machine falls on both alike,
// and reports the wall and CPU time of each and the ratio of wall times.
func BenchmarkSearchVsGrep(b *testing.B) {
	grep, err := exec.LookPath("grep")
	if err != nil {
		testenv.Skip(b, "grep is not installed")
	}
	root := benchTree(b)
	tl := NewSearch(Options{Roots: newRoots(b, root, nil, nil)})
	call := tool.Call{Name: "file_search", Arguments: []byte(`{"pattern":"needle_x42"}`), Cwd: root, Level: permission.Workspace}
	var searchWall, grepWall, searchCPU, grepCPU time.Duration
	b.ResetTimer()
	for b.Loop() {
		c0 := processCPU(b)
		t0 := time.Now()
		res, err := tl.Run(b.Context(), call)
		searchWall += time.Since(t0)
		searchCPU += processCPU(b) - c0
		if err != nil || !strings.HasSuffix(text(res), "(50 matches in 50 files)") {
			b.Fatal(err, text(res))
		}
		cmd := exec.Command(grep, "-rn", "needle_x42", root)
		t0 = time.Now()
		out, err := cmd.Output()
		grepWall += time.Since(t0)
		if err != nil || bytes.Count(out, []byte("\n")) != 50 {
			b.Fatal(err)
		}
		grepCPU += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	n := float64(b.N)
	b.ReportMetric(float64(searchWall.Milliseconds())/n, "search-ms/op")
	b.ReportMetric(float64(grepWall.Milliseconds())/n, "grep-ms/op")
	b.ReportMetric(float64(searchCPU.Milliseconds())/n, "search-cpu-ms/op")
	b.ReportMetric(float64(grepCPU.Milliseconds())/n, "grep-cpu-ms/op")
	b.ReportMetric(float64(searchWall)/float64(grepWall), "wall-ratio")
}

func BenchmarkGrep(b *testing.B) {
	grep, err := exec.LookPath("grep")
	if err != nil {
		testenv.Skip(b, "grep is not installed")
	}
	root := benchTree(b)
	b.ResetTimer()
	for b.Loop() {
		out, err := exec.Command(grep, "-rn", "needle_x42", root).Output()
		if err != nil {
			b.Fatal(err)
		}
		if n := bytes.Count(out, []byte("\n")); n != 50 {
			b.Fatalf("grep found %d", n)
		}
	}
}
