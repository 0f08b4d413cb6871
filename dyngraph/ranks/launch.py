"""``dyngraph record|check|debug --nproc N SCRIPT``: the same command on N ranks, started
by torchrun (``torch.distributed.run``), not by a launcher of dyngraph's own.

It is ``torchrun --standalone --nproc-per-node N -m dyngraph COMMAND ...`` (the command
line without ``--nproc``), except that each rank runs ``python -P -m dyngraph``: the
working directory is not put first on ``sys.path``, so a dyngraph checkout in it is never
imported instead of the installed one. A rank that fails is summed up in one line, not in
torchrun's report of the exception it raises.
"""

from __future__ import annotations

import logging
import sys

from ..errors import UserError


def strip_nproc(argv: list[str], script: str) -> list[str]:
    """``argv`` without ``--nproc N`` (or ``--nproc=N``) before the script: what each
    rank runs. The script's own arguments are left as they are."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == script:
            out += argv[i:]
            break
        if token == "--nproc":
            i += 2
            continue
        if not token.startswith("--nproc="):
            out.append(token)
        i += 1
    return out


def run_torchrun(nproc: int, argv: list[str]) -> int:
    """Run ``dyngraph ARGV`` on ``nproc`` ranks on this machine; the job's exit status
    (the first failed rank's, as a shell shows it)."""
    if nproc < 1:
        raise UserError(f"--nproc must be at least 1, not {nproc}")
    try:
        from torch.distributed import run as torchrun
        from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    except ImportError:
        raise UserError("--nproc starts the ranks with torchrun, which needs PyTorch "
                        "(pip install 'dyngraph[torch]')") from None
    args = torchrun.parse_args(["--standalone", f"--nproc-per-node={nproc}", "--no-python",
                                sys.executable, "-P", "-m", "dyngraph", *argv])
    # The failure of a rank is ours to report (below); torchrun logs it at length too.
    logging.getLogger("torch.distributed.elastic").setLevel(logging.CRITICAL)
    try:
        torchrun.run(args)
    except ChildFailedError as exc:
        rank, failure = exc.get_first_failure()
        status = failure.exitcode
        shown = 128 - status if status < 0 else status
        how = f"was killed by signal {-status}" if status < 0 else f"exited with status {status}"
        print(f"dyngraph: rank {rank} {how}; the job failed", file=sys.stderr)
        return shown or 1
    return 0
