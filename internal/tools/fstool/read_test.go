package fstool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/model"
	"meka.dev/meka/tool"
)

func numbered(from, to int) string {
	var sb strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&sb, "line %d\n", i)
	}
	return sb.String()
}

func TestReadText(t *testing.T) {
	cwd := tempDir(t)
	writeFiles(t, cwd, map[string]string{
		"small.txt": "alpha\n\tbeta\r\ngamma",
		"big.txt":   numbered(1, 2500),
		"empty.txt": "",
	})
	h := newHarness(t, cwd, Options{})
	if got, want := text(h.ok("file_read", M{"path": "small.txt"})), "     1\talpha\n     2\t\tbeta\n     3\tgamma\n"; got != want {
		t.Fatalf("small:\n%q\nwant\n%q", got, want)
	}
	got := text(h.ok("file_read", M{"path": "big.txt"}))
	if !strings.HasPrefix(got, "     1\tline 1\n") || !strings.Contains(got, "  2000\tline 2000\n") || strings.Contains(got, "line 2001\n") {
		t.Fatalf("default limit: %s", got[len(got)-200:])
	}
	if !strings.HasSuffix(got, "(Showing lines 1-2000 of 2500. Continue with line=2001.)") {
		t.Fatalf("no continuation note: %s", got[len(got)-200:])
	}
	got = text(h.ok("file_read", M{"path": "big.txt", "line": 2001, "limit": 3}))
	if want := "  2001\tline 2001\n  2002\tline 2002\n  2003\tline 2003\n\n(Showing lines 2001-2003 of 2500. Continue with line=2004.)"; got != want {
		t.Fatalf("line/limit:\n%s", got)
	}
	got = text(h.ok("file_read", M{"path": "big.txt", "line": 2499}))
	if want := "  2499\tline 2499\n  2500\tline 2500\n"; got != want {
		t.Fatalf("tail: %q", got)
	}
	got = text(h.ok("file_read", M{"path": "big.txt", "pattern": `^line 24\d\d$`, "limit": 2}))
	if want := "  2400\tline 2400\n  2401\tline 2401\n\n(Showing 2 matching lines up to line 2401 of 2500; more may match after it: continue with line=2402.)"; got != want {
		t.Fatalf("pattern:\n%s", got)
	}
	if got := text(h.ok("file_read", M{"path": "big.txt", "pattern": "nope"})); !strings.Contains(got, "no line") {
		t.Fatalf("pattern without match: %s", got)
	}
	if got := text(h.ok("file_read", M{"path": "big.txt", "line": 3000})); !strings.Contains(got, "has 2500 lines") {
		t.Fatalf("past the end: %s", got)
	}
	if got := text(h.ok("file_read", M{"path": "empty.txt"})); !strings.Contains(got, "is empty") {
		t.Fatalf("empty: %s", got)
	}
	if msg := h.refused("file_read", M{"path": "missing.txt"}); !strings.Contains(msg, "does not exist") {
		t.Fatalf("missing: %s", msg)
	}
	if msg := h.refused("file_read", M{"path": "."}); !strings.Contains(msg, "directory") {
		t.Fatalf("directory: %s", msg)
	}
	if msg := h.refused("file_read", M{"path": "small.txt", "pattern": "("}); !strings.Contains(msg, "regular expression") {
		t.Fatalf("bad pattern: %s", msg)
	}
}

func TestReadLongLinesAndBudget(t *testing.T) {
	cwd := tempDir(t)
	long := strings.Repeat("é", 3000) // 6000 bytes
	var many strings.Builder
	for range 200 {
		many.WriteString(strings.Repeat("x", 1500) + "\n")
	}
	writeFiles(t, cwd, map[string]string{"long.txt": long + "\n", "many.txt": many.String()})
	h := newHarness(t, cwd, Options{})
	got := text(h.ok("file_read", M{"path": "long.txt"}))
	if !strings.Contains(got, "[line cut at 2000 of 6000 bytes]") || !strings.HasPrefix(got, "     1\t"+strings.Repeat("é", 1000)+"…") {
		t.Fatalf("long line: %.80s…", got)
	}
	got = text(h.ok("file_read", M{"path": "many.txt"}))
	if len(got) > readBudget+200 || !strings.Contains(got, "Continue with line=") {
		t.Fatalf("budget not applied: %d bytes, tail %q", len(got), got[len(got)-100:])
	}
}

