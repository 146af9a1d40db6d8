// tether web view: draws every delegation tree the plugin watches, live from
// its server-sent events. Read-only. Every string from the cluster reaches the
// page as a text node (never as HTML), and the page loads nothing else.

const SVG = "http://www.w3.org/2000/svg";
const W = 250, H = 86, GX = 56, GY = 14, TREE_GAP = 22, NS_GAP = 30;
const ACTIVE = new Set(["", "Pending", "Running"]);

const state = {
  nodes: new Map(),   // key -> node
  events: new Map(),  // key -> Map(uid -> event)
  collapsed: new Set(),
  selected: decodeURIComponent(location.hash.slice(1)) || null,
  offset: 0,          // server clock minus ours, from the snapshot
  namespace: "",
  problems: {},
};

// ---- small DOM helpers ----------------------------------------------------

function html(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  return fill(e, attrs, kids);
}

function svg(tag, attrs = {}, ...kids) {
  const e = document.createElementNS(SVG, tag);
  return fill(e, attrs, kids);
}

function fill(e, attrs, kids) {
  for (const [k, v] of Object.entries(attrs)) {
    if (v !== undefined && v !== null && v !== false) e.setAttribute(k, String(v));
  }
  for (const k of kids) {
    if (k === null || k === undefined || k === false) continue;
    e.append(typeof k === "string" || typeof k === "number" ? document.createTextNode(String(k)) : k);
  }
  return e;
}

const now = () => Date.now() + state.offset;

