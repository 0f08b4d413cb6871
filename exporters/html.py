"""``index.html``: every exported iteration behind a slider, structure changes marked.

One self-contained page (no network, no external scripts). The SVGs are loaded from the
same directory with ``<object>`` so their tooltips work; the page's script only sets
``textContent`` and attributes, never HTML, and its data sits in a JSON block escaped so
that nothing in it can close the ``<script>`` element.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .escape import html_text

_CSS = """
body { font-family: system-ui, sans-serif; margin: 0; color: #222; }
header { padding: 8px 14px; background: #f4f4f4; border-bottom: 1px solid #ddd;
         position: sticky; top: 0; }
h1 { font-size: 16px; margin: 0 0 6px 0; }
.controls { display: flex; gap: 10px; align-items: center; flex-wrap: wrap; }
#slider { flex: 1 1 300px; }
#ticks { display: flex; height: 8px; margin-top: 4px; cursor: pointer; }
#ticks span { flex: 1; background: #ddd; margin-right: 1px; }
#ticks span.changed { background: #fd8d3c; }
#ticks span.current { outline: 2px solid #225ea8; }
.badge { background: #fd8d3c; color: #fff; border-radius: 3px; padding: 1px 6px; }
.badge[hidden] { display: none; }
#info { color: #555; font-size: 13px; }
#modules { font-size: 13px; margin-top: 4px; }
main { padding: 10px; overflow: auto; }
object { max-width: none; }
table { border-collapse: collapse; font-size: 13px; margin: 10px; }
td, th { padding: 2px 8px; border-bottom: 1px solid #eee; text-align: left; }
tr.changed td:first-child::after { content: " \\25CF"; color: #fd8d3c; }
"""

_SCRIPT = """
const data = JSON.parse(document.getElementById("data").textContent);
const slider = document.getElementById("slider");
const view = document.getElementById("view");
const ticks = document.getElementById("ticks");
data.forEach((d, i) => {
  const t = document.createElement("span");
  if (d.changed) t.className = "changed";
  t.title = "iteration " + d.index + (d.changed ? " (structure changed)" : "");
  t.addEventListener("click", () => show(i));
  ticks.appendChild(t);
});
function show(i) {
  i = Math.max(0, Math.min(data.length - 1, i));
  const d = data[i];
  slider.value = i;
  document.getElementById("current").textContent = "iteration " + d.index;
  document.getElementById("changed").hidden = !d.changed;
  let info = d.nodes + " nodes";
  if (d.drawn !== d.nodes) info += ", " + d.drawn + " drawn (depth " + d.depth + ")";
  if (d.added || d.removed) info += ", +" + d.added + " / -" + d.removed + " since previous";
  document.getElementById("info").textContent = info;
  const mods = document.getElementById("modules");
  mods.textContent = "";
  if (d.modules.length) mods.appendChild(document.createTextNode("drawn by module; pages: "));
  d.modules.forEach(([label, file], k) => {
    const a = document.createElement("a");
    a.textContent = label;
    a.setAttribute("href", file);
    a.addEventListener("click", e => {
      e.preventDefault();
      if (view) view.setAttribute("data", file);
    });
    if (k) mods.appendChild(document.createTextNode(" · "));
    mods.appendChild(a);
  });
  const svg = d.files.find(f => f.endsWith(".svg") && !f.includes("--"));
  if (view && svg) view.setAttribute("data", svg);
  const link = document.getElementById("open");
  link.setAttribute("href", svg || d.files[0]);
  Array.from(ticks.children).forEach((t, k) => t.classList.toggle("current", k === i));
  history.replaceState(null, "", "#" + d.index);
}
slider.addEventListener("input", () => show(Number(slider.value)));
document.getElementById("prev").addEventListener("click", () => show(Number(slider.value) - 1));
document.getElementById("next").addEventListener("click", () => show(Number(slider.value) + 1));
document.addEventListener("keydown", e => {
  if (e.key === "ArrowLeft") show(Number(slider.value) - 1);
  if (e.key === "ArrowRight") show(Number(slider.value) + 1);
});
const start = data.findIndex(d => "#" + d.index === location.hash);
show(start < 0 ? 0 : start);
"""


def _json_block(value: Any) -> str:
    """JSON safe inside ``<script>``: no ``</``, ``<!--`` or U+2028/2029 can break out."""
    text = json.dumps(value, separators=(",", ":"), sort_keys=True)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def index_html(iterations: Sequence[Any], *, graph_kind: str = "forward") -> str:
    """The page for ``IterationInfo`` records (``index``, ``files``, ``changed``, ...)."""
    data = [
        {"index": it.index, "files": list(it.files), "changed": bool(it.changed),
         "nodes": it.nodes, "drawn": it.drawn or it.nodes, "depth": it.depth,
         "added": it.added, "removed": it.removed, "key": it.structure_key,
         "modules": [list(m) for m in getattr(it, "modules", ())]}
        for it in iterations
    ]
    first_svg = next((f for d in data for f in d["files"]
                      if f.endswith(".svg") and "--" not in f), "")
    changed = sum(1 for d in data if d["changed"])
    title = (f"dyngraph: {len(data)} iterations, {graph_kind} graph, "
             f"{changed} with a changed structure")
    rows = []
    for d in data:
        links = " ".join(f'<a href="{html_text(f)}">{html_text(f)}</a>' for f in d["files"])
        cls = ' class="changed"' if d["changed"] else ""
        rows.append(f'<tr{cls}><td>{d["index"]}</td><td>{d["nodes"]}</td>'
                    f'<td>{html_text(str(d["key"]))}</td><td>{links}</td></tr>')
    viewer = (f'<object id="view" type="image/svg+xml" data="{html_text(first_svg)}">'
              "Your browser cannot show SVG.</object>" if first_svg
              else "<p>No SVG was exported; the DOT files are listed below.</p>")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html_text(title)}</title>
<style>{_CSS}</style>
</head>
<body>
<header>
<h1>{html_text(title)}</h1>
<div class="controls">
<button id="prev" type="button" title="previous (left arrow)">&#9664;</button>
<input id="slider" type="range" min="0" max="{max(len(data) - 1, 0)}" value="0"
 aria-label="iteration">
<button id="next" type="button" title="next (right arrow)">&#9654;</button>
<strong id="current"></strong>
<span id="changed" class="badge" hidden>structure changed</span>
<span id="info"></span>
<a id="open" href="#">open file</a>
</div>
<div id="ticks" title="orange: the graph's structure changed"></div>
<div id="modules"></div>
</header>
<main>
{viewer}
<table>
<tr><th>iteration</th><th>nodes</th><th>structure key</th><th>files</th></tr>
{chr(10).join(rows)}
</table>
</main>
<script type="application/json" id="data">{_json_block(data)}</script>
<script>{_SCRIPT}</script>
</body>
</html>
"""
