"""The bundled demos: small training scripts whose graphs are worth looking at.

Each demo is a standalone script written as a PyTorch user would write it
(``import dyngraph as torch``; those in ``NEEDS_TORCH`` import PyTorch itself). Run one
directly (``python demos/rnn_varlen.py --steps 50``), step through it (``dyngraph demo
rnn_varlen``), or find its file here:

>>> from dyngraph import demos
>>> demos.path("mlp").name
'mlp.py'
"""

from __future__ import annotations

from pathlib import Path

from dyngraph.errors import UserError

_HERE = Path(__file__).resolve().parent

# name -> one-line description (shown by ``dyngraph demo --list``), in tour order.
DEMOS: dict[str, str] = {
    "mlp": "MLP classifier on two spirals: the same graph every iteration (the baseline)",
    "rnn_varlen": "GRU cell summing digit sequences of varying length, one loop step per token",
    "tree_rnn": "recursive Tree-RNN predicting the value of random arithmetic expression trees",
    "dynamic_routing": "hard-routed mixture of experts: an `if` picks the expert for each input",
    "gnn": "message-passing GNN over random molecule-like graphs of varying size",
    "transformer": "tiny character-level decoder-only Transformer on a built-in text, then samples",
    "rl_policy": "REINFORCE agent in a numpy gridworld: episode length (and graph) varies",
    "nan_hunt": "runaway warm-up meets log(softmax): NaN at a predictable iteration and line",
    "torch_gpt": "a small GPT in real PyTorch on the built-in text: PyTorch's own ops and "
                 "backward nodes",
    "torch_compile_varlen": "torch.compile on a variable-length RNN: recompiles and a graph break, "
                      "and --fixed, the fix",
    "torch_ddp_divergence": "two DDP ranks on gloo; rank 1 takes another branch at iteration 7 "
                      "(dyngraph check --nproc 2: named before the hang)",
}

# Demos written against PyTorch itself (``import torch``): they run only where it is installed.
NEEDS_TORCH = frozenset({"torch_gpt", "torch_compile_varlen", "torch_ddp_divergence"})


def path(name: str) -> Path:
    """The script of demo ``name``; raises UserError naming the demos for an unknown one.

    >>> path("gnn").suffix
    '.py'
    """
    if name not in DEMOS:
        raise UserError(f"unknown demo {name!r}; choose one of: {', '.join(DEMOS)}")
    return _HERE / f"{name}.py"


def names() -> list[str]:
    """The demo names in tour order."""
    return list(DEMOS)