function human(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 120) return `${m}m${s % 60 ? (s % 60) + "s" : ""}`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h${m % 60 ? (m % 60) + "m" : ""}`;
  return `${Math.floor(h / 24)}d`;
}

function compact(n) {
  if (Math.abs(n) >= 1e6) return (n / 1e6).toFixed(n % 1e6 ? 1 : 0) + "M";
  if (Math.abs(n) >= 1e3) return (n / 1e3).toFixed(n % 1e3 ? 1 : 0) + "k";
  return String(n);
}

function cut(s, n) { return s.length > n ? s.slice(0, n - 1) + "…" : s; }

// ---- what a node says -----------------------------------------------------

function phaseText(n) {
  const p = n.phase || "-";
  const r = [n.reason || n.failureClass, n.attempt].filter((s) => s && s !== p).join(", ");
  return r ? `${p} (${r})` : p;
}

// leaseText: the operator renews a lease every ttl/3 without writing status,
// so a grantedUntil in the past on a followed task means "being renewed",
// not "lapsed".
function leaseText(n, t, short) {
  const l = n.lease;
  if (!l) return "";
  const ttl = l.ttlSeconds * 1000;
  if (!l.grantedUntil) {
    if (l.reason) return short ? "lease refused" : `not granted: ${l.reason}`;
    return short ? `lease ${human(ttl)}` : `${human(ttl)} requested, not granted yet`;
  }
  const left = Date.parse(l.grantedUntil) - t;
  if (left > 0) return short ? `lease ${human(left)}` : `expires in ${human(left)} unless renewed`;
  if (ACTIVE.has(n.phase || "") || n.phase === "InputRequired" || n.phase === "AuthRequired") {
    return short ? `lease ↻ ${human(ttl / 3)}` : `renewed every ${human(ttl / 3)} (first grant ended ${human(-left)} ago)`;
  }
  return short ? "lease ended" : "ended with the task";
}

function leaseFraction(n, t) {
  const l = n.lease;
  if (!l || !l.grantedUntil || !l.ttlSeconds) return null;
  const left = Date.parse(l.grantedUntil) - t;
  return left > 0 ? Math.min(1, left / (l.ttlSeconds * 1000)) : null;
}

function deadlineText(n, t) {
  if (!n.deadline) return "";
  const left = Date.parse(n.deadline) - t;
  return left > 0 ? `in ${human(left)}` : `${human(-left)} ago`;
}

// mainMeter is the meter closest to running out, the one worth a glance.
function mainMeter(n) {
  let best = null, bestUsed = -1;
  for (const m of n.budget || []) {
    if (!m.granted) continue;
    const used = (m.spent + m.reserved) / m.granted;
    if (used > bestUsed) { best = m; bestUsed = used; }
  }
  return best;
}

// ---- the trees --------------------------------------------------------------

function byAge(a, b) {
  return a.namespace.localeCompare(b.namespace) || Date.parse(a.created) - Date.parse(b.created) || a.name.localeCompare(b.name);
}

function forest() {
  const kids = new Map();
  const roots = [];
  for (const n of state.nodes.values()) {
    if (n.parent && state.nodes.has(n.parent)) {
      if (!kids.has(n.parent)) kids.set(n.parent, []);
      kids.get(n.parent).push(n);
    } else {
      roots.push(n);
    }
  }
  for (const list of kids.values()) list.sort(byAge);
  roots.sort(byAge);
  return { roots, kids };
}

function descendants(key, kids, seen = new Set()) {
  let count = 0;
  for (const c of kids.get(key) || []) {
    if (seen.has(c.key)) continue;
    seen.add(c.key);
    count += 1 + descendants(c.key, kids, seen);
  }
  return count;
}

// layout places each tree left to right: leaves one under another, a parent
// level with the middle of its children; a collapsed node is a leaf.
function layout() {
  const { roots, kids } = forest();
  const placed = [], edges = [], labels = [];
  const seen = new Set();
  let y = 0, ns = null;
  const place = (n, depth) => {
    seen.add(n.key);
    const children = state.collapsed.has(n.key) ? [] : (kids.get(n.key) || []).filter((c) => !seen.has(c.key));
    let top;
    if (children.length === 0) {
      top = y;
      y += H + GY;
    } else {
      const ys = children.map((c) => place(c, depth + 1));
      top = (ys[0] + ys[ys.length - 1]) / 2;
      for (let i = 0; i < children.length; i++) edges.push({ from: { depth, top }, to: { depth: depth + 1, top: ys[i] } });
    }
    placed.push({ n, x: depth * (W + GX), y: top, kids: (kids.get(n.key) || []).length, hidden: state.collapsed.has(n.key) ? descendants(n.key, kids) : 0 });
    return top;
  };
  for (const r of roots) {
    if (!state.namespace && r.namespace !== ns) {
      if (ns !== null) y += NS_GAP - TREE_GAP;
      ns = r.namespace;
      labels.push({ text: ns, y: y + 12 });
      y += 22;
    }
    place(r, 0);
    y += TREE_GAP;
  }
  return { placed, edges, labels };
}

function drawNode(p) {
  const n = p.n;
  const g = svg("g", {
    class: "node" + (n.key === state.selected ? " selected" : ""),
    transform: `translate(${p.x},${p.y})`,
    "data-key": n.key, "data-phase": n.phase || "", role: "treeitem", tabindex: 0,
  }, svg("title", {}, `${n.name}: ${phaseText(n)}${n.message ? "\n" + n.message : ""}`));
  g.append(
    svg("rect", { class: "box", width: W, height: H, rx: 8 }),
    svg("rect", { class: "stripe", x: 1, y: 1, width: 5, height: H - 2, rx: 2 }),
    svg("text", { class: "name", x: 14, y: 20 }, cut(n.name, 24)),
    svg("text", { class: "sub", x: 14, y: 37 }, cut(`${n.agent || "(group)"} · ${phaseText(n)}`, 38)),
  );
  const lt = leaseText(n, now(), true);
  if (lt) g.append(svg("text", { class: "lease", x: W - 10, y: 20, "text-anchor": "end", "data-countdown": "lease" }, lt));
  const m = mainMeter(n);
  if (m) {
    const bw = W - 28, scale = bw / m.granted;
    g.append(svg("g", { class: "bar", transform: "translate(14,47)" },
      svg("title", {}, `${m.name}: ${m.spent} spent, ${m.reserved} reserved by children, ${m.left} left of ${m.granted}`),
      svg("rect", { class: "track", width: bw, height: 8, rx: 4 }),
      svg("rect", { class: "spent", width: Math.min(bw, m.spent * scale), height: 8, rx: 4 }),
      svg("rect", { class: "reserved", x: Math.min(bw, m.spent * scale), width: Math.max(0, Math.min(bw - m.spent * scale, m.reserved * scale)), height: 8 }),
    ));
    g.append(svg("text", { class: "small", x: 14, y: 74 },
      cut(`${m.name}: ${compact(m.spent)} spent · ${compact(m.reserved)} reserved of ${compact(m.granted)}`, 44)));
  } else if (n.message) {
    g.append(svg("text", { class: "small", x: 14, y: 58 }, cut(n.message.split("\n")[0], 42)));
  }
  if (p.kids) {
    const collapsed = state.collapsed.has(n.key);
    const t = svg("g", { class: "toggle", transform: `translate(${W},${H / 2})`, "data-toggle": n.key, role: "button",
      "aria-label": collapsed ? "expand" : "collapse" },
      svg("title", {}, collapsed ? `show ${p.hidden} hidden` : "collapse"),
      svg("circle", { r: 9 }),
      svg("text", { "text-anchor": "middle", y: 4 }, collapsed ? "+" : "−"));
    g.append(t);
    if (collapsed) g.append(svg("text", { class: "small", x: W + 14, y: H / 2 + 4 }, `+${p.hidden}`));
  }
  return g;
}

function drawGraph() {
  const { placed, edges, labels } = layout();
  const root = document.getElementById("graph");
  const parts = [];
  for (const l of labels) parts.push(svg("text", { class: "ns-label", x: 0, y: l.y }, l.text));
  for (const e of edges) {
    const x1 = e.from.depth * (W + GX) + W, y1 = e.from.top + H / 2;
    const x2 = e.to.depth * (W + GX), y2 = e.to.top + H / 2, mx = (x1 + x2) / 2;
    parts.push(svg("path", { class: "edge", d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}` }));
  }
  for (const p of placed) parts.push(drawNode(p));
  const width = Math.max(0, ...placed.map((p) => p.x + W + 40));
  const height = Math.max(0, ...placed.map((p) => p.y + H + 4));
  root.replaceChildren(...parts);
  root.setAttribute("width", width);
  root.setAttribute("height", height);
  document.getElementById("empty").hidden = state.nodes.size > 0;
}

