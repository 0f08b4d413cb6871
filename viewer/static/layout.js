// A layered layout in the page: the scheme of exporters/layered.py (dyngraph's own
// Sugiyama cut down to near-linear time), written for the browser so that opening a
// module lays out only the boxes shown, with no round trip.
//   1. ranks by longest path, a node with as many edges out as in sunk to just above its
//      nearest consumer (a weight beside its matmul);
//   2. a virtual point per rank an edge crosses (at most MAX_VIRTUAL per node);
//   3. barycentre sweeps, each open module's members kept together;
//   4. x pulled towards the neighbours, then spread just enough;
//   5. edges as polylines through their virtual points.
// y grows downwards (the first rank at the top), as the SVG draws it.
"use strict";

const DG = globalThis.DG || (globalThis.DG = {});
DG.SPACING = {nodesep: 14, ranksep: 26, pad: 8, label: 16};
const SWEEPS = 4;
const MAX_VIRTUAL = 8;

// boxes: [{w, h}], pairs: [[tail, head]] (indexes), chains: per box, its open modules
// outermost first. -> {x, y, edges: [[points]], clusters: Map(key -> [x0, y0, x1, y1]),
// width, height}; x/y are box centres.
DG.layout = function (boxes, pairs, chains) {
  const sp = DG.SPACING;
  const n = boxes.length;
  pairs = pairs.filter(([t, h]) => t !== h);
  chains = internChains(chains);
  const rank = ranks(n, pairs);
  const [layers, paths, itemRank, itemChain] = ordering(n, pairs, rank, chains);
  const xs = xPositions(layers, paths, boxes, itemChain, sp);
  return assemble(boxes, pairs, rank, xs, paths, itemRank, chains, sp);
};

function topo(n, pairs) {
  const succ = Array.from({length: n}, () => []);
  const indeg = new Int32Array(n);
  pairs.forEach(([t, h], k) => { succ[t].push(k); indeg[h]++; });
  const order = [], back = new Set();
  const ready = [];
  for (let i = n - 1; i >= 0; i--) if (indeg[i] === 0) ready.push(i);
  const done = new Uint8Array(n);
  let next = 0;
  while (order.length < n) {
    if (!ready.length) { // a cycle (only a hand-made graph has one): cut at the oldest node
      while (done[next]) next++;
      ready.push(next);
      pairs.forEach(([t, h], k) => { if (h === next && !done[t]) back.add(k); });
    }
    const i = ready.pop();
    if (done[i]) continue;
    done[i] = 1;
    order.push(i);
    const fresh = [];
    for (const k of succ[i]) {
      const h = pairs[k][1];
      if (--indeg[h] === 0 && !done[h]) fresh.push(h);
    }
    fresh.sort((a, b) => b - a);
    ready.push(...fresh);
  }
  return [order, back];
}

function ranks(n, pairs) {
  const [order, back] = topo(n, pairs);
  const preds = Array.from({length: n}, () => []);
  const succs = Array.from({length: n}, () => []);
  pairs.forEach(([t, h], k) => {
    if (!back.has(k)) { preds[h].push(t); succs[t].push(h); }
  });
  const rank = new Array(n).fill(0);
  for (const i of order) {
    for (const p of preds[i]) rank[i] = Math.max(rank[i], rank[p] + 1);
  }
  for (let k = order.length - 1; k >= 0; k--) {
    const i = order[k];
    if (succs[i].length && succs[i].length >= preds[i].length) {
      let m = Infinity;
      for (const s of succs[i]) m = Math.min(m, rank[s]);
      rank[i] = Math.max(m - 1, rank[i]);
    }
  }
  return rank;
}

// Each chain as the ids of its prefixes (depth 1, 2, ...), equal chains one array: two
// chains share a prefix exactly when their ids at that depth agree. `.keys` keeps the
// module keys for the frames.
function internChains(chains) {
  const ids = new Map();
  const byText = new Map();
  return chains.map(chain => {
    const text = chain.join("\u0001");
    let got = byText.get(text);
    if (got) return got;
    got = [];
    let prefix = "";
    for (const key of chain) {
      prefix += "\u0001" + key;
      let id = ids.get(prefix);
      if (id === undefined) ids.set(prefix, (id = ids.size));
      got.push(id);
    }
    got.keys = chain;
    byText.set(text, got);
    return got;
  });
}

