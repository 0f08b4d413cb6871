"""``torch.distributions``: ``Categorical``, ``Normal``, ``Bernoulli``, ``Uniform`` and
``kl_divergence``, with PyTorch's formulas, so ``log_prob`` and ``entropy`` (and
``rsample`` where PyTorch has it) are differentiable and match PyTorch's values.
Samples come from dyngraph's generator: the same seed gives the same draws, not
PyTorch's.

>>> import dyngraph as torch
>>> from dyngraph.distributions import Categorical
>>> m = Categorical(logits=torch.zeros(4, requires_grad=True))
>>> loss = -m.log_prob(m.sample())
>>> loss.backward()
"""

from ..missing import module_getattr
from . import constraints
from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .kl import kl_divergence, register_kl
from .normal import Normal
from .uniform import Uniform

__all__ = ["Bernoulli", "Categorical", "Distribution", "Normal", "Uniform", "constraints",
           "kl", "kl_divergence", "register_kl"]

__getattr__ = module_getattr(__name__)
