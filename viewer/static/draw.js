// The graph as SVG: boxes, edges and open modules' frames from DG.layout, colours from
// one iteration's gradient norms, pan (drag) and zoom (wheel, + and -) on one transform.
// Every text from the trace goes in through textContent: never as markup.
"use strict";

const DG = globalThis.DG || (globalThis.DG = {});
const SVG_NS = "http://www.w3.org/2000/svg";

// h("div", {class: "x"}, "text", child): an element; strings become text nodes.
DG.h = function (tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
  }
  return el;
};

DG.s = function (tag, attrs, text) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
};

// JSON cannot spell NaN or Infinity: they come as strings.
DG.num = v => (typeof v === "string" ? Number(v) : v);

DG.fmt = function (v) {
  v = DG.num(v);
  if (v === null || v === undefined) return "—";
  if (typeof v !== "number") return String(v);
  if (Number.isNaN(v)) return "NaN";
  if (!Number.isFinite(v)) return v > 0 ? "inf" : "-inf";
  if (Number.isInteger(v) && Math.abs(v) < 1e6) return String(v);
  const a = Math.abs(v);
  return a !== 0 && (a < 1e-3 || a >= 1e5) ? v.toExponential(3) : String(Number(v.toPrecision(4)));
};

// ColorBrewer YlGnBu in decade bins, as the SVG exports colour (exporters/colors.py).
DG.PALETTE = ["#ffffd9", "#edf8b1", "#c7e9b4", "#7fcdbb", "#41b6c4",
              "#1d91c0", "#225ea8", "#253494", "#081d58"];
DG.scale = function (range) {
  if (!range) return () => null;
  const lo = Math.floor(Math.log10(range[0]));
  const hi = Math.max(Math.floor(Math.log10(range[1])) + 1, lo + 1);
  const last = DG.PALETTE.length - 1;
  return norm => {
    if (norm === null || norm === undefined || Number.isNaN(norm)) return null;
    if (norm <= 0) return "#e6e6e6";
    const e = Math.min(Math.max(Math.floor(Math.log10(norm)), lo), hi - 1);
    // Decades spread over the whole palette: light for small gradients, dark for large.
    return DG.PALETTE[hi - lo === 1 ? 4 : Math.round(((e - lo) * last) / (hi - lo - 1))];
  };
};
DG.isDark = fill => DG.PALETTE.indexOf(fill) >= 5;

const CHAR_W = 6.6, BOX_H = 34;
DG.ALL_TEXT = 400; // boxes: up to this many, every text is made at once
DG.TEXT_ZOOM = 0.3; // below this zoom texts are not drawn (too small to read)

