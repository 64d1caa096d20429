// The transcript of one session, built from its feed. Text only: what the
// model and tools say is never parsed as HTML.

import { h, clear } from "./dom.js";

export class Transcript {
  constructor() {
    this.el = h("ol", { id: "transcript", "aria-live": "polite", "aria-label": "Transcript" });
    this.live = new Map(); // delta key → element being streamed into
    this.tools = new Map(); // call id → tool card
    // Entries wait here and join the page together: appending one at a
    // time, each measured for scrolling, makes a long replay quadratic.
    this.pending = document.createDocumentFragment();
    this.timer = 0;
  }

  clear() {
    clear(this.el);
    clear(this.pending);
    this.live.clear();
    this.tools.clear();
  }

  add(node) {
    this.pending.append(node);
    if (!this.timer) this.timer = setTimeout(() => this.flush(), 16);
    return node;
  }

  flush() {
    this.timer = 0;
    const stick = this.el.scrollHeight - this.el.scrollTop - this.el.clientHeight < 40;
    this.el.append(this.pending);
    if (stick) this.el.scrollTop = this.el.scrollHeight;
  }

  delta(key, text, kind) {
    let el = this.live.get(key);
    if (!el) {
      el = this.add(h("li", { class: "msg " + kind + " streaming" }, h("div", { class: "body" })));
      this.live.set(key, el);
    }
    el.firstChild.append(document.createTextNode(text));
  }

  message(d) {
    const text = (d.content || []).map((c) => c.type === "text" ? c.text : `[${c.type}${c.name ? " " + c.name : ""}]`).join("\n");
    let key = d.row;
    if (!this.live.has(key) && d.role === "assistant") {
      // A delta's row is the message's to come; if they differ, the
      // first text still streaming is this message.
      for (const [k, el] of this.live) if (el.classList.contains("assistant")) { key = k; break; }
    }
    const live = this.live.get(key);
    const who = d.role === "user" ? (d.source === "inbox" ? "steer" : d.source === "schedule" ? "scheduled" : "you") : "meka";
    const el = h("li", { class: "msg " + d.role, "data-row": d.row }, h("span", { class: "who" }, who), h("div", { class: "body" }, text));
    if (live) {
      live.replaceWith(el);
      this.live.delete(key);
    } else {
      this.add(el);
    }
  }

  toolStarted(d) {
    const status = h("span", { class: "tstatus" }, "running");
    const out = h("pre", { class: "output" });
    const card = h("li", { class: "tool" },
      h("details", {},
        h("summary", {}, h("span", { class: "tname" }, d.tool), " ", d.title || primary(d.input), " ", status),
        h("h3", {}, "Input"),
        h("pre", { class: "input" }, typeof d.input === "string" ? d.input : JSON.stringify(d.input, null, 2)),
        h("h3", {}, "Output"), out));
    this.tools.set(d.call_id, { card, status, out });
    this.add(card);
  }

  toolOutput(d) {
    const t = this.tools.get(d.call_id);
    if (t) t.out.append(document.createTextNode(d.chunk || ""));
  }

  toolFinished(d) {
    let t = this.tools.get(d.call_id);
    if (!t) {
      this.toolStarted({ call_id: d.call_id, tool: d.tool, input: "" });
      t = this.tools.get(d.call_id);
    }
    t.status.textContent = d.status;
    t.card.classList.add(d.status);
    t.out.textContent = (d.result || "") + (d.truncated ? "\n… (cut)" : "");
    if (d.diff) {
      const pre = h("pre", { class: "diff" });
      for (const line of d.diff.split("\n")) {
        const cls = line.startsWith("+") && !line.startsWith("+++") ? "add" : line.startsWith("-") && !line.startsWith("---") ? "del" : line.startsWith("@@") ? "hunk" : "";
        pre.append(h("span", { class: cls }, line + "\n"));
      }
      t.card.firstChild.append(h("h3", {}, "Diff"), pre);
      t.card.firstChild.open = true;
    }
  }

  notice(severity, title, text) {
    this.add(h("li", { class: "notice " + severity }, h("strong", {}, title), text ? " " + text : ""));
  }

  endTurn(d) {
    for (const [k, el] of this.live) {
      el.classList.remove("streaming");
      this.live.delete(k);
    }
    if (d.status && d.status !== "completed") this.notice("warning", "turn " + d.status, "");
  }
}

// primary is a tool input's most telling argument, for the card's title.
function primary(input) {
  if (!input || typeof input !== "object") return "";
  for (const k of ["path", "command", "file_path", "pattern", "url", "query"]) {
    if (typeof input[k] === "string") return input[k];
  }
  return "";
}
