package cli_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

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

// BenchmarkWebAppTranscript2000 is the time from navigating to a session
// to its 2,000-row transcript rendered, in headless Chromium, as the page
// measures it (ms from navigation start): until a frame shows every row
// (ms-to-render), and until the page had drawn its history into the DOM
// (ms-history-drawn, its own performance mark).
func BenchmarkWebAppTranscript2000(b *testing.B) {
	w := newWebappBench(b, 2000)
	page := w.srv.url + "/#s/" + w.session
	var total, drawn float64
	b.ResetTimer()
	for range b.N {
		var ms, mark float64
		err := chromedp.Run(w.ctx, chromedp.Navigate("about:blank"), chromedp.Navigate(page),
			chromedp.Poll(fmt.Sprintf(`document.querySelectorAll('#transcript > li').length >= %d`, w.rows), nil),
			chromedp.Evaluate(`performance.now()`, &ms),
			chromedp.Evaluate(`performance.getEntriesByName('meka:history-drawn')[0].startTime`, &mark))
		if err != nil {
			b.Fatal(err)
		}
		total += ms
		drawn += mark
	}
	b.ReportMetric(total/float64(b.N), "ms-to-render")
	b.ReportMetric(drawn/float64(b.N), "ms-history-drawn")
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
