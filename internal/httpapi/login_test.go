package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"meka.dev/meka/internal/httpapi"
	"meka.dev/meka/internal/httpapi/web"
)

// clock is a settable time for the login tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// syncBuffer is a log sink the server writes from its goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

type loginHarness struct {
	*harness
	clock *clock
	logs  *syncBuffer
}

func newLoginHarness(t *testing.T) *loginHarness {
	c := &clock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	logs := &syncBuffer{}
	h := newHarnessAPI(t, `[]`, nil, func(o *httpapi.Options) {
		o.Now = c.now
		o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	return &loginHarness{harness: h, clock: c, logs: logs}
}

// raw sends a request without the bearer token.
func raw(t *testing.T, srv *httptest.Server, method, path, body string, hdr ...string) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

// code asks for a login code with the bearer token.
func (h *loginHarness) code() string {
	h.t.Helper()
	var out struct {
		Code      string `json:"code"`
		ExpiresAt string `json:"expires_at"`
	}
	h.json("POST", "/v1/login-links", nil, 201, &out)
	if len(out.Code) < 40 || out.ExpiresAt == "" {
		h.t.Fatalf("login link %+v", out)
	}
	return out.Code
}

// exchange posts a code from the server's own page and returns the
// response.
func (h *loginHarness) exchange(t *testing.T, code string) *http.Response {
	b, _ := json.Marshal(map[string]string{"code": code})
	return raw(t, h.srv, "POST", "/v1/login", string(b), "Origin", h.srv.URL, "Content-Type", "application/json")
}

func sessionCookie(t *testing.T, res *http.Response) *http.Cookie {
	t.Helper()
	for _, c := range res.Cookies() {
		if c.Name == web.CookieName {
			return c
		}
	}
	t.Fatalf("no %s cookie in %v", web.CookieName, res.Header["Set-Cookie"])
	return nil
}

func TestAppServedWithoutCredentialsAndSafeHeaders(t *testing.T) {
	h := newLoginHarness(t)
	for _, p := range []string{"/", "/app/app.js", "/app/app.css"} {
		res := raw(t, h.srv, "GET", p, "")
		if res.StatusCode != 200 {
			t.Fatalf("GET %s: %d", p, res.StatusCode)
		}
		csp := res.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'self'", "frame-ancestors 'none'", "script-src 'self'", "style-src 'self'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: CSP %q lacks %q", p, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("GET %s: CSP allows inline code: %q", p, csp)
		}
		if res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", p)
		}
	}
	if ct := raw(t, h.srv, "GET", "/app/app.js", "").Header.Get("Content-Type"); !strings.Contains(ct, "javascript") {
		t.Errorf("app.js served as %q", ct)
	}
	// The API's answers carry the headers too, and still need credentials.
	res := raw(t, h.srv, "GET", "/v1/sessions", "")
	if res.StatusCode != 401 || res.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("GET /v1/sessions without credentials: %d %v", res.StatusCode, res.Header)
	}
	if res := raw(t, h.srv, "GET", "/nothing-here", ""); res.StatusCode != 404 {
		t.Errorf("unknown path: %d", res.StatusCode)
	}
	if res := raw(t, h.srv, "POST", "/", "x"); res.StatusCode != 405 {
		t.Errorf("POST /: %d", res.StatusCode)
	}
}

