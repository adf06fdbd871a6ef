"use strict";
// The live view: one WebSocket to `blemu ui`, which bridges it to a running device's control socket
// (docs/control-and-events.md). The server sends a snapshot, then updates, events and answers; every control sends
// the control protocol's own command. Strings from the profile or a central only ever reach the page as text.
(function () {
  const EVENT_ROWS = 2000;          // timeline rows kept in the DOM
  const ANSWERS = 60;               // answers kept in the list
  const PLOT_KEEP_MS = 10 * 60e3;   // plot data kept (the widest window is 5 min)
  const PLOT_POINTS = 6000;         // points kept per series
  const EVENT_TYPES = ["state", "connected", "disconnected", "request", "subscribed", "unsubscribed", "notification",
    "indication", "queue-full", "queue-ready", "fault", "pairing", "restart", "reset", "lines-dropped"];
  const COUNTERS = [
    ["requests", "Read and write requests received"],
    ["answered", "Requests answered (counted before the answer is sent)"],
    ["unanswered", "requests − answered: in flight now, or never answered"],
    ["responded", "Answered with success"], ["rejected", "Answered with an error"],
    ["expired", "Answered late, at the request deadline"], ["dropped", "Requests dropped"],
    ["writesWithoutResponse", "Write Commands, which get no reply"],
    ["notificationsQueued", "Updates the queue accepted, whoever listens"],
    ["notificationsSent", "Hand-offs to a central's link"],
    ["notificationsToNobody", "Updates no central was subscribed to"],
    ["queueFull", "Times an update waited for the queue"], ["waiting", "Updates waiting now"],
    ["notificationsDropped", "Updates for a central that left or unsubscribed"],
    ["eventLinesLost", "Event log lines not written"],
  ];
  const WARN_COUNTERS = new Set(["expired", "dropped", "notificationsDropped", "eventLinesLost"]);
  const ATT_ERRORS = ["unlikely-error", "read-not-permitted", "write-not-permitted", "invalid-handle", "invalid-pdu",
    "insufficient-authentication", "request-not-supported", "invalid-offset", "insufficient-authorization",
    "prepare-queue-full", "attribute-not-found", "attribute-not-long", "insufficient-encryption-key-size",
    "invalid-attribute-value-length", "insufficient-encryption", "unsupported-group-type", "insufficient-resources",
    "database-out-of-sync", "value-not-allowed", "write-request-rejected", "cccd-improperly-configured",
    "procedure-already-in-progress", "out-of-range", "0x80"];
  const SIZES = { u8: 1, u16: 2, u24: 3, u32: 4, s8: 1, s16: 2, s24: 3, s32: 4, float32: 4, sfloat: 2, float: 4,
    bool: 1, flags8: 1, flags16: 2, flags32: 4 };
  const NUMERIC = /^(u8|u16|u24|u32|s8|s16|s24|s32|float32|sfloat|float)$/;

  // ---------------------------------------------------------------- small helpers

  const $ = (id) => document.getElementById(id);

  // An element with attributes and children; strings become text nodes, never markup.
  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attributes || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  function spacedHex(hex) { return (hex || "").replace(/(..)(?!$)/g, "$1 "); }

  function bytes(hex) {
    const out = new Uint8Array((hex || "").length >> 1);
    for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.substr(i * 2, 2), 16);
    return out;
  }

  // The value's text when it is printable UTF-8 (device information strings), else null.
  function printable(hex) {
    if (!hex) return null;
    try {
      const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes(hex));
      return /^[^\u0000-\u001f\u007f]+$/.test(text) ? text : null;
    } catch (_) { return null; }
  }

  // A field's value as `get` decodes it: numbers, booleans, flag names, text, hex.
  function fieldText(value) {
    if (value === undefined || value === null) return "—";
    if (Array.isArray(value)) return value.length ? value.join(", ") : "none";
    if (typeof value === "number" && !Number.isInteger(value)) return String(parseFloat(value.toPrecision(7)));
    return String(value);
  }

  // A central's short name: a BlueZ device path's address, or the id itself (`*` on BlueZ 5.66).
  function centralName(id) {
    const match = /dev_([0-9A-Fa-f]{2}(?:_[0-9A-Fa-f]{2}){5})$/.exec(id || "");
    return match ? match[1].replace(/_/g, ":") : String(id);
  }

  function clock(date) {
    if (isNaN(date)) return "";
    const pad = (n, w = 2) => String(n).padStart(w, "0");
    return pad(date.getHours()) + ":" + pad(date.getMinutes()) + ":" + pad(date.getSeconds()) + "." +
      pad(date.getMilliseconds(), 3);
  }

  function duration(ms) {
    if (ms % 3600000 === 0 && ms) return ms / 3600000 + " h";
    if (ms % 60000 === 0 && ms) return ms / 60000 + " min";
    if (ms >= 1000) return ms / 1000 + " s";
    return ms + " ms";
  }

  function setPill(node, text, tone) {
    node.textContent = text;
    node.className = "pill" + (tone ? " " + tone : "");
  }

  // ---------------------------------------------------------------- state

  const view = {
    profileKey: null,
    characteristics: new Map(),  // id -> {def, row, hex, text, fields: Map(name -> dd), inputs: Map, plot}
    status: null, statusKey: "", advertisementKey: "",
    centralsKey: "", schedulesKey: "", pairingsKey: "",
    counters: {}, counterNodes: new Map(),
    reachable: true,
  };
  const events = {
    rows: 0, received: 0, incoming: [], held: [], heldDropped: 0, paused: false, flushTimer: null,
    lastTime: "", lastKeys: [], autoScroll: false,
  };
  const plots = {
    values: new Map(),  // id -> {canvas, fields: [{name, type, offset}], points: Map(name -> [[t, v]])}
    rate: new Map(),    // second -> notifications + indications
    latency: { read: [], write: [], error: [] },
    skews: [],          // recent (arrival - event time) of live events, for the device's clock
  };

  // ---------------------------------------------------------------- the WebSocket

  let socket = null;
  let backoff = 500;
  let retryTimer = null;
  let attempts = 0;
  let nextSeq = 1;
  const pending = new Map();

  function connect() {
    clearTimeout(retryTimer);
    retryTimer = null;
    attempts += 1;
    setPill($("link-state"), attempts > 1 ? "reconnecting" : "connecting", "warn");
    let ws;
    try {
      ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws");
    } catch (error) {
      retry();
      return;
    }
    socket = ws;
    ws.onopen = () => {
      setPill($("link-state"), "live", "ok");
      $("link-banner").hidden = true;
    };
    ws.onmessage = (message) => {
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
    const delay = Math.round(backoff * (0.8 + Math.random() * 0.4));
    backoff = Math.min(backoff * 2, 15000);
    setPill($("link-state"), "offline", "bad");
    $("link-retry").textContent = "Trying again in " + Math.max(1, Math.round(delay / 1000)) + " s.";
    $("link-banner").hidden = false;
    retryTimer = setTimeout(connect, delay);
  }

  function send(request, where) {
    const seq = nextSeq++;
    if (!socket || socket.readyState !== WebSocket.OPEN) {
      answer({ seq, request, response: { ok: false, error: "not connected to blemu ui" } }, where);
      return;
    }
    pending.set(seq, { request, where });
    if (where) { where.textContent = "…"; where.className = "inline-answer pending"; }
    socket.send(JSON.stringify({ type: "command", seq, request }));
  }

  function handle(message) {
    switch (message.type) {
      case "snapshot": snapshot(message); break;
      case "update": update(message); break;
      case "event": if (message.event) receive([message.event], true); break;
      case "answer": answer(message); break;
      case "device": reachable(message.reachable !== false, message.error); break;
    }
  }

  // ---------------------------------------------------------------- snapshot and updates

  function snapshot(message) {
    const profile = message.profile || { name: "?", services: [] };
    const key = JSON.stringify(profile);
    const sameProfile = key === view.profileKey;
    if (!sameProfile) {
      view.profileKey = key;
      buildProfile(profile);
      clearEvents();
    }
    $("control-path").textContent = message.control || "–";
    view.statusKey = view.advertisementKey = view.centralsKey = view.schedulesKey = view.pairingsKey = "";
    update(message);
    receive(sameProfile ? unseen(message.events || []) : (message.events || []), false);
    reachable(true);
    backoff = 500;
    document.body.dataset.connected = "true";
  }

  function update(message) {
    if (message.status) showStatus(message.status);
    if (message.values) for (const [id, value] of Object.entries(message.values)) showValue(id, value);
    if (message.centrals) showCentrals(message.centrals);
    if (message.counters) showCounters(message.counters);
    if (message.schedules) showSchedules(message.schedules);
    if (message.pairings) showPairings(message.pairings);
  }

  function reachable(isReachable, error) {
    view.reachable = isReachable;
    $("device-banner").hidden = isReachable;
    document.body.classList.toggle("unreachable", !isReachable);
    if (!isReachable) {
      $("device-error").textContent = error ? "(" + error + ")" : "";
      setPill($("device-state"), "unreachable", "bad");
    } else if (view.status) {
      showStatus(view.status, true);
    }
  }

  // ---------------------------------------------------------------- the profile: GATT tree, forms, plots

  function buildProfile(profile) {
    $("device-name").textContent = profile.name;
    document.title = profile.name + " · blemu live view";
    view.characteristics.clear();
    plots.values.clear();
    const gatt = $("gatt");
    const plotBox = $("value-plots");
    gatt.replaceChildren();
    plotBox.replaceChildren();
    const ids = [];
    for (const service of profile.services || []) {
      const list = el("div", { class: "characteristic-list" });
      gatt.append(el("section", { class: "service", "data-service": service.id },
        el("h3", {}, service.name || service.uuid, " ",
          el("small", {}, service.id + " · " + service.uuid + (service.primary === false ? " · secondary" : "") +
            ((service.includes || []).length ? " · includes " + service.includes.join(", ") : ""))),
        list));
      for (const characteristic of service.characteristics || []) {
        ids.push(characteristic.id);
        list.append(buildCharacteristic(characteristic));
        buildValuePlot(characteristic, plotBox);
      }
    }
    if (!ids.length) gatt.append(el("p", { class: "empty", text: "The profile has no characteristics." }));
    if (!plotBox.childElementCount) {
      plotBox.append(el("p", { class: "empty", text: "No notifying characteristic has numeric fields to plot." }));
    }
    for (const select of [$("filter-characteristic"), document.querySelector("#fault-form select[name=id]")]) {
      const keep = select.value;
      select.replaceChildren(el("option", { value: "", text: select.id ? "all" : "any" }),
        ...ids.map((id) => el("option", { value: id, text: id })));
      select.value = ids.includes(keep) ? keep : "";
    }
    $("behaviour").replaceChildren(...(profile.behaviour || []).map((line) =>
      el("li", { class: line.startsWith(" ") ? "indented" : "", text: line.trim() })));
    if (!(profile.behaviour || []).length) $("behaviour").append(el("li", { text: "No behaviour declared." }));
    const pairing = profile.pairing || {};
    $("pairing-settings").textContent = [pairing.ioCapability, pairing.passkey && "passkey " + pairing.passkey,
      pairing.bondable === false ? "not bondable" : "bondable"].filter(Boolean).join(" · ");
  }

  function buildCharacteristic(def) {
    const properties = def.properties || [];
    const notifies = properties.includes("notify") || properties.includes("indicate");
    const entry = { def, fields: new Map(), inputs: new Map() };
    entry.hex = el("code", { class: "value-hex" });
    entry.text = el("span", { class: "value-text" });
    const chips = el("ul", { class: "chips", "aria-label": "What it allows" },
      properties.map((name) => el("li", { class: "chip property", text: name })),
      (def.permissions || []).map((name) => el("li", { class: "chip permission", text: name })),
      Object.entries(def.security || {}).map(([operation, level]) =>
        el("li", { class: "chip security", title: "security", text: operation + ": " + level })),
      def.cached ? el("li", { class: "chip constant", title: "cached by the stack, read-only", text: "constant" }) : null);
    let fieldList = null;
    if (def.fields && def.fields.length) {
      fieldList = el("dl", { class: "fields" });
      for (const field of def.fields) {
        const dd = el("dd", { class: "field" + (field.type === "utf8" ? " text" : ""), "data-field": field.name,
          text: field.value });
        entry.fields.set(field.name, dd);
        fieldList.append(el("div", {}, el("dt", {}, field.name, " ", el("small", { text: field.type })), dd));
      }
    }
    const descriptors = (def.descriptors || []).length ? el("ul", { class: "descriptors" },
      def.descriptors.map((d) => el("li", {}, el("span", { text: d.name || d.uuid }), " ",
        el("code", { text: d.uuid === "2901" && printable(d.value) !== null ? "“" + printable(d.value) + "”" : spacedHex(d.value) })))) : null;
    entry.output = el("output", { class: "inline-answer", "aria-live": "polite" });
    const actions = el("div", { class: "actions" });
    if (notifies) {
      const verb = properties.includes("notify") ? "Notify" : "Indicate";
      actions.append(el("button", { type: "button", class: "notify-button small",
        title: "Send the current value to the subscribers now",
        onclick: () => send({ command: "notify", id: def.id }, entry.output) }, verb + " now"));
    }
    if (!def.cached) actions.append(buildSetForm(entry));
    actions.append(entry.output);
    entry.row = el("article", { class: "characteristic", "data-characteristic": def.id },
      el("header", {}, el("h4", {}, def.name || def.uuid), " ", el("small", { text: def.id + " · " + def.uuid })),
      chips,
      el("p", { class: "value" }, el("span", { class: "label", text: "value " }), entry.hex, " ", entry.text),
      fieldList, descriptors, actions);
    view.characteristics.set(def.id, entry);
    showValue(def.id, { hex: def.value, fields: null }, true);
    return entry.row;
  }

  function buildSetForm(entry) {
    const def = entry.def;
    // The device checks the values (and says what is wrong); the page only checks what it must parse.
    const form = el("form", { class: "set-form", "aria-label": "Set " + def.id, novalidate: true });
    if (def.fields && def.fields.length) {
      for (const field of def.fields) {
        const input = fieldInput(field);
        entry.inputs.set(field.name, input);
        form.append(el("label", { class: "set-field" }, el("span", { text: field.name }), input));
      }
    } else {
      const input = el("input", { name: "hex", type: "text", autocomplete: "off", spellcheck: "false",
        title: "hex bytes, e.g. 01 or 06 48" });
      entry.inputs.set("hex", input);
      form.append(el("label", { class: "set-field" }, el("span", { text: "hex" }), input));
    }
    form.append(el("button", { type: "submit", class: "set-button small" }, "Set"));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const request = setRequest(entry);
      if (request.error) {
        entry.output.textContent = request.error;
        entry.output.className = "inline-answer error";
        return;
      }
      entry.pendingClear = true;
      send(request, entry.output);
    });
    return form;
  }

  function fieldInput(field) {
    const name = "field:" + field.name;
    const common = { name, autocomplete: "off", spellcheck: "false", "aria-label": field.name + " (" + field.type + ")" };
    const integer = /^([us])(8|16|24|32)$/.exec(field.type);
    if (integer) {
      const bits = Number(integer[2]);
      const [min, max] = integer[1] === "u" ? [0, 2 ** bits - 1] : [-(2 ** (bits - 1)), 2 ** (bits - 1) - 1];
      return el("input", { ...common, type: "number", step: 1, min, max, inputmode: "numeric" });
    }
    if (NUMERIC.test(field.type)) return el("input", { ...common, type: "number", step: "any" });
    if (field.type === "bool") return el("input", { ...common, type: "text", list: "bool-values" });
    if (/^flags/.test(field.type)) {
      return el("input", { ...common, type: "text", title: "bit names, comma-separated (none for no bit), or a number" });
    }
    if (field.type === "hex") return el("input", { ...common, type: "text", title: "hex bytes" });
    return el("input", { ...common, type: "text" });
  }

  // The `set` request the form asks for: only the fields filled in (the device keeps the others), or its hex.
  function setRequest(entry) {
    const def = entry.def;
    const hexInput = entry.inputs.get("hex");
    if (hexInput) {
      const hex = hexInput.value.trim().replace(/^0x/i, "").replace(/[\s:]/g, "");
      if (!hex || !/^([0-9A-Fa-f]{2})+$/.test(hex)) return { error: "enter hex bytes, e.g. 01 or 06 48" };
      return { command: "set", id: def.id, hex: hex.toUpperCase() };
    }
    const fields = {};
    for (const field of def.fields) {
      const raw = entry.inputs.get(field.name).value.trim();
      if (raw === "") continue;
      if (NUMERIC.test(field.type)) {
        const number = Number(raw);
        if (!isFinite(number)) return { error: field.name + ": not a number" };
        fields[field.name] = number;
      } else if (field.type === "bool") {
        if (!/^(true|false|1|0)$/i.test(raw)) return { error: field.name + ": true or false" };
        fields[field.name] = /^(true|1)$/i.test(raw);
      } else if (/^flags/.test(field.type)) {
        if (/^(0x[0-9a-f]+|\d+)$/i.test(raw)) fields[field.name] = Number(raw);
        else fields[field.name] = raw.toLowerCase() === "none" ? [] : raw.split(/[\s,]+/).filter(Boolean);
      } else if (field.type === "hex") {
        fields[field.name] = raw.replace(/^0x/i, "").replace(/[\s:]/g, "").toUpperCase();
      } else {
        fields[field.name] = raw;
      }
    }
    if (!Object.keys(fields).length) return { error: "fill in a field to set" };
    return { command: "set", id: def.id, fields };
  }

  function showValue(id, value, initial) {
    const entry = view.characteristics.get(id);
    if (!entry || !value) return;
    const changed = !initial && entry.lastHex !== undefined && entry.lastHex !== value.hex;
    entry.lastHex = value.hex;
    entry.hex.textContent = value.hex ? spacedHex(value.hex) : "(empty)";
    const text = entry.fields.size ? null : printable(value.hex);
    entry.text.textContent = text === null ? "" : "“" + text + "”";
    if (value.fields) {
      for (const [name, dd] of entry.fields) dd.textContent = fieldText(value.fields[name]);
    } else if (!initial && entry.fields.size) {
      for (const dd of entry.fields.values()) dd.textContent = "—";
    }
    for (const [name, input] of entry.inputs) {
      input.placeholder = name === "hex" ? spacedHex(value.hex) : (value.fields ? fieldText(value.fields[name]) :
        entry.fields.get(name).textContent);
    }
    if (changed) {
      entry.row.classList.remove("changed");
      void entry.row.offsetWidth;
      entry.row.classList.add("changed");
    }
  }

  // ---------------------------------------------------------------- status, centrals, counters, schedules, pairing

  function showStatus(status, force) {
    const key = JSON.stringify(status);
    if (key === view.statusKey && !force) return;
    view.statusKey = key;
    view.status = status;
    if (view.reachable) setPill($("device-state"), status.state || "?", status.state === "poweredOn" ? "ok" : "warn");
    setPill($("advertising"), status.advertising ? "on" : "off", status.advertising ? "ok" : "warn");
    $("adapter").textContent = status.adapter || "–";
    $("bluez").textContent = status.bluez || "unknown";
    $("advertising-toggle").textContent = status.advertising ? "Stop advertising" : "Start advertising";
    $("advertising-toggle").dataset.action = status.advertising ? "stop" : "start";
    const advertisement = status.advertisement || {};
    const advertisementKey = JSON.stringify(advertisement);
    if (advertisementKey === view.advertisementKey) return;
    view.advertisementKey = advertisementKey;
    $("adv-mode").textContent = advertisement.mode || "";
    const limit = advertisement.mode === "legacy" ? "/31" : "";
    const bytesLine = (label, hex) => el("div", {},
      el("span", { class: "label", text: label + " (" + (hex || "").length / 2 + limit + " bytes) " }),
      el("code", { text: hex ? spacedHex(hex) : "none" }));
    $("adv-bytes").replaceChildren(bytesLine("ADV", advertisement.adv),
      advertisement.mode === "extended" && !advertisement.scanResponse ? null :
        bytesLine("Scan response", advertisement.scanResponse));
    $("adv-structures").tBodies[0].replaceChildren(...(advertisement.structures || []).map((s) =>
      el("tr", { "data-type": s.type },
        el("td", { text: s.in === "scan-response" ? "scan rsp" : s.in }),
        el("td", {}, el("code", { text: s.type }), " ", s.name),
        el("td", {}, el("code", { text: spacedHex(s.bytes) })),
        el("td", { text: s.origin }),
        el("td", { text: s.explanation }))));
    const notes = [];
    if (advertisement.error) notes.push(el("li", { class: "bad", text: advertisement.error }));
    if ((advertisement.overflow || []).length) {
      notes.push(el("li", { class: "warn", text: "Service UUIDs that did not fit: " + advertisement.overflow.join(", ") }));
    }
    for (const deviation of advertisement.deviations || []) notes.push(el("li", { text: deviation }));
    $("adv-notes").replaceChildren(...notes);
  }

  function showCentrals(centrals) {
    const key = JSON.stringify(centrals);
    if (key === view.centralsKey) return;
    view.centralsKey = key;
    const list = (centrals.centrals || []).map((central) => {
      const mtu = central.maximumUpdateValueLength;
      const subscriptions = central.subscriptions || [];
      return el("li", { class: "central", "data-central": central.id },
        el("div", { class: "central-head" },
          el("strong", { title: central.id, text: centralName(central.id) }),
          el("span", { class: "muted", text: "max update " + mtu + " bytes (MTU " + (mtu + 3) + ")" }),
          el("button", { type: "button", class: "disconnect-button small",
            onclick: () => send({ command: "disconnect", central: central.id }, $("centrals-answer")) }, "Disconnect")),
        el("div", { class: "subscriptions" }, subscriptions.length ? "subscribed to " : "no subscriptions",
          subscriptions.map((id) => el("span", { class: "chip", text: id }))));
    });
    $("centrals").replaceChildren(...(list.length ? list : [el("li", { class: "empty", text: "No central is connected." })]));
    const disconnects = (centrals.disconnects || []).slice().reverse().map((d) =>
      el("li", {}, el("strong", { title: d.central, text: centralName(d.central) }),
        d.reason ? " — " + d.reason + (d.message ? ": " + d.message : "") : " — left (no reason given)"));
    $("disconnects").replaceChildren(...(disconnects.length ? disconnects : [el("li", { class: "empty", text: "None yet." })]));
  }

  function showPairings(pairings) {
    const key = JSON.stringify(pairings);
    if (key === view.pairingsKey) return;
    view.pairingsKey = key;
    const items = pairings.slice().reverse().map((p) =>
      el("li", { class: p.accepted ? "" : "bad" }, el("strong", { title: p.central, text: centralName(p.central) }),
        " " + p.method + (p.passkey ? " passkey " + p.passkey : "") + ": " + (p.accepted ? "accepted" : "rejected")));
    $("pairings").replaceChildren(...(items.length ? items : [el("li", { class: "empty", text: "No pairing yet." })]));
  }

  function showCounters(counters) {
    view.counters = { ...view.counters, ...counters };
    const all = { ...view.counters };
    if (typeof all.requests === "number" && typeof all.answered === "number") all.unanswered = all.requests - all.answered;
    const box = $("counters");
    const names = COUNTERS.map(([name]) => name).concat(Object.keys(all).filter((n) => !COUNTERS.some(([c]) => c === n)));
    for (const name of names) {
      if (!(name in all)) continue;
      let node = view.counterNodes.get(name);
      if (!node) {
        const help = (COUNTERS.find(([c]) => c === name) || [])[1] || "";
        node = el("dd", { id: "counter-" + name });
        box.append(el("div", { class: "counter", title: help }, el("dt", { text: name }), node));
        view.counterNodes.set(name, node);
      }
      const value = all[name];
      node.textContent = typeof value === "number" ? value.toLocaleString("en-US").replace(/,/g, "\u202f") : String(value);
      const bad = name === "unanswered" && value !== 0;
      const warn = WARN_COUNTERS.has(name) && value !== 0;
      node.className = bad ? "bad" : warn ? "warn" : "";
      node.parentElement.classList.toggle("bad", bad);
      node.parentElement.classList.toggle("warn", warn);
    }
  }

  function showSchedules(schedules) {
    const key = JSON.stringify(schedules);
    if (key === view.schedulesKey) return;
    view.schedulesKey = key;
    const answerBox = $("schedules-answer");
    const rows = schedules.map((s) => {
      const now = s.paused ? "paused" : s.running ? "running" : "waiting";
      return el("tr", { "data-schedule": s.id, class: s.paused ? "paused" : "" },
        el("td", { text: s.id }),
        el("td", { text: s.recorded ? "recorded pace" : duration(s.intervalMs) }),
        el("td", {}, el("span", { class: "pill " + (s.paused ? "warn" : s.running ? "ok" : ""), text: now,
          title: now === "waiting" ? "starts with the first subscription" : "" })),
        el("td", { class: "buttons" },
          el("button", { type: "button", class: "schedule-pause small", disabled: s.paused,
            onclick: () => send({ command: "schedules", action: "pause", id: s.id }, answerBox) }, "Pause"),
          el("button", { type: "button", class: "schedule-resume small", disabled: !s.paused,
            onclick: () => send({ command: "schedules", action: "resume", id: s.id }, answerBox) }, "Resume")));
    });
    $("schedules").tBodies[0].replaceChildren(...(rows.length ? rows :
      [el("tr", {}, el("td", { colspan: 4, class: "empty", text: "The profile has no schedules." }))]));
  }

  // ---------------------------------------------------------------- answers

  function describe(request) {
    const r = request || {};
    const parts = [r.command || "?"];
    if (r.action) parts.push(r.action);
    if (r.operation) parts.push(r.operation);
    if (r.id) parts.push(r.id);
    if (r.central) parts.push(centralName(r.central));
    if (r.fields) parts.push(Object.entries(r.fields).map(([k, v]) => k + "=" + fieldText(v)).join(" "));
    if (r.hex !== undefined) parts.push(r.hex || "(empty)");
    if (r.command === "fault") {
      if (r.nth) parts.push("request " + r.nth);
      if (r.error !== undefined) parts.push("→ " + r.error);
      if (r.delayMs !== undefined) parts.push("→ delay " + r.delayMs + " ms");
      if (r.effect) parts.push("→ " + r.effect);
    }
    return parts.join(" ");
  }

  function outcome(response) {
    if (response.ok !== true) return "error: " + (response.error || "no reason given");
    if (typeof response.hex === "string") return "ok, value " + (response.hex ? spacedHex(response.hex) : "(empty)");
    if (Array.isArray(response.changed)) return "ok, " + (response.changed.length ? "back to the profile: " + response.changed.join(", ") : "nothing changed");
    if (Array.isArray(response.disconnected)) return "ok, " + (response.disconnected.length ? "dropped " + response.disconnected.map(centralName).join(", ") : "no central was connected");
    return "ok";
  }

  function answer(message, where) {
    const entry = pending.get(message.seq);
    pending.delete(message.seq);
    const request = message.request || (entry && entry.request) || {};
    const response = message.response || {};
    const ok = response.ok === true;
    const text = describe(request) + ": " + outcome(response);
    const list = $("answers");
    list.prepend(el("li", { class: "answer " + (ok ? "ok" : "error"), "data-command": request.command || "" },
      el("time", { text: clock(new Date()) }), " ", text));
    while (list.childElementCount > ANSWERS) list.lastElementChild.remove();
    const target = where || (entry && entry.where);
    if (target) {
      target.textContent = text;
      target.className = "inline-answer " + (ok ? "ok" : "error");
    }
    if (ok && request.command === "set") {
      const characteristic = view.characteristics.get(request.id);
      if (characteristic && characteristic.pendingClear) {
        characteristic.pendingClear = false;
        for (const input of characteristic.inputs.values()) input.value = "";
      }
    }
    if (ok && Array.isArray(response.schedules)) showSchedules(response.schedules);
  }

  // ---------------------------------------------------------------- events: timeline and plots

  function eventKey(event) { return JSON.stringify(event); }

  // The events of a repeated snapshot (the device is back) that the timeline does not have yet: those after the
  // last one shown, and of those at its very millisecond, the ones it does not have.
  function unseen(list) {
    const seen = events.lastKeys.map(eventKey);
    return list.filter((event) => {
      const time = String(event.time || "");
      if (time < events.lastTime) return false;
      if (time > events.lastTime) return true;
      const index = seen.indexOf(eventKey(event));
      if (index < 0) return true;
      seen.splice(index, 1);
      return false;
    });
  }

  function clearEvents() {
    $("events").replaceChildren();
    Object.assign(events, { rows: 0, received: 0, incoming: [], held: [], heldDropped: 0, lastTime: "", lastKeys: [] });
    plots.rate.clear();
    plots.latency = { read: [], write: [], error: [] };
    showHeld();
  }

  function receive(list, live) {
    const now = Date.now();
    for (const event of list) {
      const time = String(event.time || "");
      if (time > events.lastTime) { events.lastTime = time; events.lastKeys = []; }
      if (time === events.lastTime && events.lastKeys.length < 512) events.lastKeys.push(event);
      const at = Date.parse(time);
      if (live && !isNaN(at)) {
        plots.skews.push(now - at);
        if (plots.skews.length > 20) plots.skews.shift();
      }
      plotEvent(event, at);
      events.received += 1;
      events.incoming.push(event);
      if (!filterOptionExists("filter-type", event.type)) {
        $("filter-type").append(el("option", { value: event.type, text: event.type }));
      }
    }
    // A flood keeps only what the timeline can show.
    if (events.incoming.length > EVENT_ROWS) events.incoming.splice(0, events.incoming.length - EVENT_ROWS);
    // Rows are built at most 20 times a second, and less often in a flood.
    if (!events.flushTimer) events.flushTimer = setTimeout(flush, events.incoming.length > 400 ? 300 : 50);
  }

  function filterOptionExists(id, value) {
    return !value || Array.prototype.some.call($(id).options, (option) => option.value === value);
  }

  function flush() {
    events.flushTimer = null;
    const batch = events.incoming;
    events.incoming = [];
    if (events.paused) {
      events.held.push(...batch);
      if (events.held.length > EVENT_ROWS) {
        events.heldDropped += events.held.length - EVENT_ROWS;
        events.held.splice(0, events.held.length - EVENT_ROWS);
      }
      showHeld();
    } else {
      appendRows(batch);
    }
    $("events-count").textContent = events.received.toLocaleString("en-US") + " received";
  }

  function appendRows(batch) {
    if (!batch.length) return;
    const list = $("events");
    const fragment = document.createDocumentFragment();
    const type = $("filter-type").value;
    const characteristic = $("filter-characteristic").value;
    for (const event of batch.slice(-EVENT_ROWS)) {
      const row = eventRow(event);
      row.hidden = !matches(row, type, characteristic);
      fragment.append(row);
    }
    const excess = list.childElementCount + Math.min(batch.length, EVENT_ROWS) - EVENT_ROWS;
    if (excess >= list.childElementCount) {
      list.replaceChildren(fragment);
    } else {
      if (excess > 0) {  // the oldest rows go in one operation
        const range = document.createRange();
        range.setStartBefore(list.firstElementChild);
        range.setEndBefore(list.children[excess]);
        range.deleteContents();
      }
      list.append(fragment);
    }
    events.rows = list.childElementCount;
    if ($("events-follow").checked) {
      events.autoScroll = true;
      list.scrollTop = list.scrollHeight;
    }
  }

  function matches(row, type, characteristic) {
    return (!type || row.dataset.type === type) &&
      (!characteristic || row.dataset.characteristic === characteristic ||
        (row.dataset.changed || "").split(" ").includes(characteristic));
  }

  function applyFilters() {
    const type = $("filter-type").value;
    const characteristic = $("filter-characteristic").value;
    for (const row of $("events").children) row.hidden = !matches(row, type, characteristic);
    if ($("events-follow").checked) { events.autoScroll = true; $("events").scrollTop = $("events").scrollHeight; }
  }

  function showHeld() {
    const held = $("events-held");
    held.hidden = !events.paused;
    held.textContent = "Paused: " + events.held.length + " new event" + (events.held.length === 1 ? "" : "s") +
      " held" + (events.heldDropped ? " (" + events.heldDropped + " older ones dropped)" : "") + ".";
    $("events-pause").textContent = events.paused ? "Resume" : "Pause";
    $("events-pause").setAttribute("aria-pressed", String(events.paused));
  }

  // One timeline row: time, type, characteristic, and what happened in words.
  function eventRow(event) {
    const type = String(event.type || "?");
    const central = event.central ? centralName(event.central) : null;
    let detail = "";
    let tone = "";
    switch (type) {
      case "state": detail = event.state; tone = event.state === "poweredOn" ? "" : "warn"; break;
      case "connected": detail = central; break;
      case "disconnected": detail = central + (event.reason ? " — " + event.reason + (event.message ? ": " + event.message : "") : ""); tone = "warn"; break;
      case "request":
        detail = event.operation + " by " + central + ", " + (event.value ? spacedHex(event.value) : "(empty)") + " → " +
          (event.result === "error" ? event.error + (event.asked ? " (asked " + event.asked + ")" : "") : "success") +
          (typeof event.latencyMs === "number" ? ", " + event.latencyMs + " ms" : "");
        tone = event.result === "error" ? "bad" : "";
        break;
      case "subscribed": case "unsubscribed": detail = central; break;
      case "notification": case "indication":
        detail = (event.value ? spacedHex(event.value) : "(empty)") + decodedText(event) + " → " + event.centrals +
          " central" + (event.centrals === 1 ? "" : "s");
        break;
      case "queue-full": tone = "warn"; break;
      case "fault": detail = event.fault; tone = "warn"; break;
      case "pairing":
        detail = central + " " + event.method + (event.passkey ? " passkey " + event.passkey : "") + ": " + event.result;
        tone = event.result === "accepted" ? "" : "bad";
        break;
      case "restart": detail = event.reason; tone = "warn"; break;
      case "reset": detail = (event.changed || []).length ? "back to the profile: " + event.changed.join(", ") : "nothing changed"; break;
      case "lines-dropped": detail = event.count + " lines dropped"; tone = "bad"; break;
      default: {
        const rest = { ...event };
        delete rest.time; delete rest.type; delete rest.characteristic;
        detail = JSON.stringify(rest);
      }
    }
    const row = el("li", { class: "event" + (tone ? " " + tone : ""), "data-type": type },
      el("time", { datetime: event.time, text: clock(new Date(Date.parse(event.time))) }),
      el("span", { class: "type type-" + type.replace(/[^a-z-]/g, ""), text: type }),
      event.characteristic ? el("span", { class: "what", text: event.characteristic }) : null,
      detail ? el("span", { class: "detail", text: detail }) : null);
    if (event.characteristic) row.dataset.characteristic = event.characteristic;
    if (Array.isArray(event.changed)) row.dataset.changed = event.changed.join(" ");
    return row;
  }

  function decodedText(event) {
    const series = plots.values.get(event.characteristic);
    if (!series) return "";
    const values = decode(series.fields, event.value);
    const parts = series.fields.filter((f) => f.name in values).map((f) => f.name + " " + fieldText(values[f.name]));
    return parts.length ? " (" + parts.join(", ") + ")" : "";
  }

  // ---------------------------------------------------------------- plots

  function buildValuePlot(def, box) {
    const properties = def.properties || [];
    if (!(properties.includes("notify") || properties.includes("indicate")) || !def.fields) return;
    const fields = [];
    let offset = 0;
    for (const field of def.fields) {
      const size = SIZES[field.type];
      if (size === undefined) break;  // utf8 and hex take the rest; nothing numeric follows them
      if (NUMERIC.test(field.type)) fields.push({ name: field.name, type: field.type, offset });
      offset += size;
    }
    if (!fields.length) return;
    const canvas = el("canvas", { class: "plot plot-canvas", "data-characteristic": def.id, height: 110, role: "img",
      "aria-label": def.id + " values" });
    box.append(el("figure", { class: "plot-box" }, el("figcaption", {}, (def.name || def.uuid) + " ",
      el("small", { text: def.id })), canvas));
    plots.values.set(def.id, { canvas, fields, points: new Map(fields.map((f) => [f.name, []])) });
  }

  function decode(fields, hex) {
    const data = bytes(hex);
    const view8 = new DataView(data.buffer);
    const out = {};
    for (const field of fields) {
      const size = SIZES[field.type];
      if (field.offset + size > data.length) continue;
      const at = field.offset;
      let value;
      switch (field.type) {
        case "u8": value = data[at]; break;
        case "u16": value = view8.getUint16(at, true); break;
        case "u24": value = data[at] | data[at + 1] << 8 | data[at + 2] << 16; break;
        case "u32": value = view8.getUint32(at, true); break;
        case "s8": value = view8.getInt8(at); break;
        case "s16": value = view8.getInt16(at, true); break;
        case "s24": value = (data[at] | data[at + 1] << 8 | data[at + 2] << 16) << 8 >> 8; break;
        case "s32": value = view8.getInt32(at, true); break;
        case "float32": value = view8.getFloat32(at, true); break;
        case "sfloat": value = medicalFloat(view8.getUint16(at, true), 12, 4); break;
        case "float": value = medicalFloat(view8.getUint32(at, true), 24, 8); break;
      }
      out[field.name] = value;
    }
    return out;
  }

  // IEEE 11073-20601 SFLOAT / FLOAT: a signed mantissa times ten to a signed exponent; the reserved values are NaN.
  function medicalFloat(raw, mantissaBits, exponentBits) {
    const mantissaRaw = raw % 2 ** mantissaBits;
    const special = 2 ** (mantissaBits - 1);
    if (mantissaRaw >= special - 1 && mantissaRaw <= special + 2) {
      return mantissaRaw === special - 2 ? Infinity : mantissaRaw === special + 2 ? -Infinity : NaN;
    }
    const mantissa = mantissaRaw >= special ? mantissaRaw - 2 ** mantissaBits : mantissaRaw;
    const exponentRaw = Math.floor(raw / 2 ** mantissaBits) % 2 ** exponentBits;
    const exponent = exponentRaw >= 2 ** (exponentBits - 1) ? exponentRaw - 2 ** exponentBits : exponentRaw;
    return parseFloat((mantissa * Math.pow(10, exponent)).toPrecision(12));
  }

  function skew() { return plots.skews.length ? Math.min(...plots.skews) : 0; }

  // Appends a point; trims the old ones in batches (a quarter over the bound), so a flood costs no copy per point.
  function keep(points, point) {
    points.push(point);
    if (points.length < PLOT_POINTS * 1.25 && points[0][0] >= point[0] - PLOT_KEEP_MS * 1.25) return;
    const cutoff = point[0] - PLOT_KEEP_MS;
    let drop = Math.max(0, points.length - PLOT_POINTS);
    while (drop < points.length && points[drop][0] < cutoff) drop++;
    points.splice(0, drop);
  }

  function plotEvent(event, at) {
    if (isNaN(at)) return;
    const time = at + skew();
    if (event.type === "notification" || event.type === "indication") {
      const second = Math.floor(time / 1000);
      plots.rate.set(second, (plots.rate.get(second) || 0) + 1);
      if (plots.rate.size > 900) {
        for (const key of plots.rate.keys()) { if (key < second - PLOT_KEEP_MS / 1000) plots.rate.delete(key); else break; }
      }
      const series = plots.values.get(event.characteristic);
      if (series) {
        const values = decode(series.fields, event.value);
        for (const [name, value] of Object.entries(values)) keep(series.points.get(name), [time, value]);
      }
    } else if (event.type === "request" && typeof event.latencyMs === "number") {
      const kind = event.result === "error" ? "error" : event.operation === "write" ? "write" : "read";
      keep(plots.latency[kind], [time, event.latencyMs]);
    }
  }

  function drawPlots() {
    if (document.hidden || !view.profileKey) return;
    const end = Date.now();
    const start = end - Number($("plot-window").value) * 1000;
    for (const [id, series] of plots.values) {
      const list = series.fields.map((field) => ({ name: field.name, points: series.points.get(field.name), gap: 0 }));
      Plot.draw(series.canvas, { start, end, series: list, empty: "no notification yet" });
      const last = list.map((s) => s.points.length ? s.name + " " + fieldText(s.points[s.points.length - 1][1]) : null).filter(Boolean);
      series.canvas.setAttribute("aria-label", id + " values over time" + (last.length ? "; latest " + last.join(", ") : ""));
    }
    const rate = [];
    for (let second = Math.floor(start / 1000); second <= Math.floor(end / 1000); second++) {
      rate.push([second * 1000, plots.rate.get(second) || 0]);
    }
    Plot.draw($("rate-plot"), { start, end, zero: true,
      series: [{ name: "per second", latest: false, style: "bars", width: 1000, points: rate, color: Plot.palette[0] }] });
    const latency = plots.latency;
    Plot.draw($("latency-plot"), { start, end, zero: true, empty: "no request yet", series: [
      { name: "read", style: "dots", points: latency.read, color: Plot.palette[0] },
      { name: "write", style: "dots", points: latency.write, color: Plot.palette[1] },
      { name: "error", style: "dots", points: latency.error, color: "#dc2626" },
    ] });
  }

  // ---------------------------------------------------------------- controls

  function wire() {
    const boolValues = el("datalist", { id: "bool-values" }, el("option", { value: "true" }), el("option", { value: "false" }));
    document.body.append(boolValues);
    $("att-errors").replaceChildren(...ATT_ERRORS.map((name) => el("option", { value: name })));
    for (const id of ["centrals-title", "schedules-title", "controls-title"]) {
      const section = $(id).parentElement;
      section.append(el("output", { id: id.replace("-title", "-answer"), class: "inline-answer", "aria-live": "polite" }));
    }
    $("disconnect-all").addEventListener("click", () => send({ command: "disconnect" }, $("centrals-answer")));
    $("schedules-pause-all").addEventListener("click", () => send({ command: "schedules", action: "pause" }, $("schedules-answer")));
    $("schedules-resume-all").addEventListener("click", () => send({ command: "schedules", action: "resume" }, $("schedules-answer")));
    $("advertising-toggle").addEventListener("click", (event) =>
      send({ command: "advertising", action: event.currentTarget.dataset.action || "start" }, $("controls-answer")));
    $("reset-button").addEventListener("click", () => send({ command: "reset" }, $("controls-answer")));

    const fault = $("fault-form");
    const showKind = () => {
      const kind = fault.elements.kind.value;
      fault.querySelector(".fault-error").hidden = kind !== "error";
      fault.querySelector(".fault-delay").hidden = kind !== "delay";
      fault.querySelector(".fault-effect").hidden = kind !== "effect";
    };
    fault.elements.kind.addEventListener("change", showKind);
    showKind();
    fault.addEventListener("submit", (event) => {
      event.preventDefault();
      const f = fault.elements;
      const request = { command: "fault", operation: f.operation.value, nth: Number(f.nth.value) || 1 };
      if (f.id.value) request.id = f.id.value;
      if (f.kind.value === "error") {
        const error = f.error.value.trim();
        request.error = /^\d+$/.test(error) ? Number(error) : error;
      } else if (f.kind.value === "delay") {
        request.delayMs = Number(f.delayMs.value) || 0;
      } else {
        request.effect = f.effect.value;
      }
      send(request, $("controls-answer"));
    });

    $("filter-type").replaceChildren(el("option", { value: "", text: "all" }),
      ...EVENT_TYPES.map((type) => el("option", { value: type, text: type })));
    $("filter-type").addEventListener("change", applyFilters);
    $("filter-characteristic").addEventListener("change", applyFilters);
    $("events-pause").addEventListener("click", () => {
      events.paused = !events.paused;
      if (!events.paused) {
        const held = events.held;
        events.held = [];
        events.heldDropped = 0;
        appendRows(held);
      }
      showHeld();
    });
    $("events-follow").addEventListener("change", (event) => {
      if (event.target.checked) { events.autoScroll = true; $("events").scrollTop = $("events").scrollHeight; }
    });
    // Scrolling up to read stops following; scrolling back to the end follows again.
    $("events").addEventListener("scroll", () => {
      if (events.autoScroll) { events.autoScroll = false; return; }
      const list = $("events");
      $("events-follow").checked = list.scrollHeight - list.scrollTop - list.clientHeight < 24;
    });
    $("plot-window").addEventListener("change", drawPlots);
    $("link-retry-now").addEventListener("click", () => { backoff = 500; connect(); });
    window.addEventListener("resize", drawPlots);
    setInterval(drawPlots, 400);
  }

  wire();
  connect();
})();
