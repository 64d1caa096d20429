package doctor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/model"
)

// The table lists every row with its fix, and the verdict names each
// failure; nothing failing says so.
func TestRunVerdict(t *testing.T) {
	var b strings.Builder
	failed := Run(context.Background(), &b,
		ConfigCheck(Config{File: "/etc/meka.toml", Found: true, Profile: "main", Provider: "openai", Model: "m",
			BaseURL: "http://127.0.0.1:9/v1", BaseURLFrom: "config", KeyEnv: "K", KeyNeeded: true}),
		func(context.Context) []Result {
			return []Result{{Check: "database", Status: Fail, Detail: "locked", Fix: "close the other meka"}}
		},
	)
	out := b.String()
	if len(failed) != 2 || failed[0].Check != "api key" || failed[1].Check != "database" {
		t.Fatalf("failed %+v", failed)
	}
	for _, want := range []string{"config    ok      /etc/meka.toml", "profile   ok      main: openai, model m, http://127.0.0.1:9/v1 (config)",
		"api key   FAIL    $K is empty", "→ export K=... (or name another variable in profiles.main.api_key_env)",
		"database  FAIL    locked", "→ close the other meka", "2 checks failed: api key, database. Fix them and run meka doctor again."} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}

	b.Reset()
	if failed := Run(context.Background(), &b, ConfigCheck(Config{File: "/x", Err: errors.New("/x:3: profiles.a.modle: unknown key")})); len(failed) != 1 ||
		!strings.Contains(b.String(), "config  FAIL    /x:3: profiles.a.modle: unknown key") {
		t.Fatalf("config error: %+v\n%s", failed, b.String())
	}

	b.Reset()
	if failed := Run(context.Background(), &b, EndpointCheck(nil, model.Where{}, 0)); failed != nil || !strings.Contains(b.String(), "All checks passed") {
		t.Fatalf("nothing failing: %+v\n%s", failed, b.String())
	}
}

// The data directory is made and written; one that cannot be is a
// failure with what to do.
func TestDataCheck(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	rows := DataCheck(dir, func(context.Context) (string, error) { return "SQLite x: opened", nil })(context.Background())
	if rows[0].Status != Pass || rows[1].Status != Pass {
		t.Fatalf("%+v", rows)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	rows = DataCheck(filepath.Join(file, "data"), func(context.Context) (string, error) { return "", errors.New("no database") })(context.Background())
	if rows[0].Status != Fail || rows[0].Fix == "" || rows[1].Status != Fail || rows[1].Detail != "no database" {
		t.Fatalf("%+v", rows)
	}
}
