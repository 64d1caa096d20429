// The transcript of one session, built from its feed. Text only: what the
// model and tools say is never parsed as HTML.

import { h, clear } from "./dom.js";

// What rows say, as early.js's first screen says it.
const { who: whoWrote, messageText, primary, inputText, diffClass } = self.mekaWords;

// A history is read from its end, a page at a time, and each page is
// replayed into rows above the ones before it. Its last rows are drawn at
// once, enough to fill a tall screen (a row is at least 20 px high), then
// the older ones above them in slices of about 40 ms (short of the 50 ms
// after which waiting input is felt), each a task of its own, so that
// input and frames go between them. (Idle callbacks would wait out every
// frame while anything on the page animates.)
const screenRows = () => Math.max(40, Math.ceil(innerHeight / 20));
const sliceMs = 40;

// Where the browser keeps the view on what it shows as rows join above
// (scroll anchoring), the page need not measure it.
const anchored = typeof CSS !== "undefined" && CSS.supports("overflow-anchor", "auto");

// A row is a node, or a function that builds it when it is first shown.
const build = (row) => typeof row === "function" ? row() : row;

// A call finished on a page whose start is on an older one (an orphan)
// waits at the top of the rows read so far; its start, when that page
// comes, puts the card where a replay from the first event would have.
const waits = (row) => row.tool !== undefined && row.tool.orphan;

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
    this.holding = false; // a history's first pages replay: nothing drawn yet
    this.older = []; // rows above the drawn ones, not built yet, oldest first
    this.olderQueued = false;
    this.more = false; // older pages of the history are still to come
    this.page = null; // the rows of the page replaying, oldest first
    this.orphans = new Map(); // call id → a finished call's state awaiting its start
    this.epoch = 0; // counts clears: a page read before one is dropped
    // One listener each for every card and for scrolling up to rows not
    // yet drawn.
    this.el.addEventListener("toggle", (e) => {
      const t = this.cards.get(e.target);
      if (t && e.target.open) this.fill(t);
    }, true);
    this.el.addEventListener("scroll", () => {
      if (this.older.length && this.nearTop()) this.drawOlder(sliceMs);
    }, { passive: true });
  }

  clear() {
    clear(this.el);
    clear(this.pending);
    this.live.clear();
    this.tools.clear();
    this.orphans.clear();
    this.older = [];
    this.more = false;
    this.epoch++;
    this.el.removeAttribute("aria-busy");
  }

  nearTop() { return this.el.scrollTop < this.el.clientHeight; }

  add(row) {
    if (this.page) {
      this.page.push(row);
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

  // holdHistory starts a history's replay: its pages' rows are kept, not
  // built, until drawHistory.
  holdHistory() {
    this.holding = true;
  }

  // short says the rows read so far do not fill a screen.
  short() { return this.older.length < screenRows(); }

  // beginPage starts the replay of a page of history (items, oldest
  // first), older than every event replayed so far: its rows are kept
  // apart, and the starts of orphaned calls are found, the last start of
  // each id that no finish in the page follows.
  beginPage(items) {
    this.page = [];
    this.pageOrphans = [];
    this.claims = new Map(); // a tool.started's data → the orphan it starts
    this.moved = new Set(); // rows of orphans that move to their start
    this.newerTools = this.tools;
    this.tools = new Map(); // this page's calls: ids may repeat over a session
    const later = new Set();
    for (let i = items.length - 1; i >= 0; i--) {
      const e = items[i], d = e.data;
      if (!d || (e.type !== "tool.started" && e.type !== "tool.finished")) continue;
      if (e.type === "tool.started" && !later.has(d.call_id) && this.orphans.has(d.call_id)) {
        this.claims.set(d, this.orphans.get(d.call_id));
        this.orphans.delete(d.call_id);
      }
      later.add(d.call_id);
    }
  }

  // endPage puts the page's rows above those read before: its orphans
  // and those still waiting go to the top, the rest in order; once the
  // first screen is drawn they are drawn as the older rows are.
  endPage() {
    const rows = this.page;
    this.page = null;
    for (const [id, t] of this.tools) {
      // A call still running goes on in the live feed.
      if (t.status === "running" && !this.newerTools.has(id)) this.newerTools.set(id, t);
    }
    this.tools = this.newerTools;
    for (const t of this.pageOrphans) if (!this.orphans.has(t.id)) this.orphans.set(t.id, t);
    const waiting = this.older.filter(waits);
    const rest = this.older.filter((r) => !this.moved.has(r) && !waits(r));
    this.older = [...this.pageOrphans.map((t) => t.row), ...waiting, ...rows, ...rest];
    this.pageOrphans = this.claims = this.moved = null;
    if (this.holding) return;
    if (this.older.length) {
      this.el.setAttribute("aria-busy", "true");
      if (this.nearTop()) this.drawOlder(sliceMs);
      else this.queueOlder();
    }
  }

  // noMore says the history is read to its start (or no more of it will
  // be): calls whose start never came are drawn where they wait.
  noMore() {
    this.more = false;
    for (const t of this.orphans.values()) t.orphan = false;
    this.orphans.clear();
    if (!this.holding) this.queueOlder();
  }

  // stalled says the page before could not be read: the history stays
  // incomplete (orphans wait for their start), but as nothing is on its
  // way the transcript is not busy, so its live rows are announced.
  stalled() {
    this.el.removeAttribute("aria-busy");
  }

  // drawHistory ends the first pages' replay: the last screenful of rows
  // is built and joins the page now; the older rows follow above it in
  // slices, and at once when the view is scrolled up near them.
  drawHistory() {
    this.holding = false;
    const rows = this.older;
    const cut = Math.max(0, rows.length - screenRows());
    for (let i = cut; i < rows.length; i++) this.pending.append(build(rows[i]));
    this.flush();
    rows.length = cut;
    if (rows.length || this.more) {
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
  // at least), keeping what is in view where it is; an orphan waits for
  // its start while pages are to come. A transcript no longer in the page
  // (another route) draws nothing more.
  drawOlder(ms) {
    if (!this.el.isConnected) this.older = [];
    const nodes = [];
    const until = performance.now() + ms;
    while (this.older.length && !(this.more && waits(this.older[this.older.length - 1]))) {
      nodes.push(build(this.older.pop()));
      if (nodes.length % 20 === 0 && performance.now() >= until) break;
    }
    if (nodes.length) {
      const frag = document.createDocumentFragment();
      frag.append(...nodes.reverse());
      if (anchored) {
        this.el.prepend(frag);
      } else {
        const fromBottom = this.el.scrollHeight - this.el.scrollTop;
        this.el.prepend(frag);
        this.el.scrollTop = this.el.scrollHeight - fromBottom;
      }
    }
    if (this.older.length && !(this.more && waits(this.older[this.older.length - 1]))) this.queueOlder();
    else if (!this.older.length && !this.more) this.el.removeAttribute("aria-busy");
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
    const text = messageText(d);
    let key = d.row;
    if (!this.page && !this.live.has(key) && d.role === "assistant") {
      // A delta's row is the message's to come; if they differ, the
      // first text still streaming is this message.
      for (const [k, el] of this.live) if (el.classList.contains("assistant")) { key = k; break; }
    }
    const live = this.page ? null : this.live.get(key);
    const who = whoWrote(d);
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
    const orphan = this.claims && this.claims.get(d);
    if (orphan) return this.claim(orphan, d);
    const t = { id: d.call_id, tool: d.tool, title: d.title || primary(d.input), input: d.input, status: "running", text: "", diff: "", card: null, orphan: false };
    this.tools.set(d.call_id, t);
    t.row = () => this.card(t);
    t.row.tool = t;
    this.add(t.row);
  }

  // claim completes an orphan from its start: a card not built yet moves
  // to the start's place, one already drawn (the first screen's) stays.
  claim(t, d) {
    t.orphan = false;
    t.tool = d.tool || t.tool;
    t.title = d.title || primary(d.input);
    t.input = d.input;
    if (!t.card) {
      this.moved.add(t.row);
      this.page.push(t.row);
      return;
    }
    t.nameEl.textContent = t.tool;
    t.titleEl.data = t.title;
    if (t.inputEl) t.inputEl.textContent = inputText(t.input);
  }

  card(t) {
    t.statusEl = h("span", { class: "tstatus" }, t.status);
    t.nameEl = h("span", { class: "tname" }, t.tool);
    t.titleEl = document.createTextNode(t.title);
    t.details = h("details", {}, h("summary", {}, t.nameEl, " ", t.titleEl, " ", t.statusEl));
    t.card = h("li", { class: t.status === "running" ? "tool" : "tool " + t.status }, t.details);
    t.out = t.inputEl = null;
    this.cards.set(t.details, t);
    if (t.diff) this.showDiff(t);
    return t.card;
  }

  // fill builds an opened card's input and output.
  fill(t) {
    if (t.out) return;
    t.out = h("pre", { class: "output" }, t.text);
    t.inputEl = h("pre", { class: "input" }, inputText(t.input));
    t.details.insertBefore(h("h3", {}, "Input"), t.details.children[1] || null);
    t.details.insertBefore(t.inputEl, t.details.children[2] || null);
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
      // Its start is on a page not read yet (or gone from the feed).
      t = { id: d.call_id, tool: d.tool, title: "", input: "", status: "running", text: "", diff: "", card: null, orphan: this.more || !!this.page };
      this.tools.set(d.call_id, t);
      t.row = () => this.card(t);
      t.row.tool = t;
      if (this.page) this.pageOrphans.push(t);
      else {
        this.add(t.row);
        if (t.orphan) this.orphans.set(t.id, t);
      }
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
      pre.append(h("span", { class: diffClass(line) }, line + "\n"));
    }
    t.details.append(h("h3", {}, "Diff"), pre);
    this.fill(t);
    t.details.open = true;
  }

  notice(severity, title, text) {
    this.add(() => h("li", { class: "notice " + severity }, h("strong", {}, title), text ? " " + text : ""));
  }

  endTurn(d) {
    for (const [k, el] of this.page ? [] : this.live) {
      el.classList.remove("streaming");
      this.live.delete(k);
    }
    if (d.status && d.status !== "completed") this.notice("warning", "turn " + d.status, "");
  }
}
