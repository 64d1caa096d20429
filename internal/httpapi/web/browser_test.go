package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/chromedp/chromedp"

	"meka.dev/meka/internal/httpapi/web"
	"meka.dev/meka/internal/testenv"
)

// A browser that has the app cached loads a new binary's app at its next
// visit, and otherwise asks only for the page: its files, imports
// included, come from the cache.
func TestNewBinaryLoadsAtOnceInChromium(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		testenv.Skip(t, "chromium not installed (apt-get install chromium)")
	}
	app := func(n string) http.Handler {
		return web.HandlerOf(fstest.MapFS{
			"index.html":  {Data: []byte(`<!doctype html><body><script type="module" src="/app/app.js"></script>`)},
			"app/app.js":  {Data: []byte(`import { n } from "./dep.js"; const p = document.createElement("p"); p.id = "app" + n; document.body.append(p);`)},
			"app/dep.js":  {Data: []byte(`export const n = "` + n + `";`)},
			"app/app.css": {Data: []byte(`body {}`)},
		})
	}
	var serving atomic.Value
	serving.Store(app("1"))
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/favicon.ico" { // the browser's own, not the app's
			mu.Lock()
			asked = append(asked, r.URL.Path)
			mu.Unlock()
		}
		serving.Load().(http.Handler).ServeHTTP(w, r)
	}))
	defer srv.Close()
	requests := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := asked
		asked = nil
		return out
	}

	profile := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // a hung browser, not a speed check
	defer cancel()
	actx, acancel := chromedp.NewExecAllocator(ctx, chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.UserDataDir(profile),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true))
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer func() {
		chromedp.Cancel(bctx)
		bcancel()
		os.RemoveAll(profile)
	}()
	// visit opens the page and waits for the app's element: a DOM query
	// follows the navigation, where chromedp's evaluation may still be in
	// the page just left.
	visit := func(want string) {
		t.Helper()
		if err := chromedp.Run(bctx, chromedp.Navigate("about:blank"), chromedp.Navigate(srv.URL+"/"),
			chromedp.WaitReady("#"+want, chromedp.ByID)); err != nil {
			t.Fatalf("waiting for %q: %v", want, err)
		}
	}
	visit("app1")
	if got := strings.Join(requests(), " "); !strings.Contains(got, "/dep.js") {
		t.Fatalf("first visit asked for %s", got)
	}
	visit("app1")
	if got := requests(); len(got) != 1 || got[0] != "/" {
		t.Errorf("a second visit asked for %v, want only the page", got)
	}
	serving.Store(app("2"))
	visit("app2")
	if got := strings.Join(requests(), " "); !strings.Contains(got, "/app.js") || !strings.Contains(got, "/dep.js") {
		t.Errorf("the new binary's first visit asked for %s", got)
	}
}
