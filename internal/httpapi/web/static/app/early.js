// The page's start: index.html's one script, a classic one run first.
// On a page opened on a session it sends the session's, its history's
// last page and the list's requests at once and draws the first screen
// from their answers (the session list and the transcript's last rows, as
// the app draws them), before the app's modules are read, compiled and
// run: 100 ms and more on a loaded phone, and their reading took the
// main thread from the answers. Once that screen is painted (at once on
// other pages) it runs the app (app.js), which takes the answers (api.js)
// and draws its own screen in this one's place; nothing reads state from
// these nodes. What comes from the API is put in the page as text, never
// parsed as HTML.
"use strict";
// What the app says in words, shared by the first screen and the app's
// modules (dom.js, transcript.js and session.js take them from here).
self.mekaWords = (() => {
  const fmtTime = (iso) => {
    const d = new Date(iso);
    if (isNaN(d)) return "";
    const s = (Date.now() - d) / 1000;
    if (s < 60) return "just now";
    if (s < 3600) return Math.floor(s / 60) + " min ago";
    if (s < 86400) return Math.floor(s / 3600) + " h ago";
    return d.toLocaleDateString();
  };
  const fmtTokens = (n) => n >= 1e6 ? (n / 1e6).toFixed(1) + "M" : n >= 1000 ? (n / 1000).toFixed(1) + "k" : String(n);
  // fmtCost is " · $0.12", or nothing for a model without prices.
  const fmtCost = (c) => c ? " · $" + (c < 0.01 ? c.toFixed(4) : c.toFixed(2)) : "";
  return {
    fmtTime, fmtTokens, fmtCost,
    // statusOf is a record's state in words: idle, running, waiting for
    // approval (or an MCP server's question), or held elsewhere (another
    // meka process holds it: a REPL, a one-shot run, another host).
    statusOf: (rec) => {
      if (rec.state.held_elsewhere) return "held elsewhere";
      if (rec.state.pending_approvals > 0 || rec.state.pending_elicitations > 0) return "waiting for approval";
      if (rec.state.status === "running") return "running";
      return "idle";
    },
    // holderOf says which process holds a session held elsewhere.
    holderOf: (rec) => {
      const h = rec.state.holder;
      return h ? `held by meka pid ${h.pid} on ${h.host}` : "";
    },
    // usage is a session's tokens and cost, or nothing before its first.
    usage: (u) => u && u.input_tokens + u.output_tokens > 0 ? `${fmtTokens(u.input_tokens + u.output_tokens)} tokens` + fmtCost(u.cost) : "",
    // who says who wrote a message, and messageText what it says.
    who: (d) => d.role === "user" ? (d.source === "inbox" ? "steer" : d.source === "schedule" ? "scheduled" : "you") : "meka",
    messageText: (d) => (d.content || []).map((c) => c.type === "text" ? c.text : `[${c.type}${c.name ? " " + c.name : ""}]`).join("\n"),
    // primary is a tool input's most telling argument, for its card's title.
    primary: (input) => {
      if (!input || typeof input !== "object") return "";
      for (const k of ["path", "command", "file_path", "pattern", "url", "query"]) {
        if (typeof input[k] === "string") return input[k];
      }
      return "";
    },
    inputText: (input) => typeof input === "string" ? input : JSON.stringify(input, null, 2),
    diffClass: (line) => line.startsWith("+") && !line.startsWith("+++") ? "add" : line.startsWith("-") && !line.startsWith("---") ? "del" : line.startsWith("@@") ? "hunk" : "",
    // waiting is how many requests wait on a person across sessions, for
    // the inbox's badge (nothing when none).
    waiting: (sessions) => {
      let n = 0;
      for (const s of sessions) n += (s.state.pending_approvals || 0) + (s.state.pending_elicitations || 0);
      return n ? String(n) : "";
    },
    // mark is a checklist item's status as a sign.
    mark: (status) => ({ completed: "✓", in_progress: "▸", deferred: "–", pending: "○" })[status] || "○",
  };
})();