function commonLength(a, b) {
  if (a === b) return a.length;
  let k = 0;
  while (k < a.length && k < b.length && a[k] === b[k]) k++;
  return k;
}

function common(a, b) {
  const k = commonLength(a, b);
  if (k === a.length) return a;
  const out = a.slice(0, k);
  out.keys = a.keys.slice(0, k);
  return out;
}

function ordering(n, pairs, rank, chains) {
  let budget = MAX_VIRTUAL * Math.max(n, 1);
  const spans = pairs.map((_, k) => k);
  const span = k => Math.abs(rank[pairs[k][1]] - rank[pairs[k][0]]);
  spans.sort((a, b) => span(a) - span(b));
  const itemRank = rank.slice();
  const itemChain = chains.slice();
  const paths = new Array(pairs.length);
  for (const k of spans) {
    const [t, h] = pairs[k];
    const a = rank[t], b = rank[h];
    const step = b > a ? 1 : -1;
    const inner = Math.abs(b - a) - 1;
    const path = [t];
    if (inner > 0 && inner <= budget) {
      budget -= inner;
      const c = common(chains[t], chains[h]);
      for (let r = a + step; r !== b; r += step) {
        path.push(itemRank.length);
        itemRank.push(r);
        itemChain.push(c);
      }
    }
    path.push(h);
    paths[k] = path;
  }
  let nranks = 0;
  for (const r of itemRank) nranks = Math.max(nranks, r + 1);
  const layers = Array.from({length: nranks}, () => []);
  itemRank.forEach((r, i) => layers[r].push(i));
  const m = itemRank.length;
  const up = Array.from({length: m}, () => []);
  const down = Array.from({length: m}, () => []);
  for (const path of paths) {
    for (let q = 0; q + 1 < path.length; q++) {
      const a = path[q], b = path[q + 1];
      if (itemRank[b] === itemRank[a] + 1) { up[b].push(a); down[a].push(b); }
      else if (itemRank[a] === itemRank[b] + 1) { up[a].push(b); down[b].push(a); }
    }
  }
  const pos = new Float64Array(m);
  for (const layer of layers) layer.forEach((i, x) => { pos[i] = x; });
  for (let sweep = 0; sweep < SWEEPS; sweep++) {
    const downward = sweep % 2 === 0;
    const near = downward ? up : down;
    const seq = [];
    if (downward) for (let r = 1; r < nranks; r++) seq.push(r);
    else for (let r = nranks - 2; r >= 0; r--) seq.push(r);
    for (const r of seq) {
      const layer = layers[r];
      const bary = new Map();
      for (const i of layer) {
        const nb = near[i];
        let s = 0;
        for (const j of nb) s += pos[j];
        bary.set(i, nb.length ? s / nb.length : pos[i]);
      }
      sortGrouped(layer, bary, itemChain);
      layer.forEach((i, x) => { pos[i] = x; });
    }
  }
  return [layers, paths, itemRank, itemChain];
}

// Sort a rank keeping each module's members together: a module sorts by its members'
// mean barycentre, a box inside it by its own.
function sortGrouped(layer, bary, chains) {
  const totals = new Map();
  for (const i of layer) {
    for (const id of chains[i]) {
      const acc = totals.get(id);
      if (acc) { acc[0] += bary.get(i); acc[1] += 1; } else totals.set(id, [bary.get(i), 1]);
    }
  }
  const keys = new Map();
  for (const i of layer) {
    const chain = chains[i];
    const parts = [];
    for (let d = 0; d < chain.length; d++) {
      const acc = totals.get(chain[d]);
      parts.push(acc[0] / acc[1], chain[d]);
    }
    parts.push(bary.get(i), -1);
    keys.set(i, parts);
  }
  layer.sort((a, b) => {
    const ka = keys.get(a), kb = keys.get(b);
    const len = Math.min(ka.length, kb.length);
    for (let q = 0; q < len; q++) {
      if (ka[q] !== kb[q]) return ka[q] < kb[q] ? -1 : 1;
    }
    return ka.length - kb.length;
  });
}