// The drawing of one folded picture: boxes (with their texts), edges, frames.
DG.Drawing = class {
  constructor(view, fold, lay, boxes) {
    this.view = view; // {svg, viewport}
    this.fold = fold;
    this.lay = lay;
    this.boxes = boxes;
    this.groups = [];
    this.rects = [];
  }

  static boxFor(structure, unit) {
    let lines, leaf = false;
    if (unit.kind === "node") {
      const i = unit.first;
      const t = structure.tables;
      const label = t.label[structure.label[i]];
      const shape = t.shape[structure.shape[i]];
      const dtype = t.dtype[structure.dtype[i]];
      lines = [label, dtype === "float32" ? shape : shape + " " + dtype];
      const kind = t.kind[structure.kind[i]];
      leaf = kind !== "op" && kind !== "backward";
    } else {
      const what = unit.kind === "index" ? "integer bookkeeping" : unit.size + " nodes";
      lines = [unit.label, what + (unit.kind === "index" ? "" : "  \u25b8 open")];
    }
    const chars = Math.max(...lines.map(l => Math.min(l.length, 48)));
    return {w: Math.max(54, chars * CHAR_W + 18), h: BOX_H, lines,
            folded: unit.kind !== "node", leaf};
  }

  build(structure, tree) {
    const {viewport} = this.view;
    viewport.textContent = "";
    const frames = DG.s("g", {class: "dg-frames"});
    const edges = DG.s("g", {class: "dg-edges"});
    const nodes = DG.s("g", {class: "dg-boxes"});
    for (const [key, [x0, y0, x1, y1]] of this.lay.clusters) {
      const g = DG.s("g", {class: "dg-frame", "data-key": key});
      g.appendChild(DG.s("rect", {x: x0, y: y0, width: x1 - x0, height: y1 - y0, rx: 6}));
      const call = tree._calls.get(key);
      g.appendChild(DG.s("text", {x: x0 + 6, y: y0 + 12, class: "dg-frame-label"},
                         "\u25be " + (call ? call.label : key)));
      frames.appendChild(g);
    }
    let d = "";
    for (const pts of this.lay.edges) {
      d += "M" + pts[0][0].toFixed(1) + "," + pts[0][1].toFixed(1);
      for (let q = 1; q < pts.length; q++) d += "L" + pts[q][0].toFixed(1) + "," + pts[q][1].toFixed(1);
    }
    // One path for every edge line (one element, not thousands), the arrowheads apart.
    edges.appendChild(DG.s("path", {d}));
    let heads = "";
    for (const pts of this.lay.edges) {
      const [x, y] = pts[pts.length - 1], [px, py] = pts[pts.length - 2];
      const a = Math.atan2(y - py, x - px);
      const c = Math.cos(a), s = Math.sin(a);
      heads += `M${x.toFixed(1)},${y.toFixed(1)}l${(-7 * c + 3 * s).toFixed(1)},` +
        `${(-7 * s - 3 * c).toFixed(1)}l${(-6 * s).toFixed(1)},${(6 * c).toFixed(1)}z`;
    }
    edges.appendChild(DG.s("path", {d: heads, class: "dg-heads"}));
    this.cls = [];
    this.fills = [];
    this.texts = new Uint8Array(this.fold.units.length);
    this.fold.units.forEach((unit, u) => {
      const b = this.boxes[u];
      const x = this.lay.x[u], y = this.lay.y[u];
      const cls = "dg-unit" + (b.folded ? " dg-folded" : "") + (b.leaf ? " dg-leaf" : "");
      const g = DG.s("g", {class: cls, "data-u": u,
                           transform: `translate(${x.toFixed(1)},${y.toFixed(1)})`});
      const rect = DG.s("rect", {x: -b.w / 2, y: -b.h / 2, width: b.w, height: b.h,
                                 rx: b.folded ? 2 : 7});
      g.appendChild(rect);
      if (b.folded) {
        g.appendChild(DG.s("rect", {class: "dg-inner", x: -b.w / 2 + 3, y: -b.h / 2 + 3,
                                    width: b.w - 6, height: b.h - 6, rx: 1}));
      }
      nodes.appendChild(g);
      this.groups.push(g);
      this.rects.push(rect);
      this.cls.push(cls);
      this.fills.push("");
    });
    viewport.append(frames, edges, nodes);
    if (this.fold.units.length <= DG.ALL_TEXT) this.showTexts(null);
  }

  // Box texts: all of them for a small picture; for a big one only those in `view` (a
  // rectangle in layout units), made when first seen: shaping thousands of texts that are
  // too small to read would cost seconds.
  showTexts(view) {
    const units = this.fold.units;
    for (let u = 0; u < units.length; u++) {
      if (this.texts[u]) continue;
      const x = this.lay.x[u], y = this.lay.y[u], b = this.boxes[u];
      if (view && (x + b.w / 2 < view[0] || x - b.w / 2 > view[2] ||
                   y + b.h / 2 < view[1] || y - b.h / 2 > view[3])) continue;
      this.texts[u] = 1;
      this.groups[u].append(DG.s("text", {y: -3, class: "dg-l1"}, clip(b.lines[0])),
                            DG.s("text", {y: 11, class: "dg-l2"}, clip(b.lines[1])));
    }
  }

  // Fills from one iteration's values: the largest gradient norm a box stands for; red
  // where a value or gradient it stands for is NaN/Inf.
  paint(values, colour, marks) {
    const units = this.fold.units;
    const best = new Array(units.length).fill(null);
    const bad = new Uint8Array(units.length);
    const gnorm = values.gnorm, vnan = values.vnan, vinf = values.vinf, gnan = values.gnan,
      ginf = values.ginf;
    const unitOf = this.fold.unitOf;
    for (let i = 0; i < unitOf.length; i++) {
      const u = unitOf[i];
      if ((vnan && vnan[i]) || (vinf && vinf[i]) || (gnan && gnan[i]) || (ginf && ginf[i])) bad[u] = 1;
      const g = gnorm ? DG.num(gnorm[i]) : null;
      if (g !== null && g !== undefined && !Number.isNaN(g) && (best[u] === null || g > best[u])) {
        best[u] = g;
      }
    }
    units.forEach((_, u) => {
      const fill = bad[u] ? "#e41a1c" : colour(best[u]) || "#ffffff";
      if (fill !== this.fills[u]) {
        this.rects[u].setAttribute("fill", fill);
        this.fills[u] = fill;
      }
      let cls = "dg-unit";
      if (this.boxes[u].folded) cls += " dg-folded";
      if (this.boxes[u].leaf) cls += " dg-leaf";
      if (bad[u]) cls += " dg-nan";
      if (DG.isDark(fill) || bad[u]) cls += " dg-dark";
      const m = marks.get(u);
      if (m) cls += " " + m.join(" ");
      if (cls !== this.cls[u]) {
        this.groups[u].setAttribute("class", cls);
        this.cls[u] = cls;
      }
    });
    return {best, bad};
  }
};

