package cli_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
	"meka.dev/meka/session"
)

// The web app's views across sessions, in headless Chromium: the list's
// tokens, cost and filters by directory and project; the inbox, where an
// MCP server's question and a tool's approval are each answered in one
// tap; every scheduled job, cancelled from the page; a background task's
// output and its stop. Screenshots of each view at phone and desktop
// widths.
func TestWebAppViewsInChromium(t *testing.T) {
	ctx := chromium(t)
	sc, err := script.Parse([]byte(`{"rounds":[
	 {"tool_calls":[{"id":"bg","name":"shell_execute","arguments":{"command":"echo task-started; exec sleep 600","background":true}}],
	  "usage":{"input_tokens":1200,"output_tokens":300}},
	 {"text":"Started it."},
	 {"tool_calls":[{"id":"c","name":"checklist_add","arguments":{"items":["Read the notes","Ask Ana","Write it up"]}}]},
	 {"tool_calls":[{"id":"e1","name":"checklist_edit","arguments":{"id":"c1","status":"completed"}},{"id":"e2","name":"checklist_edit","arguments":{"id":"c2","status":"deferred","reason":"Ana is away"}},{"id":"e3","name":"checklist_edit","arguments":{"id":"c3","status":"deferred","reason":"after Ana"}}]},
	 {"text":"Noted."},
	 {"text":"The task was stopped."},
	 {"tool_calls":[{"id":"q","name":"mcp__t__ask","arguments":{"mode":"form"}}]},
	 {"text":"Asked."},
	 {"tool_calls":[{"id":"sv","name":"mcp__t__survey","arguments":{}}]},
	 {"text":"Surveyed."},
	 {"tool_calls":[{"id":"w","name":"file_write","arguments":{"path":"out.txt","content":"x"}}]},
	 {"text":"Wrote it."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	model := modeltest.NewServer(t, sc)
	work, other, data := t.TempDir(), t.TempDir(), t.TempDir()
	env := isolatedEnv(t, "OPENAI_API_KEY=k", "OPENAI_BASE_URL="+model.URL+"/v1", "MEKA_DATA_DIR="+data)
	cfgDir := filepath.Join(strings.TrimPrefix(env[2], "XDG_CONFIG_HOME="), "meka")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("[models.\"gpt-4.1\"]\ninput_price = 3\noutput_price = 9\n\n[mcp.servers.t]\ncommand = %q\n", mcpTestServer(t))
	if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := run(t, work, env, "projects", "add", "web"); code != 0 {
		t.Fatalf("projects add: %s", errOut)
	}
	srv := startServe(t, work, env)
	var a, b struct{ ID string }
	if code := srv.call(t, "POST", "/v1/sessions", map[string]any{"cwd": work, "permission": "unrestricted"}, &a); code != 201 {
		t.Fatalf("create: %d", code)
	}
	if code := srv.call(t, "POST", "/v1/sessions", map[string]any{"cwd": other, "permission": "read", "approvals": true}, &b); code != 201 {
		t.Fatalf("create: %d", code)
	}
	if code := srv.call(t, "PATCH", "/v1/sessions/"+b.ID, map[string]any{"project": "web"}, nil); code != 200 {
		t.Fatalf("patch: %d", code)
	}
	fctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	feed := srv.events(t, fctx, "", "0")
	turn := func(id, text string) string {
		t.Helper()
		var tr struct {
			TurnID string `json:"turn_id"`
		}
		if code := srv.call(t, "POST", "/v1/sessions/"+id+"/turns", map[string]any{"input": []map[string]string{{"type": "text", "text": text}}}, &tr); code != 202 {
			t.Fatalf("turn: %d", code)
		}
		return tr.TurnID
	}
	waitTurn := func(turnID string) {
		t.Helper()
		for f := range feed {
			if f.typ == "turn.completed" && f.turnID == turnID {
				return
			}
		}
		t.Fatal("the feed ended")
	}
	waitTurn(turn(a.ID, "start the task"))

	// A third session keeps a checklist, then another process (this
	// test's, on the same database file) takes it.
	var c struct{ ID string }
	if code := srv.call(t, "POST", "/v1/sessions", map[string]any{"cwd": work}, &c); code != 201 {
		t.Fatalf("create: %d", code)
	}
	waitTurn(turn(c.ID, "plan the write-up"))
	if code := srv.call(t, "POST", "/v1/sessions/"+c.ID+"/close", nil, nil); code != 200 {
		t.Fatalf("close: %d", code)
	}
	db, err := sqlite.Open(t.Context(), filepath.Join(data, "meka.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	lock, err := db.Sessions().Lock(t.Context(), c.ID, session.Holder{})
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(context.Background())

	shots := artefacts(t)
	shot := func(name string) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			for _, v := range []struct {
				suffix string
				w, h   int64
			}{{"desktop", 1280, 900}, {"phone", 390, 844}} {
				var buf []byte
				if err := chromedp.Run(ctx, chromedp.EmulateViewport(v.w, v.h), chromedp.FullScreenshot(&buf, 100)); err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(shots, "webapp-"+name+"-"+v.suffix+".png"), buf, 0o644); err != nil {
					return err
				}
			}
			return chromedp.EmulateViewport(1280, 900).Do(ctx)
		})
	}
	must := func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(ctx, actions...); err != nil {
			var els, aps any
			srv.call(t, "GET", "/v1/elicitations", nil, &els)
			srv.call(t, "GET", "/v1/approvals", nil, &aps)
			var page string
			chromedp.Run(ctx, chromedp.Evaluate(`document.querySelector('#main').innerText`, &page))
			t.Fatalf("%s: %v\nelicitations %v\napprovals %v\npage: %s", what, err, els, aps, page)
		}
	}
	row := func(id string) string { return fmt.Sprintf(`#sessions a[data-id=%q]`, id) }

	// The list: tokens and cost of the session that spent them, its
	// checklist-free meta, and both filters.
	must("log in", chromedp.Navigate(serveURL(t, work, env).String()), chromedp.WaitVisible(row(a.ID)), chromedp.WaitVisible(row(b.ID)))
	var usage string
	must("read the usage", chromedp.Text(row(a.ID)+` .usage`, &usage))
	if !strings.Contains(usage, "1.5k tokens") || !strings.Contains(usage, "$0.0063") {
		t.Fatalf("usage in the list: %q", usage)
	}
	must("filter by project", chromedp.SetValue(`#project-filter`, "web"),
		chromedp.Evaluate(`document.querySelector('#project-filter').dispatchEvent(new Event('change'))`, nil),
		chromedp.WaitNotPresent(row(a.ID)), chromedp.WaitVisible(row(b.ID)))
	must("filter by directory", chromedp.SetValue(`#project-filter`, ""), chromedp.SetValue(`#filter`, work),
		chromedp.Evaluate(`document.querySelector('#filter').dispatchEvent(new Event('change'))`, nil),
		chromedp.WaitNotPresent(row(b.ID)), chromedp.WaitVisible(row(a.ID)))
	must("list screenshots", shot("list"))

	// The session another process holds: held elsewhere, naming it, with
	// its checklist's progress folded from the log.
	var status, holder, progress string
	must("see the session held elsewhere", chromedp.WaitVisible(row(c.ID)),
		chromedp.Text(row(c.ID)+` .status`, &status), chromedp.AttributeValue(row(c.ID)+` .status`, "title", &holder, nil),
		chromedp.Text(row(c.ID)+` .progress`, &progress))
	if status != "held elsewhere" || !strings.Contains(holder, fmt.Sprintf("pid %d", os.Getpid())) || !strings.Contains(progress, "checklist 1/3") {
		t.Fatalf("the session held elsewhere shows %q (%q), progress %q", status, holder, progress)
	}

	// The task: its output's tail, then stopped from the page.
	must("see the task", chromedp.Click(`#nav a[href="#tasks"]`),
		chromedp.Poll(`[...document.querySelectorAll('#tasks .output')].some(e => e.textContent.includes('task-started'))`, nil),
		shot("tasks"))
	must("stop the task", chromedp.Click(`#tasks li.running button`),
		chromedp.Poll(`document.querySelectorAll('#tasks li.running').length === 0 && document.querySelectorAll('#tasks li').length === 1`, nil))

	// The report turn of the stopped task, then an MCP server's question,
	// answered from the inbox.
	for f := range feed {
		if f.typ == "turn.completed" {
			break
		}
	}
	asked := turn(a.ID, "ask my name")
	must("answer the elicitation", chromedp.Click(`#nav a[href="#inbox"]`),
		chromedp.WaitVisible(`#inbox-items .elicitation input[name=name]`),
		chromedp.SendKeys(`#inbox-items .elicitation input[name=name]`, "Ada <b>Lovelace</b>"),
		shot("inbox-elicitation"),
		chromedp.Click(`#inbox-items .elicitation button[data-action=accept]`),
		chromedp.WaitNotPresent(`#inbox-items .elicitation`))
	waitTurn(asked)
	// The form's answer, as typed (markup and all), in the tool's result.
	if last := string(model.Requests()[len(model.Requests())-1].Body); !strings.Contains(last, `accept {\"name\":\"Ada `) || !strings.Contains(last, "Lovelace") {
		t.Errorf("the answer did not reach the model: %s", last)
	}

	// A form of every kind of field MCP allows, answered from the inbox:
	// labels from enumNames and oneOf titles, defaults preset, a list's
	// bound checked before anything is sent.
	surveyed := turn(a.ID, "survey me")
	form := `#inbox-items .elicitation form`
	var sizes, color string
	must("fill the survey", chromedp.WaitVisible(form+` input[name=name]`),
		chromedp.SendKeys(form+` input[name=name]`, "Ada"),
		chromedp.SendKeys(form+` input[name=age]`, "36"),
		chromedp.SendKeys(form+` input[name=height]`, "1.7"),
		chromedp.Text(form+` select[name=size]`, &sizes),
		chromedp.Evaluate(`(() => { const s = document.querySelector('`+form+` select[name=color]'); return s.options[s.selectedIndex].text; })()`, &color),
		chromedp.SetValue(form+` select[name=size]`, "1"),
		chromedp.Click(form+` input[name=news]`),
		chromedp.Click(form+` input[name=tags][value=a]`),
		chromedp.Click(form+` input[name=tags][value=b]`),
		chromedp.Click(form+` input[name=tags][value=c]`),
		shot("inbox-survey"),
		chromedp.Click(form+` button[data-action=accept]`),
		chromedp.Poll(`document.querySelector('#inbox-items .elicitation .error').textContent.includes('at most 2')`, nil),
		chromedp.Click(form+` input[name=tags][value=b]`),
		chromedp.Click(form+` button[data-action=accept]`),
		chromedp.WaitNotPresent(`#inbox-items .elicitation`))
	if !strings.Contains(sizes, "Small") || !strings.Contains(sizes, "Large") || color != "blue" {
		t.Errorf("the survey's choices: sizes %q, color preset %q", sizes, color)
	}
	waitTurn(surveyed)
	if last := string(model.Requests()[len(model.Requests())-1].Body); !strings.Contains(last, `accept {\"age\":36,\"color\":\"blue\",\"height\":1.7,\"name\":\"Ada\",\"news\":true,\"size\":\"l\",\"tags\":[\"a\",\"c\"]}`) {
		t.Errorf("the survey's answer did not reach the model: %s", last)
	}
	// A form MCP does not allow (a nested object) is refused on its card:
	// decline and cancel, no accept.
	var refused struct {
		Text   string
		Accept bool
	}
	must("refuse a nested form", chromedp.Evaluate(`import('/app/requests.js').then((m) => {
		const card = m.elicitationCard('s', {elicitation_id: 'nested', server: 't', message: 'Where?', mode: 'form',
			schema: {type: 'object', properties: {address: {type: 'object', properties: {city: {type: 'string'}}}}}}, null);
		document.body.append(card);
		return {text: card.querySelector('.refused').textContent, accept: !!card.querySelector('[data-action=accept]')};
	})`, &refused, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	if !strings.Contains(refused.Text, "address is a nested object") || refused.Accept {
		t.Errorf("a nested form: %+v, want refused naming the field, without accept", refused)
	}

	// An approval of the other session, one tap from the inbox.
	wrote := turn(b.ID, "write out.txt")
	must("approve from the inbox", chromedp.WaitVisible(`#inbox-items .approval button[data-decision=allow]`),
		chromedp.Poll(`document.querySelector('#inbox-count').textContent === '1'`, nil),
		shot("inbox-approval"),
		chromedp.Click(`#inbox-items .approval button[data-decision=allow]`),
		chromedp.WaitNotPresent(`#inbox-items .approval`))
	waitTurn(wrote)
	if _, err := os.Stat(filepath.Join(other, "out.txt")); err != nil {
		t.Fatalf("the approved write: %v", err)
	}

	// Every session's jobs, one cancelled from the page.
	var job, kept struct{ ID string }
	if code := srv.call(t, "POST", "/v1/sessions/"+a.ID+"/schedule", map[string]any{"prompt": "check the build", "every": "30m"}, &job); code != 201 {
		t.Fatalf("schedule: %d", code)
	}
	if code := srv.call(t, "POST", "/v1/sessions/"+b.ID+"/schedule", map[string]any{"prompt": "read the logs", "every": "1h"}, &kept); code != 201 {
		t.Fatalf("schedule: %d", code)
	}
	must("cancel a job", chromedp.Click(`#nav a[href="#schedule"]`),
		chromedp.WaitVisible(fmt.Sprintf(`#all-jobs li[data-job=%q]`, kept.ID)),
		chromedp.WaitVisible(fmt.Sprintf(`#all-jobs li[data-job=%q] button`, job.ID)),
		shot("schedule"),
		chromedp.Evaluate(fmt.Sprintf(`document.querySelector('#all-jobs li[data-job=%q] button').click()`, job.ID), nil),
		chromedp.WaitNotPresent(fmt.Sprintf(`#all-jobs li[data-job=%q]`, job.ID)))
	var jobs struct{ Items []struct{ ID string } }
	if code := srv.call(t, "GET", "/v1/schedule", nil, &jobs); code != 200 || len(jobs.Items) != 1 || jobs.Items[0].ID != kept.ID {
		t.Fatalf("after cancel from the page: %d %v", code, jobs.Items)
	}

	// Everything reached by keyboard: the nav's links take focus.
	var focusable bool
	must("keyboard", chromedp.Evaluate(`(() => { const a = document.querySelector('#nav a[href="#inbox"]'); a.focus(); return document.activeElement === a; })()`, &focusable))
	if !focusable {
		t.Fatal("the inbox link takes no focus")
	}
	t.Logf("screenshots in %s", shots)
}
