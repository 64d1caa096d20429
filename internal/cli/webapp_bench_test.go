package cli_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	cdpnetwork "github.com/chromedp/cdproto/network"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

// webappBench is a meka serve with one session of turns of many tool
// calls, and a browser signed in to its web app.
type webappBench struct {
	srv     *served
	ctx     context.Context
	session string
	rows    int // the transcript's entries: tool cards and messages
	work    string
	env     []string
}

// newWebappBench builds a session whose transcript has at least rows
// entries: turns of up to 500 tool calls (the engine's limit a turn).
func newWebappBench(b *testing.B, rows int) *webappBench {
	b.Helper()
	ctx := chromium(b)
	var rounds []string
	turns := (rows + 499) / 500
	for t := range turns {
		calls := make([]string, 500)
		for i := range calls {
			calls[i] = fmt.Sprintf(`{"id":"t%dc%d","name":"file_read","arguments":{"path":"missing-%d.txt"}}`, t, i, i)
		}
		rounds = append(rounds, `{"tool_calls":[`+strings.Join(calls, ",")+`]}`, `{"text":"read them"}`)
	}
	sc, err := script.Parse([]byte(`{"rounds":[` + strings.Join(rounds, ",") + `]}`))
	if err != nil {
		b.Fatal(err)
	}
	model := modeltest.NewServer(b, sc)
	work, data := b.TempDir(), b.TempDir()
	env := isolatedEnv(b, "OPENAI_API_KEY=k", "OPENAI_BASE_URL="+model.URL+"/v1", "MEKA_DATA_DIR="+data)
	srv := startServe(b, work, env)
	var rec struct{ ID string }
	if code := srv.call(b, "POST", "/v1/sessions", map[string]any{"cwd": work}, &rec); code != 201 {
		b.Fatalf("create: %d", code)
	}
	fctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	feed := srv.events(b, fctx, rec.ID, "0")
	for t := range turns {
		var turn struct {
			TurnID string `json:"turn_id"`
		}
		if code := srv.call(b, "POST", "/v1/sessions/"+rec.ID+"/turns", map[string]any{"input": []map[string]string{{"type": "text", "text": "read " + strconv.Itoa(t)}}}, &turn); code != 202 {
			b.Fatalf("turn %d: %d", t, code)
		}
		for f := range feed {
			if f.typ == "turn.completed" && f.turnID == turn.TurnID {
				break
			}
		}
	}
	link := serveURL(b, work, env)
	if err := chromedp.Run(ctx, chromedp.Navigate(link.String()), chromedp.WaitVisible(`#sessions`)); err != nil {
		b.Fatal(err)
	}
	return &webappBench{srv: srv, ctx: ctx, session: rec.ID, rows: turns*500 + 2*turns, work: work, env: env}
}

// renderedScript runs in every page the bench opens and records, on
// window.__rendered, when the first frame after each condition painted (ms
// from navigation start; a timer after the animation frame that saw it
// runs once that frame is drawn):
//   - screen: the session list shows the session, and the transcript its
//     last row, scrolled to the bottom, filling its box (or whole);
//   - all: every row of the transcript is in the page (allAtBottom: with
//     the view still at the bottom, where the rows drawn above left it);
//   - app: the composer is in the page: the app's own screen, which takes
//     the place of the first screen early.js draws before the app runs.
const renderedScript = `(() => {
  if (location.pathname !== "/") return;
  const r = window.__rendered = {};
  const done = (k) => { if (!(k in r)) { r[k] = 0; setTimeout(() => { r[k] = performance.now(); }); } };
  const tick = () => {
    const tr = document.getElementById("transcript");
    if (tr && document.querySelector('#sessions a.session[data-id="%s"]')) {
      const last = tr.lastElementChild;
      const bottom = tr.scrollHeight - tr.scrollTop - tr.clientHeight < 2;
      if (last && last.textContent.includes(%q) && bottom &&
        (tr.scrollHeight > tr.clientHeight || tr.children.length >= %d)) done("screen");
      if (tr.children.length >= %d && !("all" in r)) { r.allAtBottom = bottom; done("all"); }
    }
    if (document.getElementById("prompt")) done("app");
    if (!("screen" in r && "all" in r && "app" in r)) requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
})()`

