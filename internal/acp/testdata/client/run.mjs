// Drives the built `meka acp` with the official ACP TypeScript SDK client
// through one scenario, validates every message of the transcript against
// the ACP schema the SDK ships, and prints a JSON report on stdout:
//   {"scenario", "failures": [...], "validated": n, "transcript": [...]}
// Run by internal/acp's Go tests, which start the model server, write the
// config and read the report:
//   node run.mjs <scenario>   (MEKA_BIN, MEKA_WORKSPACE, MEKA_CONFIG, MEKA_DATA_DIR in the environment)
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { readFileSync, writeFileSync, existsSync, mkdirSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import * as acp from "@agentclientprotocol/sdk/unstable";
import Ajv2020 from "ajv/dist/2020.js";

const here = dirname(fileURLToPath(import.meta.url));
const scenario = process.argv[2];
const ws = process.env.MEKA_WORKSPACE;
const failures = [];
const transcript = [];
const fail = (msg) => failures.push(msg);
const check = (cond, msg) => { if (!cond) fail(msg); return !!cond; };

// ---- schema validation ---------------------------------------------------
const schema = JSON.parse(readFileSync(join(here, "node_modules/@agentclientprotocol/sdk/schema/v1/schema.unstable.json"), "utf8"));
const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
ajv.addSchema(schema, "acp");
const defs = schema.$defs;
function defFor(method, side, suffix) {
  for (const [name, d] of Object.entries(defs)) {
    if (d["x-method"] === method && (d["x-side"] === side || d["x-side"] === "protocol") && name.endsWith(suffix)) return name;
  }
  return null;
}
const pending = { client: new Map(), agent: new Map() }; // request id -> method, by sender
let validated = 0;
function validate(from, msg) {
  const fromSide = from === "client" ? "agent" : "client"; // the side that handles what `from` sends
  if (msg.jsonrpc !== "2.0") return fail(`${from}: not JSON-RPC 2.0: ${JSON.stringify(msg).slice(0, 200)}`);
  let name = null, value = null;
  if (typeof msg.method === "string") {
    const isReq = "id" in msg;
    if (isReq) pending[from].set(JSON.stringify(msg.id), msg.method);
    name = defFor(msg.method, fromSide, isReq ? "Request" : "Notification");
    value = msg.params ?? {};
  } else {
    const other = from === "client" ? "agent" : "client";
    const method = pending[other].get(JSON.stringify(msg.id));
    pending[other].delete(JSON.stringify(msg.id));
    if (msg.error) {
      name = "Error";
      value = msg.error;
    } else {
      if (!method) return fail(`${from}: response to no request: ${JSON.stringify(msg).slice(0, 200)}`);
      name = defFor(method, from === "client" ? "client" : "agent", "Response");
      value = msg.result;
    }
  }
  if (!name) return; // a method the schema does not know (robustness probes)
  const v = ajv.getSchema(`acp#/$defs/${name}`);
  validated++;
  if (!v(value)) fail(`${from} ${name} invalid: ${ajv.errorsText(v.errors)}: ${JSON.stringify(value).slice(0, 400)}`);
}

function recorder(from) {
  let buf = "";
  const dec = new TextDecoder();
  return new TransformStream({
    transform(chunk, ctl) {
      buf += dec.decode(chunk, { stream: true });
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line.trim() === "") continue;
        let msg;
        try { msg = JSON.parse(line); } catch { fail(`${from}: unparsable line: ${line.slice(0, 200)}`); continue; }
        transcript.push({ from, msg });
        validate(from, msg);
      }
      ctl.enqueue(chunk);
    },
  });
}

// ---- the agent process ----------------------------------------------------
function startAgent(extraArgs = []) {
  const child = spawn(process.env.MEKA_BIN, ["acp", "-v", ...extraArgs], { stdio: ["pipe", "pipe", "pipe"], env: process.env });
  let stderr = "";
  child.stderr.on("data", (d) => { stderr += d; });
  const toAgent = recorder("client");
  toAgent.readable.pipeTo(Writable.toWeb(child.stdin)).catch(() => {});
  const fromAgent = Readable.toWeb(child.stdout).pipeThrough(recorder("agent"));
  return { child, stream: acp.ndJsonStream(toAgent.writable, fromAgent), stderr: () => stderr };
}

// A client app: permission answers, an editor's buffers for fs/*, updates
// collected per session.
function makeClient(opts = {}) {
  const state = { updates: [], asked: [], reads: [], writes: [], elicited: [], answers: opts.answers ?? [], buffers: opts.buffers ?? new Map() };
  const app = acp.client({ name: "meka-e2e" })
    .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
      state.asked.push(params);
      const optionId = state.answers.shift();
      if (!optionId) return { outcome: { outcome: "cancelled" } };
      return { outcome: { outcome: "selected", optionId } };
    })
    .onRequest(acp.methods.client.fs.readTextFile, async ({ params, agent }) => {
      state.reads.push(params);
      if (opts.onRead) await opts.onRead(params, agent);
      if (opts.served && !opts.served(params.path)) throw acp.RequestError.resourceNotFound(params.path);
      if (state.buffers.has(params.path)) return { content: state.buffers.get(params.path) };
      throw acp.RequestError.resourceNotFound(params.path);
    })
    .onRequest(acp.methods.client.fs.writeTextFile, async ({ params }) => {
      state.writes.push(params);
      if (opts.served && !opts.served(params.path)) throw acp.RequestError.resourceNotFound(params.path);
      state.buffers.set(params.path, params.content);
      return {};
    })
    .onRequest(acp.methods.client.elicitation.create, async ({ params }) => {
      state.elicited.push(params);
      return params.mode === "form" ? { action: "accept", content: { name: "Ada" } } : { action: "accept" };
    })
    .onNotification(acp.methods.client.session.update, async ({ params }) => {
      state.updates.push(params);
      if (opts.onUpdate) opts.onUpdate(params);
    });
  return { app, state };
}

const baseCaps = { fs: { readTextFile: false, writeTextFile: false }, terminal: false };
async function init(ctx, caps = {}) {
  return ctx.request(acp.methods.agent.initialize, {
    protocolVersion: 1,
    clientCapabilities: { ...baseCaps, session: { notices: {}, compaction: {}, configOptions: { boolean: {} } }, ...caps },
    clientInfo: { name: "meka-e2e", version: "1.0.0" },
  });
}
const newSession = (ctx, cwd = ws) => ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
const prompt = (ctx, sessionId, text) => ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
// The updates the agent sent for a session, read from the transcript: it
// is recorded as lines arrive, before the SDK dispatches them.
const updatesOf = (sessionId, from = 0, to = transcript.length) => transcript.slice(from, to)
  .filter((t) => t.from === "agent" && t.msg.method === "session/update" && t.msg.params.sessionId === sessionId)
  .map((t) => t.msg.params.update);
