package release_test

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/template"

	"go.yaml.in/yaml/v3"
)

// root is the repository's root, where the release files are.
const root = "../.."

// goreleaser is the part of .goreleaser.yaml the tests read.
type goreleaser struct {
	ProjectName string `yaml:"project_name"`
	Builds      []struct {
		ID      string   `yaml:"id"`
		Main    string   `yaml:"main"`
		Binary  string   `yaml:"binary"`
		Env     []string `yaml:"env"`
		GOOS    []string `yaml:"goos"`
		GOARCH  []string `yaml:"goarch"`
		Flags   []string `yaml:"flags"`
		Ldflags []string `yaml:"ldflags"`
	} `yaml:"builds"`
	Archives []struct {
		NameTemplate    string   `yaml:"name_template"`
		Formats         []string `yaml:"formats"`
		FormatOverrides []struct {
			GOOS    string   `yaml:"goos"`
			Formats []string `yaml:"formats"`
		} `yaml:"format_overrides"`
	} `yaml:"archives"`
	Release struct {
		GitHub struct {
			Owner string `yaml:"owner"`
			Name  string `yaml:"name"`
		} `yaml:"github"`
	} `yaml:"release"`
	SBOMs []struct {
		Artifacts string   `yaml:"artifacts"`
		Cmd       string   `yaml:"cmd"`
		Args      []string `yaml:"args"`
	} `yaml:"sboms"`
}

func readGoreleaser(t *testing.T) goreleaser {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var g goreleaser
	if err := yaml.Unmarshal(data, &g); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	if len(g.Builds) != 1 || len(g.Archives) != 1 {
		t.Fatalf(".goreleaser.yaml: %d builds and %d archives, want one of each", len(g.Builds), len(g.Archives))
	}
	return g
}

// render applies one of the file's templates with the fields it uses;
// goreleaser's own functions beyond text/template's are not used there.
func render(t *testing.T, text string, data map[string]string) string {
	t.Helper()
	tm, err := template.New("").Option("missingkey=error").Parse(text)
	if err != nil {
		t.Fatalf("template %q: %v", text, err)
	}
	var b strings.Builder
	if err := tm.Execute(&b, data); err != nil {
		t.Fatalf("template %q: %v", text, err)
	}
	return strings.TrimSpace(b.String())
}

// platform is the ACP registry's name of a Go target.
func platform(goos, goarch string) string {
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[goarch]
	return goos + "-" + arch
}

// archive is what the release names a target's archive, with its
// extension.
func (g goreleaser) archive(t *testing.T, goos, goarch string) string {
	a := g.Archives[0]
	name := render(t, a.NameTemplate, map[string]string{"ProjectName": g.ProjectName, "Os": goos, "Arch": goarch})
	formats := a.Formats
	for _, o := range a.FormatOverrides {
		if o.GOOS == goos {
			formats = o.Formats
		}
	}
	if len(formats) != 1 {
		t.Fatalf("%s/%s: archive formats %v, want one", goos, goarch, formats)
	}
	return name + "." + formats[0]
}

// The six targets, static and stripped, as the issue and action.yml need.
func TestGoreleaserTargets(t *testing.T) {
	g := readGoreleaser(t)
	b := g.Builds[0]
	var targets []string
	for _, goos := range b.GOOS {
		for _, goarch := range b.GOARCH {
			targets = append(targets, goos+"/"+goarch)
		}
	}
	slices.Sort(targets)
	want := []string{"darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64", "windows/amd64", "windows/arm64"}
	if !slices.Equal(targets, want) {
		t.Errorf("targets = %v, want %v", targets, want)
	}
	if !slices.Contains(b.Env, "CGO_ENABLED=0") || !slices.Contains(b.Flags, "-trimpath") {
		t.Errorf("env %v, flags %v: want CGO_ENABLED=0 and -trimpath", b.Env, b.Flags)
	}
	ld := strings.Join(b.Ldflags, " ")
	if !strings.Contains(ld, "-s -w") || !strings.Contains(ld, "meka.dev/meka/internal/cli.Version={{ .Version }}") {
		t.Errorf("ldflags %q: want -s -w and the version stamped into internal/cli.Version", ld)
	}
	// action.yml downloads this name for a Linux runner.
	if got := g.archive(t, "linux", "amd64"); got != "meka-linux-x86_64.tar.gz" {
		t.Errorf("linux/amd64 archive = %q, want action.yml's meka-linux-x86_64.tar.gz", got)
	}
	if len(g.SBOMs) != 1 || g.SBOMs[0].Artifacts != "binary" || !slices.Contains(g.SBOMs[0].Args, "meka.dev/meka/cmd/meka-sbom") {
		t.Errorf("sboms = %+v, want cmd/meka-sbom run on each binary", g.SBOMs)
	}
}

