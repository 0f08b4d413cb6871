"""``dyngraph.optim``: SGD, Adam, AdamW, Adadelta, Adagrad, RMSprop and LBFGS with PyTorch's
update rules and param groups, and ``lr_scheduler``.

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


from ..missing import module_getattr
from . import lr_scheduler  # noqa: F401
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .lbfgs import LBFGS
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["LBFGS", "SGD", "Adadelta", "Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop",
           "lr_scheduler"]


__getattr__ = module_getattr(__name__)  # names a missing torch.* piece
