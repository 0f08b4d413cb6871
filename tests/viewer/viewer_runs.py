"""Runs the viewer tests look at, and a headless Chromium to look with.

``training_run()``: four iterations of a model with 40 repeated blocks (past
``folding.FOLD_ABOVE`` nodes, so the page opens folded by module), a module and a
parameter whose names are markup that would run script if it were ever parsed as HTML,
a batch of another size in iteration 2 (the structure changes) and NaN inputs in
iteration 3 (the first NaN).

``chromium()``: Debian's Chromium driven by the ``playwright`` package through
``executable_path`` (no browser download); the tests skip without either.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import dyngraph
import dyngraph.nn as nn

EVIL_MODULE = "<img src=x onerror=self['__pwned']=1>"
EVIL_PARAM = "</script><script>self['__pwned']=2</script>"
BLOCKS = 40
NAN_ITERATION = 3  # (its index in the trace)


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(6, 6)
        self.b = nn.Linear(6, 6)

    def forward(self, x: Any) -> Any:
        return x + self.b(dyngraph.relu(self.a(x)))


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(4, 6)
        self.blocks = nn.Sequential(*[Block() for _ in range(BLOCKS)])
        self.add_module(EVIL_MODULE, nn.Linear(6, 1))
        self.register_parameter(EVIL_PARAM, nn.Parameter(dyngraph.ones(1)))

    def forward(self, x: Any) -> Any:
        head = getattr(self, EVIL_MODULE)
        return head(self.blocks(self.inp(x))) * getattr(self, EVIL_PARAM)


def training_run(iterations: int = 4) -> dyngraph.Trace:
    dyngraph.manual_seed(0)
    model = Net()
    opt = dyngraph.optim.SGD(model.parameters(), lr=0.01)
    with dyngraph.trace(stats="full") as t:
        for step in range(1, iterations + 1):
            x = dyngraph.randn(3 if step != 2 else 5, 4)
            if step == NAN_ITERATION:
                x = x * float("nan")
            loss = model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return t


def setup_run() -> dyngraph.Trace:
    """A run with setup (iteration 0: data made before the first differentiable op, and an
    evaluation under no_grad), then iterations 1-5; iteration 3 takes a batch of 6 (its
    structure changes, and changes back in 4; 5 is as 4)."""
    dyngraph.manual_seed(0)
    model = nn.Linear(3, 1)
    opt = dyngraph.optim.SGD(model.parameters(), lr=0.1)
    with dyngraph.trace(stats="full") as t:
        data = dyngraph.randn(8, 3) * 0.5
        with dyngraph.no_grad():
            model(data).sum()
        for step in range(1, 6):
            batch = data[:6] if step == 3 else data[:4]
            loss = model(batch).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return t


CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run",
                  "--disable-dev-shm-usage"]


def chromium_path() -> str | None:
    for name in (os.environ.get("DYNGRAPH_CHROMIUM", ""), "chromium", "chromium-browser"):
        found = shutil.which(name) if name else None
        if found:
            return found
    return None


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium with a fresh profile; skips the test without one."""
    path = chromium_path()
    if path is None:
        pytest.skip("no Chromium installed (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with tempfile.TemporaryDirectory(prefix="dg-chromium-") as profile, \
            sync_api.sync_playwright() as p:
        # A persistent context is the way to give Chromium a profile folder of our own.
        context = p.chromium.launch_persistent_context(
            profile, executable_path=path, headless=True, args=CHROMIUM_FLAGS,
            viewport={"width": 1280, "height": 800})
        try:
            yield context
        finally:
            context.close()


def watch(page: Any) -> list[str]:
    """Collect the page's script errors and dialogs (a dialog means injected script ran)."""
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(f"script error: {e}"))
    page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
            if m.type == "error" else None)
    page.on("response", lambda r: problems.append(f"{r.status} for {r.url}")
            if r.status >= 400 else None)
    return problems


def ready(page: Any, timeout: float = 20_000) -> None:
    page.wait_for_selector("#dg-root[data-state=ready], .dg-viewer[data-state=ready]",
                           timeout=timeout)


_SHARE_NOT_BACKGROUND = """async (b64) => {
  const img = new Image();
  img.src = "data:image/png;base64," + b64;
  await img.decode();
  const c = document.createElement("canvas");
  c.width = img.width; c.height = img.height;
  const g = c.getContext("2d");
  g.drawImage(img, 0, 0);
  const d = g.getImageData(0, 0, c.width, c.height).data;
  const counts = new Map();
  for (let k = 0; k < d.length; k += 4) {
    const px = (d[k] << 16) | (d[k + 1] << 8) | d[k + 2];
    counts.set(px, (counts.get(px) || 0) + 1);
  }
  return 1 - Math.max(...counts.values()) / (d.length / 4);
}"""


def not_blank(context: Any, png: bytes) -> float:
    """The share of a screenshot's pixels that are not its most common colour (0: blank),
    counted by the browser itself on a page of its own."""
    import base64

    page = context.new_page()
    try:
        return float(page.evaluate(_SHARE_NOT_BACKGROUND, base64.b64encode(png).decode()))
    finally:
        page.close()