const of = (_state, sessionId, tag) => updatesOf(sessionId).filter((u) => !tag || u.sessionUpdate === tag);
const requestIndex = (method, n = 0) => {
  let seen = -1;
  return transcript.findIndex((t) => t.from === "client" && t.msg.method === method && "id" in t.msg && ++seen === n);
};
const textOf = (ups) => ups.map((u) => u.content?.text ?? "").join("");
async function expectError(p, code, what) {
  try { await p; fail(`${what}: no error`); } catch (e) { check(e.code === code, `${what}: code ${e.code} (${e.message}), want ${code}`); }
}
// Index in the transcript of the agent's response to the client's request
// with the given method (the n-th such).
function responseIndex(method, n = 0) {
  let seen = -1;
  for (let i = 0; i < transcript.length; i++) {
    const t = transcript[i];
    if (t.from === "client" && t.msg.method === method && "id" in t.msg && ++seen === n) {
      const id = JSON.stringify(t.msg.id);
      for (let j = i + 1; j < transcript.length; j++) {
        const r = transcript[j];
        if (r.from === "agent" && !r.msg.method && JSON.stringify(r.msg.id) === id) return j;
      }
    }
  }
  return -1;
}
// The normalized shape of a session's conversation: what load must replay.
function conversation(updates) {
  const out = [];
  for (const u of updates) {
    switch (u.sessionUpdate) {
      case "user_message_chunk":
      case "agent_message_chunk":
      case "agent_thought_chunk": {
        const last = out[out.length - 1];
        const t = u.content.type === "text" ? u.content.text : `[${u.content.type}]`;
        if (last && last.kind === u.sessionUpdate) last.text += t; else out.push({ kind: u.sessionUpdate, text: t });
        break;
      }
      case "tool_call": out.push({ kind: "tool_call", title: u.title, toolKind: u.kind }); break;
      case "tool_call_update": if (u.status) out.push({ kind: "tool_call_update", status: u.status }); break;
    }
  }
  return out;
}

