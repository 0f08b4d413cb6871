// Where the page's parts come from (viewer/data.py makes them): all of them in the page
// (export's index.html, the notebook), or fetched one at a time from `dyngraph view --web`.
"use strict";

const DG = globalThis.DG || (globalThis.DG = {});

// A packed part (viewer/packing.py) back as viewer/data.py made it; a part that is not
// packed (the notebook widget's) is returned as it is.
const bytesOf = text => {
  if (Uint8Array.fromBase64) return Uint8Array.fromBase64(text);
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
};

const LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

const floatsOf = packed => {
  const bytes = bytesOf(packed.$f32);
  const n = bytes.length / 4, out = new Array(n);
  let f;
  if (LITTLE) {
    f = new Float32Array(bytes.buffer, bytes.byteOffset, n);
  } else {
    const view = new DataView(bytes.buffer, bytes.byteOffset);
    f = new Float32Array(n);
    for (let i = 0; i < n; i++) f[i] = view.getFloat32(4 * i, true);
  }
  const none = packed.$none ? bytesOf(packed.$none) : null;
  for (let i = 0; i < n; i++) {
    const v = f[i];
    out[i] = none && none[i] ? null : (v - v === 0 ? v :
      (v !== v ? "NaN" : (v > 0 ? "Infinity" : "-Infinity")));
  }
  return out;
};

// A statistics column is decoded when first read: switching iterations reads the
// gradient norms (the colours); the others wait for a node's panel.
DG.unpackValues = function (V) {
  if (V._unpacked) return V;
  for (const name of Object.keys(V)) {
    const col = V[name];
    if (col && typeof col === "object" && !Array.isArray(col) && "$f32" in col) {
      let got = null;
      Object.defineProperty(V, name, {
        configurable: true, enumerable: true,
        get: () => (got === null ? (got = floatsOf(col)) : got),
      });
    }
  }
  if (Object.isExtensible(V)) Object.defineProperty(V, "_unpacked", {value: true});
  return V;
};

// The module tree's calls from columns (viewer/packing.py's _unpack_calls).
const callsOf = cols => {
  const paths = cols.pathTable, runs = cols.runTable, counts = new Map();
  for (const p of cols.path) counts.set(p, (counts.get(p) || 0) + 1);
  const calls = new Array(cols.path.length);
  for (let c = 0; c < calls.length; c++) {
    const path = paths[cols.path[c]], k = cols.k[c], parent = cols.parent[c];
    const key = path + "#" + k;
    calls[c] = {key, path, parent: parent >= 0 ? calls[parent].key : "", first: cols.first[c],
                size: cols.size[c], direct: cols.direct[c], children: [], run: runs[cols.run[c]],
                label: counts.get(cols.path[c]) > 1 ? path + " #" + k : path};
    if (parent >= 0) calls[parent].children.push(key);
  }
  return calls;
};

DG.unpackStructure = function (S) {
  if (!S.sigIdx) return S;
  const table = S.sigTable;
  S.sig = S.sigIdx.map(k => table[k]);
  delete S.sigIdx; delete S.sigTable;
  const tree = S.tree;
  if (tree.callCols) {
    tree.calls = callsOf(tree.callCols);
    delete tree.callCols;
  }
  if (tree.scopeIdx) {
    const calls = tree.calls;
    tree.scope_of = tree.scopeIdx.map(k => (k >= 0 ? calls[k].key : ""));
    delete tree.scopeIdx;
  }
  if (S.keyOcc) {  // module \t what \t file:line \t occurrence, as viewer/data.py's _key_text
    const t = S.tables, occ = S.keyOcc, out = new Array(occ.length);
    for (let i = 0; i < occ.length; i++) {
      const what = t.op[S.op[i]] || S.name[i] || t.kind[S.kind[i]];
      out[i] = t.module[S.module[i]] + "\t" + what + "\t" + t.file[S.file[i]] + ":" + S.line[i] +
        "\t" + occ[i];
    }
    S.key = out;
    delete S.keyOcc;
  }
  return S;
};

// A source from part getters (each returns a promise): the sparkline's history is read
// from every iteration's values, matching the node by its stable key.
DG.partsSource = function (meta, rawStructure, rawValues) {
  const histories = new Map();
  const structure = async s => DG.unpackStructure(await rawStructure(s));
  const values = async p => DG.unpackValues(await rawValues(p));
  return {
    meta, structure, values,
    history: async key => {
      if (histories.has(key)) return histories.get(key);
      const m = await meta();
      const out = await Promise.all(m.iterations.map(async (it, p) => {
        const S = DG.prepare(await structure(it.structure));
        const i = S.byKey().get(key);
        const g = (await values(p)).gnorm;
        return i === undefined || !g ? null : g[i];
      }));
      histories.set(key, out);
      return out;
    },
  };
};

// {meta, structures, values}: every part already here (the notebook widget's state).
DG.embeddedSource = function (data) {
  return DG.partsSource(async () => data.meta, async s => data.structures[s],
                        async p => data.values[p]);
};

// The parts in the page, one JSON block each (dg-meta, dg-s-N, dg-v-N), parsed when first
// asked for: a 50,000-node trace's page opens on its first iteration's parts alone.
DG.blockSource = function () {
  const parsed = new Map();
  const part = id => {
    if (!parsed.has(id)) {
      const el = document.getElementById(id);
      if (!el) throw new Error("the page has no part " + id);
      parsed.set(id, JSON.parse(el.textContent));
      el.textContent = ""; // the parsed copy is kept: no need for the text too
    }
    return parsed.get(id);
  };
  return DG.partsSource(async () => part("dg-meta"), async s => part("dg-s-" + s),
                        async p => part("dg-v-" + p));
};

// The parts from the --web server, asked with the page's own token.
DG.webSource = function (token) {
  const cache = new Map();
  const get = path => {
    if (!cache.has(path)) {
      const sep = path.includes("?") ? "&" : "?";
      cache.set(path, fetch(path + sep + "token=" + encodeURIComponent(token),
                            {credentials: "omit", cache: "no-store"}).then(r => {
        if (!r.ok) throw new Error("the server answered " + r.status);
        return r.json();
      }));
    }
    return cache.get(path);
  };
  const source = DG.partsSource(() => get("api/meta"), s => get("api/structure/" + s),
                                p => get("api/values/" + p));
  // The server reads the history from its own copy: no need to fetch every iteration.
  source.history = key => get("api/history?key=" + encodeURIComponent(key));
  return source;
};

// The standalone page: the parts are in the page's JSON blocks (export, the notebook's
// HTML) or fetched (web, the token from the page's own URL).
DG.boot = function () {
  const root = document.getElementById("dg-root");
  const config = JSON.parse(document.getElementById("dg-config").textContent);
  let source;
  if (config.transport === "web") {
    const token = new URLSearchParams(location.search).get("token") || "";
    source = DG.webSource(token);
  } else {
    source = DG.blockSource();
  }
  globalThis.dgApp = DG.mount(root, source, {hash: location.protocol !== "about:"});
  root.focus();
};