// BenchmarkWebAppTranscript2000 is the time from navigating to a session
// to its 2,000-row transcript rendered, in headless Chromium, as the page
// measures it (renderedScript):
//   - ms-to-render: the screen complete, the session list beside the
//     transcript's last screenful. The rows above are drawn after it in
//     slices and, ahead of those, as the view is scrolled up to them, so
//     the whole transcript is reachable from this frame on;
//   - ms-all-rows: every row in the page (each run then scrolls to the
//     top and finds the first row there);
//   - ms-app-screen: the app's own screen, with its composer, in place of
//     the first screen early.js draws from the first answers (that one
//     is ms-to-render's when it comes first);
//   - ms-history-fetched: the history's first page in hand and parsed (the
//     page's mark): the whole history before the app read it from its
//     end, its last page since.
//
// These are of a repeated load, the app's files in the browser's cache as
// a second visit finds them. Beside them:
//   - ms-to-render-cold: the same as ms-to-render with the browser's cache
//     emptied first (a first visit, or the first after a new binary);
//   - ms-first-paint: the page's first contentful paint (its header), and
//     ms-tail-requested: when the history's last page was asked for (its
//     Resource Timing entry), both of the repeated load;
//   - ms-floor: the first contentful paint of the least page the same
//     server serves to the same browser (its 404, 19 bytes of text): the
//     browser's own start, which no change to the app can go below.
//
// Each is the median of the runs: on a shared machine a run now and then
// waits out someone else's work.
func BenchmarkWebAppTranscript2000(b *testing.B) {
	w := newWebappBench(b, 2000)
	page := w.srv.url + "/#s/" + w.session
	script := fmt.Sprintf(renderedScript, w.session, "read them", w.rows, w.rows)
	if err := chromedp.Run(w.ctx, chromedp.ActionFunc(func(ctx context.Context) error {
		_, err := cdppage.AddScriptToEvaluateOnNewDocument(script).Do(ctx)
		return err
	})); err != nil {
		b.Fatal(err)
	}
	type load struct {
		Screen, All, App, Fetched, FirstPaint, TailRequested float64
		AllAtBottom                                          bool
	}
	// retry runs actions again when chromedp evaluated in the page just
	// left: on a loaded machine the new page's context can be announced
	// late.
	retry := func(actions ...chromedp.Action) {
		b.Helper()
		err := chromedp.Run(w.ctx, actions...)
		for try := 1; err != nil && strings.Contains(err.Error(), "Cannot find context") && try < 3; try++ {
			err = chromedp.Run(w.ctx, actions...)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	open := func(cold bool) load {
		b.Helper()
		var r load
		var first string
		actions := []chromedp.Action{chromedp.Navigate("about:blank")}
		if cold {
			actions = append(actions, cdpnetwork.ClearBrowserCache())
		}
		retry(append(actions, chromedp.Navigate(page),
			chromedp.Poll(`window.__rendered.screen > 0 && window.__rendered.all > 0 && window.__rendered.app > 0`, nil),
			chromedp.Evaluate(`({screen: __rendered.screen, all: __rendered.all, app: __rendered.app, allAtBottom: __rendered.allAtBottom,
				fetched: (performance.getEntriesByName('meka:history-fetched')[0] || {}).startTime || 0,
				firstPaint: (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || 0,
				tailRequested: (performance.getEntriesByType('resource').find((e) => e.name.includes('/history?tail=')) || {}).startTime || 0})`, &r),
			chromedp.Evaluate(`document.getElementById('transcript').scrollTop = 0;
				document.querySelector('#transcript > li').textContent`, &first))...)
		if !r.AllAtBottom {
			b.Fatal("the view left the bottom as the older rows were drawn")
		}
		if !strings.Contains(first, "read 0") {
			b.Fatalf("scrolled to the top, the first row is %q", first)
		}
		return r
	}
	var screen, all, app, fetched, cold, firstPaint, tailRequested, floor []float64
	b.ResetTimer()
	for range b.N {
		cold = append(cold, open(true).Screen)
		r := open(false)
		screen = append(screen, r.Screen)
		all = append(all, r.All)
		app = append(app, r.App)
		fetched = append(fetched, r.Fetched)
		firstPaint = append(firstPaint, r.FirstPaint)
		tailRequested = append(tailRequested, r.TailRequested)
		var fcp float64
		retry(chromedp.Navigate("about:blank"), chromedp.Navigate(w.srv.url+"/floor"),
			chromedp.WaitReady("body"), chromedp.Poll(`(performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || 0`, &fcp))
		floor = append(floor, fcp)
	}
	b.ReportMetric(median(screen), "ms-to-render")
	b.ReportMetric(median(all), "ms-all-rows")
	b.ReportMetric(median(app), "ms-app-screen")
	b.ReportMetric(median(fetched), "ms-history-fetched")
	b.ReportMetric(median(cold), "ms-to-render-cold")
	b.ReportMetric(median(firstPaint), "ms-first-paint")
	b.ReportMetric(median(tailRequested), "ms-tail-requested")
	b.ReportMetric(median(floor), "ms-floor")
}

func median(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// BenchmarkWebAppServerMemory20Tabs is meka serve's resident memory with
// 20 browser tabs open on a session (each holding the session's feed and
// the all-sessions feed), beside the same server with none.
func BenchmarkWebAppServerMemory20Tabs(b *testing.B) {
	w := newWebappBench(b, 500)
	before := rss(b, w.srv.cmd.Process.Pid)
	// Four browsers of five tabs: a browser allows six HTTP/1.1
	// connections to one server across its tabs, one per tab here.
	for i := range 4 {
		browser := chromium(b)
		link := serveURL(b, w.work, w.env)
		link.Fragment += "&session=" + w.session
		for j := range 5 {
			tab := browser
			if j > 0 {
				tab, _ = chromedp.NewContext(browser)
			}
			nav := chromedp.Navigate(w.srv.url + "/#s/" + w.session)
			if j == 0 {
				nav = chromedp.Navigate(link.String())
			}
			if err := chromedp.Run(tab, nav,
				chromedp.Poll(fmt.Sprintf(`document.querySelectorAll('#transcript > li').length >= %d`, w.rows), nil)); err != nil {
				b.Fatalf("browser %d tab %d: %v", i, j, err)
			}
		}
	}
	after := rss(b, w.srv.cmd.Process.Pid)
	for range b.N {
	}
	b.ReportMetric(float64(before)/1024, "MiB-idle")
	b.ReportMetric(float64(after)/1024, "MiB-20-tabs")
}

// rss is a process's resident set in KiB, from /proc.
func rss(b *testing.B, pid int) int {
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(s), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	b.Fatal("no VmRSS")
	return 0
}
