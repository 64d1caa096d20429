package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"meka.dev/meka/internal/httpapi/web"
)

// The browser app's login: `meka serve url` asks for a one-time code with
// the bearer token (POST /v1/login-links) and prints a link carrying it in
// the URL fragment, which never reaches a server or its logs; the page
// posts the code to /v1/login once and gets an HttpOnly session cookie.

// createLoginLink makes a one-time login code, for the token's holder.
func (s *Server) createLoginLink(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") == "" {
		// A browser session may not extend itself by minting links.
		writeProblem(w, problem{Status: http.StatusForbidden, Code: "token-required", Title: "Login links are made with the bearer token"})
		return
	}
	code, exp, err := s.logins.NewCode()
	if err != nil {
		s.log.Error("make login code", "err", err)
		writeProblem(w, problem{Status: http.StatusInternalServerError, Code: "internal", Title: "Could not make a login code"})
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, map[string]string{"code": code, "expires_at": exp.UTC().Format(time.RFC3339)})
}

// login exchanges a code for the session cookie. It is served without
// credentials (the code is one), only to a page of this origin.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Origin") != selfOrigin(r) {
		writeProblem(w, problem{Status: http.StatusForbidden, Code: "origin-not-allowed", Title: "A login must come from this server's own page"})
		return
	}
	var body struct {
		Code string `json:"code"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&body); err != nil || body.Code == "" {
		writeProblem(w, problem{Status: http.StatusBadRequest, Code: "invalid-request", Title: `The body must be {"code": "..."}`})
		return
	}
	v, exp, err := s.logins.Exchange(r.Context(), body.Code)
	if err != nil && !errors.Is(err, web.ErrCodeRefused) {
		s.log.Error("log in", "err", err)
		writeProblem(w, problem{Status: http.StatusInternalServerError, Code: "internal", Title: "Could not start a browser session", Where: "meka log"})
		return
	}
	if err != nil {
		writeProblem(w, problem{Status: http.StatusUnauthorized, Code: "login-code-refused", Title: "The login link is unknown, used or expired",
			Detail: "Print a new one with meka serve url."})
		return
	}
	http.SetCookie(w, web.Cookie(v, exp, r.TLS != nil))
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

// logout ends the browser session of the request's cookie.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(web.CookieName); err == nil {
		if err := s.logins.Revoke(r.Context(), c.Value); err != nil {
			s.log.Error("log out", "err", err)
		}
	}
	http.SetCookie(w, &http.Cookie{Name: web.CookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	w.WriteHeader(http.StatusNoContent)
}

// selfOrigin is the origin of this server as the request reached it.
func selfOrigin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + strings.ToLower(r.Host)
}

// cookieAuthorized reports whether the request carries a live session
// cookie and comes from this origin's page: a cross-site page cannot
// spend a browser's cookie (SameSite=Strict keeps it home, and this check
// holds even where a browser sends it anyway).
func (s *Server) cookieAuthorized(r *http.Request) bool {
	c, err := r.Cookie(web.CookieName)
	if err != nil || !s.logins.Valid(r.Context(), c.Value) {
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		return o == selfOrigin(r)
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	// A browser sends Origin on every request that changes state.
	return r.Method == http.MethodGet || r.Method == http.MethodHead
}
