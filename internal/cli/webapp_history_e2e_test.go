package cli_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

// A history longer than a screen: the page opens at its last row, the
// rows above are drawn after it, in order, and a tool card drawn late
// keeps what its call did (status, input, output).
func TestWebAppLongHistoryInChromium(t *testing.T) {
	ctx := chromium(t)
	const calls = 150
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
	link := serveURL(t, work, env, "--session", rec.ID).String()
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
	var order []string
	must("read the rows in order", chromedp.Evaluate(`[...document.querySelectorAll('#transcript > li')].map(li =>
		li.classList.contains('tool') ? li.querySelector('summary').textContent : li.querySelector('.body').textContent)`, &order))
	if order[0] != "read the files" || order[rows-1] != "read them all" {
		t.Fatalf("first and last rows: %q, %q", order[0], order[rows-1])
	}
	for i := range calls {
		if want := fmt.Sprintf("file_read missing-%d.txt failed", i); order[i+1] != want {
			t.Fatalf("row %d is %q, want %q", i+1, order[i+1], want)
		}
	}
	var card string
	// Opened from the page's script: a click's coordinates can land on
	// another card as rows off screen take their real height.
	must("open the first card", chromedp.Evaluate(`document.getElementById('transcript').scrollTop = 0;
		document.querySelector('#transcript > li.tool details').open = true`, nil),
		chromedp.Poll(`document.querySelector('#transcript > li.tool pre.output') !== null`, nil),
		chromedp.Evaluate(`document.querySelector('#transcript > li.tool details').textContent`, &card))
	if !strings.Contains(card, `"path": "missing-0.txt"`) || !strings.Contains(card, "missing-0.txt does not exist") {
		t.Fatalf("the first card opened shows %q", card)
	}
}
