"""Big models in the debugger: the folded, module-level picture (issue 27, part 1).

    OPENBLAS_NUM_THREADS=1 python bench/tui.py --only big [--gpt-trace nanogpt72.dgtrace]

Two workloads, each one recorded iteration opened in ``dyngraph view`` (headless, Pilot):

- a 72-layer GPT: ``--gpt-trace`` names a trace of an unmodified nanoGPT run (72
  layers; recorded with ``dyngraph record ... train.py --n_layer=72``); without it, a
  stand-in written here with ``dyngraph.nn`` in nanoGPT's shape (``transformer.h.0`` ..
  ``h.71``, each block ``ln_1``, ``attn``, ``ln_2``, ``mlp``);
- a 50,000-node synthetic model: 10 stages of 96 identical blocks (4 attention heads
  and an MLP each), every stage its own width.

Measured, goals from the issue: the first picture of the iteration (< 1.5 s after the
trace opens), opening one folded module in place and folding it again (< 200 ms, key to
screen), a step key (< 50 ms, key to screen), and the most boxes any layout was given
against the boxes the pane shows (no layout over more nodes than are shown).

The first picture is measured as a user gets it (``first_picture``: a fresh process opens
the trace and presses ``f`` as soon as the app is up, until the iteration's module-level
picture at the end of its forward pass is on the screen), in interleaved rounds, beside
git revision ``--baseline REV`` when given (``side_by_side``); and after the whole trace
has been read (``measure``: the jump alone), which is where open, fold and step are timed.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from dyngraph.tui.app import DebuggerApp
from dyngraph.tui.model import Model
from dyngraph.tui.sources import ReplaySource

import dyngraph
import dyngraph.nn as nn
import dyngraph.nn.functional as F

SIZE = (200, 50)


# -- workloads ----------------------------------------------------------------------------
class Attention(nn.Module):
    def __init__(self, d: int, heads: int, split: bool) -> None:
        super().__init__()
        self.heads, self.split = heads, split
        if split:
            self.c_attn = nn.Linear(d, 3 * d)
        else:
            self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.c_proj = nn.Linear(d, d)

    def forward(self, x: Any) -> Any:
        b, t, d = x.shape
        if self.split:
            q, k, v = self.c_attn(x).split(d, dim=2)
        else:
            q, k, v = self.q(x), self.k(x), self.v(x)
        h = d // self.heads
        outs = []
        for i in range(self.heads):
            qi, ki, vi = q[:, :, i * h:(i + 1) * h], k[:, :, i * h:(i + 1) * h], \
                v[:, :, i * h:(i + 1) * h]
            att = F.softmax(qi @ ki.transpose(1, 2) * (1.0 / h ** 0.5), dim=-1)
            outs.append(att @ vi)
        return self.c_proj(dyngraph.cat(outs, dim=2))


class Block(nn.Module):
    def __init__(self, d: int, heads: int, split: bool) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = Attention(d, heads, split)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: Any) -> Any:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """nanoGPT's module tree: transformer.{wte, wpe, drop, h.N, ln_f} and lm_head."""

    def __init__(self, layers: int, d: int = 16, vocab: int = 65, block: int = 8) -> None:
        super().__init__()
        self.transformer = nn.ModuleDict({
            "wte": nn.Embedding(vocab, d), "wpe": nn.Embedding(block, d),
            "drop": nn.Dropout(0.0),
            "h": nn.ModuleList([Block(d, 2, True) for _ in range(layers)]),
            "ln_f": nn.LayerNorm(d)})
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx: Any, targets: Any) -> Any:
        t = idx.shape[1]
        tr = self.transformer
        x = tr["drop"](tr["wte"](idx) + tr["wpe"](dyngraph.arange(t)))
        for block in tr["h"]:
            x = block(x)
        logits = self.lm_head(tr["ln_f"](x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


class Synthetic(nn.Module):
    """10 stages x 96 blocks of 4-head attention + MLP: ~50,000 nodes per iteration."""

    def __init__(self, stages: int = 10, blocks: int = 96) -> None:
        super().__init__()
        self.stages = nn.ModuleList([
            nn.ModuleList([Block(8 + 4 * s, 4, False) for _ in range(blocks)])
            for s in range(stages)])
        self.proj = nn.ModuleList([nn.Linear(8 + 4 * s, 12 + 4 * s) for s in range(stages)])

    def forward(self, x: Any) -> Any:
        for stage, proj in zip(self.stages, self.proj, strict=True):
            for block in stage:
                x = block(x)
            x = proj(x)
        return x.pow(2).mean()


def record_gpt(path: Path, layers: int = 72) -> None:
    rng = np.random.default_rng(0)
    dyngraph.manual_seed(0)
    model = GPT(layers)
    with dyngraph.record(path, stats="cheap"):
        for _ in range(2):
            idx = dyngraph.tensor(rng.integers(0, 65, (2, 8)))
            loss = model(idx, dyngraph.tensor(rng.integers(0, 65, (2, 8))))
            loss.backward()


def record_synthetic(path: Path) -> None:
    dyngraph.manual_seed(0)
    model = Synthetic()
    with dyngraph.record(path, stats="cheap"):
        model(dyngraph.randn(2, 3, 8)).backward()


# -- measuring ----------------------------------------------------------------------------
def cpu_now() -> float:
    """This process's CPU time and its finished children's (the layout program): on a
    machine shared with other jobs, wall time says how long one waited, CPU time what the
    work cost."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


async def wait_until(pilot: Any, cond: Any, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        await asyncio.sleep(0.002)
    return False


class CountingLayout:
    """The real layout, counting the boxes each call is given."""

    def __init__(self) -> None:
        from dyngraph.tui.canvas_layout import default_layout

        self.layout = default_layout
        self.sizes: list[int] = []

    def __call__(self, dot: str) -> Any:
        self.sizes.append(sum(1 for line in dot.splitlines() if "[width=" in line))
        return self.layout(dot)


def measure(path: Path, iteration: int, repeats: int) -> dict[str, float]:
    out: dict[str, float] = {}
    counting = CountingLayout()

    async def run() -> None:
        c_start = cpu_now()
        start = time.perf_counter()
        app = DebuggerApp(ReplaySource(Model(), dyngraph.read_trace(path)))
        async with app.run_test(size=SIZE) as pilot:
            out["  the app up (its first frame), from opening"] = time.perf_counter() - start
            canvas = app.query_one("#graph")
            canvas._layout_fn = counting  # before the worker starts: it is made on mount
            if canvas._worker is not None:
                canvas._worker.layout_fn = counting
            await wait_until(pilot, lambda: not app.source.loading, 600)
            out["  the trace read, from opening"] = time.perf_counter() - start
            shown: list[float] = []
            display = app._display

            def displayed(screen: Any, renderable: Any) -> None:
                display(screen, renderable)
                shown.append(time.perf_counter())

            app._display = displayed  # type: ignore[method-assign]
            c_jump = cpu_now()
            t0 = time.perf_counter()
            model = app.model  # to the end of the iteration's forward pass
            info = model.iteration(iteration)
            model.move_to(model.find(info.start, lambda e: e.kind == "backward_start"))
            app.refresh_view()

            def drawn() -> bool:
                return canvas.scene is not None and not canvas.status
            await wait_until(pilot, drawn, 60)
            await wait_until(pilot, lambda: bool(shown) and shown[-1] > t0, 10)
            out["nodes"] = len(app.graph.nodes)
            out["boxes shown"] = len(canvas.scene.boxes)
            out["the jump's picture, from opening (all read first)"] = shown[-1] - start
            out["  CPU time of that, from opening (+ the layout program)"] = cpu_now() - c_start
            out["first picture, from the jump to the iteration"] = shown[-1] - t0
            out["  CPU time of that"] = cpu_now() - c_jump
            run_box = next(b for b, n in enumerate(canvas.scene.view.nodes) if n.members)
            canvas.focus()
            canvas._select_box(run_box)
            await pilot.pause()
            opened, closed = [], []
            cpu_open, cpu_close = [], []
            for _ in range(repeats):
                for action, into, cpu in ((canvas.action_choose, opened, cpu_open),
                                          (canvas.action_toggle_module, closed, cpu_close)):
                    if action is canvas.action_toggle_module:  # fold the run again
                        member = next(b for b, n in enumerate(canvas.scene.view.nodes)
                                      if n.kind == "module" and n.cluster is not None)
                        canvas._select_box(member)
                        await pilot.pause()
                    before = canvas.scene
                    c0 = cpu_now()
                    t0 = time.perf_counter()
                    action()
                    await wait_until(pilot, lambda b=before: canvas.scene is not b
                                     and not canvas.status, 30)
                    await wait_until(pilot, lambda s=t0: bool(shown) and shown[-1] > s, 5)
                    into.append(shown[-1] - t0)
                    cpu.append(cpu_now() - c0)
                    out["boxes shown"] = max(out["boxes shown"], len(canvas.scene.boxes))
                    await pilot.pause(0.05)
            out["open one module (run), key to screen, median"] = statistics.median(opened)
            out["  CPU time of that (this process + the layout program)"] = statistics.median(
                cpu_open)
            out["fold it again, key to screen, median"] = statistics.median(closed)
            out["  CPU time of that "] = statistics.median(cpu_close)
            steps, cpu_steps = [], []
            for key in ["left"] * repeats + ["right"] * repeats:
                await pilot.pause(0.05)
                c0 = cpu_now()
                t0 = time.perf_counter()
                await pilot.press(key)
                await wait_until(pilot, lambda s=t0: bool(shown) and shown[-1] > s, 5)
                steps.append(shown[-1] - t0)
                cpu_steps.append(cpu_now() - c0)
            out["a step (← / →), key to screen, median"] = statistics.median(steps)
            out["  CPU time of that  "] = statistics.median(cpu_steps)
            out["a step, max"] = max(steps)
            await wait_until(pilot, lambda: not canvas.status, 30)
            out["most boxes given to one layout"] = max(counting.sizes or [0])

    asyncio.run(run())
    return out


def first_picture(path: Path, iteration: int) -> dict[str, float]:
    """What a user waits for: ``dyngraph view`` of the trace, ``f`` pressed as soon as the
    app is up, until the iteration's module-level picture at the end of its forward pass
    is on the screen (the trace may still be loading behind it)."""
    out: dict[str, float] = {}

    async def run() -> None:
        c_start = cpu_now()
        start = time.perf_counter()
        app = DebuggerApp(ReplaySource(Model(), dyngraph.read_trace(path)))
        async with app.run_test(size=SIZE) as pilot:
            out["the app up (its first frame)"] = time.perf_counter() - start
            out["  CPU time of that"] = cpu_now() - c_start
            canvas = app.query_one("#graph")
            done: list[float] = []
            display = app._display

            def at_target() -> bool:
                model = app.model
                info = model.iteration(iteration)
                # The pane's scene draws every node of the graph at the cursor: the
                # model refills the app's graph object in place as the cursor moves, so
                # before the pane has taken it in, ``status`` (of its old signatures)
                # says nothing is pending and the old scene is on the screen.
                return (info is not None and info.backward_start is not None
                        and model.cursor == info.backward_start and canvas.scene is not None
                        and not canvas.status and canvas._graph is app.graph
                        and len(app.graph.nodes) > 0
                        and canvas._upto == len(canvas._canon.sigs) == len(app.graph.nodes))

            def displayed(screen: Any, renderable: Any) -> None:
                display(screen, renderable)
                if not done and at_target():
                    done.append(time.perf_counter())
                    out["  CPU time of that (+ the layout program)"] = \
                        cpu_now() - c_start

            app._display = displayed  # type: ignore[method-assign]
            await pilot.press("f")
            await wait_until(pilot, lambda: bool(done), 120)
            out["first picture after f (from opening)"] = done[0] - start
            cpu = out.pop("  CPU time of that (+ the layout program)")
            out["  CPU time of that (+ the layout program)"] = cpu
            out["nodes"] = len(app.graph.nodes)
            out["boxes shown"] = len(canvas.scene.boxes)
            await wait_until(pilot, lambda: not app.source.loading, 600)
            out["the whole trace read"] = time.perf_counter() - start

    asyncio.run(run())
    return out


def baseline_tree(rev: str, into: Path) -> Path:
    """Git revision ``rev``'s dyngraph (with its tui/ and exporters/ inside, as installed)
    under ``into``: a PYTHONPATH that runs the baseline beside this checkout."""
    repo = Path(__file__).resolve().parent.parent
    archive = subprocess.run(["git", "-C", str(repo), "archive", rev],
                             capture_output=True, check=False)
    if archive.returncode:
        sys.exit(f"tui_big.py: no git revision {rev!r}: "
                 f"{archive.stderr.decode(errors='replace').strip()}")
    src = into / "src"
    src.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive.stdout, check=True)
    for sub, name in (("tui", "tui"), ("exporters", "exporters"), ("viewer", "viewer"),
                      ("demos", "demos")):
        if (src / sub).is_dir() and not (src / "dyngraph" / name).exists():
            (src / sub).rename(src / "dyngraph" / name)
    pkg = into / "pkg"
    pkg.mkdir()
    (pkg / "dyngraph").symlink_to(src / "dyngraph")
    return pkg


def side_by_side(trace: Path, iteration: int, rounds: int, baseline: Path | None,
                 pycache: Path) -> dict[str, list[dict[str, float]]]:
    """``first_picture`` in a fresh process per run (a cold start, as a user's), this
    checkout and the baseline alternating round by round, after one run of each not
    counted. Modules are compiled once into ``pycache`` (with PYTHONDONTWRITEBYTECODE
    set, each run would compile the modules the app imports lazily again; a user's
    installed package has its bytecode)."""
    runs: dict[str, list[dict[str, float]]] = {"this checkout": []}
    if baseline is not None:
        runs["baseline"] = []
    for round_ in range(rounds + 1):
        for name in runs:
            env = dict(os.environ, PYTHONPYCACHEPREFIX=str(pycache / name.replace(" ", "-")))
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            if name == "baseline":
                env["PYTHONPATH"] = str(baseline)
            done = subprocess.run(
                [sys.executable, __file__, "--first-picture", str(trace), str(iteration)],
                capture_output=True, text=True, env=env, check=False)
            if done.returncode:
                sys.exit(f"tui_big.py: {name} failed:\n{done.stderr[-2000:]}")
            if round_:
                runs[name].append(json.loads(done.stdout.splitlines()[-1]))
    return runs


def print_side_by_side(runs: dict[str, list[dict[str, float]]]) -> None:
    keys = [k for k in runs["this checkout"][0] if k not in ("nodes", "boxes shown")]
    names = list(runs)
    print(f"     {'(medians of ' + str(len(runs[names[0]])) + ' interleaved rounds)':<52} "
          + " ".join(f"{n:>14}" for n in names) + ("       ratio" if len(names) > 1 else ""))
    for k in keys:
        meds = [statistics.median(r[k] for r in runs[n]) for n in names]
        ratio = f"  {meds[0] / meds[1]:9.2f}×" if len(meds) > 1 and meds[1] else ""
        print(f"     {k:<52} " + " ".join(f"{m * 1000:11.1f} ms" for m in meds) + ratio)


def phases(path: Path, iteration: int) -> dict[str, float]:
    """CPU seconds of each step from a trace file to the first picture, run one after
    the other on this thread (the app overlaps some of them: see ``measure``)."""
    import gc

    from dyngraph.tui import canvas_fold as cf
    from dyngraph.tui import canvas_layout as cl
    from dyngraph.tui import raster

    out: dict[str, float] = {}

    def timed(name: str, work: Any) -> Any:
        c0 = time.thread_time()
        got = work()
        out[name] = time.thread_time() - c0
        return got

    gc.disable()  # (the app holds the collector off while a trace loads and lays out)
    try:
        trace = timed("read the file's frame index", lambda: dyngraph.read_trace(path))
        events = timed("decode every event", lambda: list(trace.events))
        model = Model()

        def ingest() -> None:  # as the app does: a chunk a tick, the graph grown with it
            for i in range(0, len(events), 8192):
                model.ingest(events[i:i + 8192])
                if i == 0:
                    model.move_to(model.next_step(0))
                model.graph_at_cursor()
        timed("ingest, the iteration's graph built", ingest)
        info = model.iteration(iteration)
        model.move_to(model.find(info.start, lambda e: e.kind == "backward_start"))
        graph = timed("the graph at the jump (gradients hidden)", model.graph_at_cursor)
        canon = cl.Canonical()
        timed("signatures (Canonical)", lambda: canon.update(graph))
        sigs = canon.sigs
        cf._prepared = None
        timed("module tree (canvas_fold.prepare)", lambda: cf.prepare(sigs))
        rule = cf.Collapse(fold=True)
        view, _ = timed("fold and view (build_view)", lambda: cf.build_view(sigs, rule, False))
        c0 = cpu_now()
        lay = timed("layout, this process", lambda: cl.lay_out(view, cl.default_layout)[0])
        out["layout, the layout program"] = cpu_now() - c0 - out["layout, this process"]
        timed("on the character grid (raster)", lambda: raster.build_scene(view, lay))
    finally:
        gc.enable()
    return out


def bench_big(tmp: Path, repeats: int, gpt_trace: str | None = None,
              baseline: str | None = None, rounds: int = 5) -> None:
    print("\n5. big models: the module-level picture (goals: first picture < 1.5 s, "
          "open/fold < 200 ms, a step < 50 ms, no layout over more boxes than shown)")
    cases = []
    if gpt_trace:
        cases.append(("nanoGPT, 72 layers (recorded)", Path(gpt_trace), 2))
    else:
        path = tmp / "gpt72.dgtrace"
        record_gpt(path)
        cases.append(("GPT stand-in, 72 layers", path, 2))
    path = tmp / "synthetic50k.dgtrace"
    t0 = time.perf_counter()
    record_synthetic(path)
    print(f"   (recorded the synthetic model in {time.perf_counter() - t0:.1f} s)")
    cases.append(("synthetic, 50,000 nodes", path, 1))
    name, trace, iteration = cases[-1]
    print(f"   {name}: the first picture as a user waits for it (a fresh process: open the "
          "trace, press f at once)" + (f"; against {baseline}" if baseline else ""))
    print_side_by_side(side_by_side(trace, iteration, rounds, None if baseline is None
                                    else baseline_tree(baseline, tmp / "baseline"),
                                    tmp / "pycache"))
    print(f"   {name}: where the first picture's CPU goes, one step after the other "
          "(wall clock depends on how the app overlaps them)")
    for k, v in phases(trace, iteration).items():
        print(f"     {k:<52} {v * 1000:7.1f} ms CPU")
    for name, trace, iteration in cases:
        out = measure(trace, iteration, repeats)
        print(f"   {name}: {int(out.pop('nodes')):,} nodes, "
              f"{int(out.pop('boxes shown'))} boxes shown at most")
        for k, v in out.items():
            text = f"{int(v)}" if k.startswith("most") else f"{v * 1000:7.1f} ms"
            print(f"     {k:<52} {text}")


if __name__ == "__main__":  # one run of ``first_picture``, for ``side_by_side``
    if len(sys.argv) == 4 and sys.argv[1] == "--first-picture":
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        print(json.dumps(first_picture(Path(sys.argv[2]), int(sys.argv[3]))))
    else:
        sys.exit("usage: python bench/tui.py --only big (this file is its part 5)")
