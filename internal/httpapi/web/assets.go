package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
)

// asset is one file as served: its bytes, gzipped once when that is
// smaller, and a validator of its content.
type asset struct {
	body, gz    []byte // gz is nil when gzip does not shrink the file
	contentType string
	etag        string // strong, quoted; the gzipped body's ends in -gz"
}

// assets are the app's files as Handler serves them.
type assets struct {
	version string            // a hash of every file: the path segment of /app/<version>/
	files   map[string]*asset // by path in Assets(), index.html included
	index   *asset            // index.html naming its files under /app/<version>/
}

// immutable is the Cache-Control of a versioned file: kept a year (the
// most caches honour) without asking again; a new binary's files have
// another version, so other URLs.
const immutable = "public, max-age=31536000, immutable"

// loadAssets reads the files once, works out the version and rewrites
// index.html to name the files under it.
func loadAssets(fsys fs.FS) *assets {
	var names []string
	raw := map[string][]byte{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		names, raw[p] = append(names, p), b
		return err
	})
	if err != nil {
		panic(err) // embedded: cannot fail
	}
	all := sha256.New()
	for _, n := range names {
		sum := sha256.Sum256(raw[n])
		all.Write([]byte(n + "\x00"))
		all.Write(sum[:])
	}
	a := &assets{version: hex.EncodeToString(all.Sum(nil))[:16], files: map[string]*asset{}}
	for _, n := range names {
		a.files[n] = newAsset(n, raw[n])
	}
	// Relative imports in the modules resolve under the same prefix.
	index := bytes.ReplaceAll(raw["index.html"], []byte(`="/app/`), []byte(`="/app/`+a.version+`/`))
	a.index = newAsset("index.html", index)
	return a
}

func newAsset(name string, b []byte) *asset {
	sum := sha256.Sum256(b)
	tag := hex.EncodeToString(sum[:])[:16]
	f := &asset{body: b, contentType: mime.TypeByExtension(path.Ext(name)), etag: `"` + tag + `"`}
	var z bytes.Buffer
	w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	w.Write(b)
	w.Close()
	if z.Len() < len(b) {
		f.gz = z.Bytes()
	}
	return f
}

// Handler serves the assets: / is index.html; an unknown path is 404.
// The page is revalidated on every load (no-cache, with an ETag), so a
// new binary's app is loaded at once; it names its files under
// /app/<version>/, a hash of them all, which browsers keep without asking
// again. /app/<file> is served too, revalidated like the page; a version
// other than this binary's is 404 (its files are not here). Bodies are
// gzipped when the request accepts it.
func Handler() http.Handler { return handler(Assets()) }

func handler(fsys fs.FS) http.Handler {
	a := loadAssets(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		f, cache := a.lookup(path.Clean(r.URL.Path))
		if f == nil {
			http.NotFound(w, r)
			return
		}
		f.serve(w, r, cache)
	})
}

// lookup finds the file at p and its Cache-Control; nil when none.
func (a *assets) lookup(p string) (*asset, string) {
	if p == "/" || p == "/index.html" {
		return a.index, "no-cache"
	}
	rest, ok := strings.CutPrefix(p, "/app/")
	if !ok {
		return nil, ""
	}
	if v, name, ok := strings.Cut(rest, "/"); ok {
		if f := a.files["app/"+name]; f != nil && v == a.version {
			return f, immutable
		}
		return nil, ""
	}
	if f := a.files["app/"+rest]; f != nil {
		return f, "no-cache"
	}
	return nil, ""
}

func (f *asset) serve(w http.ResponseWriter, r *http.Request, cache string) {
	h := w.Header()
	h.Set("Cache-Control", cache)
	h.Set("Content-Type", f.contentType)
	body, etag := f.body, f.etag
	if f.gz != nil {
		h.Set("Vary", "Accept-Encoding")
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			body, etag = f.gz, strings.TrimSuffix(f.etag, `"`)+`-gz"`
			h.Set("Content-Encoding", "gzip")
		}
	}
	h.Set("ETag", etag)
	if inm := r.Header.Get("If-None-Match"); inm != "" && matchesETag(inm, f.etag) {
		h.Del("Content-Type")
		h.Del("Content-Encoding")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// matchesETag reports whether an If-None-Match list names the file in
// either encoding (a weak comparison, as RFC 9110 asks for it).
func matchesETag(list, etag string) bool {
	tag := strings.Trim(etag, `"`)
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag || t == `"`+tag+`-gz"` {
			return true
		}
	}
	return false
}

// acceptsGzip reports whether an Accept-Encoding names gzip with a
// nonzero q.
func acceptsGzip(ae string) bool {
	for _, c := range strings.Split(ae, ",") {
		name, params, _ := strings.Cut(c, ";")
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
			continue
		}
		q := 1.0
		if v, ok := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q="); ok {
			q, _ = strconv.ParseFloat(v, 64)
		}
		return q > 0
	}
	return false
}