function xPositions(layers, paths, boxes, chain, sp) {
  let count = 0;
  for (const layer of layers) count += layer.length;
  const width = new Float64Array(count);
  boxes.forEach((b, i) => { width[i] = b.w; });
  const nb = Array.from({length: count}, () => []);
  for (const path of paths) {
    for (let q = 0; q + 1 < path.length; q++) {
      nb[path[q]].push(path[q + 1]);
      nb[path[q + 1]].push(path[q]);
    }
  }
  const gap = (a, b) => {
    const ca = chain[a], cb = chain[b];
    const shared = commonLength(ca, cb);
    const frames = (ca.length - shared) + (cb.length - shared);
    return (width[a] + width[b]) / 2 + sp.nodesep + frames * sp.pad;
  };
  const x = new Float64Array(count);
  for (const layer of layers) {
    let at = 0;
    layer.forEach((i, k) => {
      if (k) at += gap(layer[k - 1], i);
      x[i] = at;
    });
  }
  for (let sweep = 0; sweep < 4; sweep++) {
    const seq = sweep % 2 === 0 ? layers : layers.slice().reverse();
    for (const layer of seq) {
      const want = layer.map(i => {
        if (!nb[i].length) return x[i];
        let s = 0;
        for (const j of nb[i]) s += x[j];
        return s / nb[i].length;
      });
      place(layer, want, x, gap);
    }
  }
  // Moving a stranger out of one frame can move a frame over another: a few passes.
  for (let pass = 0; pass < 3 && keepClear(layers, x, width, chain, gap, sp); pass++);
  return x;
}

// Move boxes out of the frames of top-level modules they are not in: a frame is drawn
// around its members on every rank it spans, so a stranger inside would look like one.
function keepClear(layers, x, width, chain, gap, sp) {
  const spans = new Map();
  layers.forEach((layer, r) => {
    for (const i of layer) {
      if (!chain[i].length) continue;
      const pad = sp.pad * chain[i].length;
      const c = chain[i][0];
      const s = spans.get(c) || [Infinity, -Infinity, r, r];
      s[0] = Math.min(s[0], x[i] - width[i] / 2 - pad);
      s[1] = Math.max(s[1], x[i] + width[i] / 2 + pad);
      s[3] = r;
      spans.set(c, s);
    }
  });
  const crossing = new Map();
  for (const [c, s] of spans) {
    for (let r = s[2]; r <= s[3]; r++) {
      if (!crossing.has(r)) crossing.set(r, []);
      crossing.get(r).push(c);
    }
  }
  let any = false;
  for (const [r, clusters] of crossing) {
    const layer = layers[r];
    let moved = false;
    for (const c of clusters) {
      const [left, right] = spans.get(c);
      const members = [];
      layer.forEach((i, k) => { if (chain[i][0] === c) members.push(k); });
      layer.forEach((i, k) => {
        if (chain[i][0] === c || x[i] + width[i] / 2 <= left || x[i] - width[i] / 2 >= right) {
          return;
        }
        const before = members.length ? members[0] > k : x[i] < (left + right) / 2;
        x[i] = before ? left - sp.nodesep - width[i] / 2 : right + sp.nodesep + width[i] / 2;
        moved = true;
      });
    }
    if (moved) {
      any = true;
      layer.sort((a, b) => x[a] - x[b]);
      place(layer, layer.map(i => x[i]), x, gap);
    }
  }
  return any;
}

// Positions as close to `want` as the order and gaps allow: the mean of a left-to-right
// and a right-to-left packing.
function place(layer, want, x, gap) {
  const m = layer.length;
  if (!m) return;
  const left = new Float64Array(m), right = new Float64Array(m);
  for (let k = 0; k < m; k++) {
    left[k] = k === 0 ? want[k] : Math.max(want[k], left[k - 1] + gap(layer[k - 1], layer[k]));
  }
  for (let k = m - 1; k >= 0; k--) {
    right[k] = k === m - 1 ? want[k]
      : Math.min(want[k], right[k + 1] - gap(layer[k], layer[k + 1]));
  }
  for (let k = 0; k < m; k++) x[layer[k]] = (left[k] + right[k]) / 2;
  for (let k = 1; k < m; k++) {
    const need = x[layer[k - 1]] + gap(layer[k - 1], layer[k]);
    if (x[layer[k]] < need) x[layer[k]] = need;
  }
}

