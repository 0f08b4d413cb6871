"""``kl_divergence(p, q)`` for pairs of the same family, in PyTorch's closed forms."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..engine import functions as fn
from ..missing import not_implemented
from ..nn import functional as F
from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .normal import Normal
from .uniform import Uniform

INF = float("inf")
_KL: dict[tuple[type, type], Callable[[Any, Any], Any]] = {}


def register_kl(type_p: type, type_q: type) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: ``@register_kl(P, Q) def kl(p, q): ...`` adds a closed form."""

    def decorate(fn_: Callable[..., Any]) -> Callable[..., Any]:
        _KL[type_p, type_q] = fn_
        return fn_

    return decorate


def kl_divergence(p: Distribution, q: Distribution) -> Any:
    """KL(p || q), batched."""
    for (type_p, type_q), form in _KL.items():
        if isinstance(p, type_p) and isinstance(q, type_q):
            return form(p, q)
    raise NotImplementedError(not_implemented(
        f"kl_divergence({type(p).__name__}, {type(q).__name__})"))


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Any:
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Any:
    t = p.probs * (p.logits - q.logits)
    t = fn.where((q.probs == 0).expand_as(t), INF, t)
    t = fn.where((p.probs == 0).expand_as(t), 0.0, t)
    return t.sum(-1)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Any:
    t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t1 = fn.where(q.probs == 0, INF, t1)
    t1 = fn.where(p.probs == 0, 0.0, t1)
    t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    t2 = fn.where(q.probs == 1, INF, t2)
    t2 = fn.where(p.probs == 1, 0.0, t2)
    return t1 + t2


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Any:
    result = ((q.high - q.low) / (p.high - p.low)).log()
    outside = (q.low > p.low) | (q.high < p.high)
    return fn.where(outside, INF, result)