// ---- the details of one Delegation -------------------------------------------

function row(label, value) {
  return value === "" || value === null || value === undefined ? [] : [html("dt", {}, label), html("dd", {}, value)];
}

function meterView(m) {
  const pct = (v) => (m.granted ? (100 * v) / m.granted : 0);
  return html("div", { class: "meter", "data-meter": m.name },
    html("div", { class: "label" }, html("span", {}, m.name),
      html("span", { class: "nums" }, `${m.spent} spent · ${m.reserved} reserved · ${m.left} left / ${m.granted}`)),
    html("div", { class: "hbar", title: `${m.name}: granted ${m.granted}` },
      html("div", { class: "spent", "data-w": pct(m.spent) }),
      html("div", { class: "reserved", "data-w": pct(m.reserved) })));
}

function drawDetails() {
  const aside = document.getElementById("details");
  const n = state.selected && state.nodes.get(state.selected);
  if (!n) {
    aside.removeAttribute("data-key");
    aside.replaceChildren(html("p", { class: "hint" },
      state.selected ? `${state.selected} is not here (deleted, or in another namespace).` :
        "Select a Delegation to see its budget, lease, status message and Events."));
    return;
  }
  aside.setAttribute("data-key", n.key);
  const t = now();
  const parts = [
    html("h2", {}, n.name),
    html("div", {}, html("span", { class: "chip", "data-phase": n.phase || "" }, n.phase || "no phase yet"), " ",
      html("span", { class: "legend" }, n.namespace)),
    html("dl", {},
      ...row("Agent", n.agent ? (n.skill ? `${n.agent} (skill ${n.skill})` : n.agent) : "(group)"),
      ...row("Parent", n.parent ? n.parent.split("/")[1] : ""),
      ...row("Reason", n.reason),
      ...row("Failure", n.failureClass),
      ...row("Attempt", n.attempt),
      ...row("Task", n.taskID),
      ...row("Remote state", n.remoteState),
      ...row("Started", n.started ? `${human(t - Date.parse(n.started))} ago` : ""),
      ...row("Completed", n.completed ? `${human(t - Date.parse(n.completed))} ago` : ""),
      ...row("Deadline", n.deadline ? html("span", { "data-countdown": "deadline" }, deadlineText(n, t)) : ""),
      ...row("Replies", n.replies[1] ? `${n.replies[0]} of ${n.replies[1]} sent` : ""),
      ...row("Children", n.children ? `${n.children.active} active, ${n.children.succeeded} succeeded, ${n.children.failed} failed, ${n.children.canceled} canceled` : ""),
      ...row("Requested", [n.cancel && "cancel", n.detach && "detach", n.deleting && "deletion"].filter(Boolean).join(", "))),
  ];
  parts.push(html("h3", {}, "Status message"),
    n.message ? html("pre", { class: "message" }, n.message) : html("p", { class: "hint" }, "none"));
  if (n.lease) {
    const f = leaseFraction(n, t);
    parts.push(html("h3", {}, "Lease"),
      html("div", {}, html("span", { "data-countdown": "lease-long" }, leaseText(n, t, false)),
        html("span", { class: "legend" }, ` · ttl ${human(n.lease.ttlSeconds * 1000)}`)),
      html("div", { class: "countdown-bar", "data-countdown": "lease-bar" }, html("div", { "data-w": f === null ? 0 : 100 * f })));
  }
  parts.push(html("h3", {}, "Budget"));
  if (n.budget && n.budget.length) {
    for (const m of n.budget) parts.push(meterView(m));
    parts.push(html("div", { class: "legend" }, html("i", { class: "spent" }), "spent", html("i", { class: "reserved" }),
      "reserved by children", html("i", { class: "left" }), "left"));
  } else {
    parts.push(html("p", { class: "hint" }, "no ledger yet"));
  }
  const evs = [...(state.events.get(n.key) || new Map()).values()].sort((a, b) => Date.parse(b.lastSeen) - Date.parse(a.lastSeen));
  parts.push(html("h3", {}, `Events (${evs.length})`));
  if (state.problems.events) parts.push(html("p", { class: "hint" }, state.problems.events));
  parts.push(evs.length ? html("ol", { class: "events" }, ...evs.map((e) => html("li", { class: `event ${e.type}`, "data-reason": e.reason },
    html("div", { class: "when" }, `${human(t - Date.parse(e.lastSeen))} ago · ${e.type}${e.count > 1 ? ` · ×${e.count}` : ""}${e.reporter ? ` · ${e.reporter}` : ""}`),
    html("span", { class: "reason" }, e.reason), html("span", { class: "note" }, e.note)))) : html("p", { class: "hint" }, "none recorded"));
  aside.replaceChildren(...parts);
  // Widths are set from script (the policy allows no inline style attributes).
  for (const e of aside.querySelectorAll("[data-w]")) e.style.width = `${e.getAttribute("data-w")}%`;
}