function clip(text) {
  return text.length > 48 ? text.slice(0, 47) + "\u2026" : text;
}

// Pan and zoom on one <g transform>: drag to pan, wheel to zoom about the pointer.
DG.PanZoom = class {
  constructor(svg, viewport) {
    this.svg = svg;
    this.viewport = viewport;
    this.k = 1; this.tx = 0; this.ty = 0;
    this.dragged = false;
    let start = null;
    svg.addEventListener("wheel", e => {
      e.preventDefault();
      const r = svg.getBoundingClientRect();
      this.zoomAt(Math.exp(-e.deltaY * 0.0015), e.clientX - r.left, e.clientY - r.top);
    }, {passive: false});
    svg.addEventListener("pointerdown", e => {
      if (e.button !== 0) return;
      start = [e.clientX, e.clientY, this.tx, this.ty];
      this.dragged = false;
    });
    svg.addEventListener("pointermove", e => {
      if (!start) return;
      const dx = e.clientX - start[0], dy = e.clientY - start[1];
      if (!this.dragged && Math.abs(dx) + Math.abs(dy) < 4) return;
      if (!this.dragged) svg.setPointerCapture(e.pointerId);
      this.dragged = true;
      this.tx = start[2] + dx; this.ty = start[3] + dy;
      this.apply();
    });
    const end = () => { start = null; };
    svg.addEventListener("pointerup", end);
    svg.addEventListener("pointercancel", end);
  }

  apply() {
    this.viewport.setAttribute("transform",
      `translate(${this.tx.toFixed(1)},${this.ty.toFixed(1)}) scale(${this.k.toFixed(4)})`);
    if (this.onchange && !this.pending) {
      this.pending = true;
      requestAnimationFrame(() => { this.pending = false; this.onchange(); });
    }
  }

  // The rectangle shown, in layout units: [x0, y0, x1, y1].
  visible() {
    const [w, h] = this.size();
    return [-this.tx / this.k, -this.ty / this.k, (w - this.tx) / this.k, (h - this.ty) / this.k];
  }

  // The drawing area's size, measured when it changes (a ResizeObserver), not asked of
  // the browser after a picture's thousands of elements were added (that forces their
  // style and layout there and then: seconds for a big picture).
  size() {
    if (!this.known) {
      const r = this.svg.getBoundingClientRect();
      this.known = [r.width || 800, r.height || 500];
      if (typeof ResizeObserver !== "undefined" && !this.observer) {
        this.observer = new ResizeObserver(entries => {
          const box = entries[entries.length - 1].contentRect;
          if (box.width && box.height) this.known = [box.width, box.height];
        });
        this.observer.observe(this.svg);
      }
    }
    return this.known;
  }

  zoomAt(factor, cx, cy) {
    const k = Math.min(8, Math.max(0.02, this.k * factor));
    this.tx = cx - (cx - this.tx) * (k / this.k);
    this.ty = cy - (cy - this.ty) * (k / this.k);
    this.k = k;
    this.apply();
  }

  zoom(factor) {
    const [w, h] = this.size();
    this.zoomAt(factor, w / 2, h / 2);
  }

  fit(width, height) {
    const [w, h] = this.size();
    this.k = Math.min(1.2, Math.max(0.02, Math.min(w / width, h / height) * 0.95));
    this.tx = (w - width * this.k) / 2;
    this.ty = Math.max(4, (h - height * this.k) / 2);
    this.apply();
  }

  centre(x, y) {
    const [w, h] = this.size();
    if (this.k < 0.6) this.k = 0.9;
    this.tx = w / 2 - x * this.k;
    this.ty = h / 2 - y * this.k;
    this.apply();
  }
};
