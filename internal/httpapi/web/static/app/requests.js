// Requests waiting on a person: tool approvals and MCP elicitations, each
// a card answered in one tap. Everything shown is text.

import { h } from "./dom.js";
import { api, enc } from "./api.js";

const labels = { allow: "Allow", allow_always: "Always allow", deny: "Deny", deny_always: "Always deny" };

// approvalCard answers an approval of session sid; done runs after an
// answer (or when someone else answered first).
export function approvalCard(sid, d, done, where) {
  const err = h("p", { class: "error", role: "alert" });
  const card = h("div", { class: "card approval", id: "ap-" + d.approval_id, "data-session": sid },
    where || "",
    h("p", {}, h("strong", {}, "Approve? "), d.title || d.tool),
    d.input !== undefined ? h("pre", {}, JSON.stringify(d.input, null, 2)) : "",
    h("div", { class: "row" }, ...(d.options || ["allow", "deny"]).map((o) =>
      h("button", {
        type: "button", class: o.startsWith("deny") ? "danger" : "", "data-decision": o,
        onclick: async () => {
          try {
            await api("POST", `/v1/sessions/${enc(sid)}/approvals/${enc(d.approval_id)}`, { decision: o });
          } catch (e) {
            if (e.status !== 409 && e.status !== 404) { err.textContent = e.message; return; }
          }
          card.remove();
          if (done) done();
        },
      }, labels[o] || o))),
    err);
  return card;
}

// elicitationCard answers an MCP server's request for input: a form
// built from its schema's flat properties (strings, numbers, booleans,
// choices), or a link to open (url mode, shown as text), with accept,
// decline and cancel.
export function elicitationCard(sid, d, done, where) {
  const err = h("p", { class: "error", role: "alert" });
  const fields = [];
  const props = (d.schema && d.schema.properties) || {};
  const required = new Set((d.schema && d.schema.required) || []);
  for (const [name, p] of Object.entries(props)) {
    const label = p.title || name;
    let input;
    if (Array.isArray(p.enum)) {
      input = h("select", { name }, ...p.enum.map((v, i) => h("option", { value: String(v) }, (p.enumNames && p.enumNames[i]) || String(v))));
    } else if (p.type === "boolean") {
      input = h("input", { type: "checkbox", name, class: "check" });
    } else {
      input = h("input", { name, type: p.type === "number" || p.type === "integer" ? "number" : "text", required: required.has(name), autocomplete: "off" });
      if (p.default !== undefined) input.value = String(p.default);
    }
    fields.push({ name, p, input });
  }
  const answer = async (action) => {
    const body = { action };
    if (action === "accept" && fields.length) {
      body.content = {};
      for (const { name, p, input } of fields) {
        if (p.type === "boolean") body.content[name] = input.checked;
        else if (p.type === "number" || p.type === "integer") { if (input.value !== "") body.content[name] = Number(input.value); }
        else if (input.value !== "" || required.has(name)) body.content[name] = input.value;
      }
    }
    try {
      await api("POST", `/v1/sessions/${enc(sid)}/elicitations/${enc(d.elicitation_id)}`, body);
    } catch (e) {
      if (e.status !== 409 && e.status !== 404) { err.textContent = e.message; return; }
    }
    card.remove();
    if (done) done();
  };
  const form = h("form", { class: "elicit" },
    ...fields.map(({ name, p, input }) => h("label", {}, p.title || name, input, p.description ? h("span", { class: "hint" }, " " + p.description) : "")),
    h("div", { class: "row" },
      h("button", { type: "submit", "data-action": "accept" }, d.mode === "url" ? "Done" : "Accept"),
      h("button", { type: "button", class: "danger", "data-action": "decline", onclick: () => answer("decline") }, "Decline"),
      h("button", { type: "button", class: "danger", "data-action": "cancel", onclick: () => answer("cancel") }, "Cancel")));
  form.addEventListener("submit", (e) => { e.preventDefault(); answer("accept"); });
  const card = h("div", { class: "card approval elicitation", id: "el-" + d.elicitation_id, "data-session": sid },
    where || "",
    h("p", {}, h("strong", {}, (d.server || "MCP server") + " asks: "), d.message || ""),
    d.mode === "url" && d.url ? h("p", {}, "Open ", h("code", { class: "url" }, d.url), " in a browser, then tap Done.") : "",
    form, err);
  return card;
}
