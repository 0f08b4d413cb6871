// Where the page's parts come from (viewer/data.py makes them): all of them in the page
// (export's index.html, the notebook), or fetched one at a time from `dyngraph view --web`.
"use strict";

const DG = globalThis.DG || (globalThis.DG = {});

// A source from part getters (each returns a promise): the sparkline's history is read
// from every iteration's values, matching the node by its stable key.
DG.partsSource = function (meta, structure, values) {
  const histories = new Map();
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