// ---- scenarios ------------------------------------------------------------
const scenarios = {
  async lifecycle(ctx, { state }) {
    const initResp = await init(ctx);
    check(initResp.agentInfo?.name === "meka", "agentInfo.name");
    check(initResp.agentCapabilities.loadSession === true, "loadSession");
    check(initResp.agentCapabilities.mcpCapabilities === undefined || !initResp.agentCapabilities.mcpCapabilities.http, "no mcpCapabilities");
    const s1 = await newSession(ctx);
    const id = s1.sessionId;
    check(s1.modes?.currentModeId === "workspace", `modes: ${JSON.stringify(s1.modes)}`);
    check(JSON.stringify(s1.configOptions.map((o) => o.id)) === '["permission","profile","approvals"]', "config option order");
    const r1 = await prompt(ctx, id, "say hello");
    // Nothing for the session went out before its response.
    const resp = responseIndex("session/new");
    const firstUpdate = transcript.findIndex((t) => t.msg.method === "session/update" && t.msg.params.sessionId === id);
    check(resp >= 0 && firstUpdate > resp, `an update preceded the session/new response (${firstUpdate} < ${resp})`);
    check(updatesOf(id, resp)[0]?.sessionUpdate === "available_commands_update", "available_commands_update right after session/new");
    check(r1.stopReason === "end_turn", `stopReason ${r1.stopReason}`);
    check(r1.usage?.totalTokens === 15 && r1.usage.inputTokens === 10, `usage ${JSON.stringify(r1.usage)}`);
    check(textOf(of(state, id, "agent_message_chunk")) === "Hello from meka.", `streamed ${JSON.stringify(textOf(of(state, id, "agent_message_chunk")))}`);
    check(of(state, id, "usage_update").length >= 1, "usage_update");
    // Chunks carry their message's id: one id for the reply's chunks.
    const chunks = of(state, id, "agent_message_chunk");
    check(chunks.length > 0 && chunks.every((c) => typeof c.messageId === "string" && c.messageId === chunks[0].messageId), `messageIds ${JSON.stringify(chunks.map((c) => c.messageId))}`);
    // The model has prices: the gauge carries the session's cost.
    const gauge = of(state, id, "usage_update").at(-1);
    check(gauge?.cost?.currency === "USD" && Math.abs(gauge.cost.amount - 0.00002) < 1e-9, `usage_update.cost ${JSON.stringify(gauge?.cost)}`);
    check(initResp.agentCapabilities.sessionCapabilities?.delete && initResp.agentCapabilities.sessionCapabilities?.systemPrompt, `sessionCapabilities ${JSON.stringify(initResp.agentCapabilities.sessionCapabilities)}`);
    check(of(state, id, "session_info_update")[0]?.title === "say hello", "session_info_update title");
    // Every update of the turn precedes the prompt response.
    const pr = responseIndex("session/prompt");
    const lastUpdate = transcript.findLastIndex((t, i) => i < pr + 50 && t.msg.method === "session/update" && t.msg.params.update.sessionUpdate === "agent_message_chunk");
    check(lastUpdate < pr, "a chunk came after the prompt response");

    const r2 = await prompt(ctx, id, "read the notes");
    check(r2.stopReason === "end_turn", "second prompt");
    const call = of(state, id, "tool_call")[0];
    check(call && call.kind === "read" && call.status === "in_progress" && call.title.startsWith("file_read") && call.name === "file_read", `tool_call ${JSON.stringify(call)}`);
    // A new reply is a new message.
    const second = of(state, id, "agent_message_chunk").at(-1);
    check(second?.messageId && second.messageId !== chunks[0]?.messageId, `the second reply's messageId ${second?.messageId}`);
    check(call?.locations?.[0]?.path === `${ws}/notes.txt`, `locations ${JSON.stringify(call?.locations)}`);
    const done = of(state, id, "tool_call_update").find((u) => u.toolCallId === call.toolCallId && u.status);
    check(done?.status === "completed" && JSON.stringify(done.content).includes("remember the milk"), `tool_call_update ${JSON.stringify(done)}`);

    // Config and modes.
    const opts = await ctx.request(acp.methods.agent.session.setConfigOption, { sessionId: id, configId: "approvals", type: "boolean", value: false });
    check(opts.configOptions.length === 3 && opts.configOptions[2].currentValue === false, `approvals ${JSON.stringify(opts.configOptions[2])}`);
    const before = of(state, id, "current_mode_update").length;
    const opts2 = await ctx.request(acp.methods.agent.session.setConfigOption, { sessionId: id, configId: "permission", value: "read" });
    check(opts2.configOptions[0].currentValue === "read", "permission option");
    await ctx.request(acp.methods.agent.session.setMode, { sessionId: id, modeId: "workspace" });
    await ctx.request(acp.methods.agent.session.list, {});
    const modes = of(state, id, "current_mode_update").slice(before).map((u) => u.currentModeId);
    check(JSON.stringify(modes) === '["read","workspace"]', `current_mode_update ${JSON.stringify(modes)}`);
    check(of(state, id, "config_option_update").length >= 1, "config_option_update after set_mode");
    await expectError(ctx.request(acp.methods.agent.session.setMode, { sessionId: id, modeId: "sideways" }), -32602, "unknown mode");
    const opts3 = await ctx.request(acp.methods.agent.session.setConfigOption, { sessionId: id, configId: "profile", value: "second" });
    check(opts3.configOptions[1].currentValue === "second", "profile switch");

    // Load after close: the replay matches the live transcript.
    // The live run, with the user's words where the client showed them.
    const live = [];
    for (const [n, words] of ["say hello", "read the notes"].entries()) {
      live.push({ sessionUpdate: "user_message_chunk", content: { type: "text", text: words } });
      live.push(...updatesOf(id, requestIndex("session/prompt", n), responseIndex("session/prompt", n)));
    }
    await ctx.request(acp.methods.agent.session.close, { sessionId: id });
    const loaded = await ctx.request(acp.methods.agent.session.load, { sessionId: id, cwd: ws, mcpServers: [] });
    check(loaded.modes?.currentModeId === "workspace" && loaded.configOptions[1].currentValue === "second", `load response ${JSON.stringify(loaded.modes)}`);
    const replayed = updatesOf(id, requestIndex("session/load"), responseIndex("session/load"));
    const a = JSON.stringify(conversation(live)), b = JSON.stringify(conversation(replayed));
    check(a === b, `replay differs from the live run:\nlive   ${a}\nreplay ${b}`);

    // Resume another session: no replay.
    const s2 = await newSession(ctx);
    await prompt(ctx, s2.sessionId, "second session");
    await ctx.request(acp.methods.agent.session.close, { sessionId: s2.sessionId });
    const m2 = transcript.length;
    await ctx.request(acp.methods.agent.session.resume, { sessionId: s2.sessionId, cwd: ws, mcpServers: [] });
    const resumeResp = responseIndex("session/resume");
    const replay2 = transcript.slice(m2, resumeResp).filter((t) => t.msg.method === "session/update");
    check(replay2.length === 0, `resume replayed ${replay2.length} updates`);

    // Fork: a new session with the conversation, promptable at once.
    const forked = await ctx.request(acp.methods.agent.session.fork, { sessionId: id, cwd: ws, mcpServers: [] });
    check(forked.sessionId && forked.sessionId !== id, "fork id");
    const r3 = await prompt(ctx, forked.sessionId, "in the fork");
    check(r3.stopReason === "end_turn", "prompt in the fork");
    await ctx.request(acp.methods.agent.session.close, { sessionId: forked.sessionId });
    await expectError(prompt(ctx, "no-such-session", "x"), -32602, "unknown session");
    await expectError(newSession(ctx, "relative/path"), -32602, "relative cwd");
  },

  async list(ctx) {
    await init(ctx);
    const ids = new Set();
    for (let i = 0; i < 55; i++) ids.add((await newSession(ctx)).sessionId);
    const p1 = await ctx.request(acp.methods.agent.session.list, { cwd: ws });
    check(p1.sessions.length === 50 && typeof p1.nextCursor === "string", `page 1: ${p1.sessions.length} ${p1.nextCursor}`);
    const p2 = await ctx.request(acp.methods.agent.session.list, { cwd: ws, cursor: p1.nextCursor });
    const all = [...p1.sessions, ...p2.sessions].map((s) => s.sessionId);
    check(p2.sessions.length === 5 && !p2.nextCursor, `page 2: ${p2.sessions.length} ${p2.nextCursor}`);
    check(new Set(all).size === 55 && all.every((x) => ids.has(x)), "paging lost or repeated sessions");
    check(p1.sessions.every((s) => s.cwd === ws), "cwd filter");
    const other = await ctx.request(acp.methods.agent.session.list, { cwd: "/nonexistent-dir" });
    check(other.sessions.length === 0, "cwd filter for another directory");
  },

  async permission(ctx, { state }) {
    await init(ctx);
    const { sessionId: id } = await newSession(ctx);
    state.answers.push("allow", "reject", "allow_always");
    for (let i = 0; i < 4; i++) await prompt(ctx, id, `write ${i}`);
    check(state.asked.length === 3, `asked ${state.asked.length} times`);
    const a = state.asked[0];
    check(a && a.toolCall.title.startsWith("file_write ") && a.options.length === 4, `request ${JSON.stringify(a)}`);
    check(a?.options.map((o) => o.kind).join() === "allow_once,allow_always,reject_once,reject_always", "option kinds");
    check(a?.options[1].name === "Always allow any file_write", "sticky option names the tool");
    check(JSON.stringify(a?.toolCall.content ?? "").includes("```json"), "fenced json");
    // The card is in progress when the request comes: the request does not
    // flip it back to pending.
    check(state.asked.every((q) => q.toolCall.status === undefined), `request statuses ${JSON.stringify(state.asked.map((q) => q.toolCall.status))}`);
    check(!of(state, id, "tool_call_update").some((u) => u.status === "pending"), "a card went back to pending");
    const exist = [0, 1, 2, 3].map((i) => existsSync(join(ws, `f${i}.txt`)));
    check(JSON.stringify(exist) === "[true,false,true,true]", `files written: ${JSON.stringify(exist)}`);
    const statuses = of(state, id, "tool_call_update").filter((u) => u.status).map((u) => u.status);
    check(JSON.stringify(statuses) === '["completed","failed","completed","completed"]', `statuses ${JSON.stringify(statuses)}`);
  },

  async terminal(ctx, { state }) {
    await init(ctx, { _meta: { terminal_output: true } });
    const { sessionId: id } = await newSession(ctx);
    await prompt(ctx, id, "run it");
    const call = of(state, id, "tool_call")[0];
    check(call?.kind === "execute" && call.title === "printf 'hi\\n'; sleep 0.4; printf 'there\\n'", `title ${JSON.stringify(call?.title)}`);
    check(call?._meta?.terminal_info?.terminal_id === call?.toolCallId && call.content?.[0]?.type === "terminal", `terminal_info ${JSON.stringify(call)}`);
    const ups = of(state, id, "tool_call_update").filter((u) => u.toolCallId === call.toolCallId);
    const data = ups.map((u) => u._meta?.terminal_output?.data ?? "").join("");
    check(data.includes("hi") && data.includes("there"), `terminal output ${JSON.stringify(data)}`);
    const exit = ups.find((u) => u._meta?.terminal_exit);
    check(exit?._meta.terminal_exit.exit_code === 0 && exit.status === "completed", `terminal_exit ${JSON.stringify(exit)}`);
    check(ups.every((u) => !(u.content ?? []).some((c) => c.type === "terminal")), "terminal content repeated on an update");
  },

  async console(ctx, { state }) {
    await init(ctx);
    const { sessionId: id } = await newSession(ctx);
    await prompt(ctx, id, "run it");
    const call = of(state, id, "tool_call")[0];
    check(call && !call._meta?.terminal_info, "no terminal without the capability");
    const done = of(state, id, "tool_call_update").find((u) => u.status === "completed");
    const text = done?.content?.[0]?.content?.text ?? "";
    check(text.startsWith("```console\n") && text.includes("hi") && text.includes("there"), `console block ${JSON.stringify(text)}`);
  },

  async fs(ctx, { state }) {
    mkdirSync(join(ws, "proj"), { recursive: true });
    writeFileSync(join(ws, "proj/a.txt"), "disk\n");
    writeFileSync(join(ws, "other.txt"), "disk\n");
    state.buffers.set(join(ws, "proj/a.txt"), "buffer\n");
    await init(ctx, { fs: { readTextFile: true, writeTextFile: true } });
    const { sessionId: id } = await newSession(ctx);
    await prompt(ctx, id, "edit the buffer");
    if (state.reads.length === 0) { fail("SKIP: file tools are not routed through fs/* (cli does not pass host.Env.Files to fstool)"); return; }
    check(state.buffers.get(join(ws, "proj/a.txt")) === "edited\n", `buffer ${JSON.stringify(state.buffers.get(join(ws, "proj/a.txt")))}`);
    check(readFileSync(join(ws, "proj/a.txt"), "utf8") === "disk\n", "the edit went to disk instead of the buffer");
    const diff = of(state, id, "tool_call_update").flatMap((u) => u.content ?? []).find((c) => c.type === "diff");
    check(diff && diff.oldText === "buffer\n" && diff.newText === "edited\n" && diff.path === join(ws, "proj/a.txt"), `diff ${JSON.stringify(diff)}`);
    await prompt(ctx, id, "edit the other file");
    check(readFileSync(join(ws, "other.txt"), "utf8") === "changed\n", "ResourceNotFound did not fall back to the disk");
    const last = of(state, id, "tool_call_update").filter((u) => u.status === "completed").pop();
    check(JSON.stringify(last?.rawOutput ?? "").includes("disk"), `fallback not disclosed: ${JSON.stringify(last?.rawOutput)}`);
    // A new file the client does not have either (ResourceNotFound on the
    // read) is created through fs/write_text_file, past the disk.
    await prompt(ctx, id, "create a file");
    const created = join(ws, "proj/new.txt");
    check(state.writes.some((w) => w.path === created && w.content === "created\n"), `new file not written through the client: ${JSON.stringify(state.writes.map((w) => w.path))}`);
    check(!existsSync(created), "the new file was created on disk, past the client");
    const made = of(state, id, "tool_call_update").filter((u) => u.status === "completed").pop();
    check(!JSON.stringify(made?.rawOutput ?? "").includes("disk"), `a write the client took says disk: ${JSON.stringify(made?.rawOutput)}`);
    // Only ResourceNotFound on the write itself sends it to the disk, said.
    await prompt(ctx, id, "create another");
    check(state.writes.some((w) => w.path === join(ws, "fresh.txt")), "the new file's write was not offered to the client");
    check(readFileSync(join(ws, "fresh.txt"), "utf8") === "fresh\n", "ResourceNotFound on the write did not fall back to the disk");
    const fell = of(state, id, "tool_call_update").filter((u) => u.status === "completed").pop();
    check(JSON.stringify(fell?.rawOutput ?? "").includes("written on disk"), `disk fallback not disclosed: ${JSON.stringify(fell?.rawOutput)}`);
  },

  async plan(ctx, { state }) {
    await init(ctx);
    const { sessionId: id } = await newSession(ctx);
    await prompt(ctx, id, "plan it");
    const plans = of(state, id, "plan");
    check(plans.length >= 2, `plan updates: ${plans.length}`);
    check(plans[0]?.entries?.[0]?.content === "Write the tests" && plans[0].entries[0].status === "in_progress", `first plan ${JSON.stringify(plans[0])}`);
    const last = plans[plans.length - 1]?.entries ?? [];
    check(last.length === 0 || last[0].status === "completed", `last plan ${JSON.stringify(plans[plans.length - 1])}`);
  },

  async cancel(ctx, { state }) {
    await init(ctx, { _meta: { terminal_output: true } });
    const { sessionId: id } = await newSession(ctx);
    // Cancel once the command has printed: the call is announced before
    // meka checkpoints the workspace and starts it, and a cancel in between
    // ends a command that never ran.
    let started;
    const running = new Promise((r) => { started = r; });
    state.onOutput = (data) => { if (data.includes("started")) { state.onOutput = null; started(); } };
    const p = prompt(ctx, id, "sleep");
    await running;
    await ctx.notify(acp.methods.agent.session.cancel, { sessionId: id });
    const r = await p;
    check(r.stopReason === "cancelled", `mid-turn cancel: ${r.stopReason}`);
    // The cancelled command's terminal closes with the signal that ended it.
    const exit = of(state, id, "tool_call_update").find((u) => u._meta?.terminal_exit)?._meta.terminal_exit;
    check(exit?.signal === "SIGKILL" && exit.exit_code === null, `terminal_exit of the cancelled command: ${JSON.stringify(exit)}`);
    // A cancel sent straight after the prompt.
    const p2 = prompt(ctx, id, "sleep again");
    await ctx.notify(acp.methods.agent.session.cancel, { sessionId: id });
    const r2 = await p2;
    check(r2.stopReason === "cancelled", `cancel right after the prompt: ${r2.stopReason}`);
    // Cancelling while idle leaves the next prompt alone (a local command:
    // whether the cancelled prompt reached the model is a race).
    await ctx.notify(acp.methods.agent.session.cancel, { sessionId: id });
    const r3 = await prompt(ctx, id, "/status");
    check(r3.stopReason === "end_turn", `after the cancels: ${r3.stopReason}`);
  },

  async subagent(ctx, { state }) {
    await init(ctx, { fs: { readTextFile: true, writeTextFile: true } });
    const { sessionId: id } = await newSession(ctx);
    state.answers.push("allow");
    state.buffers.set(join(ws, "sub.txt"), "an unsaved buffer\n");
    const r = await prompt(ctx, id, "delegate");
    check(r.stopReason === "end_turn", `turn ${JSON.stringify(r)}`);
    // The sub-agent's write, above its level, was put to this client on a
    // card of its own naming the sub-agent, closed with the answer.
    check(state.asked.length === 1, `asked ${state.asked.length} times`);
    const a = state.asked[0];
    check(a?.sessionId === id && a.toolCall.title.startsWith("Writer: file_write"), `request ${JSON.stringify(a)}`);
    const cards = of(state, id, "tool_call");
    const card = cards.find((c) => c.toolCallId === a?.toolCall.toolCallId);
    check(card?.title.startsWith("Writer: ") && card.status === "pending", `forwarded card ${JSON.stringify(card)}`);
    const closed = of(state, id, "tool_call_update").find((u) => u.toolCallId === card?.toolCallId && u.status === "completed");
    check(closed?.content?.[0]?.content?.text === "file_write allowed", `forwarded card closed with ${JSON.stringify(closed)}`);
    // Its file access went through this connection, under the parent's id.
    check(state.writes.some((w) => w.sessionId === id && w.path === join(ws, "sub.txt") && w.content === "from the child"), `writes ${JSON.stringify(state.writes)}`);
    check(state.reads.some((rd) => rd.sessionId === id && rd.path === join(ws, "sub.txt")), `reads ${JSON.stringify(state.reads)}`);
    check(!existsSync(join(ws, "sub.txt")), "the sub-agent's write went to disk, not the editor");
    // Its calls are the agent_spawn card's content, the whole list each time.
    const spawn = cards.find((c) => c.rawInput?.task === "write sub.txt");
    check(spawn?.title === "Writer", `spawn card ${JSON.stringify(spawn)}`);
    const prog = of(state, id, "tool_call_update").filter((u) => u.toolCallId === spawn?.toolCallId && u.content && !u.status).map((u) => u.content[0].content.text);
    check(prog.length === 2 && prog[0].startsWith("file_write") && prog[1].split("\n").length === 2 && prog[1].split("\n")[1].startsWith("file_read"), `progress ${JSON.stringify(prog)}`);
    // Its spend is in the turn's.
    check(r.usage?.totalTokens === 363 && r.usage?.inputTokens === 330, `usage ${JSON.stringify(r.usage)}`);
    const before = transcript.length;
    await prompt(ctx, id, "/status");
    const status = textOf(updatesOf(id, before).filter((u) => u.sessionUpdate === "agent_message_chunk"));
    check(status.includes("Tokens: 330 input, 33 output") && status.includes("Of which sub-agents: 300 input, 30 output"), `status ${JSON.stringify(status)}`);
    // Its session is hidden and cannot be driven from here.
    const done = of(state, id, "tool_call_update").find((u) => u.toolCallId === spawn?.toolCallId && u.status === "completed");
    const childId = JSON.stringify(done ?? {}).match(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/)?.[0];
    if (!check(childId && childId !== id, `no sub-agent id in ${JSON.stringify(done)}`)) return;
    const list = await ctx.request(acp.methods.agent.session.list, {});
    check(list.sessions.some((x) => x.sessionId === id) && !list.sessions.some((x) => x.sessionId === childId), `list ${JSON.stringify(list.sessions.map((x) => x.sessionId))}`);
    await expectError(ctx.request(acp.methods.agent.session.load, { sessionId: childId, cwd: ws, mcpServers: [] }), -32602, "load of a sub-agent");
    await expectError(ctx.request(acp.methods.agent.session.resume, { sessionId: childId, cwd: ws, mcpServers: [] }), -32602, "resume of a sub-agent");
    await expectError(ctx.request(acp.methods.agent.session.fork, { sessionId: childId, cwd: ws, mcpServers: [] }), -32602, "fork of a sub-agent");
  },

  // relay_provider_errors = false: the provider's text reaches neither the
  // prompt's error nor the failed turn's notice, live or replayed; it is in
  // meka's -v log. The notice is a warning.
  async relay(ctx, { state }) {
    await init(ctx);
    const { sessionId: id } = await newSession(ctx);
    const from = transcript.length;
    await expectError(prompt(ctx, id, "go"), -32603, "failed turn");
    const leaked = (from, to) => transcript.slice(from, to).filter((t) => t.from === "agent" && JSON.stringify(t.msg).includes("1234"));
    check(leaked(from).length === 0, `the provider's text reached the client: ${JSON.stringify(leaked(from).map((t) => t.msg))}`);
    const notice = updatesOf(id, from).find((u) => u.sessionUpdate === "notice" && u.title === "The turn failed");
    check(notice?.severity === "warning" && /log/.test(notice.description ?? ""), `notice ${JSON.stringify(notice)}`);
    await ctx.request(acp.methods.agent.session.close, { sessionId: id });
    const before = transcript.length;
    await ctx.request(acp.methods.agent.session.load, { sessionId: id, cwd: ws, mcpServers: [] });
    const replayed = updatesOf(id, before).find((u) => u.sessionUpdate === "notice" && u.title === "The turn failed");
    check(replayed && leaked(before).length === 0, `replayed notice ${JSON.stringify(replayed)}`);
    check(agent.stderr().includes("account 1234 over quota"), "the whole error is not in the -v log");
  },

  // A compaction's model call is in the prompt's usage, and the gauge is
  // updated once it is done.
  async compaction(ctx, { state }) {
    await init(ctx);
    const { sessionId: id } = await newSession(ctx);
    await prompt(ctx, id, "first");
    const from = transcript.length;
    const r = await prompt(ctx, id, "second");
    check(r.usage?.inputTokens === 90300 && r.usage?.outputTokens === 105 && r.usage?.totalTokens === 90405, `usage ${JSON.stringify(r.usage)}`);
    const ups = updatesOf(id, from);
    const done = ups.findIndex((u) => u.sessionUpdate === "compaction_update" && u.status === "completed");
    check(done >= 0, `no completed compaction in ${JSON.stringify(ups.map((u) => u.sessionUpdate))}`);
    const facts = ups[done]?._meta?.compaction ?? {};
    check(facts.trigger === "auto" && facts.status === "completed" && facts.rows_summarized > 0 && facts.kept_turns === 1 && facts.tokens_before > facts.tokens_after && "checklist_carried" in facts,
      `_meta.compaction ${JSON.stringify(facts)}`);
    const gauge = ups.slice(done + 1).find((u) => u.sessionUpdate === "usage_update");
    check(gauge && gauge.used > 0 && gauge.used < 95000 && gauge.size === 100000, `usage_update after the compaction: ${JSON.stringify(gauge)}`);
    const firstAfter = ups.slice(done + 1).findIndex((u) => u.sessionUpdate === "usage_update");
    const firstChunk = ups.slice(done + 1).findIndex((u) => u.sessionUpdate === "agent_message_chunk");
    check(firstAfter >= 0 && firstAfter < firstChunk, "the gauge came only with the next reply");
  },

  // At workspace with approvals on, a write outside the roots is put to
  // the user, as any call above the level is, not refused unasked.
  async outside(ctx, { state }) {
    await init(ctx);
    const { sessionId: id } = await newSession(ctx);
    const out = process.env.MEKA_OUTSIDE;
    state.answers.push("allow", "reject");
    await prompt(ctx, id, "write outside");
    await prompt(ctx, id, "write outside again");
    check(state.asked.length === 2, `asked ${state.asked.length} times`);
    check(state.asked[0]?.toolCall.title === `file_write ${out}/out.txt`, `request ${JSON.stringify(state.asked[0]?.toolCall)}`);
    check(existsSync(join(out, "out.txt")) && readFileSync(join(out, "out.txt"), "utf8") === "outside\n", "the approved write outside the roots did not happen");
    check(!existsSync(join(out, "denied.txt")), "the denied write happened");
    // A read outside the roots is put to the user as the write was.
    writeFileSync(join(out, "secret.txt"), "outside secret\n");
    state.answers.push("allow", "reject");
    await prompt(ctx, id, "read outside");
    await prompt(ctx, id, "read outside again");
    check(state.asked.length === 4, `asked ${state.asked.length} times in all`);
    check(state.asked[2]?.toolCall.title === `file_read ${out}/secret.txt`, `read request ${JSON.stringify(state.asked[2]?.toolCall)}`);
    const statuses = of(state, id, "tool_call_update").filter((u) => u.status).map((u) => u.status);
    check(JSON.stringify(statuses) === '["completed","failed","completed","failed"]', `statuses ${JSON.stringify(statuses)}`);
    const reads = of(state, id, "tool_call_update").filter((u) => u.status && JSON.stringify(u.content ?? "").includes("outside secret"));
    check(reads.length === 1, `the allowed read's content, and only its: ${reads.length}`);
  },

  // What Zed does when the user types after Stop: the cancel and the next
  // prompt with no gap, the first turn still running.
  async cancelprompt(ctx, { state }) {
    await init(ctx);
    const { sessionId: id } = await newSession(ctx);
    let started;
    const running = new Promise((r) => { started = r; });
    state.onCall = started;
    const p1 = prompt(ctx, id, "sleep");
    await running;
    const sent = ctx.notify(acp.methods.agent.session.cancel, { sessionId: id });
    const p2 = prompt(ctx, id, "typed after stop");
    await sent;
    const [r1, r2] = await Promise.allSettled([p1, p2]);
    check(r1.status === "fulfilled" && r1.value.stopReason === "cancelled", `the cancelled prompt: ${JSON.stringify(r1.value ?? r1.reason?.message)}`);
    check(r2.status === "fulfilled" && r2.value.stopReason === "end_turn", `the prompt after the cancel: ${JSON.stringify(r2.value ?? r2.reason?.message)}`);
    // It ran after the cancelled turn was answered.
    check(responseIndex("session/prompt", 0) < responseIndex("session/prompt", 1), "the prompts were answered out of order");
    check(textOf(updatesOf(id, responseIndex("session/prompt", 0)).filter((u) => u.sessionUpdate === "agent_message_chunk")) === "after the stop", "the second turn's reply");
  },

  // Skills: the palette lists them (a built-in's name cannot shadow it), a
  // skill installed mid-session shows up at the next prompt, /name invokes
  // one, other slashes pass through, load replays the command as typed,
  // and skill_write's change comes as a diff of its file.
  async skills(ctx, { state }) {
    await init(ctx);
    const { sessionId: id } = await newSession(ctx);
    const palette = () => { const u = of(state, id, "available_commands_update"); return u[u.length - 1]?.availableCommands ?? []; };
    const names = () => palette().map((c) => c.name);
    const r1 = await prompt(ctx, id, "/deploy to staging");
    check(r1.stopReason === "end_turn", `deploy: ${r1.stopReason}`);
    const skipped = of(state, id, "notice").find((u) => u.title === `Skill skipped: ${ws}/.agents/skills/broken/SKILL.md`);
    check(skipped?.severity === "warning" && skipped.description.includes("must start with a --- line"), `skipped skill notice ${JSON.stringify(of(state, id, "notice"))}`);
    // The palette sent after session/new and again at the top of the prompt.
    check(of(state, id, "available_commands_update").length === 2, "palette updates");
    check(JSON.stringify(names()) === '["status","mcp","hooks","usage","memories","reload","compact","rewind","deploy"]', `palette ${JSON.stringify(names())}`);
    check(palette().find((c) => c.name === "deploy")?.input?.hint === "additional context (optional)", "input hint");
    check(palette().find((c) => c.name === "status")?.description.startsWith("Show the session"), "a skill shadowed /status");
    await prompt(ctx, id, "/usr/lib is where?");
    await prompt(ctx, id, "/nonexistent thing");
    const before = of(state, id, "agent_message_chunk").length;
    await prompt(ctx, id, "/status");
    const status = textOf(of(state, id, "agent_message_chunk").slice(before));
    check(status.includes(`Instructions: ${ws}/AGENTS.md (`), `status: ${status}`);
    mkdirSync(join(ws, ".agents/skills/late"), { recursive: true });
    writeFileSync(join(ws, ".agents/skills/late/SKILL.md"), "---\nname: late\ndescription: Installed mid-session.\n---\nLATE-BODY\n");
    // A changed AGENTS.md is read again on /reload (the Go side checks the
    // next request's system prompt).
    writeFileSync(join(ws, "AGENTS.md"), "AGENTS-RULES-2\n");
    const rl = await prompt(ctx, id, "/reload");
    check(rl.stopReason === "end_turn", `/reload: ${rl.stopReason}`);
    const r2 = await prompt(ctx, id, "write a skill");
    check(names().includes("late"), `palette not refreshed: ${JSON.stringify(names())}`);
    check(r2.stopReason === "end_turn", "skill_write turn");
    const done = of(state, id, "tool_call_update").find((u) => u.status === "completed");
    const diff = done?.content?.find((c) => c.type === "diff");
    check(diff && diff.path.endsWith("/skills/notes/SKILL.md") && diff.newText.includes("NOTES-BODY") && (diff.oldText ?? "") === "",
      `skill_write diff ${JSON.stringify(done)}`);
    await ctx.request(acp.methods.agent.session.close, { sessionId: id });
    const from = transcript.length;
    await ctx.request(acp.methods.agent.session.load, { sessionId: id, cwd: ws, mcpServers: [] });
    const users = updatesOf(id, from).filter((u) => u.sessionUpdate === "user_message_chunk").map((u) => u.content.text);
    check(users[0] === "/deploy to staging" && !users.join("").includes("DEPLOY-BODY"), `replay ${JSON.stringify(users)}`);
  },

  // MCP: /mcp reports the configured servers' state (never why one
  // failed); the editor's mcpServers are dropped with a notice saying how
  // many; a server's form elicitation reaches this client, which
  // advertised only forms, so a url one is declined with a notice.
  async mcp(ctx, { state }) {
    await init(ctx, { elicitation: { form: {} } });
    const { sessionId: id } = await ctx.request(acp.methods.agent.session.new, { cwd: ws,
      mcpServers: [{ name: "a", command: "a", args: [], env: [] }, { name: "b", command: "b", args: [], env: [] }] });
    const r = await prompt(ctx, id, "ask me");
    check(r.stopReason === "end_turn", `turn ${JSON.stringify(r)}`);
    const notices = of(state, id, "notice").map((n) => n.title);
    check(notices.some((t) => t.startsWith("Ignored 2 MCP servers sent by the editor")), `mcpServers notice: ${JSON.stringify(notices)}`);
    check(state.elicited.length === 1, `elicited ${state.elicited.length} times`);
    const el = state.elicited[0];
    check(el?.sessionId === id && el.mode === "form" && el.message === "What is your name?" && el.requestedSchema?.properties?.name, `elicitation ${JSON.stringify(el)}`);
    const titles = of(state, id, "tool_call").map((c) => c.title);
    check(titles.includes("mcp__t__ask form"), `tool titles ${JSON.stringify(titles)}`);
    const declined = of(state, id, "notice").map((n) => n.title);
    check(declined.some((t) => t.startsWith("Declined a request for input (url) from MCP server t")), `url notice: ${JSON.stringify(declined)}`);
    // After a turn that used t's tools, /mcp shows it connected: a turn
    // waits for the servers' first start, and a server's tools are never
    // offered before its state says connected.
    const before = transcript.length;
    const r0 = await prompt(ctx, id, "/mcp");
    check(r0.stopReason === "end_turn", "/mcp turn");
    const report = textOf(updatesOf(id, before).filter((u) => u.sessionUpdate === "agent_message_chunk"));
    check(/- t: connected, \d+ tools, 1 prompt(\n|$)/.test(report) && report.includes("- dead: failed: its command was not found"), `/mcp ${JSON.stringify(report)}`);
    check(!report.includes("nonexistent"), `/mcp tells why a server failed: ${JSON.stringify(report)}`);
  },

  // Projects and memories: a new session is on no project; memory_write's
  // change comes as a diff; the project option moves the session (not
  // mid-turn, not to a name no project has); /memories shows the notes the
  // session sees now.
  async memories(ctx, { state }) {
    await init(ctx);
    const s = await newSession(ctx);
    const id = s.sessionId;
    await prompt(ctx, id, "remember that I like tabs");
    // The project picker is in the answer, or, when meka's database was
    // still opening, in a config_option_update before the turn's updates.
    const ups = of(state, id);
    const picked = ups.findIndex((u) => u.sessionUpdate === "config_option_update");
    const turn = ups.findIndex((u) => u.sessionUpdate === "tool_call" || u.sessionUpdate === "agent_message_chunk");
    const options = picked >= 0 ? ups[picked].configOptions : s.configOptions;
    check(picked < turn, `the project picker came after the turn's updates (${picked} > ${turn})`);
    check(JSON.stringify(options.map((o) => o.id)) === '["permission","profile","project","approvals"]', `options ${JSON.stringify(options.map((o) => o.id))}`);
    const proj = options[2];
    check(proj.currentValue === "(none)" && JSON.stringify(proj.options.map((o) => o.value)) === '["(none)","web"]', `project option ${JSON.stringify(proj)}`);
    const done = of(state, id, "tool_call_update").find((u) => u.status === "completed");
    const shown = JSON.stringify(done?.content ?? []);
    check(shown.includes("```diff") && shown.includes("+user likes tabs") && shown.includes("--- memory m1"), `memory_write change ${shown}`);
    let midTurn = null;
    // The round after the tool call stalls, so the turn is in flight for
    // sure when the switch arrives; the turn is then cancelled.
    state.onCall = () => {
      state.onCall = null;
      midTurn = expectError(ctx.request(acp.methods.agent.session.setConfigOption, { sessionId: id, configId: "project", value: "web" }), -32602, "project switch mid-turn")
        .then(() => ctx.notify(acp.methods.agent.session.cancel, { sessionId: id }));
    };
    const r2 = await prompt(ctx, id, "remember again, still on no project");
    check(r2.stopReason === "cancelled", `the stalled turn: ${r2.stopReason}`);
    if (check(midTurn !== null, "no tool call to switch during")) await midTurn;
    await expectError(ctx.request(acp.methods.agent.session.setConfigOption, { sessionId: id, configId: "project", value: "nope" }), -32602, "unknown project");
    const moved = await ctx.request(acp.methods.agent.session.setConfigOption, { sessionId: id, configId: "project", value: "web" });
    check(moved.configOptions[2].currentValue === "web", `after the switch ${JSON.stringify(moved.configOptions[2])}`);
    await prompt(ctx, id, "remember how web deploys");
    const before = of(state, id, "agent_message_chunk").length;
    await prompt(ctx, id, "/memories");
    const listed = textOf(of(state, id, "agent_message_chunk").slice(before));
    check(listed.includes("Memories of project web") && listed.includes("web deploys with make ship") && !listed.includes("tabs"), `/memories ${listed}`);
  },

  // session/delete: advertised; a session this connection holds is
  // refused, a closed one goes with its log; a missing one succeeds.
  async delete(ctx) {
    await init(ctx);
    const { sessionId: id } = await newSession(ctx);
    await prompt(ctx, id, "hello");
    await expectError(ctx.request(acp.methods.agent.session.delete, { sessionId: id }), -32602, "delete of a held session");
    await ctx.request(acp.methods.agent.session.close, { sessionId: id });
    await ctx.request(acp.methods.agent.session.delete, { sessionId: id });
    const list = await ctx.request(acp.methods.agent.session.list, {});
    check(!list.sessions.some((x) => x.sessionId === id), "the deleted session is still listed");
    await expectError(ctx.request(acp.methods.agent.session.load, { sessionId: id, cwd: ws, mcpServers: [] }), -32602, "load of a deleted session");
    await ctx.request(acp.methods.agent.session.delete, { sessionId: id });
  },

  // A client's systemPrompt is appended to meka's and recorded with the
  // session: kept by a load that sends none, replaced by one that sends
  // another (the Go side checks the model's system prompts). A mode meka
  // does not offer is refused.
  async sysprompt(ctx) {
    await init(ctx);
    const sp = (text) => ({ mode: "append", content: [{ type: "text", text }] });
    const s = await ctx.request(acp.methods.agent.session.new, { cwd: ws, mcpServers: [], systemPrompt: sp("CLIENT-RULE-ONE") });
    await prompt(ctx, s.sessionId, "first");
    await ctx.request(acp.methods.agent.session.close, { sessionId: s.sessionId });
    await ctx.request(acp.methods.agent.session.load, { sessionId: s.sessionId, cwd: ws, mcpServers: [] });
    await prompt(ctx, s.sessionId, "second");
    await ctx.request(acp.methods.agent.session.close, { sessionId: s.sessionId });
    await ctx.request(acp.methods.agent.session.resume, { sessionId: s.sessionId, cwd: ws, mcpServers: [], systemPrompt: sp("CLIENT-RULE-TWO") });
    await prompt(ctx, s.sessionId, "third");
    const f = await ctx.request(acp.methods.agent.session.fork, { sessionId: s.sessionId, cwd: ws, mcpServers: [] });
    await prompt(ctx, f.sessionId, "in the fork");
    await expectError(ctx.request(acp.methods.agent.session.new, { cwd: ws, mcpServers: [], systemPrompt: { mode: "override", content: [{ type: "text", text: "x" }] } }), -32602, "override mode");
    await expectError(ctx.request(acp.methods.agent.session.new, { cwd: ws, mcpServers: [], systemPrompt: { mode: "append", content: [] } }), -32602, "empty systemPrompt");
  },

  // A client that advertises plan operations gets plan_update, one plan
  // by id, and plan_removed when the list is emptied.
  async planops(ctx, { state }) {
    await init(ctx, { plan: {} });
    const { sessionId: id } = await newSession(ctx);
    await prompt(ctx, id, "plan it");
    check(of(state, id, "plan").length === 0, "a legacy plan went to a client with plan operations");
    const ups = of(state, id, "plan_update");
    check(ups.length >= 2 && ups.every((u) => u.plan.type === "items" && u.plan.planId === "update_plan"), `plan_update ${JSON.stringify(ups)}`);
    check(ups[0]?.plan.entries[0]?.content === "Write the tests" && ups[0].plan.entries[0].status === "in_progress", `first plan_update ${JSON.stringify(ups[0])}`);
    check(ups.at(-1)?.plan.entries[0]?.status === "completed", `last plan_update ${JSON.stringify(ups.at(-1))}`);
    await prompt(ctx, id, "clear it");
    const gone = of(state, id, "plan_removed");
    check(gone.length === 1 && gone[0].planId === "update_plan", `plan_removed ${JSON.stringify(gone)}`);
  },

  // A client that advertises subagents sees a sub-agent as a session of
  // its own: announced on the parent, linked to the agent_spawn call, its
  // updates and its permission request under its own id, idle at the end.
  async subagents(ctx, { state }) {
    await init(ctx, { subagents: {} });
    const { sessionId: id } = await newSession(ctx);
    state.answers.push("allow");
    const r = await prompt(ctx, id, "delegate");
    check(r.stopReason === "end_turn", `turn ${JSON.stringify(r)}`);
    const spawn = of(state, id, "tool_call").find((c) => c.name === "agent_spawn");
    const subs = of(state, id, "subagent_update");
    const childId = subs[0]?.sessionId;
    if (!check(childId && childId !== id, `subagent_update ${JSON.stringify(subs)}`)) return;
    check(subs[0].state?.state === "running" && subs[0].title === "Writer" && subs[0]._meta?.toolCallId === spawn?.toolCallId, `announcement ${JSON.stringify(subs[0])}`);
    check(of(state, id, "tool_call_update").some((u) => u.toolCallId === spawn?.toolCallId && u._meta?.subagentSessionId === childId), "the spawn call does not name its child");
    const last = subs.at(-1);
    check(last?.state?.state === "idle" && last.state.stopReason === "end_turn", `last subagent_update ${JSON.stringify(last)}`);
    // The child's traffic comes after its announcement, under its id.
    const announced = transcript.findIndex((t) => t.msg.method === "session/update" && t.msg.params.update.sessionUpdate === "subagent_update");
    const firstChild = transcript.findIndex((t) => t.msg.method === "session/update" && t.msg.params.sessionId === childId);
    check(announced >= 0 && firstChild > announced, `child traffic before its announcement (${firstChild} <= ${announced})`);
    const childCalls = updatesOf(childId).filter((u) => u.sessionUpdate === "tool_call").map((u) => u.name);
    check(JSON.stringify(childCalls) === '["file_write","file_read"]', `the child's calls ${JSON.stringify(childCalls)}`);
    check(textOf(updatesOf(childId).filter((u) => u.sessionUpdate === "agent_message_chunk")) === "Wrote sub.txt.", "the child's reply");
    check(updatesOf(childId).some((u) => u.sessionUpdate === "user_message_chunk" && u.content.text === "write sub.txt"), "the child's task");
    check(state.asked.length === 1 && state.asked[0].sessionId === childId, `permission ${JSON.stringify(state.asked.map((a) => a.sessionId))}`);
    const childWrite = updatesOf(childId).find((u) => u.sessionUpdate === "tool_call" && u.name === "file_write");
    check(state.asked[0]?.toolCall.toolCallId === childWrite?.toolCallId, "the request names the child's card");
    // No rolling list on the spawn card: the child shows its own work.
    check(!of(state, id, "tool_call_update").some((u) => u.toolCallId === spawn?.toolCallId && u.content && !u.status), "legacy progress sent");
    check(existsSync(join(ws, "sub.txt")), "the child's write");
  },

  async setmode(ctx, { state, client }) {
    await init(ctx, { fs: { readTextFile: true, writeTextFile: true } });
    const { sessionId: id } = await newSession(ctx);
    state.buffers.set(join(ws, "in.txt"), "input\n");
    client.onRead = async (_params, agent) => {
      // The turn is in flight: set_mode applies to its next call; a
      // profile switch is refused.
      await agent.request(acp.methods.agent.session.setMode, { sessionId: id, modeId: "workspace" });
      await expectError(agent.request(acp.methods.agent.session.setConfigOption, { sessionId: id, configId: "profile", value: "second" }), -32602, "profile switch mid-turn");
      client.onRead = null;
    };
    const r = await prompt(ctx, id, "read then write");
    check(r.stopReason === "end_turn", "setmode turn");
    if (state.reads.length === 0) { fail("SKIP: file tools are not routed through fs/* (cli does not pass host.Env.Files to fstool)"); return; }
    const statuses = of(state, id, "tool_call_update").filter((u) => u.status).map((u) => u.status);
    check(JSON.stringify(statuses) === '["completed","completed"]', `the write after set_mode: ${JSON.stringify(statuses)}`);
    check(state.asked.length === 0, "asked for a call the new mode allows");
  },
};

