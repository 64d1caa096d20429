package cli_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// An older page that cannot be read leaves the history incomplete, under
// a notice that reads the same page again: a dropped connection, then a
// 500, keep it there; the page let through joins above once, every row in
// order, and the notice goes. Nothing asks again unbidden. On a phone's
// width the notice fits. A 401 instead takes the page to sign in, as
// every other call's does.
func TestWebAppOlderPageRetryInChromium(t *testing.T) {
	ctx := chromium(t)
	const calls = 400 // as in TestWebAppHistoryTailFirstInChromium: the last page holds finishes only
	link := toolHistory(t, calls)
	paused := make(chan *fetch.EventRequestPaused, 8)
	chromedp.ListenTarget(ctx, func(ev any) {
		if e, ok := ev.(*fetch.EventRequestPaused); ok {
			select {
			case paused <- e:
			default: // more than the buffer: the check for requests unbidden fails anyway
			}
		}
	})
	must := func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	next := func(what string) *fetch.EventRequestPaused {
		t.Helper()
		select {
		case e := <-paused:
			return e
		case <-ctx.Done():
			t.Fatalf("the page never asked for %s", what)
			return nil
		}
	}
	problem := func(id fetch.RequestID, status int64) chromedp.Action {
		body := fmt.Sprintf(`{"type":"about:blank","title":"test","status":%d}`, status)
		return fetch.FulfillRequest(id, status).
			WithResponseHeaders([]*fetch.HeaderEntry{{Name: "Content-Type", Value: "application/problem+json"}}).
			WithBody(base64.StdEncoding.EncodeToString([]byte(body)))
	}
	const notice = `document.querySelector('.older-failed')`
	failedShown := notice + ` !== null && !` + notice + `.querySelector('button').disabled`

	must("open the session on a phone's width", chromedp.EmulateViewport(390, 844),
		fetch.Enable().WithPatterns([]*fetch.RequestPattern{{URLPattern: "*/history?before=*"}}),
		chromedp.Navigate(link))
	first := next("the history before its last page")
	must("drop the older page", fetch.FailRequest(first.RequestID, network.ErrorReasonConnectionReset),
		chromedp.Poll(failedShown, nil))
	var shown struct {
		Text      string
		Visible   bool
		Fits      bool
		AboveRows bool
		Rows      int
		FirstRow  string
		Busy      bool
	}
	must("read the notice", chromedp.Evaluate(`(() => { const n = `+notice+`, r = n.getBoundingClientRect(), tr = document.getElementById('transcript');
		return { text: n.textContent, visible: n.checkVisibility() && r.width > 0 && r.height > 0,
			fits: r.left >= 0 && r.right <= innerWidth && n.scrollWidth <= n.clientWidth && document.documentElement.scrollWidth <= innerWidth,
			aboveRows: n.nextElementSibling === tr, rows: tr.children.length, firstRow: tr.firstElementChild.textContent,
			busy: tr.hasAttribute('aria-busy') }; })()`, &shown))
	if !strings.Contains(shown.Text, "could not be loaded") || !strings.Contains(shown.Text, "Retry") || !shown.Visible || !shown.Fits || !shown.AboveRows {
		t.Fatalf("the notice: %+v", shown)
	}
	// Not read to its start: the prompt is on the page that failed, and
	// the cards whose starts are on it wait for them, undrawn. Nothing is
	// on its way, so the transcript is not busy (its live rows are
	// announced meanwhile).
	if shown.Rows >= calls || strings.Contains(shown.FirstRow, "read the files") || shown.Busy {
		t.Fatalf("after the older page failed: %+v", shown)
	}
	select {
	case e := <-paused:
		t.Fatalf("the page asked again before Retry: %s", e.Request.URL)
	default:
	}

	must("retry", chromedp.Click(`.older-failed button`, chromedp.ByQuery))
	again := next("the older page again")
	if again.Request.URL != first.Request.URL {
		t.Fatalf("retried %s, want %s", again.Request.URL, first.Request.URL)
	}
	var disabled bool
	must("retry in flight", chromedp.Evaluate(notice+`.querySelector('button').disabled`, &disabled))
	if !disabled {
		t.Fatal("Retry can be pressed again while its page is on its way")
	}
	must("fail it with a 500", problem(again.RequestID, 500), chromedp.Poll(failedShown, nil))

	must("retry", chromedp.Click(`.older-failed button`, chromedp.ByQuery))
	if third := next("the older page a third time"); third.Request.URL != first.Request.URL {
		t.Fatalf("retried %s, want %s", third.Request.URL, first.Request.URL)
	} else {
		must("let it through", fetch.ContinueRequest(third.RequestID),
			chromedp.Poll(fmt.Sprintf(`document.querySelectorAll('#transcript > li').length === %d &&
				!document.getElementById('transcript').hasAttribute('aria-busy') && `+notice+` === null`, calls+2), nil))
	}
	rowsInOrder(t, ctx, calls)
	for _, n := range []int{calls - 1, 0} {
		card := openCard(t, ctx, n)
		if path := fmt.Sprintf("missing-%d.txt", n); !strings.Contains(card, `"path": "`+path+`"`) || !strings.Contains(card, path+" does not exist") {
			t.Fatalf("card %d opened shows %q", n, card)
		}
	}

	// The session cookie gone: the older page's 401 signs out.
	must("reload", chromedp.Reload())
	out := next("the older page after reloading")
	must("answer 401", problem(out.RequestID, 401),
		chromedp.Poll(`document.getElementById('signin') !== null && `+notice+` === null`, nil))
}
