package skills_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"meka.dev/meka/internal/skills"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestParse(t *testing.T) {
	s, err := skills.Parse("pdf-tools", []byte("---\nname: pdf-tools\ndescription: >\n  Extract text\n  from PDFs.\nallowed-tools: file_read shell\ndisable-model-invocation: true\n---\n\n# Steps\nDo it.\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "pdf-tools" || s.Description != "Extract text from PDFs." || s.Body != "# Steps\nDo it." ||
		strings.Join(s.AllowedTools, ",") != "file_read,shell" || !s.DisableModelInvocation {
		t.Fatalf("%+v", s)
	}
	for _, tc := range []struct{ name, dir, text, want string }{
		{"no front matter", "a", "# just markdown\n", "must start with"},
		{"unclosed", "a", "---\nname: a\n", "no closing"},
		{"bad yaml", "a", "---\nname: [a\n---\n", "bad front matter"},
		{"upper case", "Abc", "---\nname: Abc\ndescription: d\n---\n", "lowercase"},
		{"double hyphen", "a--b", "---\nname: a--b\ndescription: d\n---\n", "lowercase"},
		{"too long", strings.Repeat("a", 65), "---\nname: " + strings.Repeat("a", 65) + "\ndescription: d\n---\n", "lowercase"},
		{"other directory", "b", "---\nname: a\ndescription: d\n---\n", `differs from its directory "b"`},
		{"no description", "a", "---\nname: a\n---\nbody\n", "no description"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := skills.Parse(tc.dir, []byte(tc.text))
			if !errors.Is(err, skills.ErrFrontMatter) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

func TestDiscoverPrecedence(t *testing.T) {
	dir := t.TempDir()
	project, user := filepath.Join(dir, "project"), filepath.Join(dir, "user")
	write(t, filepath.Join(project, "deploy", "SKILL.md"), "---\nname: deploy\ndescription: the project's\n---\nP\n")
	write(t, filepath.Join(user, "deploy", "SKILL.md"), "---\nname: deploy\ndescription: the user's\n---\nU\n")
	write(t, filepath.Join(user, "lint", "SKILL.md"), "---\nname: lint\ndescription: lints\n---\nL\n")
	write(t, filepath.Join(user, "lint", "scripts", "run.sh"), "echo\n")
	write(t, filepath.Join(user, "broken", "SKILL.md"), "---\nname: nope\ndescription: x\n---\n")
	write(t, filepath.Join(user, "notes", "README.md"), "not a skill\n")
	list, problems := skills.Discover([]skills.Location{{Dir: project, Source: "project"}, {Dir: user, Source: "user"},
		{Dir: filepath.Join(dir, "missing"), Source: "meka"}})
	if len(list) != 2 || list[0].Name != "deploy" || list[0].Body != "P" || list[0].Source != "project" || list[1].Name != "lint" {
		t.Fatalf("%+v", list)
	}
	if len(problems) != 1 || problems[0].Path != filepath.Join(user, "broken", "SKILL.md") {
		t.Fatalf("problems %v", problems)
	}
	if files := list[1].Files(0); len(files) != 1 || files[0] != "scripts/run.sh" {
		t.Fatalf("files %v", files)
	}
}

func TestRenderRoundTrip(t *testing.T) {
	b := skills.Render("my-skill", "Says: \"hi\" — and more", "Body here.\n")
	s, err := skills.Parse("my-skill", b)
	if err != nil || s.Description != "Says: \"hi\" — and more" || s.Body != "Body here." {
		t.Fatalf("%+v %v\n%s", s, err, b)
	}
}

func TestSplitFrontMatter(t *testing.T) {
	for _, tc := range []struct {
		in, head, body string
		ok             bool
	}{
		{"\ufeff---\r\nname: a\r\n---\r\nbody\r\n", "name: a", "body\n", true},
		{"---\n---\nbody\n---\nmore\n", "", "body\n---\nmore\n", true},
		{"---\nname: a\n---", "name: a", "", true},
		{"---\nname: a\n", "", "---\nname: a\n", false},
		{"# no head\r\n", "", "# no head\n", false},
	} {
		head, body, ok := skills.SplitFrontMatter([]byte(tc.in))
		if string(head) != tc.head || string(body) != tc.body || ok != tc.ok {
			t.Errorf("SplitFrontMatter(%q) = %q, %q, %v; want %q, %q, %v", tc.in, head, body, ok, tc.head, tc.body, tc.ok)
		}
	}
}

// nameSyntax is the name rule of the Agent Skills format as a regular
// expression; ValidName checks it by hand, so that no process compiles it
// at start-up.
var nameSyntax = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

var nameCases = []string{"", "a", "pdf", "pdf-tools", "a-b-c", "x1-2y", "-a", "a-", "a--b", "A", "a_b", "a b", "é", "a.b",
	strings.Repeat("a", 64), strings.Repeat("a", 65), strings.Repeat("a-", 32) + "a"}

func TestValidNameIsTheFormatsRule(t *testing.T) {
	for _, s := range nameCases {
		if got, want := skills.ValidName(s), len(s) <= skills.MaxNameLen && nameSyntax.MatchString(s); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", s, got, want)
		}
	}
}

func FuzzValidName(f *testing.F) {
	for _, s := range nameCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := skills.ValidName(s), len(s) <= skills.MaxNameLen && nameSyntax.MatchString(s); got != want {
			t.Fatalf("ValidName(%q) = %v, want %v", s, got, want)
		}
	})
}