// manifest is the part of agent.json and harbor-agent.json checked.
type manifest struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Version      string `json:"version"`
	Description  string `json:"description"`
	License      string `json:"license"`
	LicenseURL   string `json:"license_url"`
	Protocol     string `json:"protocol"`
	Distribution struct {
		Binary map[string]struct {
			Archive string            `json:"archive"`
			Cmd     string            `json:"cmd"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"binary"`
	} `json:"distribution"`
	Source *struct {
		Type     string `json:"type"`
		Repo     string `json:"repo"`
		Path     string `json:"path"`
		Manifest string `json:"manifest"`
	} `json:"source"`
	Secrets []string `json:"secrets"`
}

func readManifest(t *testing.T, name string) manifest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}

var (
	registryID = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	semver     = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)
)

// Both manifests have the fields the registry and Harbor read, and name
// exactly the release's targets with the archives it makes, for their own
// version's tag.
func TestManifestsMatchTheRelease(t *testing.T) {
	g := readGoreleaser(t)
	b := g.Builds[0]
	agent := readManifest(t, "agent.json")
	harbor := readManifest(t, "harbor-agent.json")
	for _, c := range []struct {
		file string
		m    manifest
	}{{"agent.json", agent}, {"harbor-agent.json", harbor}} {
		m := c.m
		if !registryID.MatchString(m.ID) || m.Name == "" || m.Description == "" {
			t.Errorf("%s: id %q, name %q, description %q: want all, the id as the registry's pattern", c.file, m.ID, m.Name, m.Description)
		}
		if !semver.MatchString(m.Version) {
			t.Errorf("%s: version %q, want X.Y.Z", c.file, m.Version)
		}
		var platforms []string
		for p := range m.Distribution.Binary {
			platforms = append(platforms, p)
		}
		var want []string
		for _, goos := range b.GOOS {
			for _, goarch := range b.GOARCH {
				p := platform(goos, goarch)
				want = append(want, p)
				d, ok := m.Distribution.Binary[p]
				if !ok {
					continue
				}
				url := fmt.Sprintf("https://github.com/%s/%s/releases/download/v%s/%s", g.Release.GitHub.Owner, g.Release.GitHub.Name, m.Version, g.archive(t, goos, goarch))
				if d.Archive != url {
					t.Errorf("%s: %s archive = %q, want %q", c.file, p, d.Archive, url)
				}
				cmd := "./" + b.Binary
				if goos == "windows" {
					cmd += ".exe"
				}
				if d.Cmd != cmd || !slices.Equal(d.Args, []string{"acp"}) {
					t.Errorf("%s: %s starts %q %q, want %q [acp]", c.file, p, d.Cmd, d.Args, cmd)
				}
			}
		}
		slices.Sort(platforms)
		slices.Sort(want)
		if !slices.Equal(platforms, want) {
			t.Errorf("%s: platforms %v, want .goreleaser.yaml's %v", c.file, platforms, want)
		}
	}
	if agent.License == "" || !strings.HasPrefix(agent.LicenseURL, "https://") {
		t.Errorf("agent.json: license %q, license_url %q", agent.License, agent.LicenseURL)
	}
	if harbor.Version != agent.Version || harbor.ID != agent.ID {
		t.Errorf("harbor-agent.json is %s %s, agent.json %s %s", harbor.ID, harbor.Version, agent.ID, agent.Version)
	}
	if repo := g.Release.GitHub.Owner + "/" + g.Release.GitHub.Name; harbor.Protocol != "acp" || harbor.Source == nil || harbor.Source.Type != "github" ||
		harbor.Source.Repo != repo || harbor.Source.Manifest != "harbor-agent.json" {
		t.Errorf("harbor-agent.json: protocol %q, source %+v", harbor.Protocol, harbor.Source)
	}
	for _, s := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY"} {
		if !slices.Contains(harbor.Secrets, s) {
			t.Errorf("harbor-agent.json: secrets %v lack %s", harbor.Secrets, s)
		}
	}
}

