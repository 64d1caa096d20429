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

// formFields reads an elicitation's requested schema as MCP allows it:
// flat properties, each a string (format email, uri, date or date-time;
// length bounds), a number or integer (bounds), a boolean, a choice of
// one (enum, with legacy enumNames, or oneOf const/title) or of several
// (an array whose items are such a choice), each with an optional
// default. Anything else throws, naming the field, and the card offers
// no accept.
function formFields(schema) {
  if (schema === undefined || schema === null) return [];
  if (typeof schema !== "object" || (schema.type !== undefined && schema.type !== "object")) throw new Error("the form is not an object of fields");
  const props = schema.properties || {};
  if (typeof props !== "object" || Array.isArray(props)) throw new Error("the form's fields are not an object");
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  return Object.entries(props).map(([name, p]) => {
    if (!p || typeof p !== "object") throw new Error(`field ${name} has no schema`);
    const f = { name, label: p.title || name, desc: p.description || "", required: required.has(name), p };
    if ((p.type === "string" || p.type === undefined) && (Array.isArray(p.enum) || Array.isArray(p.oneOf))) {
      f.kind = "one";
      f.choices = choicesOf(name, p.enum, p.enumNames, p.oneOf);
    } else if (p.type === "array") {
      const it = p.items;
      const titled = it && (Array.isArray(it.anyOf) ? it.anyOf : Array.isArray(it.oneOf) ? it.oneOf : null);
      if (!it || (!Array.isArray(it.enum) && !titled)) throw new Error(`field ${name} is a list of free values`);
      f.kind = "many";
      f.choices = choicesOf(name, it.enum, null, titled);
    } else if (p.type === "string") {
      f.kind = "text";
    } else if (p.type === "number" || p.type === "integer") {
      f.kind = "number";
    } else if (p.type === "boolean") {
      f.kind = "bool";
    } else if (p.type === "object" || p.properties) {
      throw new Error(`field ${name} is a nested object`);
    } else {
      throw new Error(`field ${name} has type ${JSON.stringify(p.type)}`);
    }
    return f;
  });
}

// choicesOf lists a choice's values with their labels.
function choicesOf(name, values, names, titled) {
  const out = [];
  for (const [i, v] of (values || []).entries()) out.push({ value: v, label: (names && names[i]) || String(v) });
  for (const c of titled || []) {
    if (!c || typeof c !== "object" || !("const" in c)) throw new Error(`field ${name} has a choice without a value`);
    out.push({ value: c.const, label: c.title || String(c.const) });
  }
  for (const c of out) if (typeof c.value !== "string") throw new Error(`field ${name} has a choice that is not a string`);
  return out;
}

const inputTypes = { email: "email", uri: "url", date: "date", "date-time": "datetime-local" };

// fieldInput builds a field's control; read returns its answer, or
// undefined to leave it out, or throws why it does not fit.
function fieldInput(f) {
  const p = f.p;
  if (f.kind === "bool") {
    const input = h("input", { type: "checkbox", name: f.name, class: "check", checked: p.default === true });
    return { el: input, read: () => input.checked };
  }
  if (f.kind === "one") {
    const input = h("select", { name: f.name, required: f.required },
      h("option", { value: "" }, f.required ? "Choose…" : "—"),
      ...f.choices.map((c, i) => h("option", { value: String(i), selected: c.value === p.default }, c.label)));
    return { el: input, read: () => (input.value === "" ? undefined : f.choices[Number(input.value)].value) };
  }
  if (f.kind === "many") {
    const def = new Set(Array.isArray(p.default) ? p.default : []);
    const boxes = f.choices.map((c) => h("input", { type: "checkbox", class: "check", name: f.name, value: c.value, checked: def.has(c.value) }));
    const el = h("fieldset", { class: "choices", "data-field": f.name },
      h("legend", {}, f.label + (f.required ? " *" : "")),
      ...boxes.map((b, i) => h("label", { class: "choice" }, b, " ", f.choices[i].label)));
    return {
      el, group: true,
      read: () => {
        const picked = f.choices.filter((_, i) => boxes[i].checked).map((c) => c.value);
        if (typeof p.minItems === "number" && picked.length < p.minItems) throw new Error(`${f.label}: pick at least ${p.minItems}`);
        if (typeof p.maxItems === "number" && picked.length > p.maxItems) throw new Error(`${f.label}: pick at most ${p.maxItems}`);
        return picked.length || f.required ? picked : undefined;
      },
    };
  }
  if (f.kind === "number") {
    const input = h("input", {
      name: f.name, type: "number", required: f.required, autocomplete: "off",
      min: p.minimum, max: p.maximum, step: p.type === "integer" ? "1" : "any",
    });
    if (typeof p.default === "number") input.value = String(p.default);
    return { el: input, read: () => (input.value === "" ? undefined : Number(input.value)) };
  }
  const type = inputTypes[p.format] || "text";
  const input = h("input", {
    name: f.name, type, required: f.required, autocomplete: "off",
    minlength: p.minLength, maxlength: p.maxLength,
  });
  if (typeof p.default === "string") input.value = type === "datetime-local" ? p.default.slice(0, 16) : p.default;
  return {
    el: input,
    read: () => {
      if (input.value === "") return f.required ? "" : undefined;
      // A local time picked in the page, sent as the RFC 3339 instant.
      return type === "datetime-local" ? new Date(input.value).toISOString() : input.value;
    },
  };
}

// elicitationCard answers an MCP server's request for input: a form
// built from its schema (formFields), or a link to open (url mode, shown
// as text), with accept, decline and cancel. A form asking what MCP
// does not allow is shown refused, with decline and cancel only.
export function elicitationCard(sid, d, done, where) {
  const err = h("p", { class: "error", role: "alert" });
  let fields = [];
  let refused = "";
  if (d.mode !== "url") {
    try {
      fields = formFields(d.schema).map((f) => ({ f, ...fieldInput(f) }));
    } catch (e) {
      refused = e.message;
      fields = [];
    }
  }
  const answer = async (action) => {
    const body = { action };
    if (action === "accept" && fields.length) {
      body.content = Object.create(null); // a field may be called __proto__
      try {
        for (const { f, read } of fields) {
          const v = read();
          if (v !== undefined) body.content[f.name] = v;
        }
      } catch (e) { err.textContent = e.message; return; }
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
    ...fields.map(({ f, el, group }) => group ? el : h("label", {}, f.label + (f.required ? " *" : ""), el, f.desc ? h("span", { class: "hint" }, " " + f.desc) : "")),
    refused ? h("p", { class: "refused" }, "meka cannot show this form (" + refused + "): decline it, or answer from a client that can.") : "",
    h("div", { class: "row" },
      refused ? "" : h("button", { type: "submit", "data-action": "accept" }, d.mode === "url" ? "Done" : "Accept"),
      h("button", { type: "button", class: "danger", "data-action": "decline", onclick: () => answer("decline") }, "Decline"),
      h("button", { type: "button", class: "danger", "data-action": "cancel", onclick: () => answer("cancel") }, "Cancel")));
  form.addEventListener("submit", (e) => { e.preventDefault(); if (!refused) answer("accept"); });
  const card = h("div", { class: "card approval elicitation", id: "el-" + d.elicitation_id, "data-session": sid },
    where || "",
    h("p", {}, h("strong", {}, (d.server || "MCP server") + " asks: "), d.message || ""),
    d.mode === "url" && d.url ? h("p", {}, "Open ", h("code", { class: "url" }, d.url), " in a browser, then tap Done.") : "",
    form, err);
  return card;
}
