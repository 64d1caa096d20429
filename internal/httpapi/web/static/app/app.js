// meka's web app: sessions of a meka serve, watched and steered. Plain
// modules, no build step. Everything that comes from the model, tools or
// the API is put in the page as text (textContent), never parsed as HTML.

import { h, clear, fmtTime, fmtTokens, statusOf } from "./dom.js";
import { Transcript } from "./transcript.js";

const state = {
  sessions: [],
  filter: "",
  current: null, // the open session's record
  feed: null, // the open session's EventSource
  usage: new Map(), // session id → {input, output, cost} summed from turn.completed
};

const main = document.getElementById("main");
const conn = document.getElementById("conn");

// api calls the API with the session cookie; a 401 means signed out.
async function api(method, path, body) {
  const init = { method, credentials: "same-origin", headers: {} };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  if (res.status === 401) {
    signedOut("Your browser session has ended.");
    throw new Error("signed out");
  }
  const text = await res.text();
  const data = text ? JSON.parse(text) : null;
  if (!res.ok) {
    const err = new Error((data && (data.detail || data.title)) || res.statusText);
    err.status = res.status;
    err.code = data && data.code;
    throw err;
  }
  return data;
}

function signedOut(why) {
  closeFeed();
  clear(main);
  main.append(
    h("section", { class: "signin", id: "signin" },
      h("h2", {}, "Sign in"),
      h("p", {}, why),
      h("p", {}, "Run ", h("code", {}, "meka serve url"), " on the machine running meka serve and open the link it prints. Each link works once, for ten minutes.")));
}

// login spends a link's code (in the URL fragment, which no server sees)
// for the session cookie, then drops it from the address bar.
async function login() {
  const frag = new URLSearchParams(location.hash.slice(1));
  const code = frag.get("code");
  if (!code) return true;
  const session = frag.get("session");
  history.replaceState(null, "", session ? "#s/" + encodeURIComponent(session) : location.pathname);
  const res = await fetch("/v1/login", {
    method: "POST", credentials: "same-origin",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ code }),
  });
  if (res.ok) return true;
  signedOut("This login link was already used or has expired.");
  return false;
}

// --- the session list -----------------------------------------------------

async function loadSessions() {
  const out = [];
  let cursor = "";
  for (let page = 0; page < 20; page++) { // bounded: 20 pages of 100
    const q = new URLSearchParams({ limit: "100" });
    if (cursor) q.set("cursor", cursor);
    const data = await api("GET", "/v1/sessions?" + q);
    out.push(...data.items);
    if (!data.next_cursor) break;
    cursor = data.next_cursor;
  }
  state.sessions = out.filter((s) => !s.parent_id);
  renderList();
}

function renderList() {
  const list = document.getElementById("sessions");
  if (!list) return;
  const dirs = [...new Set(state.sessions.map((s) => s.cwd))].sort();
  const sel = document.getElementById("filter");
  const keep = sel.value;
  clear(sel);
  sel.append(h("option", { value: "" }, "All directories"), ...dirs.map((d) => h("option", { value: d }, d)));
  sel.value = dirs.includes(keep) ? keep : "";
  state.filter = sel.value;
  clear(list);
  const shown = state.sessions.filter((s) => !state.filter || s.cwd === state.filter);
  if (shown.length === 0) list.append(h("li", { class: "empty" }, "No sessions yet."));
  for (const s of shown) {
    const st = statusOf(s);
    const done = (s.checklist || []).filter((i) => i.status === "completed").length;
    const total = (s.checklist || []).length;
    const u = state.usage.get(s.id);
    list.append(h("li", {},
      h("a", { href: "#s/" + encodeURIComponent(s.id), class: "session" + (state.current && state.current.id === s.id ? " current" : ""), "data-id": s.id },
        h("span", { class: "title" }, s.title || "(untitled)"),
        h("span", { class: "status " + st.replace(/ /g, "-") }, st),
        h("span", { class: "dir" }, s.cwd),
        h("span", { class: "meta" },
          "active " + fmtTime(s.updated_at),
          total ? ` · checklist ${done}/${total}` : "",
          u ? ` · ${fmtTokens(u.input + u.output)} tokens` + (u.cost ? ` · $${u.cost.toFixed(2)}` : "") : ""))));
  }
}