// stamp is the version the tests stamp into their release build.
const stamp = "9.8.7-test"

var (
	buildOnce sync.Once
	built     string
	buildErr  error
)

// releaseBuild builds meka for this machine as .goreleaser.yaml does (its
// env, flags and ldflags, the version stamp), once per run.
func releaseBuild(t *testing.T) string {
	t.Helper()
	g := readGoreleaser(t)
	buildOnce.Do(func() {
		b := g.Builds[0]
		dir, err := os.MkdirTemp("", "meka-release-")
		if err != nil {
			buildErr = err
			return
		}
		built = filepath.Join(dir, b.Binary)
		args := append([]string{"build"}, b.Flags...)
		var ld []string
		for _, l := range b.Ldflags {
			ld = append(ld, render(t, l, map[string]string{"Version": stamp}))
		}
		args = append(args, "-ldflags="+strings.Join(ld, " "), "-o", built, b.Main)
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), b.Env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return built
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built != "" {
		os.RemoveAll(filepath.Dir(built))
	}
	os.Exit(code)
}

// A build with the release's flags names the stamp in --version and in
// ACP's initialize (agentInfo.version, which agent.json's version must
// equal), and is static, trimmed and stripped.
func TestStampedVersion(t *testing.T) {
	bin := releaseBuild(t)
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("meka --version: %v\n%s", err, out)
	}
	if got, want := string(out), "meka "+stamp+"\n"; got != want {
		t.Errorf("meka --version = %q, want %q", got, want)
	}

	cmd := exec.Command(bin, "acp")
	home := t.TempDir()
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "OPENAI_API_KEY=unused",
		"MEKA_DATA_DIR=" + filepath.Join(home, "data"), "XDG_CONFIG_HOME=" + filepath.Join(home, "config")}
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n")
	// Its input ends after initialize, before the database has opened:
	// how it exits then is not what is tested here.
	out, _ = cmd.Output()
	line, _, _ := bytes.Cut(out, []byte("\n"))
	var resp struct {
		Result struct {
			AgentInfo struct{ Name, Version string } `json:"agentInfo"`
		} `json:"result"`
	}
	if err := json.Unmarshal(line, &resp); err != nil {
		t.Fatalf("initialize answer %q: %v", line, err)
	}
	if resp.Result.AgentInfo.Version != stamp {
		t.Errorf("agentInfo = %+v, want version %q", resp.Result.AgentInfo, stamp)
	}

	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	// -trimpath keeps -ldflags out of the build info: -s shows as no
	// symbol table.
	if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" {
		t.Errorf("build settings %v: want CGO_ENABLED=0 and -trimpath", settings)
	}
	if f, err := elf.Open(bin); err == nil {
		defer f.Close()
		if f.Section(".symtab") != nil || f.Section(".debug_info") != nil {
			t.Error("the release build has a symbol table or DWARF: not stripped (-s -w)")
		}
	} else if runtime.GOOS == "linux" {
		t.Fatal(err)
	}
}
