package model

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
)

// Endpoint joins an adapter's API root and the path of its endpoint the
// way a directory and a file in it join, whether or not base ends in a
// slash; the root's query is dropped. base must be an absolute http or
// https URL.
func Endpoint(provider, base, path string) (*url.URL, error) {
	u, err := url.Parse(base)
	if err == nil && (u.Scheme != "http" && u.Scheme != "https" || u.Host == "") {
		err = errors.New("not an absolute http or https URL")
	}
	if err != nil {
		return nil, fmt.Errorf("%s base URL %q: %w", provider, base, err)
	}
	if u.Path == "" || u.Path[len(u.Path)-1] != '/' {
		u.Path += "/"
		if u.RawPath != "" {
			u.RawPath += "/"
		}
	}
	return u.ResolveReference(&url.URL{Path: path}), nil
}

// GuardRedirects returns hc refusing a redirect to another origin than
// to's, so an API key, which travels in a header the HTTP client does not
// strip (x-api-key) or does only between domains, never reaches another
// server or plain http; hc itself is not changed.
func GuardRedirects(provider string, hc *http.Client, to *url.URL) *http.Client {
	if to == nil {
		return hc
	}
	g := *hc
	next := hc.CheckRedirect
	g.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Scheme != to.Scheme || req.URL.Host != to.Host {
			return fmt.Errorf("%s: refusing a redirect to %s://%s, another origin than %s://%s", provider, req.URL.Scheme, req.URL.Host, to.Scheme, to.Host)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return fmt.Errorf("%s: stopped after 10 redirects", provider)
		}
		return nil
	}
	return &g
}
