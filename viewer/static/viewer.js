// The viewer: iterations on a slider, the graph folded by module, the inspector, search,
// the diff and the first NaN/Inf. One page for three doors: `source` is where the parts
// come from (embedded in the page, a widget's state, or the --web server), see sources.js.
"use strict";

const DG = globalThis.DG || (globalThis.DG = {});
const LAYOUTS_KEPT = 24;

DG.mount = function (root, source, options) {
  const app = new DG.App(root, source, options || {});
  app.ready = app.start();
  return app;
};

// A structure as the page uses it: tables indexed, inputs and keys at hand.
DG.prepare = function (S) {
  if (S._ready) return S;
  DG.indexTree(S.tree);
  const start = S.inStart, flat = S.inFlat;
  S.inputs = i => flat.slice(start[i], start[i + 1]);
  S.text = (col, i) => S.tables[col][S[col][i]];
  S.byKey = () => {
    if (!S._byKey) S._byKey = new Map(S.key.map((k, i) => [k, i]));
    return S._byKey;
  };
  S._ready = true;
  return S;
};

DG.App = class {
  constructor(root, source, options) {
    this.root = root;
    this.source = source;
    this.options = options;
    this.pos = -1;
    this.expanded = new Map(); // structure id -> Set of open keys (null: everything open)
    this.layouts = new Map();
    this.drawing = null;
    this.sel = null; // {key: node key} or {unit: unit key}
    this.diffWith = null; // iteration position the diff compares with, or null
    this.diffNote = false; // the diff pane says why d compares nothing here
    this.hits = new Set();
    this.ticket = 0;
    this.timings = {};
    this.buildDom();
  }

  buildDom() {
    const h = DG.h;
    const root = this.root;
    root.classList.add("dg-viewer");
    root.setAttribute("tabindex", "0");
    root.dataset.state = "loading";
    this.el = {};
    const e = this.el;
    e.prev = h("button", {type: "button", class: "dg-prev", title: "previous iteration ([)"}, "\u25c0");
    e.slider = h("input", {type: "range", class: "dg-slider", min: 0, max: 0, value: 0,
                           "aria-label": "iteration"});
    e.next = h("button", {type: "button", class: "dg-next", title: "next iteration (] or i)"}, "\u25b6");
    e.current = h("strong", {class: "dg-current"});
    e.badge = h("span", {class: "dg-badge", hidden: true}, "structure changed");
    e.info = h("span", {class: "dg-info"});
    e.nan = h("button", {type: "button", class: "dg-nan-btn", hidden: true,
                         title: "go to the first NaN/Inf of the run"});
    e.diff = h("button", {type: "button", class: "dg-diff-btn",
                          title: "compare with another iteration (d)"}, "diff");
    e.diffWith = h("select", {class: "dg-diff-with", "aria-label": "compare with", hidden: true});
    e.search = h("input", {type: "search", class: "dg-search",
                           placeholder: "find op, module, tensor id  (/)", "aria-label": "find"});
    e.ticks = h("div", {class: "dg-ticks", title: "orange: structure changed; red: NaN/Inf; dark grey: setup (iteration 0)"});
    const top = h("header", {class: "dg-top"},
      h("div", {class: "dg-row"}, e.prev, e.slider, e.next, e.current, e.badge, e.info),
      e.ticks,
      h("div", {class: "dg-row"}, e.nan, e.diff, e.diffWith, e.search));
    e.svg = DG.s("svg", {class: "dg-svg"});
    e.viewport = DG.s("g", {class: "dg-viewport"});
    e.svg.append(e.viewport);
    e.status = h("div", {class: "dg-status"});
    const tools = h("div", {class: "dg-tools"},
      h("button", {type: "button", title: "zoom in (+)", onclick: () => this.pz.zoom(1.25)}, "+"),
      h("button", {type: "button", title: "zoom out (-)", onclick: () => this.pz.zoom(0.8)}, "\u2212"),
      h("button", {type: "button", class: "dg-fit", title: "whole graph (W)",
                   onclick: () => this.fit()}, "fit"),
      h("button", {type: "button", class: "dg-fold-all", title: "back to the module-level picture",
                   onclick: () => this.resetFolding()}, "fold"),
      h("button", {type: "button", class: "dg-open-all", title: "every module open",
                   onclick: () => this.openAll()}, "open all"));
    e.graph = h("div", {class: "dg-graph"}, e.svg, tools, e.status);
    e.panel = h("aside", {class: "dg-panel"});
    e.details = h("section", {class: "dg-details"},
                  h("p", {class: "dg-hint"}, "Click a box to inspect it; double-click a module to open it."));
    e.diffBox = h("section", {class: "dg-diff", hidden: true});
    e.results = h("section", {class: "dg-results", hidden: true});
    e.files = h("section", {class: "dg-files", hidden: true});
    e.help = h("section", {class: "dg-help", hidden: true}, DG.helpText());
    e.panel.append(e.details, e.diffBox, e.results, e.files, e.help);
    root.textContent = "";
    root.append(top, h("div", {class: "dg-body"}, e.graph, e.panel));
    this.pz = new DG.PanZoom(e.svg, e.viewport);
    this.pz.onchange = () => this.updateTexts();
    e.tip = DG.s("title");
    e.svg.insertBefore(e.tip, e.svg.firstChild);
    this.wire();
  }

  wire() {
    const e = this.el;
    e.slider.addEventListener("input", () => this.show(Number(e.slider.value)));
    e.prev.addEventListener("click", () => this.step(-1));
    e.next.addEventListener("click", () => this.step(1));
    e.nan.addEventListener("click", () => this.goToFirstNaN());
    e.diff.addEventListener("click", () => this.toggleDiff());
    e.diffWith.addEventListener("change", () => this.setDiff(Number(e.diffWith.value)));
    e.search.addEventListener("input", () => this.find(e.search.value));
    e.search.addEventListener("keydown", ev => {
      if (ev.key === "Enter" && this.results && this.results.length) this.goToNode(this.results[0]);
      if (ev.key === "Escape") { e.search.blur(); this.root.focus(); }
      ev.stopPropagation();
    });
    e.svg.addEventListener("click", ev => this.onClick(ev));
    e.svg.addEventListener("dblclick", ev => this.onDoubleClick(ev));
    e.svg.addEventListener("pointerover", ev => {
      const u = this.unitAt(ev);
      if (u !== undefined && this.drawing) e.tip.textContent = this.drawing.boxes[u].lines.join("\n");
    });
    this.root.addEventListener("keydown", ev => this.onKey(ev));
  }

  async start() {
    try {
      this.meta = await this.source.meta();
    } catch (err) {
      this.fail(err);
      return;
    }
    const m = this.meta;
    const e = this.el;
    this.colour = DG.scale(m.gradRange);
    e.slider.max = Math.max(0, m.iterations.length - 1);
    m.iterations.forEach((it, p) => {
      const t = DG.h("span", {class: "dg-tick" + (it.changed ? " dg-changed" : "") +
                                     (it.setup ? " dg-setup" : "") + (it.nan ? " dg-nanit" : ""),
                              title: DG.iterationName(it) + (it.changed ? " (structure changed)" : "") +
                                     (it.nan ? " (NaN/Inf)" : "")});
      t.addEventListener("click", () => this.show(p));
      e.ticks.appendChild(t);
      e.diffWith.appendChild(DG.h("option", {value: p}, "vs " + DG.iterationName(it)));
    });
    if (m.firstNaN) {
      e.nan.hidden = false;
      e.nan.textContent = "\u26a0 first NaN/Inf: iteration " + m.firstNaN.index + ", " +
        m.firstNaN.label + (m.firstNaN.module ? " in " + m.firstNaN.module : "");
    }
    if (!m.iterations.length) {
      e.status.textContent = "This trace has no iteration with a graph.";
      this.root.dataset.state = "ready";
      return;
    }
    let first = 0;
    if (this.options.hash) {
      const want = /^#iter=(\d+)$/.exec(location.hash);
      if (want) first = Math.max(0, m.iterations.findIndex(it => it.index === Number(want[1])));
    }
    await this.show(first, {fit: true});
    this.timings.firstReady = performance.now(); // since the page began to load
  }

  fail(err) {
    this.root.dataset.state = "error";
    this.el.status.textContent = "Could not load the trace: " + (err && err.message ? err.message : err);
  }

  // -- iterations ------------------------------------------------------------------------
  step(d) {
    if (!this.meta) return;
    const p = Math.min(this.meta.iterations.length - 1, Math.max(0, this.pos + d));
    if (p !== this.pos) this.show(p);
  }

  async show(p, how) {
    how = how || {};
    const ticket = ++this.ticket;
    const t0 = performance.now();
    this.root.dataset.state = "loading";
    const it = this.meta.iterations[p];
    let S, V;
    try {
      [S, V] = await Promise.all([this.source.structure(it.structure), this.source.values(p)]);
    } catch (err) {
      this.fail(err);
      return;
    }
    if (ticket !== this.ticket) return; // a later request won
    const sameStructure = this.pos >= 0 && this.meta.iterations[this.pos].structure === it.structure;
    this.pos = p;
    this.S = DG.prepare(S);
    this.V = V;
    this.sid = it.structure;
    if (!this.expanded.has(it.structure)) this.expanded.set(it.structure, new Set(S.open));
    if (this.diffWith !== null) await this.loadDiff();
    else if (this.diffNote) {  // (it was about the iteration left)
      this.diffNote = false;
      DG.showDiff(this);
    }
    if (ticket !== this.ticket) return;
    this.render({fit: how.fit || !sameStructure, keepView: sameStructure && !how.fit});
    this.updateHeader();
    if (how.node !== undefined) this.selectNode(how.node, true);
    this.timings.show = performance.now() - t0;
    this.root.dataset.state = "ready";
    this.root.dataset.iteration = String(it.index);
    this.prefetched = this.prefetch(p);
  }

  // While the user looks, ready the neighbours ([ and ], the slider's next step): their
  // parts parsed or fetched, and the picture of a neighbour of another structure folded
  // and laid out, so that moving there only repaints.
  prefetch(p) {
    const idle = () => new Promise(r => setTimeout(r, 30));
    const near = [p + 1, p - 1].filter(q => q >= 0 && q < this.meta.iterations.length);
    return (async () => {
      for (const q of near) {
        await idle();
        if (this.pos !== p) return;
        const it = this.meta.iterations[q];
        const [S] = await Promise.all([this.source.structure(it.structure), this.source.values(q)]);
        if (this.pos !== p || this.layouts.size >= LAYOUTS_KEPT) continue;
        if (!this.expanded.has(it.structure)) this.expanded.set(it.structure, new Set(S.open));
        await idle();
        if (this.pos !== p) return;
        this.pictureOf(it.structure, DG.prepare(S));
      }
    })();
  }

  updateHeader() {
    const e = this.el, m = this.meta, it = m.iterations[this.pos];
    e.slider.value = this.pos;
    e.current.textContent = DG.iterationName(it) + " (" + (this.pos + 1) + " of " +
      m.iterations.length + ")";
    e.badge.hidden = !it.changed;
    Array.from(e.ticks.children).forEach((t, k) => t.classList.toggle("dg-current", k === this.pos));
    if (this.options.hash) {
      try {
        history.replaceState(null, "", "#iter=" + it.index);
      } catch (err) {
        this.options.hash = false; // a sandboxed frame has no history of its own to write
      }
    }
    DG.showFiles(this, it);
  }

  // -- folding and drawing ---------------------------------------------------------------
  openSet() {
    return this.expanded.get(this.sid);
  }

  picture() {
    return this.pictureOf(this.sid, this.S);
  }

  pictureOf(sid, S) {
    const open = this.expanded.get(sid);
    const key = sid + "|" + (open === null ? "*" : Array.from(open).sort().join("\u0001"));
    let got = this.layouts.get(key);
    if (got) {
      this.layouts.delete(key);
      this.layouts.set(key, got); // most recently used last
      return got;
    }
    const t0 = performance.now();
    const fold = open === null
      ? DG.fold(S.tree, allKeys(S.tree), null, S.inputs)
      : DG.fold(S.tree, open, S.book, S.inputs);
    const boxes = fold.units.map(u => DG.Drawing.boxFor(S, u));
    const chains = fold.units.map(u => (u.parent ? DG.chain(S.tree, u.parent) : []));
    const lay = DG.layout(boxes, fold.edges, chains);
    got = {key, fold, boxes, lay, ms: performance.now() - t0};
    this.layouts.set(key, got);
    if (this.layouts.size > LAYOUTS_KEPT) this.layouts.delete(this.layouts.keys().next().value);
    return got;
  }

  render(how) {
    how = how || {};
    const pic = this.picture();
    this.pz.size(); // measured before the picture's elements are added, not after
    if (!this.drawing || this.drawing.key !== pic.key) {
      const t0 = performance.now();
      this.drawing = new DG.Drawing(this.el, pic.fold, pic.lay, pic.boxes);
      this.drawing.key = pic.key;
      this.drawing.build(this.S, this.S.tree);
      this.timings.draw = performance.now() - t0;
      if (!how.keepView) this.fit();
    }
    this.timings.layout = pic.ms;
    this.paint();
    const n = this.S.n, shown = pic.fold.units.length;
    this.el.info.textContent = n.toLocaleString("en") + " nodes" +
      (shown < n ? ", " + shown.toLocaleString("en") + " boxes (folded by module)" : "");
    this.el.status.textContent = shown < n
      ? "Folded by module: double-click a module box (or select it and press z) to open it."
      : "";
    DG.showDetails(this);
  }

  paint() {
    const marks = new Map();
    const mark = (u, cls) => {
      if (u === undefined) return;
      if (!marks.has(u)) marks.set(u, []);
      marks.get(u).push(cls);
    };
    const fold = this.drawing.fold;
    const fnan = this.meta.firstNaN;
    if (fnan && fnan.iteration === this.pos) mark(fold.unitOf[fnan.node], "dg-first");
    for (const i of this.hits) mark(fold.unitOf[i], "dg-hit");
    if (this.diff) {
      for (const i of this.diff.added) mark(fold.unitOf[i], "dg-added");
      for (const [, i] of this.diff.changed) mark(fold.unitOf[i], "dg-changed");
    }
    const u = this.selectedUnit();
    if (u !== undefined) mark(u, "dg-sel");
    this.drawing.paint(this.V, this.colour, marks);
  }

  selectedUnit() {
    if (!this.sel || !this.drawing) return undefined;
    const fold = this.drawing.fold;
    if (this.sel.key !== undefined) {
      const i = this.S.byKey().get(this.sel.key);
      return i === undefined ? undefined : fold.unitOf[i];
    }
    const u = fold.units.findIndex(unit => unit.key === this.sel.unit);
    return u < 0 ? undefined : u;
  }

  selectedNode() {
    if (!this.sel || this.sel.key === undefined) return undefined;
    return this.S.byKey().get(this.sel.key);
  }

  fit() {
    if (this.drawing) this.pz.fit(this.drawing.lay.width, this.drawing.lay.height);
  }

  // Texts of a big picture: hidden when too small to read, else made for what is in view.
  updateTexts() {
    const d = this.drawing;
    if (!d || d.fold.units.length <= DG.ALL_TEXT) return;
    const far = this.pz.k < DG.TEXT_ZOOM;
    this.el.svg.classList.toggle("dg-far", far);
    if (!far) d.showTexts(this.pz.visible());
  }

  centreOn(u) {
    if (u === undefined || !this.drawing) return;
    this.pz.centre(this.drawing.lay.x[u], this.drawing.lay.y[u]);
  }

  expand(key) {
    const open = this.openSet();
    if (open === null) return;
    for (const k of (key.startsWith(DG.INDEX_PREFIX) ? [key] : DG.openWith(this.S.tree, key))) {
      open.add(k);
    }
    this.render({keepView: true});
    const u = this.drawing.fold.units.findIndex(unit => unit.parent === key);
    const first = this.drawing.fold.unitOf[this.S.tree._calls.has(key)
      ? this.S.tree._calls.get(key).first : (this.S.tree._runs.get(key) || {first: 0}).first];
    this.centreOn(u >= 0 ? first : undefined);
  }

  collapse(key) {
    let open = this.openSet();
    if (open === null) {
      open = new Set([...this.S.tree.calls.map(c => c.key), ...this.S.tree.runs.map(r => r.key)]);
      this.expanded.set(this.sid, open);
    }
    for (const k of DG.closeWith(this.S.tree, key)) open.delete(k);
    this.sel = {unit: key};
    this.render({keepView: true});
    this.centreOn(this.selectedUnit());
  }

  resetFolding() {
    this.expanded.set(this.sid, new Set(this.S.open));
    this.render();
  }

  openAll() {
    this.expanded.set(this.sid, null);
    this.render();
  }

  // Show node i: open the modules around it, select it, centre it.
  reveal(i) {
    const open = this.openSet();
    const scope = this.S.tree.scope_of[i];
    if (open !== null && scope) for (const k of DG.openWith(this.S.tree, scope)) open.add(k);
    this.sel = {key: this.S.key[i]};
    this.render({keepView: true});
    this.centreOn(this.drawing.fold.unitOf[i]);
  }

  selectNode(i, centre) {
    if (centre) this.reveal(i);
    else {
      this.sel = {key: this.S.key[i]};
      this.paint();
      DG.showDetails(this);
    }
  }

  goToNode(i) {
    this.reveal(i);
  }

  async goToFirstNaN() {
    const f = this.meta.firstNaN;
    if (!f) return;
    if (this.pos !== f.iteration) await this.show(f.iteration, {node: f.node});
    else this.reveal(f.node);
  }

  // -- mouse and keys --------------------------------------------------------------------
  unitAt(ev) {
    const g = ev.target.closest ? ev.target.closest(".dg-unit") : null;
    return g ? Number(g.getAttribute("data-u")) : undefined;
  }

  onClick(ev) {
    if (this.pz.dragged) return;
    const label = ev.target.closest ? ev.target.closest(".dg-frame") : null;
    if (label && ev.target.classList.contains("dg-frame-label")) {
      this.collapse(label.getAttribute("data-key"));
      return;
    }
    const u = this.unitAt(ev);
    if (u === undefined) return;
    const unit = this.drawing.fold.units[u];
    this.sel = unit.kind === "node" ? {key: this.S.key[unit.first]} : {unit: unit.key};
    this.paint();
    DG.showDetails(this);
  }

  onDoubleClick(ev) {
    const u = this.unitAt(ev);
    if (u === undefined) return;
    const unit = this.drawing.fold.units[u];
    if (unit.kind !== "node") this.expand(unit.key);
  }

  toggleFold() {
    const u = this.selectedUnit();
    if (u === undefined) return;
    const unit = this.drawing.fold.units[u];
    if (unit.kind !== "node") this.expand(unit.key);
    else if (unit.parent) this.collapse(unit.parent);
  }

  stepNode(d) {
    const n = this.S.n;
    const i = this.selectedNode();
    let next = i === undefined ? (d > 0 ? 0 : n - 1) : i + d;
    next = Math.min(n - 1, Math.max(0, next));
    this.reveal(next);
  }

  onKey(ev) {
    if (ev.target === this.el.search || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.target.tagName === "SELECT" || ev.target.tagName === "INPUT" && ev.target.type !== "range") return;
    const act = {
      n: () => this.stepNode(1), ArrowRight: () => this.stepNode(1),
      ArrowLeft: () => this.stepNode(-1),
      i: () => this.step(1), "]": () => this.step(1), "[": () => this.step(-1),
      "/": () => this.el.search.focus(), d: () => this.toggleDiff(),
      z: () => this.toggleFold(), W: () => this.fit(), ".": () => this.centreOn(this.selectedUnit()),
      "+": () => this.pz.zoom(1.25), "=": () => this.pz.zoom(1.25), "-": () => this.pz.zoom(0.8),
      x: () => this.goToFirstNaN(), "?": () => { this.el.help.hidden = !this.el.help.hidden; },
      Escape: () => { this.sel = null; this.paint(); DG.showDetails(this); },
    }[ev.key];
    if (!act) return;
    ev.preventDefault();
    act();
  }

  // -- search and diff -------------------------------------------------------------------
  find(query) {
    this.results = DG.search(this.S, this.V, query);
    this.hits = new Set(this.results.slice(0, 500));
    this.paint();
    DG.showResults(this, query);
  }

  toggleDiff() {
    if (this.diffWith !== null || this.diffNote) return this.setDiff(null);
    const why = this.noBaseline(this.pos);
    if (why) {
      this.diffNote = true;
      DG.showNoDiff(this, why);
      return undefined;
    }
    return this.setDiff(this.pos - 1);
  }

  // Why iteration position p has nothing to be compared with ("" when it has the one
  // before it). Setup (iteration 0) is nobody's baseline, as in the terminal's d.
  noBaseline(p) {
    const its = this.meta.iterations;
    if (its[p].setup) return "setup (the work before the first differentiable op): nothing to compare";
    if (p === 0) return "the first iteration shown: nothing to compare it with";
    if (its[p - 1].setup) {
      return "the first iteration: setup before it (iteration 0) is no baseline, nothing to compare it with";
    }
    return "";
  }

  async setDiff(p) {
    this.diffNote = false;
    this.diffWith = p;
    this.el.diffWith.hidden = p === null;
    this.el.diff.classList.toggle("dg-on", p !== null);
    if (p !== null) {
      this.el.diffWith.value = String(p);
      await this.loadDiff();
    } else this.diff = null;
    this.paint();
    DG.showDiff(this);
  }

  async loadDiff() {
    const other = this.meta.iterations[this.diffWith];
    const A = DG.prepare(await this.source.structure(other.structure));
    this.diff = DG.diff(A, this.S);
    this.diffOther = A;
    DG.showDiff(this);
  }
};

function allKeys(tree) {
  return [...tree.calls.map(c => c.key), ...tree.runs.map(r => r.key)];
}

// What changed from structure A to structure B, nodes matched by their stable keys (as
// Graph.diff matches them) and compared by their structural signatures.
DG.diff = function (A, B) {
  const inA = A.byKey(), inB = B.byKey();
  const added = [], removed = [], changed = [];
  B.key.forEach((k, i) => {
    const j = inA.get(k);
    if (j === undefined) added.push(i);
    else if (A.sig[j] !== B.sig[i]) {
      changed.push([j, i, A.text("shape", j) !== B.text("shape", i) ? "reshaped" : "rewired"]);
    }
  });
  A.key.forEach((k, j) => { if (!inB.has(k)) removed.push(j); });
  return {added, removed, changed};
};
