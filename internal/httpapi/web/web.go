// Package web is meka serve's browser app: its static assets, embedded in
// the binary, and the one-time login links that give a browser a session
// cookie instead of the bearer token. The assets hold no data, so they are
// served without credentials; every API call the page makes carries the
// cookie, which httpapi accepts only on same-origin requests.
//
// It imports nothing of meka: httpapi serves it.
package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
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

// LoginStore keeps browser sessions across a restart of the server, and
// shares them between servers on one database: the SHA-256 of each
// cookie with its expiry, never the cookie itself. Implementations are
// safe for concurrent use.
type LoginStore interface {
	SaveLogin(ctx context.Context, hash []byte, expires time.Time) error
	// LoginExpiry returns a session's expiry; ok is false when the store
	// has none under hash.
	LoginExpiry(ctx context.Context, hash []byte) (expires time.Time, ok bool, err error)
	DeleteLogin(ctx context.Context, hash []byte) error
	// PruneLogins deletes the sessions expired at now.
	PruneLogins(ctx context.Context, now time.Time) (int64, error)
}

// LoginOptions configure Logins; the zero value of each field means its
// default.
type LoginOptions struct {
	Now                 func() time.Time // time.Now when nil
	CodeTTL, SessionTTL time.Duration    // DefaultCodeTTL, DefaultSessionTTL
	// Store keeps browser sessions; nil keeps them in memory, so that a
	// restart signs every browser out. Codes are never stored: a link is
	// for the next few minutes.
	Store  LoginStore
	Logger *slog.Logger
}

// Logins holds one-time login codes and the browser sessions exchanged
// for them. Only hashes of codes and cookies are kept; sessions are
// written through to the store, and read from it when memory has none
// (a restart, or a session another server made).
type Logins struct {
	now                 func() time.Time
	codeTTL, sessionTTL time.Duration
	store               LoginStore
	log                 *slog.Logger

	mu         sync.Mutex
	codes      map[[32]byte]time.Time // code hash → expiry
	sessions   map[[32]byte]time.Time // cookie hash → expiry
	lastPruned time.Time              // of the store's sessions
}

// NewLogins returns an empty set of logins.
func NewLogins(o LoginOptions) *Logins {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.CodeTTL <= 0 {
		o.CodeTTL = DefaultCodeTTL
	}
	if o.SessionTTL <= 0 {
		o.SessionTTL = DefaultSessionTTL
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Logins{now: o.Now, codeTTL: o.CodeTTL, sessionTTL: o.SessionTTL, store: o.Store, log: o.Logger,
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
// a code works once, before it expires. The session is stored before the
// cookie is handed out.
func (l *Logins) Exchange(ctx context.Context, code string) (string, time.Time, error) {
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
	sh := sha256.Sum256([]byte(v))
	sexp := l.now().Add(l.sessionTTL)
	if l.store != nil {
		l.pruneStore(ctx)
		if err := l.store.SaveLogin(ctx, sh[:], sexp); err != nil {
			return "", time.Time{}, fmt.Errorf("save browser session: %w", err)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.prune()
	l.sessions[sh] = sexp
	return v, sexp, nil
}

// Valid reports whether a cookie value is a live session. A store that
// cannot be read counts as no session (logged).
func (l *Logins) Valid(ctx context.Context, cookie string) bool {
	if cookie == "" {
		return false
	}
	h := sha256.Sum256([]byte(cookie))
	now := l.now()
	l.mu.Lock()
	exp, ok := l.sessions[h]
	l.mu.Unlock()
	if ok || l.store == nil {
		return ok && now.Before(exp)
	}
	exp, ok, err := l.store.LoginExpiry(ctx, h[:])
	if err != nil {
		l.log.Error("read browser session", "err", err)
		return false
	}
	if !ok || !now.Before(exp) {
		return false
	}
	l.mu.Lock()
	l.sessions[h] = exp
	l.mu.Unlock()
	return true
}

// Revoke ends a session, for logging out, here and in the store.
func (l *Logins) Revoke(ctx context.Context, cookie string) error {
	h := sha256.Sum256([]byte(cookie))
	l.mu.Lock()
	delete(l.sessions, h)
	l.mu.Unlock()
	if l.store == nil {
		return nil
	}
	if err := l.store.DeleteLogin(ctx, h[:]); err != nil {
		return fmt.Errorf("delete browser session: %w", err)
	}
	return nil
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

// storePruneInterval bounds how often a login prunes the store's expired
// sessions: logins are rare, and a prune is one DELETE.
const storePruneInterval = time.Hour

// pruneStore deletes the store's expired sessions, at most once an hour;
// a failure is logged, the login goes on.
func (l *Logins) pruneStore(ctx context.Context) {
	now := l.now()
	l.mu.Lock()
	due := now.Sub(l.lastPruned) >= storePruneInterval
	if due {
		l.lastPruned = now
	}
	l.mu.Unlock()
	if !due {
		return
	}
	if _, err := l.store.PruneLogins(ctx, now); err != nil {
		l.log.Error("prune browser sessions", "err", err)
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