// ---- the header --------------------------------------------------------------

function drawHeader() {
  document.getElementById("scope").textContent = state.namespace ? `namespace ${state.namespace}` : "all namespaces";
  const by = new Map();
  for (const n of state.nodes.values()) by.set(n.phase || "no phase", (by.get(n.phase || "no phase") || 0) + 1);
  const parts = [...by.entries()].sort().map(([p, c]) => `${c} ${p}`);
  document.getElementById("summary").textContent = `${state.nodes.size} Delegations${parts.length ? " · " + parts.join(" · ") : ""}`;
  const problems = Object.values(state.problems).filter(Boolean);
  const box = document.getElementById("problems");
  box.hidden = problems.length === 0;
  box.textContent = problems.join(" · ");
}

function render() {
  drawHeader();
  drawGraph();
  drawDetails();
}

let pending = false;
function scheduleRender() {
  if (pending) return;
  pending = true;
  requestAnimationFrame(() => { pending = false; render(); });
}

// tick moves the countdowns on without redrawing.
function tick() {
  const t = now();
  for (const g of document.querySelectorAll("#graph .node")) {
    const n = state.nodes.get(g.getAttribute("data-key"));
    const e = g.querySelector('[data-countdown="lease"]');
    if (n && e) e.textContent = leaseText(n, t, true);
  }
  const n = state.selected && state.nodes.get(state.selected);
  if (!n) return;
  const set = (sel, fn) => { const e = document.querySelector(`#details [data-countdown="${sel}"]`); if (e) fn(e); };
  set("lease-long", (e) => { e.textContent = leaseText(n, t, false); });
  set("deadline", (e) => { e.textContent = deadlineText(n, t); });
  set("lease-bar", (e) => { const f = leaseFraction(n, t); e.firstChild.style.width = `${f === null ? 0 : 100 * f}%`; });
}

