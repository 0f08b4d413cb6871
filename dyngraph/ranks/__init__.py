"""Many ranks: dyngraph inside a ``torchrun`` job (``torch.distributed``).

dyngraph runs on the job's own machinery: the rank and world size torchrun puts in the
environment (``job.py``: which rank this is, and where its trace goes), the job's c10d
store to compare the ranks' checkpoints (``records.py``, ``exchange.py``: a divergent
graph named before the collective it would hang), and PyTorch's own process groups and
flight recorder for the collectives (``collectives.py``). There is no server, launcher or
transport of dyngraph's own: ``dyngraph record --nproc N`` calls ``torch.distributed.run``
(``launch.py``).

``job``, ``records`` and ``exchange`` import no torch; the collectives' torch side lives
with the PyTorch backend (``torch_backend/collectives.py``) and is imported only once the
script has imported torch (``runtime.py``).
"""
