"""``torch.nn.modules``: the layer classes by the submodules PyTorch files them under
(``nn.modules.loss._Loss``, ``nn.modules.rnn.RNNBase`` ...), for code that type-checks or
subclasses them. Each name is the very class ``dyngraph.nn`` exports."""

from ...missing import module_getattr
from . import (
    activation,
    batchnorm,
    container,
    conv,
    dropout,
    flatten,
    linear,
    loss,
    module,
    normalization,
    pooling,
    rnn,
    sparse,
    transformer,
)
from .activation import *  # noqa: F403
from .batchnorm import *  # noqa: F403
from .container import *  # noqa: F403
from .conv import *  # noqa: F403
from .dropout import *  # noqa: F403
from .flatten import *  # noqa: F403
from .linear import *  # noqa: F403
from .loss import *  # noqa: F403
from .module import *  # noqa: F403
from .normalization import *  # noqa: F403
from .pooling import *  # noqa: F403
from .rnn import *  # noqa: F403
from .sparse import *  # noqa: F403
from .transformer import *  # noqa: F403

__all__ = ["activation", "batchnorm", "container", "conv", "dropout", "flatten", "linear",
           "loss", "module", "normalization", "pooling", "rnn", "sparse", "transformer"]

__getattr__ = module_getattr(__name__)
