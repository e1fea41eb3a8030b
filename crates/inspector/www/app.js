// The inspector page: asks the worker (which holds the wasm analysis) for
// views and draws them. No framework, no server beyond static files.

const worker = new Worker("worker.js", { type: "module" });
const pending = new Map();
let nextId = 1;

function ask(msg) {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    worker.postMessage({ id, ...msg }, msg.bytes ? [msg.bytes] : []);
  });
}

worker.onmessage = (ev) => {
  const p = pending.get(ev.data.id);
  if (!p) return;
  pending.delete(ev.data.id);
  if (ev.data.error && ev.data.result === undefined) p.reject(new Error(ev.data.error));
  else p.resolve(ev.data);
};

worker.onerror = (e) => {
  status(`the analysis worker failed: ${e.message || "it could not start"}`);
  document.body.dataset.state = "failed";
  for (const p of pending.values()) p.reject(new Error("worker failed"));
  pending.clear();
};

const call = async (method, ...args) => (await ask({ op: "call", method, args })).result;
const $ = (sel) => document.querySelector(sel);
const esc = (s) => String(s ?? "").replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

let summary = null;
let shown = [];
let selected = null;
const rowCache = new Map();
const ROW = 20;

function status(text) { $("#status").textContent = text; }

// ---- loading ---------------------------------------------------------------

async function load(files) {
  document.body.dataset.state = "loading";
  const t0 = performance.now();
  let bytes = 0;
  for (const f of files) {
    if (document.body.dataset.state === "failed") return;
    bytes += f.bytes.byteLength;
    status(`parsing ${f.name} …`);
    try {
      const r = await ask({ op: "add", name: f.name, bytes: f.bytes });
      if (r.error) status(`${f.name}: ${r.error}`);
    } catch (e) {
      if (document.body.dataset.state === "failed") return;
      status(`${f.name}: ${e.message}`);
    }
  }
  summary = await call("summary");
  const ms = performance.now() - t0;
  document.body.dataset.parseMs = ms.toFixed(0);
  status(`${files.length} capture(s), ${(bytes / 1e6).toFixed(1)} MB analysed in ${ms.toFixed(0)} ms`);
  rowCache.clear();
  renderSummary();
  await applyFilter();
  await renderExperts();
  fillSelects();
  document.body.dataset.state = "ready";
  const q = new URLSearchParams(location.search);
  if (q.has("tab")) showTab(q.get("tab"));
  if (q.has("select")) await select(Number(q.get("select")));
}

async function readFiles(list) {
  const out = [];
  for (const f of list) {
    if (!/\.(pcap|pcapng)$/i.test(f.name)) continue;
    out.push({ name: f.webkitRelativePath || f.name, bytes: await f.arrayBuffer() });
  }
  out.sort((a, b) => a.name.localeCompare(b.name));
  return out;
}

$("#files").onchange = async (e) => load(await readFiles(e.target.files));
$("#folder").onchange = async (e) => load(await readFiles(e.target.files));
document.addEventListener("dragover", (e) => e.preventDefault());
document.addEventListener("drop", async (e) => {
  e.preventDefault();
  const files = [];
  const walk = async (entry) => {
    if (entry.isFile) files.push(await new Promise((r) => entry.file(r)));
    else if (entry.isDirectory) {
      const reader = entry.createReader();
      const entries = await new Promise((r) => reader.readEntries(r));
      for (const x of entries) await walk(x);
    }
  };
  for (const item of e.dataTransfer.items) {
    const entry = item.webkitGetAsEntry && item.webkitGetAsEntry();
    if (entry) await walk(entry);
  }
  load(await readFiles(files));
});

