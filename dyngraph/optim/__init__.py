"""``dyngraph.optim``: SGD, Adam and AdamW with PyTorch's update rules and param groups,
and ``lr_scheduler``.

Updates are numpy operations in place on each parameter's array: they are not ops,
emit no op events and build no graph. With a tracer listening, each ``step()`` emits one
OptimizerStep event carrying every updated parameter's id and the L2 norm of its update.

>>> import dyngraph as torch
>>> w = torch.nn.Parameter(torch.ones(3))
>>> opt = torch.optim.SGD([w], lr=0.1, momentum=0.9)
>>> (w * w).sum().backward()
>>> opt.step()
>>> w.tolist()
[0.800000011920929, 0.800000011920929, 0.800000011920929]
"""

from typing import Any

from . import lr_scheduler  # noqa: F401
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["SGD", "Adam", "AdamW", "Optimizer", "lr_scheduler"]


def __getattr__(name: str) -> Any:
    # Only reached for names this module does not define: say so plainly.
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"{__name__} has no attribute {name!r}: it is not part of dyngraph's "
                         "supported surface (see docs/api-nn.md)")
