"""What a rank of a torchrun job pays for dyngraph, against what one process pays.

    python bench/ranks.py [--rounds 3] [--nproc 2] [--steps 60]

The same MLP training loop (bench/ranks_train.py: 3 hidden layers of 256, batch 64, SGD
with momentum) runs four ways, in interleaved rounds: as a DDP job of N ranks on gloo,
plain (torchrun) and recorded (``dyngraph record --nproc N``), and as one process, plain
and recorded (``dyngraph record``). Each run times its own steps (median after a warm-up,
so process start-up is not counted). Printed: each configuration's median step time, the
overhead of recording for one process (recorded / plain), for each rank of the job, and
their ratio, the rank's overhead over the single process's: the cost of the rank logic
(checkpoints in the job's store, collectives as events, DDP's reduced gradients). Goal:
within 1.05. Wall-clock medians over the rounds; run with nothing else on the machine if
you can, and read the load printed beside the figures.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TRAIN = Path(__file__).with_name("ranks_train.py")


def run(command: list[str], cwd: str) -> dict[int, float]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    out = subprocess.run(command, cwd=cwd, env=env, text=True, capture_output=True,
                         timeout=1800)
    found = {int(r): float(ms) for r, ms in re.findall(r"STEP_MS rank (\d+) ([\d.]+)",
                                                          out.stdout)}
    if not found:
        raise SystemExit(f"no timing from {' '.join(command)}:\n{out.stderr[-2000:]}")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    train = [str(TRAIN), "--steps", str(args.steps)]
    torchrun = shutil.which("torchrun") or "torchrun"
    configs = {
        "job, plain": [torchrun, "--standalone", f"--nproc-per-node={args.nproc}", *train],
        "job, recorded": [sys.executable, "-m", "dyngraph", "record", "--nproc",
                          str(args.nproc), "-o", "job.dgtrace", *train],
        "one process, plain": [sys.executable, *train, "--single"],
        "one process, recorded": [sys.executable, "-m", "dyngraph", "record", "-o",
                                  "one.dgtrace", *train, "--single"],
    }
    times: dict[str, list[dict[int, float]]] = {name: [] for name in configs}
    with tempfile.TemporaryDirectory() as cwd:
        for r in range(args.rounds):
            for name, command in configs.items():
                for f in Path(cwd).glob("*.dgtrace"):
                    f.unlink()
                times[name].append(run(command, cwd))
                print(f"round {r + 1}: {name}: {times[name][-1]}", flush=True)
    load = os.getloadavg()

    def median(name: str, rank: int = 0) -> float:
        return statistics.median(t[rank] for t in times[name])

    one = median("one process, recorded") / median("one process, plain")
    print(f"\nstep time (median of {args.rounds} rounds, each a median of "
          f"{args.steps - 10} steps); load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    for name in configs:
        ranks = sorted(times[name][0])
        print(f"  {name:<22} " + "  ".join(f"rank {k}: {median(name, k):7.3f} ms"
                                             for k in ranks))
    print(f"recording one process costs {one:.3f}x its plain step")
    for k in range(args.nproc):
        rank = median("job, recorded", k) / median("job, plain", k)
        print(f"recording rank {k} of the job costs {rank:.3f}x its plain step: "
              f"{rank / one:.3f}x what it costs one process (goal <= 1.05)")


if __name__ == "__main__":
    main()
