"""The viewer page: one self-contained HTML document, its scripts and style inside.

Nothing is loaded from a network: the scripts and the style ship in the package
(``viewer/static``) and are written into the page; the data sits in a JSON block escaped
so that nothing in it can end the ``<script>`` element. A Content-Security-Policy allows
exactly the page's own script (by its hash): no other script, inline handler or remote
resource runs, even if some text from a trace were to slip past the escaping.

>>> html = page_html(ViewerData.from_trace(trace).everything())     # doctest: +SKIP
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from functools import cache
from importlib import resources
from typing import Any

from .packing import pack_structure, pack_values, unpack_structure, unpack_values

# In the order they build on each other (each adds to one ``DG`` namespace).
SCRIPTS = ("fold.js", "layout.js", "draw.js", "panel.js", "viewer.js", "sources.js")
TRANSPORTS = ("embedded", "web")


def _static(name: str) -> str:
    return resources.files("dyngraph.viewer").joinpath("static", name).read_text("utf-8")


@cache
def script_text() -> str:
    """Every script of the viewer, each in its own function scope."""
    return "\n".join(f"(function () {{\n{_static(name)}\n}})();" for name in SCRIPTS)


@cache
def style_text() -> str:
    return _static("viewer.css")


def json_block(value: Any) -> str:
    """JSON safe inside ``<script>``: no ``</``, ``<!--`` or U+2028/2029 can break out.
    NaN and Infinity are refused (the data spells them as strings)."""
    text = json.dumps(value, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _csp(script: str, transport: str) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    connect = "'self'" if transport == "web" else "'none'"
    return (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; "
            f"connect-src {connect}; img-src 'none'; base-uri 'none'; form-action 'none'")


def _blocks(data: dict[str, Any]) -> list[str]:
    """One JSON block per part (the page parses a part when it first needs it)."""
    def block(name: str, value: Any) -> str:
        return f'<script type="application/json" id="{name}">{json_block(value)}</script>\n'

    out = [block("dg-meta", data["meta"])]
    out += [block(f"dg-s-{s}", pack_structure(part)) for s, part in enumerate(data["structures"])]
    out += [block(f"dg-v-{p}", pack_values(part)) for p, part in enumerate(data["values"])]
    return out


def read_parts(page: str) -> dict[str, Any]:
    """The parts a page carries, as ``ViewerData.everything()`` gave them (for tests and
    tools that read an exported index.html)."""
    found = {m[1]: json.loads(m[2]) for m in re.finditer(
        r'<script type="application/json" id="(dg-[msv][-\w]*)">(.*?)</script>', page, re.S)}
    count = len([k for k in found if k.startswith("dg-s-")])
    values = len([k for k in found if k.startswith("dg-v-")])
    return {"meta": found["dg-meta"],
            "structures": [unpack_structure(found[f"dg-s-{s}"]) for s in range(count)],
            "values": [unpack_values(found[f"dg-v-{p}"]) for p in range(values)]}


def page_html(data: dict[str, Any] | None = None, *, transport: str = "embedded",
              title: str = "dyngraph", extra: str = "") -> str:
    """The page. ``data``: ``ViewerData.everything()`` for an embedded page; None for the
    web door (the page fetches its parts). ``extra``: more HTML (already escaped) after
    the viewer, e.g. an export's table of files."""
    if transport not in TRANSPORTS:
        raise ValueError(f"unknown transport {transport!r}")
    if transport == "embedded" and data is None:
        raise ValueError("an embedded page needs its data")
    script = script_text() + "\nDG.boot();\n"
    config = json_block({"transport": transport})
    blob = "".join(_blocks(data)) if data is not None else ""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{html.escape(_csp(script, transport))}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<style>
html, body {{ margin: 0; height: 100%; }}
#dg-root {{ height: 100vh; }}
{style_text()}
</style>
</head>
<body>
<div id="dg-root"></div>
{extra}
<script type="application/json" id="dg-config">{config}</script>
{blob}<script>{script}</script>
</body>
</html>
"""
