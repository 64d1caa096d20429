// The transcript of one session, built from its feed. Text only: what the
// model and tools say is never parsed as HTML.

import { h, clear } from "./dom.js";

export class Transcript {
  constructor() {
    this.el = h("ol", { id: "transcript", "aria-live": "polite", "aria-label": "Transcript" });
    this.live = new Map(); // delta key → element being streamed into
    this.tools = new Map(); // call id → tool card
    // Entries wait here and join the page together, once a frame:
    // appending one at a time, each measured for scrolling, makes a long
    // transcript quadratic. While batching (a history drawn at once) the
    // caller flushes.
    this.pending = document.createDocumentFragment();
    this.scheduled = false;
    this.batching = false;
  }

  clear() {
    clear(this.el);
    clear(this.pending);
    this.live.clear();
    this.tools.clear();
  }

  add(node) {
    this.pending.append(node);
    if (!this.batching && !this.scheduled) {
      this.scheduled = true;
      // A hidden tab runs no animation frames: the timer draws it anyway.
      const run = () => { if (this.scheduled) this.flush(); };
      requestAnimationFrame(run);
      setTimeout(run, 100);
    }
    return node;
  }

  // flush puts the waiting entries in the page, in one append, keeping
  // the view at the bottom when it was there.
  flush() {
    this.scheduled = false;
    if (!this.pending.firstChild) return;
    const first = !this.el.firstChild;
    const stick = first || this.el.scrollHeight - this.el.scrollTop - this.el.clientHeight < 40;
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

  // A tool card shows its summary line; its input and output are built
  // when it is first opened, so a long transcript costs one line a call.
  toolStarted(d) {
    const status = h("span", { class: "tstatus" }, "running");
    const details = h("details", {},
      h("summary", {}, h("span", { class: "tname" }, d.tool), " ", d.title || primary(d.input), " ", status));
    const card = h("li", { class: "tool" }, details);
    const t = { card, details, status, input: d.input, text: "", out: null };
    details.addEventListener("toggle", () => { if (details.open) this.fill(t); });
    this.tools.set(d.call_id, t);
    this.add(card);
  }

  // fill builds an opened card's input and output.
  fill(t) {
    if (t.out) return;
    t.out = h("pre", { class: "output" }, t.text);
    const input = typeof t.input === "string" ? t.input : JSON.stringify(t.input, null, 2);
    t.details.insertBefore(h("h3", {}, "Input"), t.details.children[1] || null);
    t.details.insertBefore(h("pre", { class: "input" }, input), t.details.children[2] || null);
    t.details.insertBefore(h("h3", {}, "Output"), t.details.children[3] || null);
    t.details.insertBefore(t.out, t.details.children[4] || null);
  }

  toolOutput(d) {
    const t = this.tools.get(d.call_id);
    if (!t) return;
    t.text += d.chunk || "";
    if (t.out) t.out.append(document.createTextNode(d.chunk || ""));
  }

  toolFinished(d) {
    let t = this.tools.get(d.call_id);
    if (!t) {
      this.toolStarted({ call_id: d.call_id, tool: d.tool, input: "" });
      t = this.tools.get(d.call_id);
    }
    t.status.textContent = d.status;
    t.card.classList.add(d.status);
    t.text = (d.result || "") + (d.truncated ? "\n… (cut)" : "");
    if (t.out) t.out.textContent = t.text;
    if (d.diff) {
      const pre = h("pre", { class: "diff" });
      for (const line of d.diff.split("\n")) {
        const cls = line.startsWith("+") && !line.startsWith("+++") ? "add" : line.startsWith("-") && !line.startsWith("---") ? "del" : line.startsWith("@@") ? "hunk" : "";
        pre.append(h("span", { class: cls }, line + "\n"));
      }
      t.details.append(h("h3", {}, "Diff"), pre);
      this.fill(t);
      t.details.open = true;
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
