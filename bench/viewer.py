"""The viewer page's speed, measured in the browser (headless Chromium).

    OPENBLAS_NUM_THREADS=1 python bench/viewer.py [--rounds 3]

The issue's goals:
1. a 2,000-node iteration displays in < 2 s (it opens folded by module; also measured
   with every module open: 2,000 boxes laid out and drawn);
2. a 50,000-node trace opens folded in < 2 s (from the page starting to load to its first
   picture: the data parsed, folded, laid out, drawn), both as ``export``'s index.html
   (its data inside) and from ``dyngraph view --web`` (fetched);
3. switching iterations takes < 200 ms (to the next painted frame), between iterations
   of one structure and of two structures, after the page readied the neighbours while
   the picture was looked at (what [, ] and the slider's next step meet), and at once.

Figures are medians of ``--rounds`` page loads, side by side in one run; the machine's load
is printed beside them. Python's own cost of making the page (``ViewerData`` + JSON) is
printed too: it is paid by ``export`` and ``view --web`` before the browser sees anything.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "viewer"))

from dyngraph.viewer import ViewerData, page_html  # noqa: E402
from dyngraph.viewer.server import ViewerServer  # noqa: E402

import dyngraph  # noqa: E402
import dyngraph.nn as nn  # noqa: E402


class Layer(nn.Module):
    """8 residual tanh steps: 5 nodes each (weight, bias, linear, tanh, add)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.steps = nn.ModuleList(nn.Linear(width, width) for _ in range(8))

    def forward(self, h: Any) -> Any:
        for lin in self.steps:
            h = dyngraph.tanh(lin(h)) + h
        return h


class Stage(nn.Module):
    def __init__(self, layers: int, width: int) -> None:
        super().__init__()
        self.layers = nn.Sequential(*[Layer(width) for _ in range(layers)])

    def forward(self, h: Any) -> Any:
        return self.layers(h)


class Model(nn.Module):
    def __init__(self, stages: int, layers: int, width: int = 8) -> None:
        super().__init__()
        self.stages = nn.Sequential(*[Stage(layers, width) for _ in range(stages)])
        self.head = nn.Linear(width, 1)

    def forward(self, x: Any) -> Any:
        return self.head(self.stages(x))


BATCHES = (4, 4, 6, 4)  # iterations 1, 2 of one structure, 3 of another, 4 of the first


def record(stages: int, layers: int) -> dyngraph.Trace:
    dyngraph.manual_seed(0)
    model = Model(stages, layers)
    with dyngraph.trace(stats="full") as t:
        for batch in BATCHES:
            x = dyngraph.randn(batch, 8)
            model(x).pow(2).mean().backward()
    return t


def page_load(browser: Any, url: str) -> dict[str, float]:
    page = browser.new_page()
    page.goto(url)
    page.wait_for_selector("#dg-root[data-state=ready]", timeout=120_000)
    out = dict(page.evaluate("() => window.dgApp.timings"))
    out["boxes"] = page.locator(".dg-unit").count()
    out["page"] = page
    return out


SWITCH = """async ([p, warm]) => {
  // warm: the neighbours were readied while the user looked at the picture
  if (warm) await window.dgApp.prefetched;
  const t0 = performance.now();
  await window.dgApp.show(p);
  await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
  return performance.now() - t0;
}"""
OPEN_ALL = """async () => {
  const t0 = performance.now();
  window.dgApp.openAll();
  await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
  return [performance.now() - t0, document.querySelectorAll(".dg-unit").length];
}"""


def measure(browser: Any, url: str, rounds: int, open_all: bool) -> dict[str, Any]:
    keys = ("open", "same", "other", "cold", "open_all")
    got: dict[str, list[float]] = {k: [] for k in keys}
    boxes = opened = 0
    for _ in range(rounds):
        loaded = page_load(browser, url)
        page = loaded.pop("page")
        got["open"].append(loaded["firstReady"])
        boxes = int(loaded["boxes"])
        got["same"].append(page.evaluate(SWITCH, [1, True]))  # 1 -> 2: one structure
        got["other"].append(page.evaluate(SWITCH, [2, True]))  # 2 -> 3: another
        got["cold"].append(page.evaluate(SWITCH, [3, False]))  # 3 -> 4 at once: not readied
        if open_all:
            ms, opened = page.evaluate(OPEN_ALL)
            got["open_all"].append(ms)
        page.close()
    out: dict[str, Any] = {k: statistics.median(v) if v else None for k, v in got.items()}
    out.update(boxes=boxes, all_boxes=opened)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from viewer_runs import chromium

    cases = {"2,000-node": (1, 50), "50,000-node": (25, 50)}
    with tempfile.TemporaryDirectory() as tmp, chromium() as browser:
        for name, (stages, layers) in cases.items():
            t0 = time.perf_counter()
            trace = record(stages, layers)
            recorded = time.perf_counter() - t0
            t0 = time.perf_counter()
            data = ViewerData.from_trace(trace)
            html = page_html(data.everything())
            made = time.perf_counter() - t0
            path = Path(tmp) / f"{stages}.html"
            path.write_text(html)
            nodes = data.meta()["iterations"][0]["nodes"]
            print(f"{name} trace: {nodes:,} nodes per iteration, {len(BATCHES)} iterations "
                  f"(recorded in {recorded:.1f} s); page made in {made:.2f} s "
                  f"({len(html) / 1e6:.1f} MB)")
            small = nodes < 10_000  # every module open: 2,000 boxes yes, 50,000 no
            r = measure(browser, path.as_uri(), args.rounds, small)
            _report("embedded (export)", r)
            server = ViewerServer(ViewerData.from_trace(trace))
            t0 = time.perf_counter()
            server.warm()  # what view --web does before and just after printing its URL
            print(f"  view --web made its parts in {time.perf_counter() - t0:.2f} s")
            thread = threading.Thread(target=server.serve_forever, daemon=True)
            thread.start()
            try:
                _report("view --web", measure(browser, server.url, args.rounds, small))
            finally:
                server.shutdown()
                server.server_close()
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


def _report(door: str, r: dict[str, Any]) -> None:
    opened = (f"; every module open: {r['open_all']:.0f} ms ({r['all_boxes']:,} boxes)"
              if r["open_all"] is not None else "")
    print(f"  {door:18s} opens folded in {r['open']:5.0f} ms ({r['boxes']} boxes); switch: "
          f"same structure {r['same']:4.0f} ms, other {r['other']:4.0f} ms, "
          f"at once (nothing readied) {r['cold']:4.0f} ms" + opened)


if __name__ == "__main__":
    main()