func TestLoginLinkGivesACookieOnce(t *testing.T) {
	h := newLoginHarness(t)
	code := h.code()
	res := h.exchange(t, code)
	if res.StatusCode != 204 {
		t.Fatalf("exchange: %d", res.StatusCode)
	}
	c := sessionCookie(t, res)
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure || c.Path != "/" {
		t.Errorf("cookie attributes: %+v", c)
	}
	if want := h.clock.now().Add(web.DefaultSessionTTL); !c.Expires.Equal(want.Truncate(time.Second)) {
		t.Errorf("cookie expires %v, want %v", c.Expires, want)
	}
	cookie := web.CookieName + "=" + c.Value

	// The cookie works on the API from this origin's page.
	if res := raw(t, h.srv, "GET", "/v1/sessions", "", "Cookie", cookie, "Sec-Fetch-Site", "same-origin"); res.StatusCode != 200 {
		t.Fatalf("GET with cookie: %d", res.StatusCode)
	}
	body := `{"cwd":` + strings.ReplaceAll(`"`+h.cwd+`"`, `\`, `\\`) + `}`
	if res := raw(t, h.srv, "POST", "/v1/sessions", body, "Cookie", cookie, "Origin", h.srv.URL, "Content-Type", "application/json"); res.StatusCode != 201 {
		t.Fatalf("POST with cookie from this origin: %d", res.StatusCode)
	}
	// Not from another site's page, nor a state change without Origin.
	for _, tc := range []struct {
		name, method string
		hdr          []string
		want         int
	}{
		{"other origin", "POST", []string{"Origin", "https://evil.example"}, 403},
		{"cross-site fetch", "GET", []string{"Sec-Fetch-Site", "cross-site"}, 401},
		{"same-site fetch", "GET", []string{"Sec-Fetch-Site", "same-site"}, 401},
		{"post without origin", "POST", nil, 401},
	} {
		res := raw(t, h.srv, tc.method, "/v1/sessions", body, append([]string{"Cookie", cookie, "Content-Type", "application/json"}, tc.hdr...)...)
		if res.StatusCode != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, res.StatusCode, tc.want)
		}
	}
	// A browser session cannot mint links; the token can, and still works.
	if res := raw(t, h.srv, "POST", "/v1/login-links", "", "Cookie", cookie, "Origin", h.srv.URL); res.StatusCode != 403 {
		t.Errorf("login link with a cookie: %d", res.StatusCode)
	}
	h.json("GET", "/v1/sessions", nil, 200, nil)

	// The code is spent.
	if res := h.exchange(t, code); res.StatusCode != 401 {
		t.Errorf("reused code: %d", res.StatusCode)
	}
	if res := h.exchange(t, "made-up"); res.StatusCode != 401 {
		t.Errorf("unknown code: %d", res.StatusCode)
	}
	// Logging out ends the session.
	if res := raw(t, h.srv, "POST", "/v1/logout", "", "Cookie", cookie, "Origin", h.srv.URL); res.StatusCode != 204 {
		t.Fatalf("logout: %d", res.StatusCode)
	}
	if res := raw(t, h.srv, "GET", "/v1/sessions", "", "Cookie", cookie); res.StatusCode != 401 {
		t.Errorf("cookie after logout: %d", res.StatusCode)
	}
	// Nothing secret reached the log.
	logs := h.logs.String()
	for _, secret := range []string{code, c.Value, token} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log holds a secret: %s", logs)
		}
	}
}

func TestLoginCodeAndCookieExpire(t *testing.T) {
	h := newLoginHarness(t)
	old := h.code()
	h.clock.add(web.DefaultCodeTTL)
	if res := h.exchange(t, old); res.StatusCode != 401 {
		t.Fatalf("expired code: %d", res.StatusCode)
	}
	res := h.exchange(t, h.code())
	if res.StatusCode != 204 {
		t.Fatalf("fresh code: %d", res.StatusCode)
	}
	cookie := web.CookieName + "=" + sessionCookie(t, res).Value
	h.clock.add(web.DefaultSessionTTL - time.Second)
	if res := raw(t, h.srv, "GET", "/v1/sessions", "", "Cookie", cookie); res.StatusCode != 200 {
		t.Fatalf("cookie before expiry: %d", res.StatusCode)
	}
	h.clock.add(time.Second)
	if res := raw(t, h.srv, "GET", "/v1/sessions", "", "Cookie", cookie); res.StatusCode != 401 {
		t.Fatalf("expired cookie: %d", res.StatusCode)
	}
}

func TestLoginRefusedFromAnotherOrigin(t *testing.T) {
	h := newLoginHarness(t)
	code := h.code()
	b, _ := json.Marshal(map[string]string{"code": code})
	if res := raw(t, h.srv, "POST", "/v1/login", string(b), "Origin", "https://evil.example"); res.StatusCode != 403 {
		t.Fatalf("login from another origin: %d", res.StatusCode)
	}
	if res := raw(t, h.srv, "POST", "/v1/login", string(b)); res.StatusCode != 403 {
		t.Fatalf("login without Origin: %d", res.StatusCode)
	}
	// Refusing the origin did not spend the code.
	if res := h.exchange(t, code); res.StatusCode != 204 {
		t.Fatalf("code after refused attempts: %d", res.StatusCode)
	}
}

func TestLoginCookieSecureOverTLS(t *testing.T) {
	h := newLoginHarness(t)
	srv := httptest.NewTLSServer(h.api)
	t.Cleanup(srv.Close)
	req, _ := http.NewRequestWithContext(t.Context(), "POST", srv.URL+"/v1/login-links", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ Code string }
	json.NewDecoder(res.Body).Decode(&out)
	res.Body.Close()
	b, _ := json.Marshal(map[string]string{"code": out.Code})
	res = raw(t, srv, "POST", "/v1/login", string(b), "Origin", srv.URL)
	if res.StatusCode != 204 {
		t.Fatalf("exchange over TLS: %d", res.StatusCode)
	}
	if c := sessionCookie(t, res); !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
		t.Errorf("cookie over TLS: %+v", c)
	}
}
