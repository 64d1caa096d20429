package cli_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"

	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

// toolHistory serves a session of one turn of calls tool calls (each a
// failed file_read of missing-N.txt) after the prompt "read the files",
// answered "read them all", and returns the link that opens it.
func toolHistory(t *testing.T, calls int) string {
	t.Helper()
	parts := make([]string, calls)
	for i := range parts {
		parts[i] = fmt.Sprintf(`{"id":"c%d","name":"file_read","arguments":{"path":"missing-%d.txt"}}`, i, i)
	}
	sc, err := script.Parse([]byte(`{"rounds":[{"tool_calls":[` + strings.Join(parts, ",") + `]},{"text":"read them all"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	model := modeltest.NewServer(t, sc)
	work, data := t.TempDir(), t.TempDir()
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
	return serveURL(t, work, env, "--session", rec.ID).String()
}

// rowsInOrder fails t unless the transcript is the prompt, a card a call
// in order (its tool, path and status), and the reply.
func rowsInOrder(t *testing.T, ctx context.Context, calls int) {
	t.Helper()
	var order []string
	if err := chromedp.Run(ctx, chromedp.Evaluate(`[...document.querySelectorAll('#transcript > li')].map(li =>
		li.classList.contains('tool') ? li.querySelector('summary').textContent : li.querySelector('.body').textContent)`, &order)); err != nil {
		t.Fatal(err)
	}
	if len(order) != calls+2 || order[0] != "read the files" || order[calls+1] != "read them all" {
		t.Fatalf("%d rows, first and last: %q, %q", len(order), order[0], order[len(order)-1])
	}
	for i := range calls {
		if want := fmt.Sprintf("file_read missing-%d.txt failed", i); order[i+1] != want {
			t.Fatalf("row %d is %q, want %q", i+1, order[i+1], want)
		}
	}
}

// openCard opens the card of call n from the page's script (a click's
// coordinates can land on another card as rows off screen take their
// real height) and returns its text.
func openCard(t *testing.T, ctx context.Context, n int) string {
	t.Helper()
	card := fmt.Sprintf(`document.querySelectorAll('#transcript > li.tool')[%d]`, n)
	var text string
	if err := chromedp.Run(ctx, chromedp.Evaluate(card+`.querySelector('details').open = true`, nil),
		chromedp.Poll(card+`.querySelector('pre.output') !== null`, nil),
		chromedp.Evaluate(card+`.textContent`, &text)); err != nil {
		t.Fatal(err)
	}
	return text
}

// A history longer than a screen: the page opens at its last row, the
// rows above are drawn after it, in order, and a tool card drawn late
// keeps what its call did (status, input, output).
func TestWebAppLongHistoryInChromium(t *testing.T) {
	ctx := chromium(t)
	const calls = 150
	link := toolHistory(t, calls)
	rows := calls + 2 // the prompt, a card a call, the reply
	must := func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	var atBottom bool
	must("open the session", chromedp.Navigate(link),
		chromedp.Poll(fmt.Sprintf(`document.querySelectorAll('#transcript > li').length === %d`, rows), nil),
		chromedp.Evaluate(`(() => { const tr = document.getElementById('transcript');
			return tr.lastElementChild.textContent.includes('read them all') && tr.scrollHeight - tr.scrollTop - tr.clientHeight < 2; })()`, &atBottom))
	if !atBottom {
		t.Fatal("the transcript is not at its last row once every row is drawn")
	}
	rowsInOrder(t, ctx, calls)
	if card := openCard(t, ctx, 0); !strings.Contains(card, `"path": "missing-0.txt"`) || !strings.Contains(card, "missing-0.txt does not exist") {
		t.Fatalf("the first card opened shows %q", card)
	}
}

// The history is read from its end: the last screen is drawn from the
// last page while the page before it is still on its way (held here),
// and once it comes every row is there in order. Its calls started on
// the older page and finished on the last, and their cards show whole:
// those of the first screen, drawn before their start came, and those
// above it.
func TestWebAppHistoryTailFirstInChromium(t *testing.T) {
	ctx := chromium(t)
	const calls = 400 // 400 starts, then 400 finishes: the last page holds finishes only
	link := toolHistory(t, calls)
	paused := make(chan fetch.RequestID, 1)
	chromedp.ListenTarget(ctx, func(ev any) {
		if e, ok := ev.(*fetch.EventRequestPaused); ok {
			select {
			case paused <- e.RequestID:
			default: // one is held at a time: the page asks for the next once this one came
			}
		}
	})
	if err := chromedp.Run(ctx, fetch.Enable().WithPatterns([]*fetch.RequestPattern{{URLPattern: "*/history?before=*"}}),
		chromedp.Navigate(link)); err != nil {
		t.Fatal(err)
	}
	var held fetch.RequestID
	select {
	case held = <-paused:
	case <-ctx.Done():
		t.Fatal("the page never asked for the history before its last page")
	}
	var first struct {
		Rows     int
		Last     string
		AtBottom bool
		Card     string
		Requests []string
	}
	if err := chromedp.Run(ctx,
		chromedp.Poll(`(() => { const tr = document.getElementById('transcript');
			return tr && tr.lastElementChild && tr.lastElementChild.textContent.includes('read them all') &&
				tr.scrollHeight > tr.clientHeight && tr.scrollHeight - tr.scrollTop - tr.clientHeight < 2; })()`, nil),
		chromedp.Evaluate(`(() => { const tr = document.getElementById('transcript'); const cards = tr.querySelectorAll('li.tool');
			return { rows: tr.children.length, last: tr.lastElementChild.textContent, atBottom: tr.scrollHeight - tr.scrollTop - tr.clientHeight < 2,
				card: cards[cards.length - 1].textContent,
				requests: performance.getEntriesByType('resource').map(e => e.name).filter(n => n.includes('/history')) }; })()`, &first)); err != nil {
		t.Fatal(err)
	}
	if first.Rows >= calls+2 || !first.AtBottom || !strings.Contains(first.Card, "file_read") || !strings.Contains(first.Card, "failed") {
		t.Fatalf("before the older page came: %+v", first)
	}
	if len(first.Requests) != 1 || !strings.Contains(first.Requests[0], "/history?tail=") {
		t.Fatalf("history requests before the older page: %v", first.Requests)
	}
	if err := chromedp.Run(ctx, fetch.ContinueRequest(held), fetch.Disable(),
		chromedp.Poll(fmt.Sprintf(`document.querySelectorAll('#transcript > li').length === %d &&
			!document.getElementById('transcript').hasAttribute('aria-busy')`, calls+2), nil)); err != nil {
		t.Fatal(err)
	}
	rowsInOrder(t, ctx, calls)
	for _, n := range []int{calls - 1, 150, 0} {
		card := openCard(t, ctx, n)
		if path := fmt.Sprintf("missing-%d.txt", n); !strings.Contains(card, `"path": "`+path+`"`) || !strings.Contains(card, path+" does not exist") {
			t.Fatalf("card %d opened shows %q", n, card)
		}
	}
}