// Traces given with the page: inlined by `epic inspect --export`, or
// listed by `epic inspect`'s server.
async function preload() {
  if (window.EPIC_TRACES) {
    const files = window.EPIC_TRACES.map((t) => ({
      name: t.name,
      bytes: Uint8Array.from(atob(t.base64), (c) => c.charCodeAt(0)).buffer,
    }));
    return load(files);
  }
  try {
    const r = await fetch("trace/list");
    if (!r.ok) return;
    const names = await r.json();
    const files = [];
    for (const name of names) {
      const b = await fetch(`trace/${encodeURIComponent(name)}`);
      files.push({ name, bytes: await b.arrayBuffer() });
    }
    if (files.length) await load(files);
  } catch (_) {
    // Opened from a file: nothing to preload.
  }
}

// ---- summary ---------------------------------------------------------------

// The modes as the analysis infers them from who acknowledges what.
const MODES = { Terminated: "I (terminated)", Translated: "II (translated)", Augmented: "III (augmented)" };

function renderSummary() {
  const [v, w, n] = summary.experts;
  $("#counts").innerHTML =
    `<b id="n-captures">${summary.captures.length}</b> captures, <b id="n-packets">${summary.packets}</b> packets, ` +
    `<b id="n-invocations">${summary.invocations.length}</b> invocations, <b id="n-flows">${summary.flows.length}</b> flows; ` +
    `<span class="sev-violation"><b id="n-violations">${v}</b> violations</span>, ` +
    `<span class="sev-warning">${w} warnings</span>, <span class="sev-note">${n} notes</span>`;
  document.body.dataset.packets = summary.packets;
  document.body.dataset.violations = v;
  const body = $("#invocations tbody");
  body.innerHTML = summary.invocations
    .map((i, k) => {
      const ns = i.last_ns - i.first_ns;
      const gbps = ns > 0 ? ((i.message_bytes * 8) / ns).toFixed(2) : "–";
      const mode = MODES[i.mode] || "–";
      return `<tr data-inv="${k}"><td>${k}</td><td>${i.group}</td><td>${i.invocation}</td><td>${esc(i.collective)}</td><td class="mode">${mode}</td><td>${esc(i.op)}</td><td>${esc(i.dtype)}</td><td>${i.root}</td><td>${i.message_bytes}</td><td>${i.flows.length}</td><td>${i.senders.length}</td><td class="ranks">${i.ranks.length}</td><td>${i.data_packets}</td><td>${i.retransmissions}</td><td class="checked">${i.checked_outputs}</td><td>${(ns / 1e3).toFixed(1)} µs</td><td>${gbps} Gb/s</td></tr>`;
    })
    .join("");
  for (const tr of body.querySelectorAll("tr")) {
    tr.onclick = () => {
      $("#filters [name=invocation]").value = tr.dataset.inv;
      $("#ladder-inv").value = tr.dataset.inv;
      applyFilter();
      renderLadder();
    };
  }
}

function flowName(f, k) {
  return `${k}: ${f.key.src} → ${f.key.dst} QP 0x${f.key.dest_qp.toString(16).padStart(6, "0")}`;
}

function fillSelects() {
  const inv = summary.invocations.map((i, k) => `<option value="${k}">${k}: ${esc(i.collective)} group ${i.group} #${i.invocation}</option>`).join("");
  const fl = summary.flows.map((f, k) => `<option value="${k}">${esc(flowName(f, k))}</option>`).join("");
  $("#filters [name=invocation]").innerHTML = `<option value="">any</option>${inv}`;
  $("#filters [name=flow]").innerHTML = `<option value="">any</option>${fl}`;
  $("#ladder-inv").innerHTML = inv;
  $("#psn-flow").innerHTML = fl;
  // The first flow that carried requests.
  const busy = summary.flows.findIndex((f) => f.requests > 1);
  if (busy >= 0) $("#psn-flow").value = String(busy);
}

// ---- packet table (virtualized) ---------------------------------------------

