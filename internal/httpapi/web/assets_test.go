package web_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"testing/fstest"

	"meka.dev/meka/internal/httpapi/web"
)

// get requests path from h with the given headers (name, value, ...).
func get(t *testing.T, h http.Handler, path string, header ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

// body reads a response's body, gunzipped when it says so.
func body(t *testing.T, res *http.Response) []byte {
	t.Helper()
	var r io.Reader = res.Body
	if res.Header.Get("Content-Encoding") == "gzip" {
		z, err := gzip.NewReader(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		r = z
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var versioned = regexp.MustCompile(`="/app/([0-9a-f]{16})/([^"]+)"`)

// The page names every file under one version, and each is served there
// as it is in the binary, gzipped when asked, to be kept without asking
// again; the page itself is asked for again on every load.
func TestIndexNamesVersionedFilesKeptForever(t *testing.T) {
	h := web.Handler()
	res := get(t, h, "/", "Accept-Encoding", "gzip, deflate, br")
	if res.StatusCode != 200 || res.Header.Get("Cache-Control") != "no-cache" || res.Header.Get("ETag") == "" {
		t.Fatalf("GET /: %d %v", res.StatusCode, res.Header)
	}
	index := body(t, res)
	refs := versioned.FindAllSubmatch(index, -1)
	if len(refs) < 2 || bytes.Contains(versioned.ReplaceAll(index, nil), []byte("/app/")) {
		t.Fatalf("index.html names files outside a version:\n%s", index)
	}
	names, _ := fs.Glob(web.Assets(), "app/*")
	for _, name := range names { // imported modules resolve under the same prefix
		want, _ := fs.ReadFile(web.Assets(), name)
		for _, ae := range []string{"gzip", ""} {
			res := get(t, h, "/app/"+string(refs[0][1])+"/"+name[len("app/"):], "Accept-Encoding", ae)
			if res.StatusCode != 200 || res.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
				t.Fatalf("GET %s (%q): %d %v", name, ae, res.StatusCode, res.Header)
			}
			if gz := res.Header.Get("Content-Encoding") == "gzip"; gz != (ae == "gzip") {
				t.Errorf("%s with Accept-Encoding %q: Content-Encoding %q", name, ae, res.Header.Get("Content-Encoding"))
			}
			if got := body(t, res); !bytes.Equal(got, want) {
				t.Errorf("%s (%q): %d bytes, not the file's %d", name, ae, len(got), len(want))
			}
		}
	}
	for _, ref := range refs {
		if string(ref[1]) != string(refs[0][1]) {
			t.Errorf("two versions in index.html: %s, %s", ref[1], refs[0][1])
		}
	}
}

// The page and unversioned files answer a revalidation with 304 while
// they are unchanged, in either encoding.
func TestUnchangedFilesRevalidateWith304(t *testing.T) {
	h := web.Handler()
	for _, p := range []string{"/", "/index.html", "/app/app.js"} {
		for _, ae := range []string{"gzip", "identity"} {
			first := get(t, h, p, "Accept-Encoding", ae)
			etag := first.Header.Get("ETag")
			if first.StatusCode != 200 || first.Header.Get("Cache-Control") != "no-cache" || etag == "" {
				t.Fatalf("GET %s: %d %v", p, first.StatusCode, first.Header)
			}
			again := get(t, h, p, "Accept-Encoding", ae, "If-None-Match", etag)
			if again.StatusCode != 304 || len(body(t, again)) != 0 || again.Header.Get("ETag") != etag {
				t.Errorf("GET %s (%s) with its ETag: %d %v", p, ae, again.StatusCode, again.Header)
			}
			if other := get(t, h, p, "Accept-Encoding", ae, "If-None-Match", `"0000000000000000"`); other.StatusCode != 200 {
				t.Errorf("GET %s with another ETag: %d", p, other.StatusCode)
			}
		}
	}
}

// gzip is sent only to requests that accept it, and says so for caches.
func TestGzipOnlyWhenAccepted(t *testing.T) {
	h := web.Handler()
	want, _ := fs.ReadFile(web.Assets(), "app/transcript.js")
	for ae, gz := range map[string]bool{"gzip": true, "br, GZIP;q=0.5": true, "gzip;q=0": false, "": false, "deflate": false} {
		res := get(t, h, "/app/transcript.js", "Accept-Encoding", ae)
		if (res.Header.Get("Content-Encoding") == "gzip") != gz || res.Header.Get("Vary") != "Accept-Encoding" {
			t.Errorf("Accept-Encoding %q: %v", ae, res.Header)
		}
		raw, _ := io.ReadAll(res.Body)
		if gz && len(raw) >= len(want) {
			t.Errorf("gzipped %d bytes, the file %d", len(raw), len(want))
		}
	}
}

// A version not this binary's, or a file not in it, is 404: a URL under
// a version always means its content.
func TestOtherVersionsAreNotFound(t *testing.T) {
	h := web.Handler()
	v := versioned.FindSubmatch(body(t, get(t, h, "/")))[1]
	for _, p := range []string{"/app/0123456789abcdef/app.js", "/app/" + string(v) + "/missing.js", "/app/" + string(v) + "/", "/app/missing.js", "/other"} {
		if res := get(t, h, p); res.StatusCode != 404 {
			t.Errorf("GET %s: %d", p, res.StatusCode)
		}
	}
}

// A new binary's files are under another version, so a browser holding
// the old ones loads the new at once: its page is asked for again, and it
// names other URLs. The same files are always the same version.
func TestNewContentNewVersion(t *testing.T) {
	app := func(js string) fstest.MapFS {
		return fstest.MapFS{
			"index.html": {Data: []byte(`<script type="module" src="/app/app.js"></script>`)},
			"app/app.js": {Data: []byte(js)},
		}
	}
	version := func(fsys fs.FS) (string, string) {
		res := get(t, web.HandlerOf(fsys), "/")
		m := versioned.FindSubmatch(body(t, res))
		if m == nil {
			t.Fatalf("no version in %s", body(t, res))
		}
		return string(m[1]), res.Header.Get("ETag")
	}
	v1, e1 := version(app(`document.title = "1";`))
	v2, e2 := version(app(`document.title = "2";`))
	again, _ := version(app(`document.title = "1";`))
	if v1 == v2 || e1 == e2 || again != v1 {
		t.Fatalf("versions %s, %s, again %s; ETags %s, %s", v1, v2, again, e1, e2)
	}
	old := web.HandlerOf(app(`document.title = "2";`))
	if res := get(t, old, "/", "If-None-Match", e1); res.StatusCode != 200 {
		t.Errorf("the old page's ETag revalidated the new page: %d", res.StatusCode)
	}
	if res := get(t, old, "/app/"+v1+"/app.js"); res.StatusCode != 404 {
		t.Errorf("the old version's file: %d", res.StatusCode)
	}
}