function assemble(boxes, pairs, rank, x, paths, itemRank, chains, sp) {
  const n = boxes.length;
  let nranks = 0;
  for (let i = 0; i < n; i++) nranks = Math.max(nranks, rank[i] + 1);
  const tall = new Float64Array(nranks);
  for (let i = 0; i < n; i++) tall[rank[i]] = Math.max(tall[rank[i]], boxes[i].h);
  // A rank where a module's frame starts needs room above for the frame's label.
  const extra = new Float64Array(nranks);
  const first = new Map();
  for (let i = 0; i < n; i++) {
    for (let d = 0; d < chains[i].length; d++) {
      const id = chains[i][d];
      const f = first.get(id);
      if (f === undefined || rank[i] < f[0]) first.set(id, [rank[i], d + 1]);
    }
  }
  for (const [r, depth] of first.values()) {
    extra[r] = Math.max(extra[r], depth * (sp.pad + sp.label));
  }
  let depthMax = 0;
  for (const c of chains) depthMax = Math.max(depthMax, c.length);
  const margin = sp.pad * (1 + depthMax) + 4;
  const ys = new Float64Array(nranks);
  let y = margin;
  for (let r = 0; r < nranks; r++) {
    y += extra[r];
    ys[r] = y + tall[r] / 2;
    y += tall[r] + sp.ranksep;
  }
  let lo = Infinity;
  for (let i = 0; i < n; i++) lo = Math.min(lo, x[i] - boxes[i].w / 2);
  if (!isFinite(lo)) lo = 0;
  const shift = margin - lo;
  const X = new Float64Array(n), Y = new Float64Array(n);
  for (let i = 0; i < n; i++) { X[i] = x[i] + shift; Y[i] = ys[rank[i]]; }
  const edges = pairs.map(([t, h], k) => {
    const down = Y[t] <= Y[h];
    const pts = [[X[t], Y[t] + (down ? 1 : -1) * boxes[t].h / 2]];
    const path = paths[k];
    for (let q = 1; q + 1 < path.length; q++) pts.push([x[path[q]] + shift, ys[itemRank[path[q]]]]);
    pts.push([X[h], Y[h] - (down ? 1 : -1) * boxes[h].h / 2]);
    return pts;
  });
  const clusters = clusterBoxes(boxes, X, Y, chains, sp);
  let right = 0, bottom = 0;
  for (let i = 0; i < n; i++) {
    right = Math.max(right, X[i] + boxes[i].w / 2);
    bottom = Math.max(bottom, Y[i] + boxes[i].h / 2);
  }
  for (const b of clusters.values()) { right = Math.max(right, b[2]); bottom = Math.max(bottom, b[3]); }
  return {x: X, y: Y, edges, clusters, width: right + margin, height: bottom + margin};
}

// Each open module's frame: around its members and its nested modules' frames, with room
// above for its label.
function clusterBoxes(boxes, X, Y, chains, sp) {
  const frames = new Map(); // prefix id -> [x0, y0, x1, y1, depth, key, parent id]
  for (let i = 0; i < boxes.length; i++) {
    const chain = chains[i];
    for (let d = 0; d < chain.length; d++) {
      const pad = sp.pad * (chain.length - d);
      let f = frames.get(chain[d]);
      if (!f) {
        f = [Infinity, Infinity, -Infinity, -Infinity, d + 1, chain.keys[d], d ? chain[d - 1] : -1];
        frames.set(chain[d], f);
      }
      f[0] = Math.min(f[0], X[i] - boxes[i].w / 2 - pad);
      f[1] = Math.min(f[1], Y[i] - boxes[i].h / 2 - pad - sp.label);
      f[2] = Math.max(f[2], X[i] + boxes[i].w / 2 + pad);
      f[3] = Math.max(f[3], Y[i] + boxes[i].h / 2 + pad);
    }
  }
  const ids = Array.from(frames.keys()).sort((a, b) => frames.get(b)[4] - frames.get(a)[4]);
  for (const id of ids) {
    const child = frames.get(id);
    if (child[6] < 0) continue;
    const parent = frames.get(child[6]);
    parent[0] = Math.min(parent[0], child[0] - sp.pad);
    parent[1] = Math.min(parent[1], child[1] - sp.label);
    parent[2] = Math.max(parent[2], child[2] + sp.pad);
    parent[3] = Math.max(parent[3], child[3] + sp.pad);
  }
  const out = new Map();
  for (const f of frames.values()) out.set(f[5], [f[0], f[1], f[2], f[3], f[4]]);
  return out;
}