self.mekaEarly = (() => {
  const words = self.mekaWords;
  const sent = new Map(); // path → its answer, read

  // tailPath is where a session's history is read first: its last events,
  // enough for a screen of rows in most sessions (session.js reads more
  // when they are not).
  const tailPath = (base) => base + "/history?tail=300";
  const listPath = "/v1/sessions?limit=200";

  // read takes a response's body as soon as it comes, while the modules
  // load; json parses it once, for this screen and the app alike.
  const read = (res) => res.text().then((text) => {
    let data;
    return {
      status: res.status, ok: res.ok, statusText: res.statusText,
      json: () => (data === undefined ? (data = text ? JSON.parse(text) : null) : data),
    };
  });

  const here = document.currentScript.src; // the app's files are beside it
  // Every module of the app (web_test.go checks the list).
  const appModules = ["app.js", "dom.js", "api.js", "session.js", "transcript.js", "requests.js", "views.js"];
  let shown = ""; // the session whose first screen this script drew
  let firstScreen = null; // drawn and painted, or given up
  // parsed is the page's body in hand.
  const parsed = new Promise((resolve) => {
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", resolve, { once: true });
    else resolve();
  });

  const m = location.hash.match(/^#s\/([^&#]+)$/);
  if (m) {
    let id = "", base = "";
    try {
      id = decodeURIComponent(m[1]);
      base = "/v1/sessions/" + encodeURIComponent(id);
    } catch { /* not a session id */ }
    // The paths as session.js and app.js ask for them.
    for (const path of base ? [base, tailPath(base), listPath] : []) {
      const res = fetch(path, { credentials: "same-origin" }).then(read);
      res.catch(() => {}); // whoever takes it sees the failure
      sent.set(path, res);
    }
    if (base) {
      firstScreen = Promise.all([sent.get(base), sent.get(tailPath(base)), sent.get(listPath), parsed]).then(([rec, hist, list]) => {
        if (!rec.ok || !hist.ok || !list.ok || !drawFirstScreen(id, rec.json(), hist.json(), list.json())) return;
        shown = id;
        // Painted: after the next frame (a hidden tab has none: the timer).
        return new Promise((resolve) => {
          requestAnimationFrame(() => setTimeout(resolve));
          setTimeout(resolve, 100);
        });
      }).catch(() => {}); // the app shows what went wrong
    }
  }
  // The app's modules are asked for only now, all at once (app.js and
  // what it imports): read while the first screen's answers come, they
  // took the main thread from them.
  Promise.all([parsed, firstScreen]).then(() => {
    for (const file of appModules) {
      document.head.append(Object.assign(document.createElement("link"), { rel: "modulepreload", href: new URL(file, here).href }));
    }
    import(new URL("app.js", here).href);
  });

  // taken returns the answer sent early for a GET of path, once; else null.
  const taken = (path) => {
    const res = sent.get(path);
    sent.delete(path);
    return res || null;
  };

  // start is the app's first step: it returns the session whose first
  // screen is shown, if one is, once.
  const start = () => {
    const id = shown;
    shown = "";
    return id;
  };
  // --- the first screen ---------------------------------------------------------
  // The same nodes, classes and text as app.js's list and session.js and
  // transcript.js's rows (TestWebAppFirstScreenInChromium compares them).

  // el makes an element; strings become text nodes.
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== false) e.setAttribute(k, v === true ? "" : v);
    for (const c of children) if (c !== "" && c !== null && c !== undefined) e.append(c);
    return e;
  }

  // drawFirstScreen draws session id's page from its record, the last page
  // of its history and the first of the list; false if it leaves it to the
  // app: the page not parsed yet, or the history's last page short of a
  // screen while there is more (the app reads more before it draws).
  function drawFirstScreen(id, rec, hist, list) {
    const main = document.getElementById("main");
    const top = document.getElementById("top");
    if (!main || !top) return false;
    const screenRows = Math.max(40, Math.ceil(innerHeight / 20)); // as transcript.js
    const { rows, plan } = replayTail(hist.items || []);
    if (rows.length < screenRows && hist.prev_cursor) return false;

    const status = words.statusOf(rec);
    const sessions = (list.items || []).filter((s) => !s.parent_id);
    const view = el("div", { class: "session-view" },
      el("div", { class: "bar" }, el("a", { href: "#", class: "back" }, "‹ Sessions"), el("h2", { id: "title" }, rec.title || "(untitled)"),
        el("span", { id: "status", class: "status " + status.replace(/ /g, "-") }, status), el("span", { id: "usage", class: "meta" }, words.usage(rec.usage))),
      el("p", { class: "dir" }, rec.cwd, " · ", rec.profile, " · ", rec.permission, rec.project ? " · " + rec.project : ""),
      el("div", { id: "approvals", "aria-live": "polite" }));
    const items = plan || rec.checklist || [];
    if (items.length) {
      view.append(el("details", { id: "plan-panel", open: true }, el("summary", {}, "Checklist"),
        el("ol", { id: "plan" }, ...items.map((i) => el("li", { class: "item " + i.status },
          el("span", { class: "mark" }, words.mark(i.status)), " ", i.text, i.reason ? el("span", { class: "reason" }, " (" + i.reason + ")") : "")))));
    }
    const transcript = el("ol", { id: "transcript", "aria-live": "polite", "aria-label": "Transcript", "aria-busy": rows.length > screenRows || hist.prev_cursor ? "true" : false },
      ...rows.slice(Math.max(0, rows.length - screenRows)).map((r) => r()));
    view.append(transcript);

    const nav = el("nav", { id: "nav", "aria-label": "Views" },
      el("a", { href: "#" }, "Sessions"), el("a", { href: "#inbox", id: "inbox-link" }, "Inbox ", el("span", { id: "inbox-count", class: "count" }, words.waiting(sessions))),
      el("a", { href: "#schedule" }, "Schedules"), el("a", { href: "#tasks" }, "Tasks"));
    top.append(nav, el("button", { type: "button", id: "logout" }, "Sign out"));
    main.replaceChildren(
      el("section", { id: "list", class: "pane" },
        el("div", { class: "bar filters" },
          el("label", { for: "filter", class: "sr" }, "Directory"), el("select", { id: "filter" }, el("option", { value: "" }, "All directories")),
          el("label", { for: "project-filter", class: "sr" }, "Project"), el("select", { id: "project-filter", hidden: true }, el("option", { value: "" }, "All projects"))),
        el("ul", { id: "sessions" }, ...(sessions.length ? sessions.map((s) => sessionItem(s, id)) : [el("li", { class: "empty" }, "No sessions yet.")]))),
      el("section", { id: "session", class: "pane" }, view));
    document.body.classList.add("reading");
    transcript.scrollTop = transcript.scrollHeight;
    return true;
  }

  // sessionItem is a session's line in the list (app.js renderList).
  function sessionItem(s, current) {
    const st = words.statusOf(s);
    const p = s.checklist_progress;
    const u = s.usage;
    return el("li", {},
      el("a", { href: "#s/" + encodeURIComponent(s.id), class: "session" + (current === s.id ? " current" : ""), "data-id": s.id },
        el("span", { class: "title" }, s.title || "(untitled)"),
        el("span", { class: "status " + st.replace(/ /g, "-"), title: words.holderOf(s) || undefined }, st),
        el("span", { class: "dir" }, s.cwd, s.project ? " · " + s.project : ""),
        el("span", { class: "meta" },
          "active " + words.fmtTime(s.updated_at),
          p && p.total ? el("span", { class: "progress" }, ` · checklist ${p.completed}/${p.total}`) : "",
          u ? el("span", { class: "usage" }, ` · ${words.fmtTokens(u.input_tokens + u.output_tokens)} tokens` + words.fmtCost(u.cost)) : "")));
  }

  // replayTail is the rows a history's last page gives (transcript.js's
  // replay of it), oldest first, each a function that builds its node: the
  // calls finished there whose start is on an older page first, as the app
  // keeps them until that page comes; and the page's last plan.
  function replayTail(items) {
    let rows = [], orphans = [], tools = new Map(), plan = null;
    const notice = (severity, title, text) => () => el("li", { class: "notice " + severity }, el("strong", {}, title), text ? " " + text : "");
    for (const e of items) {
      const d = e.data || {};
      switch (e.type) {
        case "message.created": {
          const text = (d.content || []).map((c) => c.type === "text" ? c.text : `[${c.type}${c.name ? " " + c.name : ""}]`).join("\n");
          const who = d.role === "user" ? (d.source === "inbox" ? "steer" : d.source === "schedule" ? "scheduled" : "you") : "meka";
          rows.push(() => el("li", { class: "msg " + d.role, "data-row": d.row }, el("span", { class: "who" }, who), el("div", { class: "body" }, text)));
          break;
        }
        case "tool.started": {
          const t = { tool: d.tool, title: d.title || words.primary(d.input), input: d.input, status: "running", text: "", diff: "" };
          tools.set(d.call_id, t);
          rows.push(() => toolCard(t));
          break;
        }
        case "tool.finished": {
          let t = tools.get(d.call_id);
          if (!t) {
            t = { tool: d.tool, title: "", input: "", status: "running", text: "", diff: "" };
            tools.set(d.call_id, t);
            orphans.push(() => toolCard(t));
          }
          t.status = d.status;
          t.text = (d.result || "") + (d.truncated ? "\n… (cut)" : "");
          t.diff = d.diff || "";
          break;
        }
        case "notice": rows.push(notice(d.severity, d.title, d.text)); break;
        case "hook.finished": rows.push(notice("info", "hook " + d.event, d.command + " → " + d.decision)); break;
        case "context.compacted": rows.push(notice("info", "context compacted", d.status)); break;
        case "checklist.updated": case "plan.updated": plan = d.items; break;
        case "turn.completed":
          if (d.status && d.status !== "completed") rows.push(notice("warning", "turn " + d.status, ""));
          if (d.status === "failed" && d.error) rows.push(notice("warning", "turn failed", d.error.title || ""));
          break;
      }
    }
    return { rows: [...orphans, ...rows], plan };
  }

  // toolCard is a call's card: its summary line, and a changed file's diff
  // open under its input and output.
  function toolCard(t) {
    const details = el("details", {}, el("summary", {}, el("span", { class: "tname" }, t.tool), " ", t.title, " ", el("span", { class: "tstatus" }, t.status)));
    if (t.diff) {
      const pre = el("pre", { class: "diff" });
      for (const line of t.diff.split("\n")) pre.append(el("span", { class: words.diffClass(line) }, line + "\n"));
      details.append(el("h3", {}, "Input"), el("pre", { class: "input" }, words.inputText(t.input)), el("h3", {}, "Output"), el("pre", { class: "output" }, t.text), el("h3", {}, "Diff"), pre);
      details.open = true;
    }
    return el("li", { class: t.status === "running" ? "tool" : "tool " + t.status }, details);
  }

  return { tailPath, taken, read, start };
})();