func pngBytes(t testing.TB) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	img.Set(1, 1, color.RGBA{255, 0, 0, 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestReadImage(t *testing.T) {
	cwd := tempDir(t)
	pngData := pngBytes(t)
	webp := append([]byte("RIFF\x24\x00\x00\x00WEBPVP8 "), make([]byte, 24)...)
	big := append(pngBytes(t), make([]byte, 2048)...)
	for name, data := range map[string][]byte{"pic.png": pngData, "pic.webp": webp, "big.png": big, "noext": pngData} {
		if err := os.WriteFile(filepath.Join(cwd, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	vision := false
	h := newHarness(t, cwd, Options{Vision: func() bool { return vision }, MaxImageBytes: 1024})

	msg := h.refused("file_read", M{"path": "pic.png"})
	if !strings.Contains(msg, "image") || !strings.Contains(msg, "cannot see images") {
		t.Fatalf("without vision: %s", msg)
	}
	vision = true
	for name, want := range map[string]string{"pic.png": "image/png", "noext": "image/png", "pic.webp": "image/webp"} {
		r := h.ok("file_read", M{"path": name})
		var img *model.Image
		for _, p := range r.Content {
			if i, ok := p.(model.Image); ok {
				img = &i
			}
		}
		if img == nil || img.MediaType != want {
			t.Fatalf("%s: want an %s part, got %#v", name, want, r.Content)
		}
		disk, _ := os.ReadFile(filepath.Join(cwd, name))
		if !bytes.Equal(img.Data, disk) || img.Name != name {
			t.Fatalf("%s: image part differs from the file", name)
		}
	}
	if msg := h.refused("file_read", M{"path": "big.png"}); !strings.Contains(msg, "images are shown up to 1.0 KiB") {
		t.Fatalf("oversized: %s", msg)
	}
}

func TestReadBinaryRefused(t *testing.T) {
	cwd := tempDir(t)
	bin := append([]byte("\x7fELF\x02\x01\x01"), make([]byte, 3000)...)
	if err := os.WriteFile(filepath.Join(cwd, "prog"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cwd, "doc.pdf"), []byte("%PDF-1.4\n\x00\x01binary"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, cwd, Options{Vision: func() bool { return true }})
	msg := h.refused("file_read", M{"path": "prog"})
	if !strings.Contains(msg, "binary") || !strings.Contains(msg, "application/octet-stream") || !strings.Contains(msg, "2.9 KiB") {
		t.Fatalf("binary: %s", msg)
	}
	if msg := h.refused("file_read", M{"path": "doc.pdf"}); !strings.Contains(msg, "application/pdf") {
		t.Fatalf("pdf: %s", msg)
	}
}

func TestIsBinary(t *testing.T) {
	utf := strings.Repeat("a", sniffBytes-1) + "é" + "tail" // a rune cut by the sample
	for _, c := range []struct {
		in   string
		want bool
	}{
		{"plain text\n", false},
		{"naïve café ✓\n", false},
		{utf, false},
		{"latin-1 caf\xe9\n", false},
		{"nul\x00byte", true},
		{"\x01\x02\x03\xff\xfe\x80", true},
	} {
		if got := isBinary([]byte(c.in)); got != c.want {
			t.Errorf("isBinary(%.20q) = %v", c.in, got)
		}
	}
}

func TestTitlesAndLocations(t *testing.T) {
	tools := toolset(Options{})
	cases := []struct {
		name, args, title string
		locs              []tool.Location
	}{
		{"file_read", `{"path":"src/a.go","line":40}`, "file_read src/a.go", []tool.Location{{Path: "/w/src/a.go", Line: 40}}},
		{"file_read", `{"path":"/etc/hosts"}`, "file_read /etc/hosts", []tool.Location{{Path: "/etc/hosts", Line: 1}}},
		{"file_write", `{"path":"../x.txt","content":"a"}`, "file_write ../x.txt", []tool.Location{{Path: "/x.txt"}}},
		{"file_edit", `{"path":"b.go","old":"a","new":"b"}`, "file_edit b.go", []tool.Location{{Path: "/w/b.go"}}},
		{"file_find", `{"pattern":"**/*.go"}`, "file_find **/*.go", nil},
		{"file_search", `{"pattern":"func main","path":"cmd"}`, "file_search func main", []tool.Location{{Path: "/w/cmd"}}},
	}
	for _, c := range cases {
		tl := tools[c.name]
		if got := tool.Title(tl, json.RawMessage(c.args)); got != c.title {
			t.Errorf("%s title = %q, want %q", c.name, got, c.title)
		}
		got := tool.Locations(tl, json.RawMessage(c.args), "/w")
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(c.locs)
		if string(g) != string(w) {
			t.Errorf("%s %s locations = %s, want %s", c.name, c.args, g, w)
		}
	}
}

func TestSpecs(t *testing.T) {
	want := map[string]struct {
		level    string
		kind     tool.Kind
		parallel bool
	}{
		"file_read":   {"read", tool.KindRead, true},
		"file_write":  {"workspace", tool.KindEdit, false},
		"file_edit":   {"workspace", tool.KindEdit, false},
		"file_find":   {"read", tool.KindSearch, true},
		"file_search": {"read", tool.KindSearch, true},
	}
	r := tool.NewRegistry()
	if err := r.Add(New(Options{})...); err != nil {
		t.Fatal(err)
	}
	for _, tl := range r.Tools() {
		s := tl.Spec()
		w, ok := want[s.Name]
		if !ok {
			t.Fatalf("unexpected tool %s", s.Name)
		}
		if s.Level.String() != w.level || s.Kind != w.kind || s.ParallelSafe != w.parallel || s.Bookkeeping {
			t.Errorf("%s spec = %v %v %v, want %+v", s.Name, s.Level, s.Kind, s.ParallelSafe, w)
		}
		delete(want, s.Name)
	}
	if len(want) > 0 {
		t.Fatalf("missing tools: %v", want)
	}
}