function listView() {
  return h("section", { id: "list", class: "pane" },
    h("div", { class: "bar" },
      h("label", { for: "filter" }, "Directory"),
      h("select", { id: "filter", onchange: (e) => { state.filter = e.target.value; renderList(); } })),
    h("ul", { id: "sessions" }),
    newSessionForm());
}

function newSessionForm() {
  const form = h("form", { id: "new-session", class: "card" },
    h("h2", {}, "New session"),
    h("label", {}, "Directory", h("input", { name: "cwd", required: true, placeholder: "/home/you/project", autocomplete: "off" })),
    h("label", {}, "Profile", h("input", { name: "profile", placeholder: "default", autocomplete: "off" })),
    h("label", {}, "Level",
      h("select", { name: "permission" },
        h("option", { value: "" }, "default"), h("option", { value: "read" }, "read"),
        h("option", { value: "workspace" }, "workspace"), h("option", { value: "unrestricted" }, "unrestricted"))),
    h("button", { type: "submit" }, "Create"),
    h("p", { class: "error", role: "alert" }));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const f = new FormData(form);
    const body = { cwd: f.get("cwd") };
    if (f.get("profile")) body.profile = f.get("profile");
    if (f.get("permission")) body.permission = f.get("permission");
    try {
      const rec = await api("POST", "/v1/sessions", body);
      form.reset();
      location.hash = "#s/" + encodeURIComponent(rec.id);
      await loadSessions();
    } catch (err) {
      form.querySelector(".error").textContent = err.message;
    }
  });
  return form;
}

// --- one session ------------------------------------------------------------

// A tab holds one stream at a time (browsers allow six HTTP/1.1
// connections to a server across all tabs): the open session's feed, or
// else the list's.
function closeFeed() {
  if (state.feed) state.feed.close();
  state.feed = null;
  clearInterval(state.poll);
}

