// Small DOM helpers. h never parses markup: strings become text nodes.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === undefined || v === null) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
  for (const c of children) {
    if (c === "" || c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
}

export function fmtTime(iso) {
  const d = new Date(iso);
  if (isNaN(d)) return "";
  const s = (Date.now() - d) / 1000;
  if (s < 60) return "just now";
  if (s < 3600) return Math.floor(s / 60) + " min ago";
  if (s < 86400) return Math.floor(s / 3600) + " h ago";
  return d.toLocaleDateString();
}

export function fmtTokens(n) {
  return n >= 1e6 ? (n / 1e6).toFixed(1) + "M" : n >= 1000 ? (n / 1000).toFixed(1) + "k" : String(n);
}

// fmtCost is " · $0.12", or nothing for a model without prices.
export function fmtCost(c) {
  if (!c) return "";
  return " · $" + (c < 0.01 ? c.toFixed(4) : c.toFixed(2));
}

// statusOf is a record's state in words: idle, running, waiting for
// approval (or an MCP server's question), or held elsewhere (another meka
// process holds it: a REPL, a one-shot run, another host).
export function statusOf(rec) {
  if (rec.state.held_elsewhere) return "held elsewhere";
  if (rec.state.pending_approvals > 0 || rec.state.pending_elicitations > 0) return "waiting for approval";
  if (rec.state.status === "running") return "running";
  return "idle";
}

// holderOf says which process holds a session held elsewhere.
export function holderOf(rec) {
  const h = rec.state.holder;
  return h ? `held by meka pid ${h.pid} on ${h.host}` : "";
}
