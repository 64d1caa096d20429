package release_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"meka.dev/meka/internal/testenv"
)

// buildah runs buildah on a store of the test's own (vfs: no kernel
// overlay needed; chroot isolation: no user namespaces), which it removes.
type buildah struct {
	t    *testing.T
	args []string
}

func newBuildah(t *testing.T) *buildah {
	t.Helper()
	if _, err := exec.LookPath("buildah"); err != nil {
		testenv.Skip(t, "no container runtime: buildah not found (.ci/run installs Debian's)")
	}
	if os.Geteuid() != 0 {
		testenv.Skip(t, "buildah with chroot isolation and no user namespace needs root")
	}
	dir := t.TempDir()
	b := &buildah{t: t, args: []string{"--root", filepath.Join(dir, "root"), "--runroot", filepath.Join(dir, "run"), "--storage-driver", "vfs"}}
	t.Cleanup(func() {
		// vfs layers are plain directories, some read-only: buildah
		// removes them.
		_ = exec.Command("buildah", append(b.args, "rm", "--all")...).Run()
		_ = exec.Command("buildah", append(b.args, "rmi", "--all", "--force")...).Run()
	})
	return b
}

func (b *buildah) run(args ...string) string {
	b.t.Helper()
	cmd := exec.Command("buildah", append(slices.Clone(b.args), args...)...)
	cmd.Env = append(os.Environ(), "BUILDAH_ISOLATION=chroot")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		b.t.Fatalf("buildah %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
	}
	return strings.TrimSpace(string(out))
}

// The Dockerfile builds an image of the release binary that runs as a
// user other than root, serves by default, keeps its data in a volume,
// and whose meka names its stamp. The base it takes CA certificates and
// the user database from is made here from this machine's own files, as
// no registry is reachable from a test.
func TestDockerImage(t *testing.T) {
	b := newBuildah(t)
	bin := releaseBuild(t)
	for _, f := range []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/passwd", "/etc/group"} {
		if _, err := os.Stat(f); err != nil {
			testenv.Skip(t, "no %s to make the base image from", f)
		}
	}
	empty := t.TempDir()
	c := b.run("from", "scratch")
	b.run("copy", c, "/etc/ssl/certs/ca-certificates.crt", "/etc/ssl/certs/ca-certificates.crt")
	b.run("copy", c, "/etc/passwd", "/etc/group", "/etc/")
	b.run("copy", c, empty, "/srv")
	b.run("commit", "--quiet", "--rm", c, "localhost/meka-test-base")

	ctx := t.TempDir()
	if err := os.Link(bin, filepath.Join(ctx, "meka")); err != nil {
		data, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ctx, "meka"), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dockerfile, err := filepath.Abs(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	b.run("bud", "--quiet", "--isolation", "chroot", "--pull-never", "--build-arg", "BASE=localhost/meka-test-base",
		"-f", dockerfile, "-t", "localhost/meka-test", ctx)

	var img struct {
		OCIv1 struct {
			Config struct {
				User       string
				Entrypoint []string
				Volumes    map[string]struct{}
				Env        []string
			}
		}
	}
	if err := json.Unmarshal([]byte(b.run("inspect", "--type", "image", "localhost/meka-test")), &img); err != nil {
		t.Fatal(err)
	}
	cfg := img.OCIv1.Config
	if cfg.User == "" || cfg.User == "root" || strings.HasPrefix(cfg.User, "0:") || cfg.User == "0" {
		t.Errorf("image user %q, want one other than root", cfg.User)
	}
	if !slices.Equal(cfg.Entrypoint, []string{"/usr/local/bin/meka", "serve"}) {
		t.Errorf("entrypoint %q, want meka serve", cfg.Entrypoint)
	}
	if _, ok := cfg.Volumes["/data"]; !ok || !slices.Contains(cfg.Env, "MEKA_DATA_DIR=/data") {
		t.Errorf("volumes %v, env %v: want the data directory /data a volume", cfg.Volumes, cfg.Env)
	}

	c = b.run("from", "localhost/meka-test")
	if got := b.run("run", c, "--", "/usr/local/bin/meka", "--version"); got != "meka "+stamp {
		t.Errorf("meka --version in the image = %q, want %q", got, "meka "+stamp)
	}
	// The image's user can write its data directory.
	if got := b.run("run", c, "--", "/usr/local/bin/meka", "sessions", "list"); strings.Contains(got, "permission denied") {
		t.Errorf("meka sessions list in the image: %q", got)
	}
}
