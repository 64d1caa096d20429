// The views across sessions: the inbox of waiting requests, every
// scheduled job, every background task.

import { h, clear, fmtTime } from "./dom.js";
import { api, enc } from "./api.js";
import { approvalCard, elicitationCard } from "./requests.js";

// sessionLink names a session by title, linking to it.
function sessionLink(titles, sid) {
  return h("a", { href: "#s/" + enc(sid), class: "from" }, titles.get(sid) || sid.slice(0, 8));
}

// inboxView lists every approval and elicitation waiting, oldest first;
// each is answered in one tap. reload redraws it (the feed calls it).
export function inboxView(view, titles) {
  const list = h("div", { id: "inbox-items", "aria-live": "polite" });
  const err = h("p", { class: "error", role: "alert" });
  view.append(h("div", { class: "bar" }, h("a", { href: "#", class: "back" }, "‹ Sessions"), h("h2", {}, "Waiting for you")), err, list);
  const reload = async () => {
    let aps, els;
    try {
      [aps, els] = await Promise.all([api("GET", "/v1/approvals"), api("GET", "/v1/elicitations")]);
    } catch (e) { err.textContent = e.message; return; }
    err.textContent = "";
    const items = [
      ...aps.items.map((a) => ({ key: a.approval_id, card: () => approvalCard(a.session_id, a, null, h("p", { class: "meta" }, "in ", sessionLink(titles, a.session_id))) })),
      ...els.items.map((e) => ({ key: e.elicitation_id, card: () => elicitationCard(e.session_id, e, null, h("p", { class: "meta" }, "in ", sessionLink(titles, e.session_id))) })),
    ].sort((x, y) => (x.key < y.key ? -1 : 1));
    // Cards still waiting stay as they are, where they are: a form half
    // filled in keeps its text and its focus (a node moved loses it, and
    // the keys typed next go nowhere).
    const keep = new Map([...list.children].map((c) => [c.id.slice(3), c]));
    const want = new Set(items.map((it) => it.key));
    for (const [key, c] of keep) if (!want.has(key)) c.remove();
    let prev = null;
    for (const it of items) {
      const c = keep.get(it.key) || it.card();
      if (c.parentNode !== list || c.previousElementSibling !== prev) list.insertBefore(c, prev ? prev.nextSibling : list.firstChild);
      prev = c;
    }
    if (!items.length) list.append(h("p", { class: "empty" }, "Nothing is waiting for you."));
  };
  reload();
  return reload;
}

// scheduleView lists every job: when it fires next, why it is withheld
// or parked, and a cancel.
export function scheduleView(view, titles) {
  const list = h("ul", { id: "all-jobs", class: "plain" });
  const err = h("p", { class: "error", role: "alert" });
  view.append(h("div", { class: "bar" }, h("a", { href: "#", class: "back" }, "‹ Sessions"), h("h2", {}, "Schedules")), err, list);
  const reload = async () => {
    let data;
    try { data = await api("GET", "/v1/schedule"); } catch (e) { err.textContent = e.message; return; }
    err.textContent = "";
    clear(list);
    for (const j of data.items) {
      const s = j.schedule || {};
      const when = s.every ? "every " + s.every : s.cron ? "cron " + s.cron : "once";
      list.append(h("li", { class: "card job", "data-job": j.id },
        h("p", { class: "prompt" }, j.prompt),
        h("p", { class: "meta" }, when, " · next ", j.next_fire_local || j.next_fire_at, " · in ", sessionLink(titles, j.session_id)),
        j.withheld ? h("p", { class: "reason" }, "Not firing: " + j.withheld) : "",
        j.parked ? h("p", { class: "reason" }, "Held: " + j.parked.reason) : "",
        h("button", {
          type: "button", class: "danger",
          onclick: async () => {
            try { await api("DELETE", "/v1/schedule/" + enc(j.id)); } catch (e) { if (e.status !== 404) { err.textContent = e.message; return; } }
            reload();
          },
        }, "Cancel job")));
    }
    if (!data.items.length) list.append(h("li", { class: "empty" }, "No scheduled jobs."));
  };
  reload();
  return reload;
}

// tasksView lists the background tasks of the sessions meka serve holds,
// with the end of each one's output and a stop for those running. While
// one runs the list is reread every few seconds, for its output.
export function tasksView(view, titles) {
  const list = h("ul", { id: "tasks", class: "plain" });
  const err = h("p", { class: "error", role: "alert" });
  view.append(h("div", { class: "bar" }, h("a", { href: "#", class: "back" }, "‹ Sessions"), h("h2", {}, "Background tasks")), err, list);
  const reload = async () => {
    let data;
    try { data = await api("GET", "/v1/tasks?tail=2048"); } catch (e) { err.textContent = e.message; return; }
    err.textContent = "";
    clear(list);
    for (const t of data.items.slice().reverse()) {
      const o = t.outcome;
      const ended = o ? (o.exit_code !== null && o.exit_code !== undefined ? "exit " + o.exit_code : o.signal || o.reason || "ended") : "";
      list.append(h("li", { class: "card task " + t.state, "data-task": t.id },
        h("p", {}, h("strong", {}, t.label || t.command), " ", h("span", { class: "status " + t.state }, t.state), ended ? " · " + ended : ""),
        h("p", { class: "meta" }, h("code", {}, t.command), " · started ", fmtTime(t.started_at), " · in ", sessionLink(titles, t.session_id)),
        t.output_tail ? h("details", {}, h("summary", {}, "Output (last lines)"), h("pre", { class: "output" }, t.output_tail)) : "",
        t.state === "running" ? h("button", {
          type: "button", class: "danger",
          onclick: async (e) => {
            e.target.disabled = true;
            try { await api("POST", `/v1/sessions/${enc(t.session_id)}/tasks/${enc(t.id)}/stop`); } catch (x) { if (x.status !== 409) err.textContent = x.message; }
            reload();
          },
        }, "Stop") : ""));
    }
    if (!data.items.length) list.append(h("li", { class: "empty" }, "No background tasks."));
    clearTimeout(timer);
    if (data.items.some((t) => t.state === "running")) timer = setTimeout(() => { if (list.isConnected) reload(); }, 2000);
  };
  let timer = 0;
  reload();
  return reload;
}
