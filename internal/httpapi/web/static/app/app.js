// meka's web app: sessions of a meka serve, watched and steered. Plain
// modules, no build step. Everything that comes from the model, tools or
// the API is put in the page as text (textContent), never parsed as HTML.

import { h, clear, fmtTime, fmtTokens, fmtCost, statusOf, holderOf, waiting } from "./dom.js";
import { api, whenSignedOut } from "./api.js";
import { openSession } from "./session.js";
import { inboxView, scheduleView, tasksView } from "./views.js";

const state = {
  sessions: null, // none read yet
  dir: "", // the list's directory filter
  project: "", // and project filter
  current: null, // the open session's id
  feed: null, // the tab's one EventSource
  reload: null, // redraws the open cross-session view
};

const main = document.getElementById("main");
const conn = document.getElementById("conn");

function signedOut(why) {
  closeFeed();
  clear(main);
  main.append(
    h("section", { class: "signin", id: "signin" },
      h("h2", {}, "Sign in"),
      h("p", {}, why),
      h("p", {}, "Run ", h("code", {}, "meka serve url"), " on the machine running meka serve and open the link it prints. Each link works once, for ten minutes.")));
}
whenSignedOut(signedOut);

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
  for (let page = 0; page < 20; page++) { // bounded: 20 pages of 200
    const q = new URLSearchParams({ limit: "200" });
    if (cursor) q.set("cursor", cursor);
    const data = await api("GET", "/v1/sessions?" + q);
    out.push(...data.items);
    if (!data.next_cursor) break;
    cursor = data.next_cursor;
  }
  state.sessions = out.filter((s) => !s.parent_id);
  renderList();
}

// titles maps session ids to titles, for the views across sessions.
function titles() {
  return new Map((state.sessions || []).map((s) => [s.id, s.title || "(untitled)"]));
}

function fillFilter(sel, values, all, keep) {
  clear(sel);
  sel.append(h("option", { value: "" }, all), ...values.map((d) => h("option", { value: d }, d)));
  sel.value = values.includes(keep) ? keep : "";
  return sel.value;
}

function renderList() {
  const list = document.getElementById("sessions");
  if (!list || !state.sessions) return;
  const dirs = [...new Set(state.sessions.map((s) => s.cwd))].sort();
  const projects = [...new Set(state.sessions.map((s) => s.project).filter(Boolean))].sort();
  state.dir = fillFilter(document.getElementById("filter"), dirs, "All directories", state.dir);
  state.project = fillFilter(document.getElementById("project-filter"), projects, "All projects", state.project);
  document.getElementById("project-filter").hidden = projects.length === 0;
  const shown = state.sessions.filter((s) => (!state.dir || s.cwd === state.dir) && (!state.project || s.project === state.project));
  const frag = document.createDocumentFragment();
  if (shown.length === 0) frag.append(h("li", { class: "empty" }, "No sessions yet."));
  for (const s of shown) {
    const st = statusOf(s);
    const p = s.checklist_progress;
    const u = s.usage;
    frag.append(h("li", {},
      h("a", { href: "#s/" + encodeURIComponent(s.id), class: "session" + (state.current === s.id ? " current" : ""), "data-id": s.id },
        h("span", { class: "title" }, s.title || "(untitled)"),
        h("span", { class: "status " + st.replace(/ /g, "-"), title: holderOf(s) || undefined }, st),
        h("span", { class: "dir" }, s.cwd, s.project ? " · " + s.project : ""),
        h("span", { class: "meta" },
          "active " + fmtTime(s.updated_at),
          p && p.total ? h("span", { class: "progress" }, ` · checklist ${p.completed}/${p.total}`) : "",
          u ? h("span", { class: "usage" }, ` · ${fmtTokens(u.input_tokens + u.output_tokens)} tokens` + fmtCost(u.cost)) : ""))));
  }
  clear(list);
  list.append(frag);
  const badge = document.getElementById("inbox-count");
  if (badge) badge.textContent = waiting(state.sessions);
}

function onFilter() {
  state.dir = document.getElementById("filter").value;
  state.project = document.getElementById("project-filter").value;
  renderList();
}

function listView() {
  return h("section", { id: "list", class: "pane" },
    h("div", { class: "bar filters" },
      h("label", { for: "filter", class: "sr" }, "Directory"),
      h("select", { id: "filter", onchange: onFilter }),
      h("label", { for: "project-filter", class: "sr" }, "Project"),
      h("select", { id: "project-filter", onchange: onFilter })),
    h("ul", { id: "sessions" }),
    newSessionForm());
}