async function applyFilter() {
  const form = $("#filters");
  const f = {};
  if (form.group.value !== "") f.group = Number(form.group.value);
  if (form.invocation.value !== "") f.invocation = Number(form.invocation.value);
  if (form.flow.value !== "") f.flow = Number(form.flow.value);
  if (form.kind.value !== "") f.kind = form.kind.value;
  f.errors_only = form.errors_only.checked;
  const r = await call("filter", JSON.stringify(f));
  shown = Array.isArray(r) ? r : [];
  $("#shown").textContent = `${shown.length} shown`;
  document.body.dataset.shown = shown.length;
  $("#table-space").style.height = `${shown.length * ROW}px`;
  $("#table").scrollTop = 0;
  await drawRows();
}

$("#filters").oninput = () => applyFilter();
$("#filters").onsubmit = (e) => e.preventDefault();

// One draw at a time; a request made meanwhile draws again after it.
let drawing = false;
let again = false;
async function drawRows() {
  if (drawing) {
    again = true;
    return;
  }
  drawing = true;
  const box = $("#table");
  const first = Math.floor(box.scrollTop / ROW);
  const count = Math.ceil(box.clientHeight / ROW) + 2;
  const want = shown.slice(first, first + count);
  const missing = want.filter((i) => !rowCache.has(i));
  if (missing.length) {
    const rows = await call("rows", new Uint32Array(missing));
    for (const r of rows) rowCache.set(r.index, r);
  }
  const space = $("#table-space");
  space.innerHTML = want
    .map((i, k) => {
      const r = rowCache.get(i);
      if (!r) return "";
      const cls = ["row", r.worst || "", r.retransmission ? "resend" : "", selected === i ? "sel" : ""].join(" ");
      const epic = r.control ? `${r.control.collective} g${r.control.group} #${r.control.invocation}` : r.nak ? `NAK ${r.nak}` : r.kind;
      const qp = r.dest_qp == null ? "" : `0x${r.dest_qp.toString(16)}`;
      const icrc = r.icrc_ok == null ? "" : r.icrc_ok ? "ok" : "BAD";
      return `<div class="${cls}" data-i="${i}" style="position:absolute;top:${(first + k) * ROW}px;left:0;right:0"><span>${i}</span><span>${(r.ts_ns / 1e3).toFixed(3)}</span><span>${esc(r.capture)}</span><span>${esc(r.opcode || r.kind)}</span><span>${esc(r.src || "")}</span><span>${esc(r.dst || "")}</span><span>${qp}</span><span>${r.psn ?? ""}</span><span>${r.len}</span><span>${icrc}</span><span>${esc(epic)}</span></div>`;
    })
    .join("");
  drawing = false;
  document.body.dataset.drawn = String(shown.length);
  if (again) {
    again = false;
    await drawRows();
  }
}

$("#table").onscroll = () => requestAnimationFrame(drawRows);
$("#table").onclick = (e) => {
  const row = e.target.closest(".row");
  if (row) select(Number(row.dataset.i));
};

// ---- detail ----------------------------------------------------------------

async function select(i) {
  selected = i;
  const d = await call("detail", i);
  const body = $("#detail-body");
  if (!d) {
    body.textContent = `No packet ${i}.`;
    return;
  }
  const layers = { ...d.record };
  const experts = d.experts
    .map((e) => `<li class="sev-${e.severity}">${e.severity}${e.spec.length ? " [" + e.spec.join("] [") + "]" : ""}: ${esc(e.message)}</li>`)
    .join("");
  const seen = [d.packet.seen, ...d.packet.also_seen]
    .map((s) => `${esc(summary.captures[s.capture]?.name)} #${s.frame} at ${(s.ts_ns / 1e3).toFixed(3)} µs`)
    .join("<br>");
  body.innerHTML =
    `<p id="detail-title"><b>packet ${i}</b>: ${esc(d.packet.opcode || d.packet.kind)}${d.packet.retransmission ? " (resent)" : ""}</p>` +
    `<p>${seen}</p>` +
    (experts ? `<ul>${experts}</ul>` : "") +
    `<h2>Layers</h2><pre id="detail-layers">${esc(JSON.stringify(layers, null, 1))}</pre>` +
    `<h2>Bytes</h2><pre id="detail-hex">${esc(d.hex)}</pre>`;
  document.body.dataset.selected = i;
  drawRows();
}

