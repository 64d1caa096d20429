// One session: its transcript, checklist, schedule, waiting requests and
// composer. The transcript is drawn from the session's history read from
// its end: the last page is drawn at once, the feed streams from where it
// ended (EventSource resends Last-Event-ID on its own reconnects), and the
// pages before it are read and drawn above.

import { h, clear, statusOf } from "./dom.js";
import { api, enc, tailPath } from "./api.js";
import { Transcript } from "./transcript.js";
import { approvalCard, elicitationCard } from "./requests.js";

const { usage: usageText, mark } = self.mekaWords;

// The pages before the last: large, as they are read while the page is
// already in use; olderPages bounds them (a million events).
const pageEvents = 2000;
const olderPages = 500;

// openSession fills view with session id. app gives show() to put view
// in the page if it is not (once it can draw at once: a first screen
// stays until then), feed(es) to hold the tab's one stream, refresh() to
// redraw the list, and conn for status.
export async function openSession(view, id, app) {
  const base = `/v1/sessions/${enc(id)}`;
  let rec, hist;
  try {
    [rec, hist] = await Promise.all([api("GET", base), api("GET", tailPath(base))]);
  } catch (err) {
    view.append(h("p", { class: "error" }, err.message));
    app.show();
    return null;
  }
  const t = new Transcript();
  const plan = h("ol", { id: "plan" });
  const requests = h("div", { id: "approvals", "aria-live": "polite" });
  const text = h("textarea", { id: "prompt", rows: 3, placeholder: "Message… (Ctrl+Enter sends)", "aria-label": "Message" });
  const send = h("button", { id: "send", type: "submit" }, "Send");
  const cancel = h("button", { id: "cancel", type: "button", class: "danger", hidden: true }, "Cancel turn");
  const err = h("p", { class: "error", role: "alert" });
  const usage = h("span", { id: "usage", class: "meta" });
  const status = h("span", { id: "status", class: "status" });
  const title = h("h2", { id: "title" }, rec.title || "(untitled)");
  const composer = h("form", { id: "composer" }, text, h("div", { class: "row" }, send, cancel), err);
  const planPanel = h("details", { id: "plan-panel", open: true }, h("summary", {}, "Checklist"), plan);
  const jobs = h("ul", { id: "jobs" });
  const jobsPanel = h("details", { id: "jobs-panel", hidden: true }, h("summary", {}, "Schedule"), jobs);
  view.append(
    h("div", { class: "bar" }, h("a", { href: "#", class: "back" }, "‹ Sessions"), title, status, usage),
    h("p", { class: "dir" }, rec.cwd, " · ", rec.profile, " · ", rec.permission, rec.project ? " · " + rec.project : ""),
    requests, planPanel, jobsPanel, t.el, composer);

  const setStatus = () => {
    const st = statusOf(rec);
    status.textContent = st;
    status.className = "status " + st.replace(/ /g, "-");
    cancel.hidden = rec.state.status !== "running";
    send.textContent = rec.state.status === "running" ? "Steer" : "Send";
  };
  const setUsage = () => {
    const u = rec.usage;
    usage.textContent = usageText(u);
  };
  const setPlan = (items) => {
    clear(plan);
    for (const i of items || []) {
      plan.append(h("li", { class: "item " + i.status }, h("span", { class: "mark" }, mark(i.status)), " ", i.text, i.reason ? h("span", { class: "reason" }, " (" + i.reason + ")") : ""));
    }
    planPanel.hidden = !items || items.length === 0;
  };
  setStatus();
  setUsage();
  setPlan(rec.checklist);

  // The session's scheduled jobs: when each fires next, why one is
  // withheld or parked, and a cancel.
  const loadJobs = async () => {
    let data;
    try { data = await api("GET", base + "/schedule"); } catch { return; }
    clear(jobs);
    for (const j of data.items || []) {
      jobs.append(h("li", { class: "job", "data-job": j.id },
        h("span", { class: "prompt" }, j.prompt), " · next " + (j.next_fire_local || j.next_fire_at),
        j.withheld ? h("span", { class: "reason" }, " · " + j.withheld) : "",
        j.parked ? h("span", { class: "reason" }, " · held: " + j.parked.reason) : "",
        " ", h("button", {
          type: "button", class: "danger",
          onclick: async () => {
            try { await api("DELETE", "/v1/schedule/" + enc(j.id)); } catch (e) { if (e.status !== 404) { err.textContent = e.message; return; } }
            loadJobs();
          },
        }, "Cancel job")));
    }
    jobsPanel.hidden = jobs.childElementCount === 0;
    jobsPanel.open = jobs.childElementCount > 0;
  };

  const pending = () => { rec.state.pending_approvals = requests.querySelectorAll(".approval:not(.elicitation)").length; rec.state.pending_elicitations = requests.querySelectorAll(".elicitation").length; setStatus(); };
  const addApproval = (d) => {
    if (!document.getElementById("ap-" + d.approval_id)) requests.append(approvalCard(id, d, pending));
    pending();
  };
  const addElicitation = (d) => {
    if (!document.getElementById("el-" + d.elicitation_id)) requests.append(elicitationCard(id, d, pending));
    pending();
  };
  const drop = (elId) => { const c = document.getElementById(elId); if (c) c.remove(); pending(); };

  // Feed events, for the history and the stream alike. replaying is
  // "tail" while the last page replays, "older" while a page before it
  // does, false for the stream. What only the end state matters for (the
  // plan, requests, jobs) waits for the end, and an older page's never
  // overrides a newer one's.
  let replaying = "tail";
  let tailPlan = null, pagePlan = null, planKnown = false;
  const onPlan = (items) => {
    if (replaying === "tail") tailPlan = items;
    else if (replaying === "older") pagePlan = items;
    else { setPlan(items); planKnown = true; }
  };
  const handlers = {
    "message.delta": (d) => t.delta(d.row, d.text, "assistant"),
    "thought.delta": (d) => t.delta("t" + d.row, d.text, "thought"),
    "message.created": (d) => t.message(d),
    "tool.started": (d) => t.toolStarted(d),
    "tool.output": (d) => t.toolOutput(d),
    "tool.finished": (d) => t.toolFinished(d),
    "notice": (d) => t.notice(d.severity, d.title, d.text),
    "hook.finished": (d) => t.notice("info", "hook " + d.event, d.command + " → " + d.decision),
    "context.compacted": (d) => t.notice("info", "context compacted", d.status),
    "checklist.updated": (d) => onPlan(d.items),
    "plan.updated": (d) => onPlan(d.items),
    "turn.started": (d) => { if (!replaying) { rec.state.status = "running"; rec.state.turn_id = d.turn_id; setStatus(); } },
    "turn.completed": (d) => {
      t.endTurn(d);
      if (d.status === "failed" && d.error) t.notice("warning", "turn failed", d.error.title || "");
      if (replaying) return;
      rec.state.status = "idle"; rec.state.turn_id = ""; setStatus();
      if (d.usage) {
        const u = rec.usage || (rec.usage = { input_tokens: 0, output_tokens: 0, cost: 0 });
        u.input_tokens += d.usage.input_tokens || 0; u.output_tokens += d.usage.output_tokens || 0; u.cost += d.usage.cost || 0;
        setUsage();
      }
    },
    "approval.requested": (d) => { if (!replaying) addApproval(d); },
    "approval.resolved": (d) => { if (!replaying) drop("ap-" + d.approval_id); },
    "elicitation.requested": (d) => { if (!replaying) addElicitation(d); },
    "elicitation.resolved": (d) => { if (!replaying) drop("el-" + d.elicitation_id); },
    "session.updated": (d) => {
      if (replaying !== "older" && d.changed && d.changed.title) title.textContent = d.changed.title;
      if (!replaying) app.refresh();
    },
    "feed.reset": () => { t.clear(); dropGap(); },
  };
  for (const type of ["schedule.created", "schedule.cancelled", "schedule.changed", "schedule.fired"]) {
    handlers[type] = () => { if (!replaying) loadJobs(); };
  }

  // replay puts a page of history above what is drawn; an older page's
  // plan is shown only if no newer one was.
  const replay = (page, as) => {
    replaying = as;
    pagePlan = null;
    t.beginPage(page.items);
    for (const env of page.items) {
      const fn = handlers[env.type];
      if (fn) fn(env.data || {}, env);
    }
    t.more = !!page.prev_cursor;
    t.endPage();
    replaying = false;
    if (pagePlan && !planKnown) { setPlan(pagePlan); planKnown = true; }
  };
  const pageBefore = (cursor) => api("GET", `${base}/history?before=${enc(cursor)}&limit=${pageEvents}`);

  // readOlder reads the pages before cursor to the first event, each
  // requested while the one before it replays. One that fails stops it
  // (no retry unbidden): the history stays incomplete under a notice
  // whose Retry reads that page again. A clear (feed.reset) or leaving
  // the session drops them.
  let gap = null; // the notice
  const dropGap = () => { if (gap) gap.remove(); gap = null; };
  const readOlder = async (from) => {
    const epoch = t.epoch;
    let at = from, next = pageBefore(from);
    for (let n = 0; next && n < olderPages; n++) {
      let page;
      try { page = await next; } catch (e) { if (t.epoch === epoch) olderFailed(at, e); return; }
      if (t.epoch !== epoch || !t.el.isConnected) return;
      dropGap();
      at = page.prev_cursor;
      next = at ? pageBefore(at) : null;
      replay(page, "older");
    }
    if (t.epoch === epoch) t.noMore();
  };
  // olderFailed puts the notice over the transcript for the page before
  // cursor; a new one on each failure, so that it is announced again.
  // Retry is pressed once: a page read twice would join twice. A 401 has
  // shown the sign-in page already (api.js).
  const olderFailed = (cursor, e) => {
    if (e.message === "signed out" || !t.el.isConnected) return;
    t.stalled();
    dropGap();
    const retry = h("button", { type: "button" }, "Retry");
    retry.addEventListener("click", () => { retry.disabled = true; readOlder(cursor); });
    gap = h("div", { class: "older-failed", role: "alert" }, h("span", {}, "Older messages could not be loaded."), retry);
    t.el.before(gap);
  };

  // The last page, and as many before it as the first screen needs, are
  // drawn at once (marked on the browser's performance timeline, for the
  // benchmark).
  performance.mark("meka:history-fetched");
  t.holdHistory();
  replay(hist, "tail");
  if (tailPlan) planKnown = true;
  let cursor = hist.prev_cursor, failed = null;
  for (let n = 0; cursor && t.short() && n < olderPages; n++) {
    let page;
    try { page = await pageBefore(cursor); } catch (e) { if (e.message === "signed out") return null; failed = e; break; }
    replay(page, "older");
    cursor = page.prev_cursor;
  }
  if (!cursor) t.noMore();
  app.show();
  t.drawHistory();
  performance.mark("meka:history-drawn");
  if (tailPlan) setPlan(tailPlan);
  loadJobs();

  // The stream from where the last page ended.
  const es = new EventSource(`${base}/events?after=${enc(hist.last_id)}`);
  app.feed(es);
  es.onopen = () => { app.conn(""); };
  es.onerror = () => { app.conn(es.readyState === EventSource.CLOSED ? "disconnected" : "reconnecting…"); };
  for (const [type, fn] of Object.entries(handlers)) {
    es.addEventListener(type, (ev) => {
      let env;
      try { env = JSON.parse(ev.data); } catch { return; }
      fn(env.data || {}, env);
    });
  }

  // The pages before, once the first screen is painted.
  if (failed) olderFailed(cursor, failed);
  else if (cursor) requestAnimationFrame(() => setTimeout(() => readOlder(cursor)));

  // Requests still open (the server's lists are the truth: the history
  // names them, answered or not). Read without opening the session.
  Promise.all([api("GET", "/v1/approvals"), api("GET", "/v1/elicitations")]).then(([aps, els]) => {
    for (const a of aps.items || []) if (a.session_id === id) addApproval(a);
    for (const e of els.items || []) if (e.session_id === id) addElicitation(e);
  }).catch(() => {});

  const submit = async () => {
    const msg = text.value.trim();
    if (!msg) return;
    err.textContent = "";
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
        try {
          await api("POST", base + "/inbox", { text: msg, start_if_idle: true });
          text.value = "";
        } catch (e2) { err.textContent = e2.message; }
        return;
      }
      if (e.code === "held-elsewhere") { rec.state.held_elsewhere = true; setStatus(); }
      err.textContent = e.message;
    }
  };
  composer.addEventListener("submit", (e) => { e.preventDefault(); submit(); });
  text.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); submit(); }
  });
  cancel.addEventListener("click", async () => {
    if (!rec.state.turn_id) return;
    try { await api("POST", `${base}/turns/${enc(rec.state.turn_id)}/cancel`); } catch (e) { err.textContent = e.message; }
  });
  return rec;
}
