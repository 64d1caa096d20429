package cli_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"meka.dev/meka/internal/testenv"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

// chromium starts a headless Chromium (Debian's package) with a fresh
// profile and returns a browser context; under MEKA_CI a missing browser
// fails the test.
func chromium(t testing.TB) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		testenv.Skip(t, "chromium not installed (apt-get install chromium): the web app's browser tests need it")
	}
	// Chromium's helpers may still be writing to its profile as the test
	// ends, so the profile is removed after the browser, errors ignored.
	profile, err := os.MkdirTemp("", "meka-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(profile) })
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile), chromedp.WindowSize(1280, 900),
	}
	// A bound on a hung browser, not a speed check (a test of several
	// views on a busy machine takes minutes).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		chromedp.Cancel(bctx) // closes the browser and waits for it
		bcancel()
	})
	if err := chromedp.Run(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return bctx
}

// artefacts is where screenshots go: $MEKA_TEST_ARTIFACTS, else a
// temporary directory.
func artefacts(t testing.TB) string {
	if d := os.Getenv("MEKA_TEST_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// The web app end to end: a login link from meka serve url, a session
// made over the API appearing in the list, a turn asking approval
// answered in one tap with a steer sent meanwhile, a hostile reply shown
// as text, a live stream cancelled, and the spent link refused.
func TestWebAppInChromium(t *testing.T) {
	ctx := chromium(t)
	const hostile = `Done. <script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">`
	sc, err := script.Parse([]byte(fmt.Sprintf(`{"rounds":[
	 {"tool_calls":[{"id":"w","name":"file_write","arguments":{"path":"out.txt","content":"x"}}]},
	 {"text":%q},
	 {"text":"Streaming slowly, word by word","stall":"stream"}]}`, hostile)))
	if err != nil {
		t.Fatal(err)
	}
	model := modeltest.NewServer(t, sc)
	work, data := t.TempDir(), t.TempDir()
	env := isolatedEnv(t, "OPENAI_API_KEY=k", "OPENAI_BASE_URL="+model.URL+"/v1", "MEKA_DATA_DIR="+data)
	srv := startServe(t, work, env)
	var rec struct{ ID string }
	if code := srv.call(t, "POST", "/v1/sessions", map[string]any{"cwd": work, "permission": "read", "approvals": true}, &rec); code != 201 {
		t.Fatalf("create: %d", code)
	}
	link := serveURL(t, work, env, "--session", rec.ID).String()
	shots := artefacts(t)
	shot := func(name string, w, h int64) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			var buf []byte
			if err := chromedp.Run(ctx, chromedp.EmulateViewport(w, h), chromedp.FullScreenshot(&buf, 100)); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, name), buf, 0o644)
		})
	}
	must := func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must("log in with the link", chromedp.Navigate(link), chromedp.WaitVisible(`#title`),
		chromedp.WaitVisible(fmt.Sprintf(`#sessions a[data-id=%q]`, rec.ID)))
	var addr string
	must("read the address", chromedp.Evaluate(`location.href`, &addr))
	if strings.Contains(addr, "code=") {
		t.Fatalf("the code stayed in the address bar: %s", addr)
	}
	// A session made through the API appears in the list.
	var other struct{ ID string }
	if code := srv.call(t, "POST", "/v1/sessions", map[string]any{"cwd": work}, &other); code != 201 {
		t.Fatalf("create: %d", code)
	}
	must("see the new session in the list", chromedp.Evaluate(`location.hash = ''`, nil),
		chromedp.WaitVisible(fmt.Sprintf(`#sessions a[data-id=%q]`, other.ID)),
		chromedp.Click(fmt.Sprintf(`#sessions a[data-id=%q]`, rec.ID)), chromedp.WaitVisible(`#prompt`))

	must("start a turn", chromedp.SendKeys(`#prompt`, "write out.txt"), chromedp.Click(`#send`),
		chromedp.WaitVisible(`.approval button`))
	must("steer it", chromedp.SendKeys(`#prompt`, "also check the README"), chromedp.Click(`#send`),
		chromedp.Poll(`document.querySelector('#prompt').value === ''`, nil))
	must("approve", chromedp.Click(`.approval button`),
		chromedp.Poll(`[...document.querySelectorAll('#transcript .msg.assistant .body')].some(e => e.textContent.startsWith('Done.'))`, nil),
		chromedp.Poll(`document.querySelector('#status').textContent === 'idle'`, nil))
	if reqs := model.Requests(); len(reqs) < 2 || !strings.Contains(string(reqs[1].Body), "also check the README") {
		t.Fatalf("the steer did not reach the model with the tool's result")
	}
	var safe bool
	must("check the hostile reply", chromedp.Evaluate(`window.__pwned === undefined &&
		document.querySelectorAll('#transcript img, #transcript script').length === 0 &&
		[...document.querySelectorAll('#transcript .msg.assistant .body')].some(e => e.textContent === `+fmt.Sprintf("%q", hostile)+`)`, &safe))
	if !safe {
		t.Fatal("the hostile reply was not rendered as text")
	}
	var tool string
	must("read the tool card", chromedp.Text(`#transcript .tool summary`, &tool))
	if !strings.Contains(tool, "file_write") || !strings.Contains(tool, "completed") {
		t.Fatalf("tool card %q", tool)
	}
	must("screenshots", shot("webapp-desktop.png", 1280, 900), shot("webapp-phone.png", 390, 844),
		chromedp.WaitVisible(`a.back`), chromedp.EmulateViewport(1280, 900))

	must("watch a turn stream in and cancel it", chromedp.SendKeys(`#prompt`, "stream please"), chromedp.Click(`#send`),
		chromedp.Poll(`[...document.querySelectorAll('#transcript .msg.streaming')].some(e => e.textContent.includes('word by word'))`, nil),
		chromedp.WaitVisible(`#cancel`), chromedp.Click(`#cancel`),
		chromedp.Poll(`document.querySelector('#status').textContent === 'idle'`, nil),
		chromedp.Poll(`[...document.querySelectorAll('#transcript .notice')].some(e => e.textContent.includes('cancelled'))`, nil))

	// A scheduled job shows with when it fires, and cancels from the page.
	var job struct{ ID string }
	if code := srv.call(t, "POST", "/v1/sessions/"+rec.ID+"/schedule", map[string]any{"prompt": "check the build", "every": "30m"}, &job); code != 201 {
		t.Fatalf("schedule: %d", code)
	}
	must("cancel a job", chromedp.Reload(), chromedp.WaitVisible(fmt.Sprintf(`#jobs li[data-job=%q] button`, job.ID)),
		// Clicked from the page's own script: the list is redrawn as the
		// feed replays, so a node found a moment before may be gone.
		chromedp.Evaluate(fmt.Sprintf(`document.querySelector('#jobs li[data-job=%q] button').click()`, job.ID), nil),
		chromedp.Poll(`document.querySelectorAll('#jobs li').length === 0`, nil))
	var jobs struct{ Items []any }
	if code := srv.call(t, "GET", "/v1/schedule", nil, &jobs); code != 200 || len(jobs.Items) != 0 {
		t.Fatalf("after cancel from the page: %d %v", code, jobs.Items)
	}

	var signin string
	must("reuse the link", chromedp.Navigate(link), chromedp.WaitVisible(`#signin`), chromedp.Text(`#signin`, &signin))
	if !strings.Contains(signin, "already used") {
		t.Fatalf("reused link: %q", signin)
	}
	t.Logf("screenshots in %s", shots)
}