// ---- expert list -----------------------------------------------------------

async function renderExperts() {
  const list = await call("experts");
  const order = { violation: 0, warning: 1, note: 2 };
  list.sort((a, b) => order[a.severity] - order[b.severity] || a.packet - b.packet);
  $("#expert-list").innerHTML = list
    .slice(0, 5000)
    .map((e) => `<li class="sev-${e.severity}" data-i="${e.packet}">packet ${e.packet}: ${e.severity}${e.spec.length ? " [" + e.spec.join("] [") + "]" : ""} ${esc(e.kind)}: ${esc(e.message)}</li>`)
    .join("");
  for (const li of $("#expert-list").querySelectorAll("li")) li.onclick = () => select(Number(li.dataset.i));
}

// ---- tabs, graphs ------------------------------------------------------------

function showTab(name) {
  for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.tab === name);
  for (const t of document.querySelectorAll(".tab")) t.classList.toggle("active", t.id === name);
  if (name === "psn") renderPsn();
  if (name === "ladder") renderLadder();
  if (name === "io") renderIo();
  if (name === "packets") drawRows();
}
for (const b of document.querySelectorAll("#tabs button")) b.onclick = () => showTab(b.dataset.tab);
$("#psn-flow").onchange = () => renderPsn();
$("#ladder-inv").onchange = () => renderLadder();

const COLORS = { data: "#2e6da4", resend: "#e67e22", control: "#8e44ad", ack: "#27ae60", nak: "#c0392b", sack: "#c0392b", rnr_nak: "#c0392b", cnp: "#7f8c8d" };