async function openSession(id) {
  closeFeed();
  const view = document.getElementById("session");
  clear(view);
  let rec;
  try {
    rec = await api("GET", "/v1/sessions/" + encodeURIComponent(id));
  } catch (err) {
    view.append(h("p", { class: "error" }, err.message));
    return;
  }
  state.current = rec;
  document.body.classList.add("reading");
  renderList();
  const t = new Transcript();
  const plan = h("ol", { id: "plan" });
  const approvals = h("div", { id: "approvals", "aria-live": "polite" });
  const text = h("textarea", { id: "prompt", rows: 3, placeholder: "Message… (Ctrl+Enter sends)", "aria-label": "Message" });
  const send = h("button", { id: "send", type: "submit" }, "Send");
  const cancel = h("button", { id: "cancel", type: "button", class: "danger", hidden: true }, "Cancel turn");
  const err = h("p", { class: "error", role: "alert" });
  const usage = h("span", { id: "usage" });
  const composer = h("form", { id: "composer" }, text, h("div", { class: "row" }, send, cancel), err);
  view.append(
    h("div", { class: "bar" },
      h("a", { href: "#", class: "back" }, "‹ Sessions"),
      h("h2", { id: "title" }, rec.title || "(untitled)"),
      h("span", { id: "status", class: "status" }), usage),
    h("p", { class: "dir" }, rec.cwd, " · ", rec.profile, " · ", rec.permission),
    approvals,
    h("details", { id: "plan-panel", open: true }, h("summary", {}, "Checklist"), plan),
    h("details", { id: "jobs-panel", hidden: true }, h("summary", {}, "Schedule"), h("ul", { id: "jobs" })),
    t.el,
    composer);

  const setStatus = () => {
    const st = statusOf(rec);
    const el = document.getElementById("status");
    el.textContent = st;
    el.className = "status " + st.replace(/ /g, "-");
    cancel.hidden = rec.state.status !== "running";
    send.textContent = rec.state.status === "running" ? "Steer" : "Send";
  };
  const setPlan = (items) => {
    clear(plan);
    for (const i of items || []) {
      plan.append(h("li", { class: "item " + i.status }, h("span", { class: "mark" }, mark(i.status)), " ", i.text, i.reason ? h("span", { class: "reason" }, " (" + i.reason + ")") : ""));
    }
    document.getElementById("plan-panel").hidden = !items || items.length === 0;
  };
  setStatus();
  setPlan(rec.checklist);

  // The session's scheduled jobs: when each fires next, why one is
  // withheld or parked, and a cancel.
  const loadJobs = async () => {
    let data;
    try { data = await api("GET", `/v1/sessions/${encodeURIComponent(id)}/schedule`); } catch { return; }
    const ul = document.getElementById("jobs");
    if (!ul) return;
    clear(ul);
    for (const j of data.items || []) {
      const li = h("li", { class: "job", "data-job": j.id },
        h("span", { class: "prompt" }, j.prompt), " · next " + (j.next_fire_local || j.next_fire_at),
        j.withheld ? h("span", { class: "reason" }, " · " + j.withheld) : "",
        j.parked ? h("span", { class: "reason" }, " · held: " + j.parked.reason) : "",
        " ", h("button", {
          type: "button", class: "danger",
          onclick: async () => {
            try { await api("DELETE", "/v1/schedule/" + encodeURIComponent(j.id)); } catch (e) { if (e.status !== 404) { err.textContent = e.message; return; } }
            loadJobs();
          },
        }, "Cancel job"));
      ul.append(li);
    }
    document.getElementById("jobs-panel").hidden = ul.childElementCount === 0;
    document.getElementById("jobs-panel").open = ul.childElementCount > 0;
  };
  loadJobs();

  const addApproval = (d) => {
    if (document.getElementById("ap-" + d.approval_id)) return;
    const card = h("div", { class: "card approval", id: "ap-" + d.approval_id },
      h("p", {}, h("strong", {}, "Approve? "), d.title || d.tool),
      d.input !== undefined ? h("pre", {}, JSON.stringify(d.input, null, 2)) : "",
      h("div", { class: "row" }, ...(d.options || ["allow", "deny"]).map((o) =>
        h("button", {
          type: "button", class: o.startsWith("deny") ? "danger" : "",
          onclick: async () => {
            try { await api("POST", `/v1/sessions/${encodeURIComponent(id)}/approvals/${encodeURIComponent(d.approval_id)}`, { decision: o }); } catch (e) { if (e.status !== 409 && e.status !== 404) err.textContent = e.message; }
            card.remove();
          },
        }, o.replace("_", " ")))));
    approvals.append(card);
  };

  // The feed from its start: durable events replay, deltas stream live.
  // EventSource reconnects by itself, sending Last-Event-ID.
  const es = new EventSource(`/v1/sessions/${encodeURIComponent(id)}/events?after=0`);
  state.feed = es;
  // Other sessions' changes, without a second stream.
  state.poll = setInterval(() => loadSessions().catch(() => {}), 15000);
  es.onopen = () => { conn.textContent = ""; };
  es.onerror = () => { conn.textContent = es.readyState === EventSource.CLOSED ? "disconnected" : "reconnecting…"; };
  const on = (type, fn) => es.addEventListener(type, (ev) => {
    let env;
    try { env = JSON.parse(ev.data); } catch { return; }
    fn(env.data || {}, env);
  });
  on("message.delta", (d) => t.delta(d.row, d.text, "assistant"));
  on("thought.delta", (d) => t.delta("t" + d.row, d.text, "thought"));
  on("message.created", (d) => t.message(d));
  on("tool.started", (d) => t.toolStarted(d));
  on("tool.output", (d) => t.toolOutput(d));
  on("tool.finished", (d) => t.toolFinished(d));
  on("notice", (d) => t.notice(d.severity, d.title, d.text));
  on("hook.finished", (d) => t.notice("info", "hook " + d.event, d.command + " → " + d.decision));
  on("context.compacted", (d) => t.notice("info", "context compacted", d.status));
  on("inbox.delivered", () => {});
  on("checklist.updated", (d) => setPlan(d.items));
  on("plan.updated", (d) => setPlan(d.items));
  on("turn.started", (d) => { rec.state.status = "running"; rec.state.turn_id = d.turn_id; setStatus(); });
  on("turn.completed", (d) => {
    rec.state.status = "idle"; rec.state.turn_id = ""; setStatus();
    t.endTurn(d);
    if (d.usage) {
      const u = state.usage.get(id) || { input: 0, output: 0, cost: 0 };
      u.input += d.usage.input_tokens || 0; u.output += d.usage.output_tokens || 0; u.cost += d.usage.cost || 0;
      state.usage.set(id, u);
      if (u.input + u.output > 0) usage.textContent = `${fmtTokens(u.input + u.output)} tokens` + (u.cost ? ` · $${u.cost.toFixed(2)}` : "");
    }
    if (d.status === "failed" && d.error) t.notice("warning", "turn failed", d.error.title || "");
  });
  on("approval.requested", (d) => { addApproval(d); rec.state.pending_approvals++; setStatus(); });
  on("approval.resolved", (d) => {
    const c = document.getElementById("ap-" + d.approval_id);
    if (c) c.remove();
    rec.state.pending_approvals = Math.max(0, rec.state.pending_approvals - 1); setStatus();
  });
  on("session.updated", (d) => {
    if (d.changed && d.changed.title) document.getElementById("title").textContent = d.changed.title;
    loadSessions().catch(() => {});
  });
  on("feed.reset", () => { t.clear(); });
  for (const type of ["schedule.created", "schedule.cancelled", "schedule.changed", "schedule.fired"]) on(type, () => loadJobs());

  const submit = async () => {
    const msg = text.value.trim();
    if (!msg) return;
    err.textContent = "";
    const base = `/v1/sessions/${encodeURIComponent(id)}`;
    try {
      if (rec.state.status === "running") {
        await api("POST", base + "/inbox", { text: msg, start_if_idle: true });
      } else {
        const turn = await api("POST", base + "/turns", { input: [{ type: "text", text: msg }] });
        rec.state.status = "running"; rec.state.turn_id = turn.turn_id; setStatus();
      }
      text.value = "";
    } catch (e) {
      if (e.code === "turn-in-flight") {
        await api("POST", base + "/inbox", { text: msg, start_if_idle: true });
        text.value = "";
        return;
      }
      if (e.code === "held-elsewhere") { rec.state.heldElsewhere = true; setStatus(); }
      err.textContent = e.message;
    }
  };
  composer.addEventListener("submit", (e) => { e.preventDefault(); submit(); });
  text.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); submit(); }
  });
  cancel.addEventListener("click", async () => {
    if (!rec.state.turn_id) return;
    try { await api("POST", `/v1/sessions/${encodeURIComponent(id)}/turns/${encodeURIComponent(rec.state.turn_id)}/cancel`); } catch (e) { err.textContent = e.message; }
  });
  // Approvals still open when the page loads (the feed's replay also
  // names them, resolved or not; the list is the truth).
  try {
    const open = await api("GET", `/v1/sessions/${encodeURIComponent(id)}/approvals`);
    for (const a of open.items || []) addApproval(a);
  } catch { /* not held here: no approvals */ }
}

