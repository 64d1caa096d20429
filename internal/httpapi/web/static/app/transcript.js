// The transcript of one session, built from its feed. Text only: what the
// model and tools say is never parsed as HTML.

import { h, clear } from "./dom.js";

// A history draws its last rows at once, enough to fill a tall screen (a
// row is at least 20 px high), then the older ones above them in slices
// of about 40 ms (short of the 50 ms after which waiting input is felt),
// each a task of its own, so that input and frames go between them.
// (Idle callbacks would wait out every frame while anything on the page
// animates.)
const screenRows = () => Math.max(40, Math.ceil(innerHeight / 20));
const sliceMs = 40;

// Where the browser keeps the view on what it shows as rows join above
// (scroll anchoring), the page need not measure it.
const anchored = typeof CSS !== "undefined" && CSS.supports("overflow-anchor", "auto");

// A row is a node, or a function that builds it when it is first shown.
const build = (row) => typeof row === "function" ? row() : row;

export class Transcript {
  constructor() {
    this.el = h("ol", { id: "transcript", "aria-live": "polite", "aria-label": "Transcript" });
    this.live = new Map(); // delta key → element being streamed into
    this.tools = new Map(); // call id → tool card state
    this.cards = new WeakMap(); // a card's details element → its state
    // Entries wait here and join the page together, once a frame:
    // appending one at a time, each measured for scrolling, makes a long
    // transcript quadratic.
    this.pending = document.createDocumentFragment();
    this.scheduled = false;
    this.held = null; // a history's rows while it replays, not yet built
    this.older = []; // its rows above the drawn ones, oldest first
    this.olderQueued = false;
    // One listener each for every card and for scrolling up to rows not
    // yet drawn.
    this.el.addEventListener("toggle", (e) => {
      const t = this.cards.get(e.target);
      if (t && e.target.open) this.fill(t);
    }, true);
    this.el.addEventListener("scroll", () => {
      if (this.older.length && this.el.scrollTop < this.el.clientHeight) this.drawOlder(sliceMs);
    }, { passive: true });
  }

  clear() {
    clear(this.el);
    clear(this.pending);
    this.live.clear();
    this.tools.clear();
    this.older = [];
    this.el.removeAttribute("aria-busy");
    if (this.held) this.held = [];
  }

  add(row) {
    if (this.held) {
      this.held.push(row);
      return row;
    }
    const node = build(row);
    this.pending.append(node);
    if (!this.scheduled) {
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

  // holdHistory starts a history's replay: rows are kept, not built,
  // until drawHistory.
  holdHistory() {
    this.held = [];
  }

  // drawHistory ends the replay: the last screenful of rows is built and
  // joins the page now; the older rows follow above it in slices, and at
  // once when the view is scrolled up near them.
  drawHistory() {
    const rows = this.held || [];
    this.held = null;
    const cut = Math.max(0, rows.length - screenRows());
    for (let i = cut; i < rows.length; i++) this.pending.append(build(rows[i]));
    this.flush();
    rows.length = cut;
    this.older = rows;
    if (rows.length) {
      this.el.setAttribute("aria-busy", "true");
      this.queueOlder();
    }
  }

  queueOlder() {
    if (this.olderQueued) return;
    this.olderQueued = true;
    setTimeout(() => { this.olderQueued = false; this.drawOlder(sliceMs); });
  }

  // drawOlder puts older rows above the drawn ones, for about ms (20 rows
  // at least), keeping what is in view where it is. A transcript no
  // longer in the page (another route) draws nothing more.
  drawOlder(ms) {
    if (!this.el.isConnected) this.older = [];
    if (!this.older.length) return;
    const frag = document.createDocumentFragment();
    const until = performance.now() + ms;
    do {
      const rows = this.older.splice(Math.max(0, this.older.length - 20));
      frag.prepend(...rows.map(build));
    } while (this.older.length && performance.now() < until);
    if (anchored) {
      this.el.prepend(frag);
    } else {
      const fromBottom = this.el.scrollHeight - this.el.scrollTop;
      this.el.prepend(frag);
      this.el.scrollTop = this.el.scrollHeight - fromBottom;
    }
    if (this.older.length) this.queueOlder();
    else this.el.removeAttribute("aria-busy");
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
    const row = () => h("li", { class: "msg " + d.role, "data-row": d.row }, h("span", { class: "who" }, who), h("div", { class: "body" }, text));
    if (live) {
      live.replaceWith(row());
      this.live.delete(key);
    } else {
      this.add(row);
    }
  }

  // A tool card shows its summary line; its input and output are built
  // when it is first opened, so a long transcript costs one line a call.
  // Its state is kept apart from its nodes, which a history builds only
  // when the card comes into the page.
  toolStarted(d) {
    const t = { tool: d.tool, title: d.title || primary(d.input), input: d.input, status: "running", text: "", diff: "", card: null };
    this.tools.set(d.call_id, t);
    this.add(() => this.card(t));
  }

  card(t) {
    t.statusEl = h("span", { class: "tstatus" }, t.status);
    t.details = h("details", {}, h("summary", {}, h("span", { class: "tname" }, t.tool), " ", t.title, " ", t.statusEl));
    t.card = h("li", { class: t.status === "running" ? "tool" : "tool " + t.status }, t.details);
    t.out = null;
    this.cards.set(t.details, t);
    if (t.diff) this.showDiff(t);
    return t.card;
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
    t.status = d.status;
    t.text = (d.result || "") + (d.truncated ? "\n… (cut)" : "");
    t.diff = d.diff || "";
    if (!t.card) return; // built from this state when shown
    t.statusEl.textContent = d.status;
    t.card.classList.add(d.status);
    if (t.out) t.out.textContent = t.text;
    if (t.diff) this.showDiff(t);
  }

  // showDiff opens a card on the diff of the file it changed.
  showDiff(t) {
    const pre = h("pre", { class: "diff" });
    for (const line of t.diff.split("\n")) {
      const cls = line.startsWith("+") && !line.startsWith("+++") ? "add" : line.startsWith("-") && !line.startsWith("---") ? "del" : line.startsWith("@@") ? "hunk" : "";
      pre.append(h("span", { class: cls }, line + "\n"));
    }
    t.details.append(h("h3", {}, "Diff"), pre);
    this.fill(t);
    t.details.open = true;
  }

  notice(severity, title, text) {
    this.add(() => h("li", { class: "notice " + severity }, h("strong", {}, title), text ? " " + text : ""));
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
