package web_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"net/http"
	"regexp"
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

func TestLoginCodeWorksOnceBeforeItExpires(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := web.NewLogins(func() time.Time { return now }, time.Minute, time.Hour)
	code, exp, err := l.NewCode()
	if err != nil || !exp.Equal(now.Add(time.Minute)) {
		t.Fatalf("NewCode: %v %v", exp, err)
	}
	cookie, sexp, err := l.Exchange(code)
	if err != nil || !sexp.Equal(now.Add(time.Hour)) || !l.Valid(cookie) {
		t.Fatalf("Exchange: %q %v %v", cookie, sexp, err)
	}
	if _, _, err := l.Exchange(code); !errors.Is(err, web.ErrCodeRefused) {
		t.Fatalf("second exchange: %v", err)
	}
	late, _, _ := l.NewCode()
	now = now.Add(time.Minute)
	if _, _, err := l.Exchange(late); !errors.Is(err, web.ErrCodeRefused) {
		t.Fatalf("expired code: %v", err)
	}
	if !l.Valid(cookie) || l.Valid("") || l.Valid("guess") {
		t.Fatal("session validity")
	}
	now = now.Add(time.Hour)
	if l.Valid(cookie) {
		t.Fatal("an expired session is valid")
	}
	c2, _, _ := l.NewCode()
	v, _, _ := l.Exchange(c2)
	l.Revoke(v)
	if l.Valid(v) {
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
