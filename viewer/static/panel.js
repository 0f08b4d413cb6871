// The side panel: the selected node (op, module, line, value and gradient summaries, the
// gradient norm across iterations as a sparkline) or module box, search results, the diff,
// the files an export wrote, and the keys. Text from the trace only ever via textContent.
"use strict";

const DG = globalThis.DG || (globalThis.DG = {});
const SPARK_W = 220, SPARK_H = 40;

DG.helpText = function () {
  const h = DG.h;
  const keys = [["n, \u2192", "next op"], ["\u2190", "previous op"],
                ["i, ]", "next iteration"], ["[", "previous iteration"],
                ["/", "find"], ["d", "diff with the previous iteration"],
                ["x", "go to the first NaN/Inf"], ["z", "open / fold the module"],
                ["W", "whole graph"], [".", "centre the selection"], ["+ -", "zoom"],
                ["Esc", "clear the selection"], ["?", "these keys"]];
  return [h("h4", {}, "Keys"),
          h("table", {}, keys.map(([k, what]) => h("tr", {}, h("td", {}, h("kbd", {}, k)),
                                                   h("td", {}, what))))];
};

function row(label, value) {
  return DG.h("tr", {}, DG.h("th", {}, label), DG.h("td", {}, value));
}

function stats(V, prefix, i, title) {
  const get = s => (V[prefix + s] ? V[prefix + s][i] : null);
  if (get("norm") === null && get("nan") === null && get("min") === null) {
    return DG.h("p", {class: "dg-none"}, title + ": none recorded");
  }
  const rows = [];
  for (const s of ["norm", "min", "max", "mean", "std"]) {
    const v = get(s);
    if (v !== null && v !== undefined) rows.push(row(s, DG.fmt(v)));
  }
  const nan = get("nan") || 0, inf = get("inf") || 0;
  rows.push(row("NaN / Inf", nan + " / " + inf + (get("sampled") ? " (in a sample)" : "")));
  if (prefix === "v" && V.vpreview && V.vpreview[i]) {
    rows.push(row("values", V.vpreview[i].map(DG.fmt).join(", ") + " \u2026"));
  }
  if (prefix === "g" && V.gfn && V.gfnTable[V.gfn[i]]) rows.push(row("grad_fn", V.gfnTable[V.gfn[i]]));
  return [DG.h("h4", {class: nan || inf ? "dg-bad" : ""}, title),
          DG.h("table", {class: "dg-stats dg-" + prefix + "stats"}, rows)];
}

DG.showDetails = function (app) {
  const box = app.el.details;
  box.textContent = "";
  const u = app.selectedUnit();
  if (u === undefined) {
    box.appendChild(DG.h("p", {class: "dg-hint"},
      "Click a box to inspect it; double-click a module to open it."));
    return;
  }
  const unit = app.drawing.fold.units[u];
  if (unit.kind !== "node") {
    showUnit(app, box, unit, u);
    return;
  }
  const S = app.S, V = app.V, i = unit.first;
  const kind = S.text("kind", i);
  const label = S.text("label", i);
  const file = S.text("file", i);
  const rows = [row("tensor id", V.id ? V.id[i] : S.id[i])];
  if (kind === "op" || kind === "backward") rows.push(row("op", S.text("op", i)));
  if (S.name[i]) rows.push(row("name", S.name[i]));
  rows.push(row("module", S.text("module", i) || "(top level)"));
  rows.push(row("shape", S.text("shape", i) + " " + S.text("dtype", i)));
  if (file) rows.push(row("line", file + ":" + S.line[i] + (S.text("fn", i) ? " in " + S.text("fn", i) : "")));
  if (S.attrs[i]) rows.push(row("attrs", S.attrs[i]));
  box.append(
    DG.h("h3", {class: "dg-title"}, label, DG.h("small", {}, " " + kind)),
    DG.h("table", {class: "dg-node"}, rows),
    ...[].concat(stats(V, "v", i, "value"), stats(V, "g", i, "gradient")),
    DG.h("h4", {}, "gradient norm across iterations"));
  const spark = DG.h("div", {class: "dg-spark"}, "\u2026");
  box.appendChild(spark);
  const scope = S.tree.scope_of[i];
  if (scope) {
    box.appendChild(DG.h("button", {type: "button", class: "dg-fold-module",
                                    onclick: () => app.collapse(unit.parent || scope)},
                         "fold " + S.tree._calls.get(unit.parent || scope).label));
  }
  const key = S.key[i];
  app.source.history(key).then(values => {
    if (!app.sel || app.sel.key !== key) return;
    spark.textContent = "";
    spark.appendChild(DG.sparkline(values, app.pos, app.meta));
  });
};

