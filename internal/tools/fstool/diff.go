package fstool

import (
	"fmt"
	"strings"
)

// diffContext is how many unchanged lines surround each hunk.
const diffContext = 3

// maxEditDistance bounds Myers' search; past it the differing middle of
// the two texts is shown as one replacement, which is still a correct
// diff, and the trace's memory stays small.
const maxEditDistance = 2000

// UnifiedDiff returns the unified diff turning old into new, with three
// lines of context and the headers "--- oldName" and "+++ newName". It is
// empty when the texts are equal. A last line without a newline is marked
// as diff(1) marks it.
func UnifiedDiff(oldName, newName, old, new string) string {
	if old == new {
		return ""
	}
	a, b := splitLines(old), splitLines(new)
	ops := diffLines(a, b)
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n", oldName, newName)
	for i := 0; i < len(ops); {
		for i < len(ops) && ops[i].kind == opEqual {
			i++
		}
		if i == len(ops) {
			break
		}
		start := max(i-diffContext, 0)
		last := i
		for j := i; j < len(ops); j++ {
			if ops[j].kind != opEqual {
				last = j
			} else if j-last > 2*diffContext {
				break
			}
		}
		end := min(last+diffContext+1, len(ops))
		writeHunk(&sb, a, b, ops[start:end])
		i = end
	}
	return sb.String()
}

// DiffStat counts the lines a unified diff adds and removes.
func DiffStat(diff string) (added, removed int) {
	for line := range strings.Lines(diff) {
		switch {
		case strings.HasPrefix(line, "+++ "), strings.HasPrefix(line, "--- "):
		case strings.HasPrefix(line, "+"):
			added++
		case strings.HasPrefix(line, "-"):
			removed++
		}
	}
	return added, removed
}

type opKind byte

const (
	opEqual opKind = iota
	opDelete
	opInsert
)

// op is one step of an edit script; a and b are the cursors into the old
// and new lines before the step.
type op struct {
	kind opKind
	a, b int
}

func writeHunk(sb *strings.Builder, a, b []string, ops []op) {
	var na, nb int
	for _, o := range ops {
		switch o.kind {
		case opEqual:
			na++
			nb++
		case opDelete:
			na++
		case opInsert:
			nb++
		}
	}
	fmt.Fprintf(sb, "@@ -%s +%s @@\n", hunkRange(ops[0].a, na), hunkRange(ops[0].b, nb))
	for _, o := range ops {
		switch o.kind {
		case opEqual:
			writeLine(sb, ' ', a[o.a])
		case opDelete:
			writeLine(sb, '-', a[o.a])
		case opInsert:
			writeLine(sb, '+', b[o.b])
		}
	}
}

// hunkRange formats a hunk's range as diff(1) does: an empty range names
// the line before it.
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

func writeLine(sb *strings.Builder, prefix byte, line string) {
	sb.WriteByte(prefix)
	sb.WriteString(line)
	if !strings.HasSuffix(line, "\n") {
		sb.WriteString("\n\\ No newline at end of file\n")
	}
}

// splitLines splits s after each newline; a last line without one is kept.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := make([]string, 0, strings.Count(s, "\n")+1)
	for l := range strings.Lines(s) {
		lines = append(lines, l)
	}
	return lines
}

// diffLines returns an edit script from a to b covering every line of
// both: the common prefix and suffix, and Myers' shortest script between.
func diffLines(a, b []string) []op {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ops := make([]op, 0, len(a)+len(b))
	for i := range pre {
		ops = append(ops, op{opEqual, i, i})
	}
	// Compare lines as small integers.
	ids := make(map[string]int32)
	intern := func(ls []string) []int32 {
		out := make([]int32, len(ls))
		for i, l := range ls {
			id, ok := ids[l]
			if !ok {
				id = int32(len(ids))
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	ma, mb := intern(a[pre:len(a)-suf]), intern(b[pre:len(b)-suf])
	for _, o := range myers(ma, mb) {
		ops = append(ops, op{o.kind, o.a + pre, o.b + pre})
	}
	for i := range suf {
		ops = append(ops, op{opEqual, len(a) - suf + i, len(b) - suf + i})
	}
	return ops
}

// myers is Myers' O(ND) greedy diff, keeping the frontier of every step
// to walk back the path. Past maxEditDistance it gives up and replaces a
// with b wholesale.
func myers(a, b []int32) []op {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return replaceAll(n, m)
	}
	dmax := min(n+m, maxEditDistance)
	off := dmax + 1
	v := make([]int32, 2*dmax+3)
	var trace [][]int32
	found := -1
	for d := 0; d <= dmax && found < 0; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = int(v[off+k+1])
			} else {
				x = int(v[off+k-1]) + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = int32(x)
			if x >= n && y >= m {
				found = d
			}
		}
		snap := make([]int32, 2*d+1)
		copy(snap, v[off-d:off+d+1])
		trace = append(trace, snap)
	}
	if found < 0 {
		return replaceAll(n, m)
	}
	get := func(d, k int) int { return int(trace[d][k+d]) }
	var rev []op
	x, y := n, m
	for d := found; d > 0; d-- {
		k := x - y
		var pk int
		if k == -d || (k != d && get(d-1, k-1) < get(d-1, k+1)) {
			pk = k + 1 // came down: an insertion
		} else {
			pk = k - 1 // came right: a deletion
		}
		px := get(d-1, pk)
		// The move lands on x == sx; a snake of equal lines follows.
		sx := px + 1
		if pk == k+1 {
			sx = px
		}
		for x > sx {
			x--
			y--
			rev = append(rev, op{opEqual, x, y})
		}
		if pk == k+1 {
			y--
			rev = append(rev, op{opInsert, x, y})
		} else {
			x--
			rev = append(rev, op{opDelete, x, y})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, op{opEqual, x, y})
	}
	out := make([]op, len(rev))
	for i, o := range rev {
		out[len(rev)-1-i] = o
	}
	return out
}

func replaceAll(n, m int) []op {
	ops := make([]op, 0, n+m)
	for i := range n {
		ops = append(ops, op{opDelete, i, 0})
	}
	for j := range m {
		ops = append(ops, op{opInsert, n, j})
	}
	return ops
}
