"use strict";
// The live view: one WebSocket to `blemu ui`, which bridges it to a running device's control socket
// (docs/control-and-events.md). The server sends a snapshot, then updates, events and answers; every control sends
// the control protocol's own command. Strings from the profile or a central only ever reach the page as text.
(() => {
const ROWS = 2000;              // timeline rows kept in the DOM
const KEEP_MS = 10 * 60e3;      // plot data kept (the widest window is 5 min)
const POINTS = 6000;            // plot points kept per series
// The counters in the order shown; any other the device sends comes after them.
const COUNTERS = ["requests", "answered", "unanswered", "responded", "rejected", "expired", "dropped",
  "writesWithoutResponse", "notificationsQueued", "notificationsSent", "notificationsToNobody", "queueFull", "waiting",
  "outboxDropped", "notificationsDropped", "eventLinesLost"];
const WARN = ["expired", "dropped", "outboxDropped", "notificationsDropped", "eventLinesLost"];
const ERRORS = ["unlikely-error", "read-not-permitted", "write-not-permitted", "insufficient-authentication",
  "insufficient-encryption", "invalid-attribute-value-length", "value-not-allowed", "out-of-range", "0x80"];
const SIZES = { u8: 1, u16: 2, u24: 3, u32: 4, s8: 1, s16: 2, s24: 3, s32: 4, float32: 4, sfloat: 2, float: 4,
  bool: 1, flags8: 1, flags16: 2, flags32: 4 };
const NUMERIC = /^([us](8|16|24|32)|float32|sfloat|float)$/;

// ------------------------------------------------------------ helpers

const $ = (id) => document.getElementById(id);

// An element with attributes and children; strings become text nodes, never markup.
function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) if (child) node.append(child);  // false, null, "" and 0 are left out
  return node;
}

// A list's items, or one item saying it is empty.
function fill(list, items, empty) {
  list.replaceChildren(...(items.length ? items : [el("li", { class: "empty", text: empty })]));
}

// Whether `value` differs from what `key` last showed (then it is remembered).
const shown = {};
function changed(key, value) {
  const text = JSON.stringify(value);
  if (shown[key] === text) return false;
  shown[key] = text;
  return true;
}

const spaced = (hex) => (hex || "").replace(/(..)(?!$)/g, "$1 ");
const bytes = (hex) => Uint8Array.from((hex || "").match(/../g) || [], (pair) => parseInt(pair, 16));

// The value's text when it is printable UTF-8 (device information strings), else null.
function printable(hex) {
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes(hex));
    return /^[^\u0000-\u001f\u007f]+$/.test(text) ? text : null;
  } catch (_) { return null; }
}

// A field's value as `get` decodes it: numbers, booleans, flag names, text, hex.
function fieldText(value) {
  if (value == null) return "—";
  if (Array.isArray(value)) return value.length ? value.join(", ") : "none";
  if (typeof value === "number" && !Number.isInteger(value)) return String(parseFloat(value.toPrecision(7)));
  return String(value);
}

// A central's short name: a BlueZ device path's address, or the id itself (`*` on BlueZ 5.66).
function centralName(id) {
  const match = /dev_((?:[0-9A-F]{2}_){5}[0-9A-F]{2})$/i.exec(id || "");
  return match ? match[1].replace(/_/g, ":") : String(id);
}

