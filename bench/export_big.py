"""Big graphs with shared weights: export time and peak memory, end to end.

    OPENBLAS_NUM_THREADS=1 python bench/export_big.py

Each program is recorded once (``dyngraph record``), then ``dyngraph export`` of its one
iteration runs in a new process, three rounds interleaved; the median wall time is
shown with the best beside it, and the peak resident memory of the export process and of
its layout children (Graphviz, when it runs). Goals (issue 12): the 1,939-node
shared-weight residual loop < 3 s; a GRU language model over 300 tokens < 5 s; a
10,000-node graph < 15 s; peak memory < 1 GB. The 4,500-node module-less chain once
took graphviz-pure to 12.5 GB.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import textwrap  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

PROGRAMS = {
    "shared-weight residual loop (8 blocks x 60)": ("< 3 s", """
        import dyngraph as torch
        import dyngraph.nn as nn
        torch.manual_seed(0)
        blocks = nn.ModuleList([nn.Sequential(nn.Linear(16, 16), nn.Tanh()) for _ in range(8)])
        h = torch.randn(4, 16)
        for _ in range(60):
            for block in blocks:
                h = h + 0.1 * block(h)
        h.pow(2).mean().backward()
    """),
    "GRU language model, 300 tokens": ("< 5 s", """
        import dyngraph as torch
        import dyngraph.nn as nn
        import dyngraph.nn.functional as F
        torch.manual_seed(0)
        class LM(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(50, 16)
                self.cell = nn.GRUCell(16, 32)
                self.head = nn.Linear(32, 50)
        model = LM()
        tokens = torch.randint(0, 50, (301, 2))
        h = torch.zeros(2, 32)
        loss = 0
        for t in range(300):
            h = model.cell(model.embed(tokens[t]), h)
            loss = loss + F.cross_entropy(model.head(h), tokens[t + 1])
        (loss / 300).backward()
    """),
    "module-less chain, 4,500 nodes": ("", """
        import dyngraph as torch
        x = torch.randn(4, 4, requires_grad=True)
        h = x
        for _ in range(2250):
            h = (h * 1.01).tanh()
        h.sum().backward()
    """),
    "10,000-node graph (residual loop 8 x 310)": ("< 15 s", """
        import dyngraph as torch
        import dyngraph.nn as nn
        torch.manual_seed(0)
        blocks = nn.ModuleList([nn.Sequential(nn.Linear(8, 8), nn.Tanh()) for _ in range(8)])
        h = torch.randn(2, 8)
        for _ in range(310):
            for block in blocks:
                h = h + 0.1 * block(h)
        h.pow(2).mean().backward()
    """),
}



def main(rounds: int = 3) -> None:
    print("big-graph export (median of interleaved rounds; best and peak RSS beside)\n")
    with tempfile.TemporaryDirectory(prefix="dyngraph-bench-") as tmp:
        traces = {}
        for name, (_, source) in PROGRAMS.items():
            script = Path(tmp) / f"p{len(traces)}.py"
            script.write_text(textwrap.dedent(source))
            trace = Path(tmp) / f"p{len(traces)}.dgtrace"
            subprocess.run([sys.executable, "-m", "dyngraph", "record", "--stats", "full",
                            "-o", str(trace), str(script)], check=True,
                           stdout=subprocess.DEVNULL)
            traces[name] = trace
        times: dict[str, list[float]] = {name: [] for name in PROGRAMS}
        peaks: dict[str, float] = {}
        for r in range(rounds):
            for name, trace in traces.items():
                out = Path(tmp) / f"out-{r}-{len(times[name])}"
                # Peak RSS of children is a running maximum: measure each in its own probe.
                probe = [sys.executable, "-c",
                         "import resource, subprocess, sys; "
                         "subprocess.run(sys.argv[1:], check=True, "
                         "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
                         "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)",
                         sys.executable, "-m", "dyngraph", "export", str(trace), "-o",
                         str(out)]
                t0 = time.perf_counter()
                done = subprocess.run(probe, check=True, capture_output=True, text=True)
                times[name].append(time.perf_counter() - t0)
                peaks[name] = max(peaks.get(name, 0.0), int(done.stdout.split()[-1]) / 1024)
        from dyngraph.capture.traces import read_trace

        for name, (goal, _) in PROGRAMS.items():
            nodes = len(read_trace(traces[name]).iterations[0].graph.nodes)
            t = times[name]
            print(f"{name:44s} {nodes:6d} nodes  median {statistics.median(t):6.2f} s  "
                  f"best {min(t):6.2f} s  peak {peaks[name]:6.0f} MB  goal {goal or '-'}")


if __name__ == "__main__":
    main()
