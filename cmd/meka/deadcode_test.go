package main

import (
	"bufio"
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDeadCodeElimination links meka and fails when a reflective method
// lookup (reflect.Value.MethodByName with a name not known at link time,
// as text/template's field evaluation does) is reachable from main: the
// linker then keeps every exported method of every reachable type, which
// once cost meka 11 MB.
func TestDeadCodeElimination(t *testing.T) {
	if testing.Short() {
		t.Skip("links the whole binary")
	}
	cmd := exec.Command("go", "build", "-ldflags=-dumpdep", "-o", filepath.Join(t.TempDir(), "meka"), ".")
	var deps bytes.Buffer
	cmd.Stderr = &deps
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build: %v\n%s", err, tail(deps.String()))
	}
	// -dumpdep prints "caller -> callee" for every edge the linker keeps,
	// marking a function that does a dynamic method lookup <ReflectMethod>.
	parent := map[string]string{}
	var marked []string
	sc := bufio.NewScanner(&deps)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		from, to, ok := strings.Cut(sc.Text(), " -> ")
		if !ok {
			continue
		}
		from, to = symbol(from), symbol(to)
		if _, seen := parent[to]; !seen {
			parent[to] = from
		}
		if strings.HasSuffix(sc.Text(), "<ReflectMethod>") {
			marked = append(marked, to)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, m := range marked {
		chain := []string{m}
		for p := parent[m]; p != "" && p != "_" && len(chain) < 40; p = parent[p] {
			chain = append(chain, p)
		}
		t.Errorf("dead-code elimination is off: %s is reachable:\n  %s", m, strings.Join(chain, "\n  <- "))
	}
}

func symbol(s string) string {
	if i := strings.Index(s, " <"); i >= 0 {
		return s[:i]
	}
	return s
}

func tail(s string) string {
	if len(s) > 4000 {
		return s[len(s)-4000:]
	}
	return s
}
