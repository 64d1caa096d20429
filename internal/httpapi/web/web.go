// Package web is meka serve's browser app: its static assets, embedded in
// the binary, and the one-time login links that give a browser a session
// cookie instead of the bearer token. The assets hold no data, so they are
// served without credentials; every API call the page makes carries the
// cookie, which httpapi accepts only on same-origin requests.
//
// It imports nothing of meka: httpapi serves it.
package web

import (
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

//go:embed static
var static embed.FS

// Assets are the app's files, index.html at the root.
func Assets() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embed pattern above guarantees the directory
	}
	return sub
}

// CSP is the Content-Security-Policy of every response: scripts, styles
// and connections from this origin only, nothing inline, no framing.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// SetSecurityHeaders sets the headers every meka serve response carries.
func SetSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
}

// Handler serves the assets: / is index.html; an unknown path is 404.
// Pages are not cached, so a new binary's app is loaded at once.
func Handler() http.Handler {
	files := http.FileServerFS(Assets())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		p := path.Clean(r.URL.Path)
		if p != "/" && p != "/index.html" && !strings.HasPrefix(p, "/app/") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}

// CookieName names the session cookie a login link is exchanged for.
const CookieName = "meka_session"

// Default lifetimes: a link is for the next few minutes, a browser
// session for a working day and a night.
const (
	DefaultCodeTTL    = 10 * time.Minute
	DefaultSessionTTL = 24 * time.Hour
)

// ErrCodeRefused is Exchange's answer to a code unknown, used or expired.
var ErrCodeRefused = errors.New("the login code is unknown, used or expired")

// Logins holds one-time login codes and the browser sessions exchanged
// for them, in memory: a restart of the server signs every browser out.
// Only hashes of codes and cookies are kept.
type Logins struct {
	now                 func() time.Time
	codeTTL, sessionTTL time.Duration

	mu       sync.Mutex
	codes    map[[32]byte]time.Time // code hash → expiry
	sessions map[[32]byte]time.Time // cookie hash → expiry
}

// NewLogins returns an empty store; now is the clock, zero TTLs mean the
// defaults.
func NewLogins(now func() time.Time, codeTTL, sessionTTL time.Duration) *Logins {
	if now == nil {
		now = time.Now
	}
	if codeTTL <= 0 {
		codeTTL = DefaultCodeTTL
	}
	if sessionTTL <= 0 {
		sessionTTL = DefaultSessionTTL
	}
	return &Logins{now: now, codeTTL: codeTTL, sessionTTL: sessionTTL,
		codes: make(map[[32]byte]time.Time), sessions: make(map[[32]byte]time.Time)}
}

// NewCode makes a one-time code and returns it with its expiry.
func (l *Logins) NewCode() (string, time.Time, error) {
	code, err := randomString()
	if err != nil {
		return "", time.Time{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.prune()
	exp := l.now().Add(l.codeTTL)
	l.codes[sha256.Sum256([]byte(code))] = exp
	return code, exp, nil
}

// Exchange spends a code for a new session cookie value and its expiry;
// a code works once, before it expires.
func (l *Logins) Exchange(code string) (string, time.Time, error) {
	h := sha256.Sum256([]byte(code))
	l.mu.Lock()
	exp, ok := l.codes[h]
	delete(l.codes, h)
	l.mu.Unlock()
	if !ok || !l.now().Before(exp) {
		return "", time.Time{}, ErrCodeRefused
	}
	v, err := randomString()
	if err != nil {
		return "", time.Time{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.prune()
	sexp := l.now().Add(l.sessionTTL)
	l.sessions[sha256.Sum256([]byte(v))] = sexp
	return v, sexp, nil
}

// Valid reports whether a cookie value is a live session.
func (l *Logins) Valid(cookie string) bool {
	if cookie == "" {
		return false
	}
	h := sha256.Sum256([]byte(cookie))
	l.mu.Lock()
	defer l.mu.Unlock()
	exp, ok := l.sessions[h]
	return ok && l.now().Before(exp)
}

// Revoke ends a session, for logging out.
func (l *Logins) Revoke(cookie string) {
	h := sha256.Sum256([]byte(cookie))
	l.mu.Lock()
	delete(l.sessions, h)
	l.mu.Unlock()
}

// prune drops expired entries, so the maps stay bounded by what is live.
// The caller holds mu.
func (l *Logins) prune() {
	now := l.now()
	for h, exp := range l.codes {
		if !now.Before(exp) {
			delete(l.codes, h)
		}
	}
	for h, exp := range l.sessions {
		if !now.Before(exp) {
			delete(l.sessions, h)
		}
	}
}

func randomString() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// Cookie returns the session cookie to set: HttpOnly, SameSite=Strict,
// Secure when the connection is TLS, expiring with the session.
func Cookie(value string, expires time.Time, secure bool) *http.Cookie {
	return &http.Cookie{Name: CookieName, Value: value, Path: "/", Expires: expires,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure}
}