// ---- input -------------------------------------------------------------------

function select(key) {
  state.selected = key;
  history.replaceState(null, "", "#" + encodeURIComponent(key));
  render();
}

document.addEventListener("DOMContentLoaded", () => {
  const graph = document.getElementById("graph");
  graph.addEventListener("click", (ev) => {
    const toggle = ev.target.closest("[data-toggle]");
    if (toggle) {
      const key = toggle.getAttribute("data-toggle");
      if (state.collapsed.has(key)) state.collapsed.delete(key); else state.collapsed.add(key);
      render();
      return;
    }
    const node = ev.target.closest(".node");
    if (node) select(node.getAttribute("data-key"));
  });
  graph.addEventListener("keydown", (ev) => {
    const node = ev.target.closest(".node");
    if (node && (ev.key === "Enter" || ev.key === " ")) { ev.preventDefault(); select(node.getAttribute("data-key")); }
  });
  window.addEventListener("hashchange", () => { state.selected = decodeURIComponent(location.hash.slice(1)) || null; render(); });
  connect();
  setInterval(tick, 1000);
});

// ---- the stream --------------------------------------------------------------

function setConn(s, text) {
  const e = document.getElementById("conn");
  e.setAttribute("data-state", s);
  e.textContent = text;
}

function addEvent(ev) {
  if (!state.events.has(ev.key)) state.events.set(ev.key, new Map());
  state.events.get(ev.key).set(ev.uid, ev);
}

function connect() {
  // EventSource reconnects by itself; each connection starts with a snapshot.
  const es = new EventSource("stream");
  const on = (name, fn) => es.addEventListener(name, (e) => { fn(JSON.parse(e.data)); scheduleRender(); });
  on("snapshot", (s) => {
    state.nodes = new Map(s.nodes.map((n) => [n.key, n]));
    state.events = new Map();
    for (const ev of s.events) addEvent(ev);
    state.offset = Date.parse(s.serverTime) - Date.now();
    state.namespace = s.namespace || "";
    state.problems = s.problems || {};
    setConn("live", "live");
  });
  on("node", (n) => state.nodes.set(n.key, n));
  on("gone", (g) => { state.nodes.delete(g.key); state.events.delete(g.key); });
  on("kevent", addEvent);
  on("keventgone", (g) => { const m = state.events.get(g.key); if (m) m.delete(g.uid); });
  on("problem", (p) => { state.problems[p.source] = p.message; });
  es.addEventListener("error", () => setConn("reconnecting", "reconnecting…"));
}