// adoptList takes the list early.js drew on the first screen: its filters
// work from now on and the new-session form joins it.
function adoptList() {
  for (const id of ["filter", "project-filter"]) document.getElementById(id).addEventListener("change", onFilter);
  document.getElementById("list").append(newSessionForm());
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

// --- routing ----------------------------------------------------------------

// A tab holds one stream at a time (browsers allow six HTTP/1.1
// connections to a server across all tabs): the open session's feed, or
// else every session's.
function closeFeed() {
  if (state.feed) state.feed.close();
  state.feed = null;
  clearInterval(state.poll);
}

function setFeed(es) {
  closeFeed();
  state.feed = es;
  // Other sessions' changes, without a second stream.
  state.poll = setInterval(() => loadSessions().catch(() => {}), 15000);
}

const views = { "#inbox": inboxView, "#schedule": scheduleView, "#tasks": tasksView };

let generation = 0; // routes started; a slow one finishing late draws nothing

// route draws the view the address names. keep is the session whose first
// screen early.js drew: it stays until this app's replaces it in one go.
async function route(keep) {
  // A login link followed in a tab already showing the app changes only
  // the fragment: spend its code here too.
  if (new URLSearchParams(location.hash.slice(1)).has("code") && !(await login())) return;
  const gen = ++generation;
  const view = document.getElementById("session");
  closeFeed();
  state.reload = null;
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("current", a.getAttribute("href") === (location.hash || "#"));
  const m = location.hash.match(/^#s\/(.+)$/);
  if (m) {
    state.current = decodeURIComponent(m[1]);
    document.body.classList.add("reading");
    renderList();
    // Its own box: a route taken while this one loads detaches it, so a
    // late answer draws nowhere.
    const box = h("div", { class: "session-view" });
    if (keep !== state.current) view.replaceChildren(box);
    await openSession(box, state.current, {
      show: () => { if (gen === generation && !box.isConnected) view.replaceChildren(box); },
      feed: (es) => { if (gen === generation) setFeed(es); else es.close(); },
      refresh: () => loadSessions().catch(() => {}),
      conn: (s) => { conn.textContent = s; },
    });
    return;
  }
  state.current = null;
  clear(view);
  const v = views[location.hash];
  document.body.classList.toggle("reading", !!v);
  if (v) {
    state.reload = v(view, titles());
  } else {
    view.append(h("p", { class: "hint" }, "Pick a session, or start one."));
  }
  setFeed(watchAll());
  loadSessions().catch(() => {});
}

// The list (and an open view across sessions) follows every session's
// durable events, redrawn at most once a second.
function watchAll() {
  let pending = false;
  const es = new EventSource("/v1/events");
  const refresh = () => {
    if (pending) return;
    pending = true;
    setTimeout(() => {
      pending = false;
      loadSessions().catch(() => {});
      if (state.reload) state.reload();
    }, 1000);
  };
  es.onopen = () => { conn.textContent = ""; };
  es.onerror = () => { conn.textContent = es.readyState === EventSource.CLOSED ? "disconnected" : "reconnecting…"; };
  for (const type of ["session.created", "session.updated", "session.released", "turn.started", "turn.completed",
    "approval.requested", "approval.resolved", "elicitation.requested", "elicitation.resolved", "checklist.updated",
    "schedule.created", "schedule.cancelled", "schedule.changed", "schedule.fired", "task.started", "task.finished", "task.reported"]) {
    es.addEventListener(type, refresh);
  }
  return es;
}

async function start() {
  if (!(await login())) return;
  // The session whose first screen early.js drew, if it did: this app
  // takes it over, drawing its own in its place.
  const shown = self.mekaEarly.start();
  if (shown) {
    adoptList();
  } else {
    clear(main);
    main.append(listView(), h("section", { id: "session", class: "pane" }));
  }
  // A session named in the address loads beside the list, not after it.
  const early = /^#s\//.test(location.hash);
  if (early) route(shown);
  try {
    await loadSessions();
  } catch (err) {
    if (err.message !== "signed out") main.prepend(h("p", { class: "error" }, err.message));
    return;
  }
  const out = h("button", { type: "button", id: "logout" }, "Sign out");
  out.addEventListener("click", async () => { await fetch("/v1/logout", { method: "POST", credentials: "same-origin" }); signedOut("Signed out."); });
  const nav = h("nav", { id: "nav", "aria-label": "Views" },
    h("a", { href: "#" }, "Sessions"),
    h("a", { href: "#inbox", id: "inbox-link" }, "Inbox ", h("span", { id: "inbox-count", class: "count" })),
    h("a", { href: "#schedule" }, "Schedules"),
    h("a", { href: "#tasks" }, "Tasks"));
  for (const id of ["nav", "logout"]) document.getElementById(id)?.remove(); // the first screen's
  document.getElementById("top").append(nav, out);
  renderList();
  window.addEventListener("hashchange", () => route());
  // A page left for another and kept in the back-forward cache holds no
  // stream: a browser has six connections to a server for all its tabs,
  // and a stream kept there would leave a page in use waiting for one.
  // Shown again, it is drawn afresh.
  window.addEventListener("pagehide", (e) => { if (e.persisted) closeFeed(); });
  window.addEventListener("pageshow", (e) => { if (e.persisted) route(); });
  if (!early) route();
}

start();