function showUnit(app, box, unit, u) {
  const S = app.S, V = app.V;
  const fold = app.drawing.fold;
  let best = null, bad = 0, count = 0;
  fold.unitOf.forEach((w, i) => {
    if (w !== u) return;
    count++;
    const g = V.gnorm ? DG.num(V.gnorm[i]) : null;
    if (g !== null && !Number.isNaN(g) && (best === null || g > best)) best = g;
    if ((V.vnan && V.vnan[i]) || (V.vinf && V.vinf[i]) || (V.gnan && V.gnan[i]) || (V.ginf && V.ginf[i])) bad++;
  });
  const what = {call: "module call", run: "repeated module calls", index: "index arithmetic"}[unit.kind];
  const rows = [row("kind", what), row("nodes", String(count))];
  if (unit.kind === "run") rows.push(row("calls", String(S.tree._runs.get(unit.key).members.length)));
  if (unit.kind === "call") rows.push(row("module", S.tree._calls.get(unit.key).path || "(root)"));
  rows.push(row("largest grad norm", DG.fmt(best)));
  rows.push(row("nodes with NaN/Inf", String(bad)));
  box.append(DG.h("h3", {class: "dg-title"}, unit.label),
             DG.h("table", {class: "dg-node"}, rows),
             DG.h("button", {type: "button", class: "dg-open",
                             onclick: () => app.expand(unit.key)}, "open " + unit.label));
}

// Gradient norms per iteration (null: none), the current one marked; NaN/Inf in red.
DG.sparkline = function (values, pos, meta) {
  const nums = values.map(DG.num);
  const finite = nums.filter(v => v !== null && v !== undefined && Number.isFinite(v));
  const svg = DG.s("svg", {width: SPARK_W, height: SPARK_H, class: "dg-sparkline"});
  if (!finite.length) {
    svg.appendChild(DG.s("text", {x: 4, y: 24}, "no gradient recorded"));
    return svg;
  }
  const lo = Math.min(...finite), hi = Math.max(...finite);
  const n = nums.length;
  const X = k => (n === 1 ? SPARK_W / 2 : 3 + (k * (SPARK_W - 6)) / (n - 1));
  const Y = v => (hi === lo ? SPARK_H / 2 : SPARK_H - 4 - ((v - lo) * (SPARK_H - 8)) / (hi - lo));
  let d = "";
  nums.forEach((v, k) => {
    if (v === null || v === undefined || !Number.isFinite(v)) return;
    d += (d && nums[k - 1] !== null && Number.isFinite(nums[k - 1]) ? "L" : "M") +
      X(k).toFixed(1) + "," + Y(v).toFixed(1);
  });
  svg.appendChild(DG.s("path", {d, class: "dg-spark-line"}));
  nums.forEach((v, k) => {
    if (v !== null && v !== undefined && !Number.isFinite(v)) {
      svg.appendChild(DG.s("rect", {x: X(k) - 1.5, y: 0, width: 3, height: SPARK_H, class: "dg-spark-bad"}));
    }
  });
  const cur = nums[pos];
  if (cur !== null && cur !== undefined && Number.isFinite(cur)) {
    svg.appendChild(DG.s("circle", {cx: X(pos), cy: Y(cur), r: 3, class: "dg-spark-now"}));
  }
  svg.appendChild(DG.s("title", {}, "iterations " + meta.iterations[0].index + "\u2013" +
    meta.iterations[n - 1].index + ": " + DG.fmt(lo) + " \u2026 " + DG.fmt(hi)));
  return svg;
};

// Nodes whose op, name, module or tensor id matches `query` (an id as 12 or #12).
DG.search = function (S, V, query) {
  const q = query.trim().toLowerCase();
  if (!q) return [];
  const id = /^#?(\d+)$/.exec(q);
  const out = [];
  const ids = V.id || S.id;
  const t = S.tables;
  const matchCol = col => t[col].map(s => s.toLowerCase().includes(q));
  const op = matchCol("op"), label = matchCol("label"), module = matchCol("module");
  for (let i = 0; i < S.n; i++) {
    if ((id && ids[i] === Number(id[1])) || op[S.op[i]] || label[S.label[i]] ||
        module[S.module[i]] || (S.name[i] && S.name[i].toLowerCase().includes(q))) {
      out.push(i);
    }
  }
  return out;
};

