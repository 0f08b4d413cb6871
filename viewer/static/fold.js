// Module folding in the page: dyngraph.capture.folding.fold, step for step, over the
// module tree that Python built (ModuleTree.to_dict()). The tree, the runs and the first
// open set come from Python; only "which box does each node go to under this open set"
// is worked out here, so that opening a module needs no round trip. A test runs both on
// the same graphs and open sets and compares the boxes, their order and the edges.
"use strict";

const DG = globalThis.DG || (globalThis.DG = {});

DG.RUN_PREFIX = "run:";
DG.INDEX_PREFIX = "index:";
DG.INDEX_GROUP = 4;

// The tree's lists as maps, once per structure.
DG.indexTree = function (tree) {
  if (tree._calls) return tree;
  tree._calls = new Map();
  for (const c of tree.calls) tree._calls.set(c.key, c);
  tree._runs = new Map();
  for (const r of tree.runs) tree._runs.set(r.key, r);
  return tree;
};

// The call keys from the outermost down to `key` ([] for the top level).
DG.chain = function (tree, key) {
  const out = [];
  while (key) {
    out.push(key);
    key = tree._calls.get(key).parent;
  }
  return out.reverse();
};

// fold(tree, expanded, bookkeeping, inputs) -> {units, unitOf, edges, births}
// units[k] = {kind, key, label, parent, first, size}; inputs(i) gives node i's inputs.
DG.fold = function (tree, expanded, book, inputs) {
  DG.indexTree(tree);
  const opened = new Set(expanded);
  const calls = tree._calls, runs = tree._runs;
  const paths = new Set();
  for (const p of opened) {
    if (!p.includes("#") && !p.startsWith(DG.RUN_PREFIX) && !p.startsWith(DG.INDEX_PREFIX)) {
      paths.add(p);
    }
  }
  const isOpen = key => opened.has(key) || (paths.size > 0 && paths.has(calls.get(key).path));
  const target = new Map(); // call -> [unit key or "", frame key]
  const resolve = key => {
    const got = target.get(key);
    if (got !== undefined) return got;
    const call = calls.get(key);
    const [upUnit, upFrame] = call.parent ? resolve(call.parent) : ["", ""];
    let res;
    if (upUnit) res = [upUnit, upFrame];
    else if (call.run && !opened.has(call.run)) res = [call.run, call.parent];
    else if (!isOpen(key)) res = [key, call.parent];
    else res = ["", key];
    target.set(key, res);
    return res;
  };
  let units = [];
  const index = new Map();
  let unitOf = [];
  const pending = [];
  const scopeOf = tree.scope_of;
  for (let i = 0; i < scopeOf.length; i++) {
    const scope = scopeOf[i];
    const [unitKey, frame] = scope ? resolve(scope) : ["", ""];
    if (unitKey) {
      let u = index.get(unitKey);
      if (u === undefined) {
        u = units.length;
        index.set(unitKey, u);
        if (unitKey.startsWith(DG.RUN_PREFIX)) {
          const run = runs.get(unitKey);
          units.push({kind: "run", key: unitKey, label: run.label, parent: run.parent,
                      first: i, size: run.size});
        } else {
          const call = calls.get(unitKey);
          units.push({kind: "call", key: unitKey, label: call.label, parent: call.parent,
                      first: i, size: call.size});
        }
      }
      unitOf.push(u);
      continue;
    }
    if (book && book[i]) pending.push(i);
    unitOf.push(units.length);
    units.push({kind: "node", key: "", label: "", parent: frame, first: i, size: 1});
  }
  if (pending.length) [units, unitOf] = groupIndexNodes(units, unitOf, pending, opened, inputs);
  const [edges, births] = unitEdges(scopeOf.length, unitOf, inputs);
  return {units, unitOf, edges, births, expanded: opened};
};

function groupIndexNodes(units, unitOf, pending, opened, inputs) {
  const flagged = new Set(pending);
  const parent = new Map(pending.map(i => [i, i]));
  const find = i => {
    while (parent.get(i) !== i) {
      parent.set(i, parent.get(parent.get(i)));
      i = parent.get(i);
    }
    return i;
  };
  for (const i of pending) {
    for (const j of inputs(i)) {
      if (flagged.has(j) && units[unitOf[j]].parent === units[unitOf[i]].parent) {
        const a = find(i), b = find(j);
        if (a !== b) parent.set(Math.max(a, b), Math.min(a, b));
      }
    }
  }
  const groups = new Map();
  for (const i of pending) {
    const r = find(i);
    if (!groups.has(r)) groups.set(r, []);
    groups.get(r).push(i);
  }
  const merged = new Map();
  for (const [root, members] of groups) {
    const key = DG.INDEX_PREFIX + root;
    if (members.length < DG.INDEX_GROUP || opened.has(key)) continue;
    const first = units[unitOf[root]];
    units[unitOf[root]] = {kind: "index", key, label: "index ops \u00d7" + members.length,
                           parent: first.parent, first: root, size: members.length};
    for (const i of members) merged.set(unitOf[i], unitOf[root]);
  }
  if (!merged.size) return [units, unitOf];
  const to = u => (merged.has(u) ? merged.get(u) : u);
  const renumber = new Map();
  const kept = [];
  units.forEach((unit, u) => {
    if (to(u) === u) {
      renumber.set(u, kept.length);
      kept.push(unit);
    }
  });
  return [kept, unitOf.map(u => renumber.get(to(u)))];
}

function unitEdges(n, unitOf, inputs) {
  const seen = new Set();
  const out = [], births = [];
  for (let i = 0; i < n; i++) {
    const dst = unitOf[i];
    for (const j of inputs(i)) {
      if (j >= 0 && j < n) {
        const src = unitOf[j];
        const id = src * 4294967296 + dst;
        if (src !== dst && !seen.has(id)) {
          seen.add(id);
          out.push([src, dst]);
          births.push(i);
        }
      }
    }
  }
  return [out, births];
}

// What opening `key` (a call or a run) opens with it: everything around it, so it shows
// (folding.open_set's expand).
DG.openWith = function (tree, key) {
  DG.indexTree(tree);
  const out = [key];
  let chain = [];
  if (tree._calls.has(key)) chain = DG.chain(tree, key);
  else if (tree._runs.has(key)) {
    const parent = tree._runs.get(key).parent;
    chain = parent ? DG.chain(tree, parent) : [];
  }
  for (const up of chain) {
    if (up !== key) out.push(up);
    const run = tree._calls.get(up).run;
    if (run) out.push(run);
  }
  return out;
};

// What closing `key` closes with it: the calls and runs inside it (folding's rule:
// closing forgets what was opened inside).
DG.closeWith = function (tree, key) {
  DG.indexTree(tree);
  const out = [key];
  const stack = [];
  if (tree._calls.has(key)) stack.push(...tree._calls.get(key).children);
  else if (tree._runs.has(key)) stack.push(...tree._runs.get(key).members);
  while (stack.length) {
    const k = stack.pop();
    const c = tree._calls.get(k);
    out.push(k);
    if (c.run) out.push(c.run);
    stack.push(...c.children);
  }
  return out;
};
