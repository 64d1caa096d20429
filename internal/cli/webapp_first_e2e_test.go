package cli_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

// firstScreenSnapshot is what the first screen shows, as markup: the
// header's views, the session list's lines, the session's bar and
// directory, and the transcript's rows (the last n, or all for n = 0). The
// time a session was active is left out: it moves on its own.
const firstScreenSnapshot = `((n) => {
	const html = (sel) => [...document.querySelectorAll(sel)].map((e) => e.outerHTML.replace(/active [^<]*/g, "active"));
	const rows = html('#transcript > li');
	return { nav: html('#nav'), list: html('#sessions > li'), bar: html('.session-view > .bar, .session-view > p.dir'),
		rows: n ? rows.slice(rows.length - n) : rows };
})`

type firstScreen struct{ Nav, List, Bar, Rows []string }

// A page opened on a session draws its first screen from early.js, before
// the app has run (its app.js held here), and the app, once it runs, puts
// the same screen in its place: the views, the list, the session's bar and
// the transcript's last rows (completed, failed and a diff's open card),
// node for node (their classes, attributes and text).
func TestWebAppFirstScreenInChromium(t *testing.T) {
	ctx := chromium(t)
	const calls = 80
	parts := make([]string, calls)
	for i := range parts {
		path := fmt.Sprintf("missing-%d.txt", i)
		if i%3 == 0 {
			path = "present.txt"
		}
		parts[i] = fmt.Sprintf(`{"id":"c%d","name":"file_read","arguments":{"path":%q}}`, i, path)
	}
	// The last call changes a file: its card is drawn open on its diff.
	parts = append(parts, `{"id":"w","name":"file_write","arguments":{"path":"present.txt","content":"changed\n"}}`)
	sc, err := script.Parse([]byte(`{"rounds":[{"tool_calls":[` + strings.Join(parts, ",") + `]},{"text":"read them <b>all</b>"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	model := modeltest.NewServer(t, sc)
	work, data := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "present.txt"), []byte("here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := isolatedEnv(t, "OPENAI_API_KEY=k", "OPENAI_BASE_URL="+model.URL+"/v1", "MEKA_DATA_DIR="+data)
	srv := startServe(t, work, env)
	var rec struct{ ID string }
	if code := srv.call(t, "POST", "/v1/sessions", map[string]any{"cwd": work}, &rec); code != 201 {
		t.Fatalf("create: %d", code)
	}
	fctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	feed := srv.events(t, fctx, rec.ID, "0")
	var turn struct {
		TurnID string `json:"turn_id"`
	}
	if code := srv.call(t, "POST", "/v1/sessions/"+rec.ID+"/turns", map[string]any{"input": []map[string]string{{"type": "text", "text": "read the files"}}}, &turn); code != 202 {
		t.Fatalf("turn: %d", code)
	}
	for f := range feed {
		if f.typ == "turn.completed" && f.turnID == turn.TurnID {
			break
		}
	}
	cancel()
	link := serveURL(t, work, env, "--session", rec.ID).String()
	must := func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must("sign in", chromedp.Navigate(link), chromedp.WaitVisible(`#prompt`))

	// Opened again, with app.js held (not from the cache, where no
	// request would be seen).
	paused := make(chan fetch.RequestID, 1)
	chromedp.ListenTarget(ctx, func(ev any) {
		if e, ok := ev.(*fetch.EventRequestPaused); ok {
			select {
			case paused <- e.RequestID:
			default: // app.js is asked for once
			}
		}
	})
	must("open the session with the app held", network.SetCacheDisabled(true), chromedp.Navigate("about:blank"),
		fetch.Enable().WithPatterns([]*fetch.RequestPattern{{URLPattern: "*/app.js"}}),
		chromedp.Navigate(srv.url+"/#s/"+rec.ID))
	var held fetch.RequestID
	select {
	case held = <-paused:
	case <-ctx.Done():
		t.Fatal("the page never asked for app.js")
	}
	var early firstScreen
	must("see the first screen", chromedp.Poll(fmt.Sprintf(`(() => { const tr = document.getElementById('transcript');
			return !!document.querySelector('#sessions a[data-id=%q]') && !!tr && !!tr.lastElementChild &&
				tr.lastElementChild.textContent.includes('read them') && tr.scrollHeight - tr.scrollTop - tr.clientHeight < 2; })()`, rec.ID), nil),
		chromedp.Evaluate(firstScreenSnapshot+`(0)`, &early),
		// Marked, to tell the app's nodes from these.
		chromedp.Evaluate(`document.querySelectorAll('#main *, #top *').forEach((e) => { e.firstScreen = true; })`, nil))
	if len(early.Rows) < 20 || len(early.Rows) >= calls+3 || len(early.List) != 1 || len(early.Nav) != 1 || len(early.Bar) != 2 {
		t.Fatalf("the first screen: %d rows, %d sessions, %d views, %d bar lines", len(early.Rows), len(early.List), len(early.Nav), len(early.Bar))
	}
	if !strings.Contains(early.Rows[len(early.Rows)-1], "read them &lt;b&gt;all&lt;/b&gt;") {
		t.Fatalf("the reply is not shown as text: %s", early.Rows[len(early.Rows)-1])
	}

	var app firstScreen
	must("let the app run", fetch.ContinueRequest(held), fetch.Disable(),
		chromedp.Poll(fmt.Sprintf(`(() => { const tr = document.getElementById('transcript'), li = document.querySelector('#sessions > li'), nav = document.getElementById('nav');
			return !!document.getElementById('prompt') && tr.children.length === %d && !tr.firstScreen && li && !li.firstScreen && nav && !nav.firstScreen; })()`, calls+3), nil),
		chromedp.Evaluate(fmt.Sprintf(`%s(%d)`, firstScreenSnapshot, len(early.Rows)), &app))
	for _, part := range []struct {
		name       string
		early, app []string
	}{{"views", early.Nav, app.Nav}, {"list", early.List, app.List}, {"bar", early.Bar, app.Bar}, {"rows", early.Rows, app.Rows}} {
		if strings.Join(part.early, "\n") != strings.Join(part.app, "\n") {
			t.Errorf("the first screen's %s differ from the app's:\nfirst: %s\napp:   %s", part.name, firstDiff(part.early, part.app), firstDiff(part.app, part.early))
		}
	}
	if rows := strings.Join(app.Rows, ""); !strings.Contains(rows, `class="tool completed"`) || !strings.Contains(rows, `class="tool failed"`) || !strings.Contains(rows, `class="diff"`) {
		t.Fatalf("the rows compared hold no completed and failed cards: %q", app.Rows)
	}
}

// firstDiff is a's first element unlike b's at the same place.
func firstDiff(a, b []string) string {
	for i := range a {
		if i >= len(b) || a[i] != b[i] {
			return fmt.Sprintf("[%d] %s", i, a[i])
		}
	}
	return fmt.Sprintf("(%d items)", len(a))
}