function clock(date) {
  if (isNaN(date)) return "";
  const pad = (n, width = 2) => String(n).padStart(width, "0");
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`;
}

function duration(ms) {
  for (const [unit, size] of [["h", 3600e3], ["min", 60e3], ["s", 1e3]]) {
    if (ms >= size && (ms % size === 0 || unit === "s")) return ms / size + " " + unit;
  }
  return ms + " ms";
}

function pill(id, text, tone) {
  $(id).textContent = text;
  $(id).className = "pill " + (tone || "");
}

function say(where, text, tone) {
  if (!where) return;
  where.textContent = text;
  where.className = "inline-answer " + tone;
}

// ------------------------------------------------------------ state

const view = { characteristics: new Map(), status: null, counters: {}, reachable: true };
const events = { received: 0, incoming: [], lastBatch: 0, held: [], heldDropped: 0, paused: false, timer: null,
  lastTime: "", lastAtTime: [] };
const plots = {
  values: new Map(),  // id -> {canvas, fields: [{name, type, offset}], points: {name: [[time, value]]}}
  rate: new Map(),    // second -> notifications and indications
  latency: { read: [], write: [], error: [] },
  skews: [],          // arrival minus event time of recent live events: the device's clock against this one
};

// ------------------------------------------------------------ the WebSocket

let socket = null, backoff = 500, retryTimer = null, attempts = 0, nextSeq = 1;
const pending = new Map();

function connect() {
  clearTimeout(retryTimer);
  if (socket) { const old = socket; socket = null; old.close(); }
  pill("link-state", attempts++ ? "reconnecting" : "connecting", "warn");
  let ws;
  try {
    ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws");
  } catch (_) { return retry(); }
  socket = ws;
  ws.onopen = () => { pill("link-state", "live", "ok"); $("link-banner").hidden = true; };
  ws.onmessage = (message) => {
    if (socket !== ws) return;
    let data;
    try { data = JSON.parse(message.data); } catch (_) { return; }
    try { handle(data); } catch (error) { console.error("blemu ui: cannot show", data, error); }
  };
  ws.onclose = () => {
    if (socket !== ws) return;
    socket = null;
    document.body.dataset.connected = "false";
    for (const [seq, entry] of pending) {
      answer({ seq, request: entry.request, response: { ok: false, error: "no answer: the view's connection closed" } });
    }
    retry();
  };
}

function retry() {
  const delay = backoff * (0.8 + Math.random() * 0.4);
  backoff = Math.min(backoff * 2, 15000);
  pill("link-state", "offline", "bad");
  $("link-retry").textContent = `Trying again in ${Math.max(1, Math.round(delay / 1000))} s.`;
  $("link-banner").hidden = false;
  retryTimer = setTimeout(connect, delay);
}

// Sends a control-protocol request; its answer shows in #answers and in `where`, next to the control.
function send(request, where) {
  const seq = nextSeq++;
  if (!socket || socket.readyState !== WebSocket.OPEN) {
    return answer({ seq, request, response: { ok: false, error: "not connected to blemu ui" } }, where);
  }
  pending.set(seq, { request, where });
  say(where, "…", "pending");
  socket.send(JSON.stringify({ type: "command", seq, request }));
}

function handle(message) {
  if (message.type === "snapshot") snapshot(message);
  else if (message.type === "update") update(message);
  else if (message.type === "event" && message.event) receive([message.event], true);
  else if (message.type === "answer") answer(message);
  else if (message.type === "device") reachable(message.reachable !== false, message.error);
}

// ------------------------------------------------------------ snapshot and updates

function snapshot(message) {
  const profile = message.profile || { name: "?", services: [] };
  const same = !changed("profile", profile);
  if (!same) { buildProfile(profile); clearEvents(); }
  $("control-path").textContent = message.control || "–";
  for (const key of Object.keys(shown)) if (key !== "profile") delete shown[key];
  update(message);
  receive(same ? unseen(message.events || []) : message.events || [], false);
  reachable(true);
  backoff = 500;
  document.body.dataset.connected = "true";
}

function update(message) {
  if (message.status) showStatus(message.status);
  for (const [id, value] of Object.entries(message.values || {})) showValue(id, value);
  if (message.centrals) showCentrals(message.centrals);
  if (message.counters) showCounters(message.counters);
  if (message.schedules) showSchedules(message.schedules);
  if (message.pairings) showPairings(message.pairings);
  if (message.variables) showVariables(message.variables);
}

function reachable(yes, error) {
  view.reachable = yes;
  $("device-banner").hidden = yes;
  document.body.classList.toggle("unreachable", !yes);
  $("device-error").textContent = error ? `(${error})` : "";
  if (!yes) pill("device-state", "unreachable", "bad");
  else if (view.status) pill("device-state", view.status.state, view.status.state === "poweredOn" ? "ok" : "warn");
}

// ------------------------------------------------------------ the profile: GATT tree, set forms, plots

function buildProfile(profile) {
  $("device-name").textContent = profile.name;
  document.title = profile.name + " · blemu live view";
  view.characteristics.clear();
  plots.values.clear();
  $("value-plots").replaceChildren();
  const ids = [];
  $("gatt").replaceChildren(...(profile.services || []).map((service) => el("section", { class: "service" },
    el("h3", {}, service.name || service.uuid, " ", el("small", { text: [service.id, service.uuid,
      service.primary === false && "secondary", (service.includes || []).length && "includes " + service.includes.join(", "),
    ].filter(Boolean).join(" · ") })),
    (service.characteristics || []).map((characteristic) => {
      ids.push(characteristic.id);
      buildPlot(characteristic);
      return buildCharacteristic(characteristic);
    }))));
  if (!ids.length) $("gatt").append(el("p", { class: "empty", text: "The profile has no characteristics." }));
  if (!plots.values.size) {
    $("value-plots").append(el("p", { class: "empty", text: "No notifying characteristic has numeric fields to plot." }));
  }
  for (const [select, all] of [[$("filter-characteristic"), "all"], [$("fault-form").elements.id, "any"]]) {
    select.replaceChildren(el("option", { value: "", text: all }), ...ids.map((id) => el("option", { value: id, text: id })));
  }
  fill($("behaviour"), (profile.behaviour || []).map((line) =>
    el("li", { class: line.startsWith(" ") ? "indented" : "", text: line.trim() })), "No behaviour declared.");
  const pairing = profile.pairing || {};
  $("pairing-settings").textContent = [pairing.ioCapability, pairing.passkey && "passkey " + pairing.passkey,
    pairing.bondable === false ? "not bondable" : "bondable"].filter(Boolean).join(" · ");
}

function buildCharacteristic(def) {
  const properties = def.properties || [];
  const entry = { def, whole: !(def.fields || []).length, fields: new Map(), inputs: new Map(), hex: el("code", { class: "value-hex" }),
    text: el("span", { class: "value-text" }), output: el("output", { class: "inline-answer", "aria-live": "polite" }) };
  const chip = (kind, text, title) => el("li", { class: "chip " + kind, text, title });
  const fields = (def.fields || []).map((field) => {
    const dd = el("dd", { class: "field" + (field.type === "utf8" ? " text" : ""), "data-field": field.name, text: field.value });
    entry.fields.set(field.name, dd);
    return el("div", {}, el("dt", {}, field.name, " ", el("small", { text: field.type })), dd);
  });
  const descriptors = (def.descriptors || []).map((d) => el("li", {}, d.name || d.uuid, " ",
    el("code", { text: d.uuid === "2901" && printable(d.value) ? `“${printable(d.value)}”` : spaced(d.value) })));
  const notifies = properties.includes("notify") || properties.includes("indicate");
  entry.row = el("article", { class: "characteristic", "data-characteristic": def.id },
    el("header", {}, el("h4", { text: def.name || def.uuid }), " ", el("small", { text: def.id + " · " + def.uuid })),
    el("ul", { class: "chips", "aria-label": "what it allows" },
      properties.map((name) => chip("property", name)), (def.permissions || []).map((name) => chip("permission", name)),
      Object.entries(def.security || {}).map(([operation, level]) => chip("security", operation + ": " + level, "security")),
      def.cached && chip("constant", "constant", "cached by the stack, read-only")),
    el("p", { class: "value" }, el("span", { class: "label", text: "value " }), entry.hex, " ", entry.text),
    fields.length && el("dl", { class: "fields" }, fields),
    descriptors.length && el("ul", { class: "descriptors" }, descriptors),
    el("div", { class: "actions" },
      notifies && el("button", { type: "button", class: "notify-button small", title: "Send the current value to the subscribers",
        onclick: () => send({ command: "notify", id: def.id }, entry.output) },
        properties.includes("notify") ? "Notify now" : "Indicate now"),
      !def.cached && buildSetForm(entry), entry.output));
  view.characteristics.set(def.id, entry);
  showValue(def.id, { hex: def.value }, true);
  return entry.row;
}

// One input per field (only the ones filled in are sent: the device keeps the others), or one for the hex.
// The device checks the values and says what is wrong; the page only checks what it has to parse.
function buildSetForm(entry) {
  const form = el("form", { class: "set-form", "aria-label": "Set " + entry.def.id, novalidate: true },
    (entry.whole ? [{ name: "hex", type: "whole" }] : entry.def.fields).map((field) => {
      const input = fieldInput(field);
      entry.inputs.set(field.name, input);
      return el("label", { class: "set-field" }, el("span", { text: field.name }), input);
    }),
    el("button", { type: "submit", class: "set-button small" }, "Set"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const request = setRequest(entry);
    if (request.error) return say(entry.output, request.error, "error");
    entry.clearOnAnswer = true;
    send(request, entry.output);
  });
  return form;
}

function fieldInput(field) {
  const type = field.type;
  const attributes = { name: type === "whole" ? "hex" : "field:" + field.name, type: "text", autocomplete: "off",
    spellcheck: "false", "aria-label": type === "whole" ? "the value in hex" : field.name + " (" + type + ")" };
  if (NUMERIC.test(type)) Object.assign(attributes, { type: "number", step: /^[us]/.test(type) ? 1 : "any" });
  if (type === "bool") attributes.list = "bool-values";
  if (/^flags/.test(type)) attributes.title = "bit names, comma-separated (none for no bit), or a number";
  return el("input", attributes);
}

const hexOf = (text) => text.replace(/^0x/i, "").replace(/[\s:]/g, "").toUpperCase();

// The `set` request the form asks for, or {error}.
function setRequest(entry) {
  const id = entry.def.id;
  if (entry.whole) {
    const hex = hexOf(entry.inputs.get("hex").value);
    return /^([0-9A-F]{2})+$/.test(hex) ? { command: "set", id, hex } : { error: "enter hex bytes, e.g. 01 or 06 48" };
  }
  const fields = {};
  for (const { name, type } of entry.def.fields) {
    const raw = entry.inputs.get(name).value.trim();
    if (raw === "") continue;
    if (NUMERIC.test(type)) {
      if (!isFinite(Number(raw))) return { error: name + ": not a number" };
      fields[name] = Number(raw);
    } else if (type === "bool") {
      if (!/^(true|false|1|0)$/i.test(raw)) return { error: name + ": true or false" };
      fields[name] = /^(true|1)$/i.test(raw);
    } else if (/^flags/.test(type)) {
      fields[name] = /^(0x[0-9a-f]+|\d+)$/i.test(raw) ? Number(raw) :
        raw.toLowerCase() === "none" ? [] : raw.split(/[\s,]+/).filter(Boolean);
    } else {
      fields[name] = type === "hex" ? hexOf(raw) : raw;
    }
  }
  return Object.keys(fields).length ? { command: "set", id, fields } : { error: "fill in a field to set" };
}

function showValue(id, value, initial) {
  const entry = view.characteristics.get(id);
  if (!entry || !value) return;
  const moved = !initial && entry.lastHex !== value.hex;
  entry.lastHex = value.hex;
  entry.hex.textContent = value.hex ? spaced(value.hex) : "(empty)";
  const text = entry.fields.size || !value.hex ? null : printable(value.hex);
  entry.text.textContent = text === null ? "" : `“${text}”`;
  if (!initial) for (const [name, dd] of entry.fields) dd.textContent = fieldText((value.fields || {})[name]);
  for (const [name, input] of entry.inputs) {
    input.placeholder = entry.whole ? spaced(value.hex) : entry.fields.get(name).textContent;
  }
  if (moved) {  // a short flash, restarted on each change
    entry.row.classList.remove("changed");
    void entry.row.offsetWidth;
    entry.row.classList.add("changed");
  }
}

// ------------------------------------------------------------ status, centrals, counters, schedules, pairing

function showStatus(status) {
  if (!changed("status", status)) return;
  view.status = status;
  reachable(view.reachable);
  pill("advertising", status.advertising ? "on" : "off", status.advertising ? "ok" : "warn");
  $("adapter").textContent = status.adapter || "–";
  $("bluez").textContent = status.bluez || "unknown";
  $("advertising-toggle").textContent = status.advertising ? "Stop advertising" : "Start advertising";
  const ad = status.advertisement || {};
  if (!changed("advertisement", ad)) return;
  $("adv-mode").textContent = ad.mode || "";
  const line = (label, hex) => el("div", {},
    el("span", { class: "label", text: `${label} (${(hex || "").length / 2}${ad.mode === "legacy" ? "/31" : ""} bytes) ` }),
    el("code", { text: spaced(hex) || "none" }));
  $("adv-bytes").replaceChildren(line("ADV", ad.adv), ...ad.mode === "extended" ? [] : [line("Scan response", ad.scanResponse)]);
  $("adv-structures").tBodies[0].replaceChildren(...(ad.structures || []).map((s) => el("tr", { "data-type": s.type },
    el("td", { text: s.in === "scan-response" ? "scan rsp" : s.in }), el("td", {}, el("code", { text: s.type }), " ", s.name),
    el("td", {}, el("code", { text: spaced(s.bytes) })), el("td", { text: s.origin }), el("td", { text: s.explanation }))));
  $("adv-notes").replaceChildren(...[ad.error && el("li", { class: "bad", text: ad.error }),
    (ad.overflow || []).length && el("li", { class: "warn", text: "Service UUIDs that did not fit: " + ad.overflow.join(", ") }),
    ...(ad.deviations || []).map((text) => el("li", { text }))].filter(Boolean));
}

function showCentrals(centrals) {
  if (!changed("centrals", centrals)) return;
  const who = (id) => el("strong", { title: id, text: centralName(id) });
  fill($("centrals"), (centrals.centrals || []).map((c) => el("li", { class: "central", "data-central": c.id },
    el("div", { class: "central-head" }, who(c.id),
      el("span", { class: "muted", text: `max update ${c.maximumUpdateValueLength} bytes (MTU ${c.maximumUpdateValueLength + 3})` }),
      el("button", { type: "button", class: "disconnect-button small",
        onclick: () => send({ command: "disconnect", central: c.id }, $("centrals-answer")) }, "Disconnect")),
    el("div", { class: "subscriptions" }, (c.subscriptions || []).length ? "subscribed to " : "no subscriptions",
      (c.subscriptions || []).map((id) => el("span", { class: "chip", text: id }))))), "No central is connected.");
  fill($("disconnects"), (centrals.disconnects || []).slice().reverse().map((d) => el("li", {}, who(d.central),
    d.reason ? ` — ${d.reason}${d.message ? ": " + d.message : ""}` : " — left (no reason given)")), "None yet.");
}

function showPairings(pairings) {
  if (!changed("pairings", pairings)) return;
  fill($("pairings"), pairings.slice().reverse().map((p) => el("li", { class: p.accepted ? "" : "bad" },
    el("strong", { title: p.central, text: centralName(p.central) }),
    ` ${p.method}${p.passkey ? " passkey " + p.passkey : ""}: ${p.accepted ? "accepted" : "rejected"}`)), "No pairing yet.");
}

function showCounters(counters) {
  const all = Object.assign(view.counters, counters);
  if (typeof all.requests === "number" && typeof all.answered === "number") all.unanswered = all.requests - all.answered;
  for (const name of [...COUNTERS, ...Object.keys(all)]) {
    if (!(name in all)) continue;
    let node = $("counter-" + name);
    if (!node) {
      node = el("dd", { id: "counter-" + name });
      $("counters").append(el("div", { class: "counter", title: name === "unanswered" ? "requests − answered" : null }, el("dt", { text: name }), node));
    }
    const value = all[name];
    const tone = value === 0 ? "" : name === "unanswered" ? "bad" : WARN.includes(name) ? "warn" : "";
    node.textContent = String(value);
    node.className = node.parentElement.className = tone;
    node.parentElement.classList.add("counter");
  }
}

function showSchedules(schedules) {
  if (!changed("schedules", schedules)) return;
  const act = (action, id) => () => send({ command: "schedules", action, id }, $("schedules-answer"));
  $("schedules").tBodies[0].replaceChildren(...schedules.map((s) => {
    const now = s.paused ? "paused" : s.running ? "running" : "waiting";
    return el("tr", { "data-schedule": s.id, class: s.paused ? "paused" : "" },
      el("td", { text: s.id }), el("td", { text: s.recorded ? "recorded pace" : duration(s.intervalMs) }),
      el("td", {}, el("span", { class: "pill " + (s.paused ? "warn" : s.running ? "ok" : ""), text: now })),
      el("td", { class: "buttons" },
        el("button", { type: "button", class: "schedule-pause small", disabled: s.paused, onclick: act("pause", s.id) }, "Pause"),
        el("button", { type: "button", class: "schedule-resume small", disabled: !s.paused, onclick: act("resume", s.id) }, "Resume")));
  }));
  if (!schedules.length) $("schedules").tBodies[0].append(el("tr", {}, el("td", { colspan: 4, class: "empty", text: "No schedules." })));
}

function showVariables(variables) {
  if (!changed("variables", variables)) return;
  const names = Object.keys(variables).sort();
  $("variables").tBodies[0].replaceChildren(...names.map((name) =>
    el("tr", { "data-variable": name }, el("td", { text: name }), el("td", { text: fieldText(variables[name]) }))));
  if (!names.length) $("variables").tBodies[0].append(el("tr", {}, el("td", { colspan: 2, class: "empty", text: "No state variables." })));
}

// ------------------------------------------------------------ answers

function describe(r) {
  return [r.command, r.action, r.operation, r.id, r.central && centralName(r.central),
    r.fields && Object.entries(r.fields).map(([name, value]) => name + "=" + fieldText(value)).join(" "),
    r.hex, r.nth && "request " + r.nth, r.error != null && "→ " + r.error,
    r.delayMs != null && `→ delay ${r.delayMs} ms`, r.effect && "→ " + r.effect].filter((part) => part || part === 0).join(" ");
}

function outcome(response) {
  if (response.ok !== true) return "error: " + (response.error || "no reason given");
  if (typeof response.hex === "string") return "ok, value " + (spaced(response.hex) || "(empty)");
  const list = (items, none, some) => "ok, " + (items.length ? some + items.map(centralName).join(", ") : none);
  if (response.changed) return list(response.changed, "nothing changed", "back to the profile: ");
  if (response.disconnected) return list(response.disconnected, "no central was connected", "dropped ");
  return "ok";
}

function answer(message, where) {
  const entry = pending.get(message.seq) || {};
  pending.delete(message.seq);
  const request = message.request || entry.request || {};
  const response = message.response || {};
  const ok = response.ok === true;
  const text = describe(request) + ": " + outcome(response);
  $("answers").prepend(el("li", { class: "answer " + (ok ? "ok" : "error") }, el("time", { text: clock(new Date()) }), " ", text));
  while ($("answers").childElementCount > 60) $("answers").lastElementChild.remove();
  say(where || entry.where, text, ok ? "ok" : "error");
  const characteristic = view.characteristics.get(request.id);
  if (ok && request.command === "set" && characteristic && characteristic.clearOnAnswer) {
    characteristic.clearOnAnswer = false;
    for (const input of characteristic.inputs.values()) input.value = "";
  }
  if (ok && response.schedules) showSchedules(response.schedules);
}

// ------------------------------------------------------------ the timeline

// The events of a repeated snapshot (the device is back) that the timeline does not have yet: those after the last
// one it has, and of those at that very millisecond, the ones it does not have.
function unseen(list) {
  const seen = events.lastAtTime.map((event) => JSON.stringify(event));
  return list.filter((event) => {
    if (event.time !== events.lastTime) return event.time > events.lastTime;
    const index = seen.indexOf(JSON.stringify(event));
    if (index >= 0) seen.splice(index, 1);
    return index < 0;
  });
}

function clearEvents() {
  $("events").replaceChildren();
  Object.assign(events, { received: 0, incoming: [], held: [], heldDropped: 0, lastTime: "", lastAtTime: [] });
  plots.rate.clear();
  plots.latency = { read: [], write: [], error: [] };
  showHeld();
}

function receive(list, live) {
  for (const event of list) {
    const time = String(event.time || "");
    if (time > events.lastTime) { events.lastTime = time; events.lastAtTime = []; }
    if (time === events.lastTime && events.lastAtTime.length < 512) events.lastAtTime.push(event);
    const at = Date.parse(time);
    if (live && at) plots.skews = [...plots.skews.slice(-19), Date.now() - at];
    plotEvent(event, at);
    events.received++;
    events.incoming.push(event);
    // The type filter offers the types seen so far.
    if (event.type && !Array.from($("filter-type").options, (o) => o.value).includes(event.type)) {
      $("filter-type").append(el("option", { value: event.type, text: event.type }));
    }
  }
  // A flood keeps only what the timeline can show; rows are built at most 20 times a second, less often in a flood.
  if (events.incoming.length > ROWS) events.incoming.splice(0, events.incoming.length - ROWS);
  if (!events.timer) events.timer = setTimeout(flush, events.lastBatch > 200 ? 700 : 50);
}

function flush() {
  const batch = events.incoming;
  Object.assign(events, { timer: null, incoming: [], lastBatch: batch.length });
  if (events.paused) {
    events.held.push(...batch);
    const over = events.held.length - ROWS;
    if (over > 0) { events.heldDropped += over; events.held.splice(0, over); }
    showHeld();
  } else {
    appendRows(batch);
  }
  $("events-count").textContent = events.received.toLocaleString("en-US") + " received";
}

function appendRows(batch) {
  const list = $("events");
  const fragment = document.createDocumentFragment();
  for (const event of batch.slice(-ROWS)) {
    const row = eventRow(event);
    row.hidden = !matches(row);
    fragment.append(row);
  }
  const excess = list.childElementCount + fragment.childElementCount - ROWS;
  if (excess >= list.childElementCount) {
    list.replaceChildren(fragment);
  } else {
    if (excess > 0) {  // the oldest rows, in one operation
      const range = document.createRange();
      range.setStartBefore(list.firstElementChild);
      range.setEndBefore(list.children[excess]);
      range.deleteContents();
    }
    list.append(fragment);
  }
  follow();
}

function follow() {
  if ($("events-follow").checked) $("events").scrollTop = $("events").scrollHeight;
}

function matches(row) {
  const type = $("filter-type").value, id = $("filter-characteristic").value;
  return (!type || row.dataset.type === type) &&
    (!id || row.dataset.characteristic === id || (row.dataset.changed || "").split(" ").includes(id));
}

function showHeld() {
  $("events-held").hidden = !events.paused;
  $("events-held").textContent = `Paused: ${events.held.length} new event${events.held.length === 1 ? "" : "s"} held` +
    (events.heldDropped ? ` (${events.heldDropped} older ones dropped).` : ".");
  $("events-pause").textContent = events.paused ? "Resume" : "Pause";
  $("events-pause").setAttribute("aria-pressed", events.paused);
}

// One timeline row: time, type, characteristic, and what happened in words.
function eventRow(e) {
  const type = String(e.type || "?");
  const central = centralName(e.central);
  const value = e.value ? spaced(e.value) : "(empty)";
  let detail = "", tone = "";
  switch (type) {
    case "state": detail = e.state; tone = e.state === "poweredOn" ? "" : "warn"; break;
    case "connected": case "subscribed": case "unsubscribed": detail = central; break;
    case "disconnected": detail = central + (e.reason ? ` — ${e.reason}${e.message ? ": " + e.message : ""}` : ""); tone = "warn"; break;
    case "request":
      detail = `${e.operation} by ${central}, ${value} → ` + (e.result === "error" ? e.error + (e.asked ? ` (asked ${e.asked})` : "") :
        "success") + (typeof e.latencyMs === "number" ? `, ${e.latencyMs} ms` : "");
      tone = e.result === "error" ? "bad" : "";
      break;
    case "notification": case "indication":
      detail = `${value}${decodedText(e)} → ${e.centrals} central${e.centrals === 1 ? "" : "s"}`;
      break;
    case "queue-full": case "fault": detail = e.fault || ""; tone = "warn"; break;
    case "queue-ready": break;
    case "outbox-full": detail = `${e.dropped} update${e.dropped === 1 ? "" : "s"} dropped`; tone = "bad"; break;
    case "pairing":
      detail = `${central} ${e.method}${e.passkey ? " passkey " + e.passkey : ""}: ${e.result}`;
      tone = e.result === "accepted" ? "" : "bad";
      break;
    case "restart": detail = e.reason; tone = "warn"; break;
    case "reset": detail = (e.changed || []).length ? "back to the profile: " + e.changed.join(", ") : "nothing changed"; break;
    case "lines-dropped": detail = e.count + " lines dropped"; tone = "bad"; break;
    case "protocol": {
      const set = Object.entries(e.state || {}).map(([name, v]) => name + " = " + fieldText(v)).join(", ");
      detail = `${e.request}: ${e.case}` + (set ? `; ${set}` : "");
      tone = e.case === "none" ? "bad" : "";
      break;
    }
    case "handler":
      // Answered by the handler, or its fallback and why (docs/control-and-events.md, "Handlers").
      detail = `request ${e.request}: ${e.outcome}`;
      tone = ["answered", "profile"].includes(e.outcome) || String(e.outcome).startsWith("error") ? "" : "warn";
      break;
    default: {
      const { time, type: _, characteristic, ...rest } = e;
      detail = JSON.stringify(rest);
    }
  }
  return el("li", { class: "event " + tone, "data-type": type, "data-characteristic": e.characteristic,
    "data-changed": Array.isArray(e.changed) ? e.changed.join(" ") : null },
    el("time", { datetime: e.time, text: clock(new Date(Date.parse(e.time))) }),
    el("span", { class: "type type-" + type.replace(/[^a-z-]/g, ""), text: type }),
    e.characteristic && el("span", { class: "what", text: e.characteristic }),
    detail && el("span", { class: "detail", text: detail }));
}

function decodedText(event) {
  const series = plots.values.get(event.characteristic);
  const values = series ? decode(series.fields, event.value) : {};
  const parts = Object.entries(values).map(([name, value]) => name + " " + fieldText(value));
  return parts.length ? ` (${parts.join(", ")})` : "";
}

// ------------------------------------------------------------ plots

// A plot for a characteristic that notifies or indicates, of its numeric fields (at their offsets in the value).
function buildPlot(def) {
  const properties = def.properties || [];
  if (!(properties.includes("notify") || properties.includes("indicate"))) return;
  const fields = [];
  let offset = 0;
  for (const field of def.fields || []) {
    if (!SIZES[field.type]) break;  // utf8 and hex take the rest of the value
    if (NUMERIC.test(field.type)) fields.push({ name: field.name, type: field.type, offset });
    offset += SIZES[field.type];
  }
  if (!fields.length) return;
  const canvas = el("canvas", { class: "plot plot-canvas", "data-characteristic": def.id, role: "img", "aria-label": def.id });
  $("value-plots").append(el("figure", { class: "plot-box" },
    el("figcaption", {}, (def.name || def.uuid) + " ", el("small", { text: def.id })), canvas));
  plots.values.set(def.id, { canvas, fields, points: Object.fromEntries(fields.map((f) => [f.name, []])) });
}

function decode(fields, hex) {
  const data = bytes(hex);
  const dv = new DataView(data.buffer);
  const out = {};
  for (const { name, type, offset: at } of fields) {
    if (at + SIZES[type] > data.length) continue;
    const u24 = () => data[at] | data[at + 1] << 8 | data[at + 2] << 16;
    out[name] = {
      u8: () => data[at], u16: () => dv.getUint16(at, true), u24, u32: () => dv.getUint32(at, true),
      s8: () => dv.getInt8(at), s16: () => dv.getInt16(at, true), s24: () => u24() << 8 >> 8,
      s32: () => dv.getInt32(at, true), float32: () => dv.getFloat32(at, true),
      sfloat: () => medicalFloat(dv.getUint16(at, true), 12, 4), float: () => medicalFloat(dv.getUint32(at, true), 24, 8),
    }[type]();
  }
  return out;
}

// IEEE 11073-20601 SFLOAT and FLOAT: a signed mantissa times ten to a signed exponent; reserved mantissas are NaN/±∞.
function medicalFloat(raw, mantissaBits, exponentBits) {
  const signed = (value, bits) => value >= 2 ** (bits - 1) ? value - 2 ** bits : value;
  const mantissa = raw % 2 ** mantissaBits;
  const special = mantissa - 2 ** (mantissaBits - 1);  // 0x07FE +∞, 0x07FF NaN, 0x0800 NRes, 0x0801, 0x0802 -∞
  if (special === -2) return Infinity;
  if (special === 2) return -Infinity;
  if (Math.abs(special) <= 1) return NaN;
  const exponent = signed(Math.floor(raw / 2 ** mantissaBits) % 2 ** exponentBits, exponentBits);
  return parseFloat((signed(mantissa, mantissaBits) * 10 ** exponent).toPrecision(12));
}

// Appends a point; trims old ones in batches (a quarter over the bound), so a flood costs no copy per point.
function keep(points, point) {
  points.push(point);
  if (points.length < POINTS * 1.25 && points[0][0] >= point[0] - KEEP_MS * 1.25) return;
  let drop = Math.max(0, points.length - POINTS);
  while (drop < points.length && points[drop][0] < point[0] - KEEP_MS) drop++;
  points.splice(0, drop);
}

function plotEvent(event, at) {
  if (!at) return;
  const time = at + (plots.skews.length ? Math.min(...plots.skews) : 0);
  if (event.type === "notification" || event.type === "indication") {
    const second = Math.floor(time / 1000);
    plots.rate.set(second, (plots.rate.get(second) || 0) + 1);
    for (const key of plots.rate.keys()) { if (key >= second - KEEP_MS / 1000) break; plots.rate.delete(key); }
    const series = plots.values.get(event.characteristic);
    if (series) for (const [name, value] of Object.entries(decode(series.fields, event.value))) keep(series.points[name], [time, value]);
  } else if (event.type === "request" && typeof event.latencyMs === "number") {
    keep(plots.latency[event.result === "error" ? "error" : event.operation === "write" ? "write" : "read"], [time, event.latencyMs]);
  }
}

function drawPlots() {
  if (document.hidden) return;
  const end = Date.now();
  const start = end - $("plot-window").value * 1000;
  for (const [id, series] of plots.values) {
    const list = series.fields.map(({ name }) => ({ name, points: series.points[name] }));
    Plot.draw(series.canvas, { start, end, series: list, empty: "no notification yet" });
    const latest = list.filter((s) => s.points.length).map((s) => s.name + " " + fieldText(s.points[s.points.length - 1][1]));
    series.canvas.setAttribute("aria-label", id + " over time" + (latest.length ? "; latest " + latest.join(", ") : ""));
  }
  const rate = [];
  for (let second = Math.floor(start / 1000); second <= end / 1000; second++) rate.push([second * 1000, plots.rate.get(second) || 0]);
  Plot.draw($("rate-plot"), { start, end, zero: true, integer: true,
    series: [{ name: "per second", latest: false, style: "bars", width: 1000, points: rate }] });
  const { read, write, error } = plots.latency;
  Plot.draw($("latency-plot"), { start, end, zero: true, empty: "no request yet", series: [
    { name: "read", style: "dots", points: read }, { name: "write", style: "dots", points: write },
    { name: "error", style: "dots", points: error, color: "#dc2626" }] });
}

// ------------------------------------------------------------ controls

function wire() {
  document.body.append(el("datalist", { id: "bool-values" }, el("option", { value: "true" }), el("option", { value: "false" })));
  $("att-errors").append(...ERRORS.map((value) => el("option", { value })));
  for (const name of ["centrals", "schedules", "controls"]) {
    $(name + "-title").parentElement.append(el("output", { id: name + "-answer", class: "inline-answer", "aria-live": "polite" }));
  }
  const click = (id, request, where) => $(id).addEventListener("click", () => send(request(), $(where + "-answer")));
  click("disconnect-all", () => ({ command: "disconnect" }), "centrals");
  click("schedules-pause-all", () => ({ command: "schedules", action: "pause" }), "schedules");
  click("schedules-resume-all", () => ({ command: "schedules", action: "resume" }), "schedules");
  click("advertising-toggle", () => ({ command: "advertising", action: view.status && view.status.advertising ? "stop" : "start" }), "controls");
  click("reset-button", () => ({ command: "reset" }), "controls");

  const fault = $("fault-form"), f = fault.elements;
  const showKind = () => { for (const kind of ["error", "delay", "effect"]) fault.querySelector(".fault-" + kind).hidden = f.kind.value !== kind; };
  f.kind.addEventListener("change", showKind);
  showKind();
  fault.addEventListener("submit", (event) => {
    event.preventDefault();
    const request = { command: "fault", operation: f.operation.value, id: f.id.value || undefined, nth: Number(f.nth.value) || 1 };
    const error = f.error.value.trim();
    if (f.kind.value === "error") request.error = /^\d+$/.test(error) ? Number(error) : error;
    else if (f.kind.value === "delay") request.delayMs = Number(f.delayMs.value) || 0;
    else request.effect = f.effect.value;
    send(request, $("controls-answer"));
  });

  for (const id of ["filter-type", "filter-characteristic"]) {
    $(id).addEventListener("change", () => { for (const row of $("events").children) row.hidden = !matches(row); follow(); });
  }
  $("events-pause").addEventListener("click", () => {
    events.paused = !events.paused;
    if (!events.paused) { appendRows(events.held); events.held = []; events.heldDropped = 0; }
    showHeld();
  });
  $("events-follow").addEventListener("change", follow);
  // Scrolling up to read stops following; scrolling back to the end follows again.
  $("events").addEventListener("scroll", () => {
    const list = $("events");
    $("events-follow").checked = list.scrollHeight - list.scrollTop - list.clientHeight < 24;
  });
  $("plot-window").addEventListener("change", drawPlots);
  $("link-retry-now").addEventListener("click", () => { backoff = 500; connect(); });
  addEventListener("resize", drawPlots);
  setInterval(drawPlots, 400);
}

// The token came once in the address (`?token=`); the view keeps it in an HttpOnly cookie from then on, so the
// address bar, the history and a bookmark need not carry it.
if (new URLSearchParams(location.search).has("token")) {
  history.replaceState(null, "", location.pathname + location.hash);
}
wire();
connect();
})();