DG.showResults = function (app, query) {
  const box = app.el.results;
  box.textContent = "";
  box.hidden = !query.trim();
  if (box.hidden) return;
  const S = app.S, V = app.V, found = app.results;
  box.appendChild(DG.h("h4", {}, found.length + " found for \u201c" + query.trim() + "\u201d"));
  const list = DG.h("ol", {class: "dg-hits"});
  for (const i of found.slice(0, 100)) {
    list.appendChild(DG.h("li", {}, DG.h("button", {type: "button", class: "dg-hit-btn",
                                                    onclick: () => app.goToNode(i)},
      S.text("label", i) + "  #" + (V.id ? V.id[i] : S.id[i]) +
      (S.text("module", i) ? "  " + S.text("module", i) : ""))));
  }
  box.appendChild(list);
  if (found.length > 100) box.appendChild(DG.h("p", {}, "\u2026 and " + (found.length - 100) + " more"));
};

// "iteration 3"; iteration 0 is the run's setup (the work before the first
// differentiable op), named as the terminal names it.
DG.iterationName = it => it.setup ? "iteration 0, setup" : "iteration " + it.index;

// The diff pane when d has nothing to compare (setup, or the first iteration).
DG.showNoDiff = function (app, why) {
  const box = app.el.diffBox;
  box.textContent = "";
  box.hidden = false;
  box.append(DG.h("h4", {}, DG.iterationName(app.meta.iterations[app.pos])),
             DG.h("p", {class: "dg-diff-none"}, why));
};

DG.showDiff = function (app) {
  const box = app.el.diffBox;
  box.textContent = "";
  box.hidden = !app.diff;
  if (!app.diff) return;
  const {added, removed, changed} = app.diff;
  const other = app.meta.iterations[app.diffWith].index;
  const here = app.meta.iterations[app.pos].index;
  const S = app.S, A = app.diffOther;
  const reshaped = changed.filter(c => c[2] === "reshaped").length;
  box.appendChild(DG.h("h4", {}, "iteration " + here + " vs " + other));
  box.appendChild(DG.h("p", {class: "dg-diff-summary"},
    added.length + " added, " + removed.length + " removed, " + reshaped + " reshaped, " +
    (changed.length - reshaped) + " rewired"));
  const item = (S_, i, cls, jump) => DG.h("li", {class: cls},
    jump ? DG.h("button", {type: "button", onclick: () => app.goToNode(i)},
                S_.text("label", i) + "  " + S_.text("shape", i) + "  " + S_.text("module", i))
         : S_.text("label", i) + "  " + S_.text("shape", i) + "  " + S_.text("module", i));
  const list = DG.h("ul", {class: "dg-diff-list"});
  for (const i of added.slice(0, 50)) list.appendChild(item(S, i, "dg-d-added", true));
  for (const [j, i] of changed.slice(0, 50)) {
    const li = item(S, i, "dg-d-changed", true);
    li.appendChild(document.createTextNode("  (was " + A.text("shape", j) + ")"));
    list.appendChild(li);
  }
  for (const j of removed.slice(0, 50)) list.appendChild(item(A, j, "dg-d-removed", false));
  box.appendChild(list);
};

const SAFE_FILE = /^[\w.-]+$/;

DG.showFiles = function (app, it) {
  const box = app.el.files;
  box.textContent = "";
  const files = (it.files || []).filter(f => SAFE_FILE.test(f));
  const pages = (it.pages || []).filter(([, f]) => SAFE_FILE.test(f));
  box.hidden = !files.length && !pages.length;
  if (box.hidden) return;
  box.appendChild(DG.h("h4", {}, "exported files"));
  for (const f of files) box.append(DG.h("a", {href: f, target: "_blank", rel: "noopener"}, f), " ");
  if (pages.length) {
    box.appendChild(DG.h("h4", {}, "module pages"));
    const list = DG.h("ul", {class: "dg-pages"});
    for (const [label, f] of pages) {
      list.appendChild(DG.h("li", {}, DG.h("a", {href: f, target: "_blank", rel: "noopener"}, label)));
    }
    box.appendChild(list);
  }
};