// ---- run ------------------------------------------------------------------
const fn = scenarios[scenario];
if (!fn) { console.error(`unknown scenario ${scenario}`); process.exit(2); }
const agent = startAgent(JSON.parse(process.env.MEKA_ARGS ?? "[]"));
const clientOpts = {};
const { app, state } = makeClient({
  get answers() { return []; },
  onRead: (p, a) => clientOpts.onRead?.(p, a),
  served: scenario === "fs" ? (p) => p.startsWith(join(ws, "proj") + "/") : null,
  onUpdate: (u) => {
    if (u.update.sessionUpdate === "tool_call") state.onCall?.();
    const out = u.update._meta?.terminal_output?.data;
    if (u.update.sessionUpdate === "tool_call_update" && typeof out === "string") state.onOutput?.(out);
  },
});
try {
  await app.connectWith(agent.stream, (ctx) => fn(ctx, { state, client: clientOpts }));
} catch (e) {
  fail(`scenario threw: ${e?.stack ?? e}`);
}
agent.child.stdin.end();
const code = await new Promise((r) => agent.child.on("exit", (c) => r(c)));
if (!/ACP client connected: meka-e2e 1\.0\.0/.test(agent.stderr())) fail("no 'ACP client connected' log line on stderr");
if (code !== 0) fail(`meka exited ${code}: ${agent.stderr().slice(-2000)}`);
process.stdout.write(JSON.stringify({ scenario, failures, validated, stderr: agent.stderr().slice(-4000), transcript }) + "\n");