function mark(status) {
  return { completed: "✓", in_progress: "▸", deferred: "–", pending: "○" }[status] || "○";
}

// --- routing ----------------------------------------------------------------

async function route() {
  // A login link followed in a tab already showing the app changes only
  // the fragment: spend its code here too.
  if (new URLSearchParams(location.hash.slice(1)).has("code") && !(await login())) return;
  const m = location.hash.match(/^#s\/(.+)$/);
  if (m) {
    openSession(decodeURIComponent(m[1]));
  } else {
    closeFeed();
    state.feed = watchAll();
    state.current = null;
    document.body.classList.remove("reading");
    clear(document.getElementById("session"));
    document.getElementById("session").append(h("p", { class: "hint" }, "Pick a session, or start one."));
    loadSessions().catch(() => {});
  }
}

// The list follows every session's durable events, refreshed at most
// once a second.
function watchAll() {
  let pending = false;
  const es = new EventSource("/v1/events");
  const refresh = () => {
    if (pending) return;
    pending = true;
    setTimeout(() => { pending = false; loadSessions().catch(() => {}); }, 1000);
  };
  for (const type of ["session.created", "session.updated", "session.released", "turn.started", "turn.completed", "approval.requested", "approval.resolved", "checklist.updated"]) {
    es.addEventListener(type, refresh);
  }
  return es;
}

async function start() {
  if (!(await login())) return;
  clear(main);
  main.append(listView(), h("section", { id: "session", class: "pane" }));
  try {
    await loadSessions();
  } catch (err) {
    if (err.message !== "signed out") main.prepend(h("p", { class: "error" }, err.message));
    return;
  }
  const out = h("button", { type: "button", id: "logout" }, "Sign out");
  out.addEventListener("click", async () => { await fetch("/v1/logout", { method: "POST", credentials: "same-origin" }); signedOut("Signed out."); });
  document.getElementById("top").append(out);
  window.addEventListener("hashchange", route);
  route();
}

start();
