// Where the page's parts come from (viewer/data.py makes them): all of them in the page
// (export's index.html, the notebook), or fetched one at a time from `dyngraph view --web`.
"use strict";

const DG = globalThis.DG || (globalThis.DG = {});

// {meta, structures, values}: every part already here.
DG.embeddedSource = function (data) {
  const histories = new Map();
  return {
    meta: async () => data.meta,
    structure: async s => data.structures[s],
    values: async p => data.values[p],
    history: async key => {
      if (histories.has(key)) return histories.get(key);
      const out = data.meta.iterations.map((it, p) => {
        const S = DG.prepare(data.structures[it.structure]);
        const i = S.byKey().get(key);
        const g = data.values[p].gnorm;
        return i === undefined || !g ? null : g[i];
      });
      histories.set(key, out);
      return out;
    },
  };
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
  return {
    meta: () => get("api/meta"),
    structure: s => get("api/structure/" + s),
    values: p => get("api/values/" + p),
    history: key => get("api/history?key=" + encodeURIComponent(key)),
  };
};

// The standalone page: the data is in <script type="application/json" id="dg-data">
// (export) or fetched (web, token from the page's own URL).
DG.boot = function () {
  const root = document.getElementById("dg-root");
  const config = JSON.parse(document.getElementById("dg-config").textContent);
  let source;
  if (config.transport === "web") {
    const token = new URLSearchParams(location.search).get("token") || "";
    source = DG.webSource(token);
  } else {
    source = DG.embeddedSource(JSON.parse(document.getElementById("dg-data").textContent));
  }
  globalThis.dgApp = DG.mount(root, source, {hash: location.protocol !== "about:"});
  root.focus();
};