function axes(ctx, w, h, pad, x0, x1, y0, y1, xl, yl) {
  ctx.clearRect(0, 0, w, h);
  ctx.strokeStyle = "#999";
  ctx.strokeRect(pad, 10, w - pad - 10, h - pad - 10);
  ctx.fillStyle = "#555";
  ctx.font = "11px sans-serif";
  ctx.fillText(`${xl}: ${x0.toFixed(1)} … ${x1.toFixed(1)}`, pad, h - 8);
  ctx.save();
  ctx.translate(12, h / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.fillText(`${yl}: ${y0} … ${y1}`, -60, 0);
  ctx.restore();
}

async function renderPsn() {
  const f = Number($("#psn-flow").value || 0);
  const s = await call("series", f);
  const c = $("#psn-canvas");
  const ctx = c.getContext("2d");
  if (!s) return ctx.clearRect(0, 0, c.width, c.height);
  const pts = [...s.requests, ...s.responses];
  if (!pts.length) return ctx.clearRect(0, 0, c.width, c.height);
  const t0 = Math.min(...pts.map((p) => p.ts_ns)), t1 = Math.max(...pts.map((p) => p.ts_ns)) + 1;
  const p0 = Math.min(...pts.map((p) => p.psn)), p1 = Math.max(...pts.map((p) => p.psn)) + 1;
  const pad = 40, w = c.width, h = c.height;
  axes(ctx, w, h, pad, t0 / 1e3, t1 / 1e3, p0, p1, "time (µs)", "PSN");
  const X = (t) => pad + ((t - t0) / (t1 - t0)) * (w - pad - 20);
  const Y = (p) => h - pad - ((p - p0) / (p1 - p0)) * (h - pad - 20);
  for (const p of s.requests) {
    ctx.fillStyle = p.retransmission ? COLORS.resend : COLORS[p.kind] || "#000";
    ctx.fillRect(X(p.ts_ns) - 2, Y(p.psn) - 6, 4, 6);
    if (p.gap) {
      // PSNs skipped before this one: a red mark below it.
      ctx.strokeStyle = COLORS.nak;
      ctx.beginPath();
      ctx.moveTo(X(p.ts_ns) - 4, Y(p.psn) + 6);
      ctx.lineTo(X(p.ts_ns) + 4, Y(p.psn) + 6);
      ctx.lineTo(X(p.ts_ns), Y(p.psn) + 1);
      ctx.closePath();
      ctx.stroke();
    }
  }
  for (const p of s.responses) {
    ctx.strokeStyle = COLORS[p.kind] || "#000";
    ctx.beginPath();
    ctx.arc(X(p.ts_ns), Y(p.psn), p.kind === "ack" ? 2 : 4, 0, 2 * Math.PI);
    ctx.stroke();
  }
  document.body.dataset.psnPoints = pts.length;
}

async function renderLadder() {
  const i = Number($("#ladder-inv").value || 0);
  const l = await call("ladder", i);
  const box = $("#ladder-svg");
  if (!l) {
    box.innerHTML = "";
    return;
  }
  const arrows = l.arrows.slice(0, 3000);
  const laneW = 140, top = 30;
  const t0 = arrows.length ? Math.min(...arrows.map((a) => a.sent_ns)) : 0;
  const t1 = arrows.length ? Math.max(...arrows.map((a) => a.received_ns)) : 0;
  // Tall enough that arrows a few apart in time stay apart on screen.
  const pxPerNs = Math.max(400, arrows.length * 8) / Math.max(1, t1 - t0);
  const Y = (t) => top + (t - t0) * pxPerNs;
  const height = arrows.length ? Y(Math.max(...arrows.map((a) => a.received_ns))) + 30 : 100;
  const X = (n) => 70 + n * laneW;
  let svg = `<svg id="ladder-drawing" xmlns="http://www.w3.org/2000/svg" width="${X(l.lanes.length)}" height="${height}">`;
  svg += `<defs><marker id="tip" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>`;
  l.lanes.forEach((ip, n) => {
    svg += `<text x="${X(n)}" y="16" text-anchor="middle" font-size="11">${esc(ip)}</text><line x1="${X(n)}" y1="${top}" x2="${X(n)}" y2="${height}" stroke="#bbb"/>`;
  });
  for (const a of arrows) {
    const color = a.kind === "data" || a.kind === "control" ? COLORS[a.kind] : COLORS[a.kind] || "#555";
    svg += `<line class="arrow" data-i="${a.packet}" x1="${X(a.from)}" y1="${Y(a.sent_ns)}" x2="${X(a.to)}" y2="${Y(a.received_ns) + 2}" stroke="${color}" stroke-width="1.5" marker-end="url(#tip)"><title>packet ${a.packet}: ${a.kind} PSN ${a.psn ?? ""}</title></line>`;
  }
  svg += "</svg>";
  box.innerHTML = svg;
  for (const line of box.querySelectorAll(".arrow")) line.onclick = () => select(Number(line.dataset.i));
  document.body.dataset.ladderLanes = l.lanes.length;
  document.body.dataset.ladderArrows = l.arrows.length;
}

async function renderIo() {
  const io = await call("io_graph", 200);
  const c = $("#io-canvas");
  const ctx = c.getContext("2d");
  const pad = 40, w = c.width, h = c.height;
  const max = Math.max(1, ...io.captures.flat().map((b) => b[0]));
  const n = io.captures[0]?.length || 1;
  axes(ctx, w, h, pad, 0, (n * io.bucket_ns) / 1e3, 0, max, "time (µs)", "frames per bucket");
  const palette = ["#2e6da4", "#27ae60", "#c0392b", "#8e44ad", "#e67e22", "#16a085", "#7f8c8d", "#d35400"];
  io.captures.forEach((buckets, k) => {
    ctx.strokeStyle = palette[k % palette.length];
    ctx.beginPath();
    buckets.forEach((b, j) => {
      const x = pad + (j / n) * (w - pad - 20), y = h - pad - (b[0] / max) * (h - pad - 20);
      j ? ctx.lineTo(x, y) : ctx.moveTo(x, y);
    });
    ctx.stroke();
  });
}

preload();
