package web_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"errors"
	"io/fs"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/internal/httpapi/web"
)

// The budget: all the app's assets together, gzipped.
const budget = 150 << 10

func TestAssetsWithinBudget(t *testing.T) {
	var total int
	err := fs.WalkDir(web.Assets(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(web.Assets(), path)
		if err != nil {
			return err
		}
		var z bytes.Buffer
		w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
		w.Write(b)
		w.Close()
		total += z.Len()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if total == 0 || total > budget {
		t.Fatalf("assets are %d bytes gzipped, budget %d", total, budget)
	}
	t.Logf("assets: %d bytes gzipped", total)
}

// The app renders what the model and tools say as text and fetches
// nothing from elsewhere; these are the ways that would break.
func TestAssetsHoldNoHTMLSinksOrExternalFetches(t *testing.T) {
	sinks := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setAttribute\("on|javascript:|https?://`)
	err := fs.WalkDir(web.Assets(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := fs.ReadFile(web.Assets(), path)
		if strings.HasSuffix(path, ".js") {
			if m := sinks.Find(b); m != nil {
				t.Errorf("%s uses %q", path, m)
			}
		}
		if strings.HasSuffix(path, ".html") {
			s := string(b)
			if regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]|<style|\sstyle=|\son[a-z]+=`).MatchString(s) {
				t.Errorf("%s has inline script or style", path)
			}
			if strings.Contains(s, "http://") || strings.Contains(s, "https://") {
				t.Errorf("%s refers to another site", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// early.js starts the app once its first screen is painted, asking for
// every module at once: its list names each one (a module missing from it
// is read only when an import finds it, after the others).
func TestEarlyScriptPreloadsEveryModule(t *testing.T) {
	early, err := fs.ReadFile(web.Assets(), "app/early.js")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`const appModules = \[([^\]]*)\]`).FindSubmatch(early)
	if m == nil {
		t.Fatal("early.js has no appModules list")
	}
	var listed []string
	for _, q := range regexp.MustCompile(`"([^"]+)"`).FindAllSubmatch(m[1], -1) {
		listed = append(listed, string(q[1]))
	}
	var modules []string
	names, _ := fs.Glob(web.Assets(), "app/*.js")
	for _, name := range names {
		if name != "app/early.js" {
			modules = append(modules, strings.TrimPrefix(name, "app/"))
		}
	}
	slices.Sort(listed)
	if !slices.Equal(listed, modules) {
		t.Fatalf("early.js preloads %v, the app's modules are %v", listed, modules)
	}
}

func TestLoginCodeWorksOnceBeforeItExpires(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := web.NewLogins(web.LoginOptions{Now: func() time.Time { return now }, CodeTTL: time.Minute, SessionTTL: time.Hour})
	code, exp, err := l.NewCode()
	if err != nil || !exp.Equal(now.Add(time.Minute)) {
		t.Fatalf("NewCode: %v %v", exp, err)
	}
	cookie, sexp, err := l.Exchange(ctx, code)
	if err != nil || !sexp.Equal(now.Add(time.Hour)) || !l.Valid(ctx, cookie) {
		t.Fatalf("Exchange: %q %v %v", cookie, sexp, err)
	}
	if _, _, err := l.Exchange(ctx, code); !errors.Is(err, web.ErrCodeRefused) {
		t.Fatalf("second exchange: %v", err)
	}
	late, _, _ := l.NewCode()
	now = now.Add(time.Minute)
	if _, _, err := l.Exchange(ctx, late); !errors.Is(err, web.ErrCodeRefused) {
		t.Fatalf("expired code: %v", err)
	}
	if !l.Valid(ctx, cookie) || l.Valid(ctx, "") || l.Valid(ctx, "guess") {
		t.Fatal("session validity")
	}
	now = now.Add(time.Hour)
	if l.Valid(ctx, cookie) {
		t.Fatal("an expired session is valid")
	}
	c2, _, _ := l.NewCode()
	v, _, _ := l.Exchange(ctx, c2)
	l.Revoke(ctx, v)
	if l.Valid(ctx, v) {
		t.Fatal("a revoked session is valid")
	}
}

func TestCookieAttributes(t *testing.T) {
	exp := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := web.Cookie("v", exp, true)
	if !c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || !c.Expires.Equal(exp) {
		t.Fatalf("%+v", c)
	}
	if web.Cookie("v", exp, false).Secure {
		t.Fatal("Secure without TLS")
	}
}

// loginStore is a LoginStore in a map, counting prunes.
type loginStore struct {
	m      map[string]time.Time
	prunes int
}

func (s *loginStore) SaveLogin(_ context.Context, h []byte, exp time.Time) error {
	s.m[string(h)] = exp
	return nil
}
func (s *loginStore) LoginExpiry(_ context.Context, h []byte) (time.Time, bool, error) {
	exp, ok := s.m[string(h)]
	return exp, ok, nil
}
func (s *loginStore) DeleteLogin(_ context.Context, h []byte) error {
	delete(s.m, string(h))
	return nil
}
func (s *loginStore) PruneLogins(_ context.Context, now time.Time) (int64, error) {
	s.prunes++
	var n int64
	for h, exp := range s.m {
		if !now.Before(exp) {
			delete(s.m, h)
			n++
		}
	}
	return n, nil
}

// A session is written through to the store as its hash, and a second
// Logins on the same store (a restarted server) accepts it until it
// expires; a revoked one it refuses; logins prune the store hourly.
func TestLoginsPersistHashes(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	store := &loginStore{m: map[string]time.Time{}}
	first := web.NewLogins(web.LoginOptions{Now: clock, SessionTTL: time.Hour, Store: store})
	exchange := func(l *web.Logins) string {
		t.Helper()
		code, _, _ := l.NewCode()
		v, _, err := l.Exchange(ctx, code)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	kept, revoked := exchange(first), exchange(first)
	for h := range store.m {
		if h == kept || h == revoked {
			t.Fatal("the store holds a cookie, not its hash")
		}
	}
	if err := first.Revoke(ctx, revoked); err != nil {
		t.Fatal(err)
	}
	second := web.NewLogins(web.LoginOptions{Now: clock, SessionTTL: time.Hour, Store: store})
	if !second.Valid(ctx, kept) || second.Valid(ctx, revoked) || second.Valid(ctx, "guess") {
		t.Fatal("validity after a restart")
	}
	if store.prunes != 1 {
		t.Fatalf("%d prunes within the hour, want 1", store.prunes)
	}
	now = now.Add(time.Hour)
	if second.Valid(ctx, kept) {
		t.Fatal("an expired session is valid")
	}
	third := web.NewLogins(web.LoginOptions{Now: clock, SessionTTL: time.Hour, Store: store})
	exchange(third)
	if _, ok := store.m[string(sha256Sum(kept))]; ok || store.prunes != 2 {
		t.Fatalf("the expired session was not pruned (%d prunes)", store.prunes)
	}
}

func sha256Sum(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}
