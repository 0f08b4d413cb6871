"""Views: tensors that share memory with a base tensor, and what an in-place op on one does.

numpy gives the memory sharing: a view op's array is a numpy view of its input's. This
module adds the autograd side, as PyTorch does it:

- ``view_op`` runs a view op through ``apply`` and, when numpy returned a view, records
  on the output its root ``base`` tensor and the ``chain`` of view steps from the base's
  array to its own (``y[:2][0]`` is base ``y``, chain ``getitem(:2), getitem(0)``).
- ``commit`` finishes an in-place op on a view: the new values, computed out of place, are
  written into the base's memory by a ``copy_slices`` node (PyTorch's CopySlices), which
  becomes the base's history. Its gradient goes to the in-place op for the changed
  region and to the base's earlier history for the rest.
- ``refresh`` gives every live view of a base whose history changed a ``grad_fn`` rebuilt
  from the base's new one (an ``as_strided`` node, PyTorch's AsStridedBackward0), so later
  uses of any view differentiate through the change.
- An output of ``split``/``chunk``/``unbind`` cannot follow its base that way in PyTorch:
  once the base changed, its next use in a graph raises (``RefusedView``).

A base keeps weak references to its views; nothing here runs on the plain op path.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from .autograd import Node, grad_mode
from .ops import OPS, OpDef
from .ops_shape import ADVANCED_GETITEM, ViewStep
from .tensor import RefusedUse, Tensor, apply
from .versions import changed_since, ids, root

_AS_STRIDED, _COPY_SLICES, _GETITEM = OPS["as_strided"], OPS["copy_slices"], OPS["getitem"]

_NO_GRAD_VIEW = (
    "A view was created in no_grad mode and is being modified inplace with grad mode enabled."
)
_NO_GRAD_VIEW_BASE = (
    "A view was created in no_grad mode and its base or another view of its base has been "
    "modified inplace with grad mode enabled."
)
_MULTI_OUTPUT = (
    "This view is the output of a function that returns multiple views. Such functions do "
    "not allow the output views to be modified inplace. You should replace the inplace "
    "operation by an out-of-place one."
)
MULTI_OUTPUT_MESSAGE = "{source} is a view and is being modified inplace. " + _MULTI_OUTPUT
MULTI_OUTPUT_BASE_MESSAGE = (
    "{source} is a view and its base or another view of its base has been modified "
    "inplace. " + _MULTI_OUTPUT
)
NO_GRAD_VIEW_MESSAGE = (
    _NO_GRAD_VIEW + " Given that this use case is ambiguous and error-prone, it is "
    "forbidden. You can clarify your code by moving both the view and the inplace either "
    "both inside the no_grad block (if you don't want the inplace to be tracked) or both "
    "outside (if you want the inplace to be tracked)."
)
VIEW_OF_LEAF_MESSAGE = (
    "a view of a leaf Variable that requires grad is being used in an in-place operation."
)


class ViewInfo:
    """What makes a tensor a view: its base, how to get from the base to it, and how it
    was made (in grad mode or not; as one of several outputs, e.g. of ``split``)."""

    __slots__ = ("base", "chain", "grad_mode", "multi")

    def __init__(self, base: Tensor, chain: tuple[ViewStep, ...], grad_mode: bool,
                 multi: tuple[str, int] | None) -> None:
        self.base = base
        self.chain = chain
        self.grad_mode = grad_mode
        # (op name, output index) for outputs of multi-output view ops and their views
        # (an empty name: the view's own grad_fn names it, as in PyTorch's message).
        self.multi = multi


def info(t: Tensor) -> ViewInfo | None:
    """``t``'s view record, if ``t`` still is a view of its base's memory."""
    view: ViewInfo | None = t._view_info
    if view is None or root(view.base._array) is not root(t._array):
        return None  # ``base.data = other`` moved the base to other memory
    return view


def view_op(op: OpDef, input: Tensor, multi: tuple[str, int] | None = None,
            temporary: bool = False, **attrs: Any) -> Tensor:
    """``apply(op, input, **attrs)`` for a view op, recording the view it returns.

    ``temporary``: the caller drops the view right away (``x[i] = v`` writes through one),
    so it is never rebuilt when its base changes (no dangling node in the graph).
    """
    out = apply(op, input, **attrs)
    owner = out._array.base
    if owner is None:
        return _copied(op, out)  # numpy had to copy (reshape of a non-contiguous input)
    source = input._array
    if owner is not source and owner is not source.base and root(owner) is not root(source):
        return _copied(op, out)
    parent = None if input._view_info is None else info(input)
    step = ViewStep(op.name, attrs)
    mode = grad_mode.enabled
    chain: tuple[ViewStep, ...]
    if parent is None:
        base, chain = input, (step,)
    else:
        base, chain = parent.base, (*parent.chain, step)
        mode = mode and parent.grad_mode
        if multi is None and parent.multi is not None:
            multi = ("", 0)
    out.__dict__["_view_info"] = ViewInfo(base, chain, mode, multi)
    if mode and not temporary:  # a view made under no_grad never follows its base's history
        _remember(base, out)
    return out


def _copied(op: OpDef, out: Tensor) -> Tensor:
    """A view op whose result is a copy, not a view: a getitem with index tensors, whose
    node saves them as PyTorch's IndexBackward0 does."""
    node = out.grad_fn
    if node is not None and op is _GETITEM:
        node.op = ADVANCED_GETITEM
    return out


def _remember(base: Tensor, view: Tensor) -> None:
    views = base.__dict__.get("_views")
    if views is None:
        views = base.__dict__["_views"] = []
    views.append(weakref.ref(view))
    n = len(views)
    if n >= 16 and n & (n - 1) == 0:  # at each doubling, drop the dead: bounded by the live
        views[:] = [r for r in views if r() is not None]


def check(t: Tensor, view: ViewInfo, needs_grad: bool) -> None:
    """PyTorch's refusals of an in-place op on a view in grad mode."""
    if not needs_grad:
        return
    if view.multi is not None:
        # Made where no gradient flowed (under no_grad, or before its base required
        # grad): PyTorch's wording for a view made under no_grad, as is.
        if not view.grad_mode or not view.base.requires_grad or t._borrowed:
            raise RuntimeError(f"{_NO_GRAD_VIEW} {_MULTI_OUTPUT}")
        raise RuntimeError(MULTI_OUTPUT_MESSAGE.format(source=_source(t, view)))
    if not view.grad_mode:
        raise RuntimeError(NO_GRAD_VIEW_MESSAGE)
    if view.base.requires_grad and view.base.grad_fn is None:
        raise RuntimeError(VIEW_OF_LEAF_MESSAGE)


def _source(t: Tensor, view: ViewInfo) -> str:
    """PyTorch's "Output 1 of Split" for an output of a multi-output view op."""
    assert view.multi is not None
    name, index = view.multi
    if not name:
        name = _short(t.grad_fn.name() if t.grad_fn is not None else "")
    return f"Output {index} of {name}"


def _short(name: str) -> str:
    return name[:-len("Backward0")] if name.endswith("Backward0") else name


class RefusedView(Node):
    """The grad_fn of an output of ``split``/``chunk``/``unbind`` whose base has changed in
    place since: PyTorch refuses any further use of such a view in a graph. ``apply``
    truth-tests every input's grad_fn (``x.grad_fn or x``), so that is where it raises;
    backward through it raises too."""

    __slots__ = ()
    refused = True  # (apply cannot import this module to ask isinstance)

    def __bool__(self) -> bool:
        raise RefusedUse(self.message)

    @property
    def message(self) -> str:
        return str(self.__dict__["message"])


def _refuse(t: Tensor, view: ViewInfo) -> None:
    """Make ``t``'s next use in a graph raise PyTorch's error (its base changed in place)."""
    node = t.grad_fn
    if isinstance(node, RefusedView):
        return
    if node is not None:
        message = MULTI_OUTPUT_BASE_MESSAGE.format(source=_source(t, view))
    elif view.base.requires_grad:  # made while its base needed no gradient; now it does
        message = f"{_NO_GRAD_VIEW_BASE} {_MULTI_OUTPUT}"
    else:
        return  # no gradient anywhere: nothing to refuse

    def backward(g: np.ndarray) -> tuple[Any, ...]:
        raise RuntimeError(message)

    array = t._array
    refused = RefusedView(OPS[view.chain[-1].op], backward, (), next(ids), array.shape,
                          array.dtype)
    refused.__dict__["message"] = message
    t.grad_fn = refused
    t.requires_grad = True


def base_changed(base: Tensor) -> None:
    """``base``'s memory changed outside the graph (under no_grad): its multi-output views
    may no longer be used in a graph, as in PyTorch; a view that borrowed its base's
    requires_grad gets a history from the base now (PyTorch regenerates a view's grad_fn
    when its version moved). (Other views need nothing: their history is still right.)"""
    for ref in base._views or ():
        v = ref()
        if v is None or info(v) is None:
            continue
        if v._view_info.multi is not None:
            _refuse(v, v._view_info)
        elif v._borrowed and base.requires_grad:
            _rebuild(v, base)


def lend_requires_grad(base: Tensor) -> None:
    """``base.requires_grad_()`` (or ``_(False)``): its live views made in grad mode before
    it required grad now require grad as it does, keeping grad_fn None, as in PyTorch: each
    is a leaf whose gradient goes nowhere (no accumulator: PyTorch's own requires_grad flag
    of the view is still off) until the base's memory changes (``base_changed``). A view
    whose memory changed since it was made gets its history from the base at once (PyTorch
    regenerates the grad_fn of a view whose version moved; of a split/unbind piece, that
    refuses)."""
    for ref in base.__dict__.get("_views") or ():
        v = ref()
        if v is None or info(v) is None or v.grad_fn is not None:
            continue
        if base.requires_grad and not v.requires_grad:
            if changed_since(base._array, v._id):
                if v._view_info.multi is not None:
                    _refuse(v, v._view_info)
                else:
                    _rebuild(v, base)
                continue
            v.requires_grad = True
            v.__dict__["_borrowed"] = True
        elif not base.requires_grad and v._borrowed:
            v.requires_grad = False
            del v.__dict__["_borrowed"]


def _rebuild(v: Tensor, base: Tensor) -> None:
    """``v``'s grad_fn rebuilt from its base's current history (AsStridedBackward0)."""
    v.__dict__.pop("_borrowed", None)
    prev = grad_mode.enabled
    grad_mode.enabled = True
    try:
        take_place(v, apply(_AS_STRIDED, base, chain=v._view_info.chain))
    finally:
        grad_mode.enabled = prev


def commit(t: Tensor, view: ViewInfo, out: Tensor) -> Tensor:
    """Write ``out`` (the new values of view ``t``) into its base, recording CopySlices."""
    base = view.base
    take_place(base, apply(_COPY_SLICES, base, out, chain=view.chain))
    refresh(base)
    return base


def take_place(t: Tensor, new: Tensor) -> None:
    """``t`` becomes ``new`` in the graph (its history, id in events), keeping its memory.

    A ``retain_grad()`` on ``t`` moves to its new history, as in PyTorch.
    """
    old = t.grad_fn
    node = new.grad_fn
    t.grad_fn = node
    t.requires_grad = new.requires_grad
    t._id = new._id
    if old is not None and node is not None and old.retained is not None:
        if old.retained() is t:
            node.retained = old.retained
            node.special = True
            old.retained = None


def refresh(base: Tensor) -> None:
    """Rebuild the grad_fn of every live view of ``base`` from the base's current history."""
    views = base.__dict__.get("_views")
    if not views or not base.requires_grad:
        return
    prev = grad_mode.enabled
    grad_mode.enabled = True
    try:
        for ref in views:
            v = ref()
            if v is None or info(v) is None:
                continue
            if v._view_info.multi is not None:
                _refuse(v, v._view_info)
                continue
            v.__dict__.pop("_borrowed", None)
            take_place(v, apply(_AS_STRIDED, base, chain=v._view_info.chain))
    finally:
        grad_mode.enabled = prev


# -- PyTorch's strides --------------------------------------------------------------------
# PyTorch judges memory overlap by comparing strides as they are, size-1 dims included.
# numpy's strides are PyTorch's except for the size-1 dims that None, unsqueeze and expand
# make: numpy gives them 0, PyTorch the size times the stride of the dim then at that
# position (so x[None, 0] and x[0][None] differ). Only the in-place checks ask, and only
# when two operands span the same memory.
def torch_strides(t: Tensor) -> tuple[int, ...]:
    """The strides (in bytes) PyTorch's tensor would have for ``t``'s layout."""
    view = info(t) if t._view_info is not None else None
    if view is None:
        return _settled(t._array.shape, t._array.strides, t._array.itemsize)
    base = view.base._array
    shape, strides = base.shape, _settled(base.shape, base.strides, base.itemsize)
    for step in view.chain:
        shape, strides = _step_strides(step, shape, strides, base)
    return strides


def _settled(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int
             ) -> tuple[int, ...]:
    """A tensor's own strides, numpy's 0 for a size-1 dim read as PyTorch's rule."""
    if 0 not in strides:
        return strides
    out = list(strides)
    for i in range(len(shape) - 1, -1, -1):
        if out[i] == 0 and shape[i] == 1:
            out[i] = shape[i + 1] * out[i + 1] if i + 1 < len(shape) else itemsize
    return tuple(out)


def _step_strides(step: ViewStep, shape: tuple[int, ...], strides: tuple[int, ...],
                  base: np.ndarray) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """One view step on (shape, strides): PyTorch's rule where it differs from numpy's,
    else numpy's own answer, from a view of ``base`` laid out with those strides (a size-1
    dim's stride reaches no other element, so it reads only ``base``'s memory)."""
    if step.op == "getitem":
        return getitem_strides(shape, strides, step.attrs["index"], base.itemsize)
    if step.op == "unsqueeze":
        d = step.attrs["dim"] % (len(shape) + 1)
        new = shape[d] * strides[d] if d < len(shape) else base.itemsize
        return shape[:d] + (1,) + shape[d:], strides[:d] + (new,) + strides[d:]
    fake = np.lib.stride_tricks.as_strided(base, shape, strides, writeable=False)
    out = step(fake)
    if step.op == "expand":
        return out.shape, expand_strides(shape, strides, out.shape, base.itemsize)
    return out.shape, out.strides


def getitem_strides(shape: tuple[int, ...], strides: tuple[int, ...], index: Any,
                    itemsize: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """PyTorch's applySlicing on (shape, strides) for a basic index (ints, slices, None,
    ...): each None is an unsqueeze of the dims not yet indexed."""
    parts = index if isinstance(index, tuple) else (index,)
    used = sum(0 if p is None or p is Ellipsis else 1 for p in parts)
    out_shape: list[int] = []
    out_strides: list[int] = []
    d = 0
    for p in parts:
        if p is None:
            out_shape.append(1)
            out_strides.append(shape[d] * strides[d] if d < len(shape) else itemsize)
        elif p is Ellipsis:
            k = len(shape) - used
            out_shape.extend(shape[d:d + k])
            out_strides.extend(strides[d:d + k])
            d += k
        elif isinstance(p, slice):
            start, stop, step = p.indices(shape[d])
            out_shape.append(len(range(start, stop, step)))
            out_strides.append(strides[d] * step)
            d += 1
        else:  # an int: select
            d += 1
    return (tuple(out_shape) + shape[d:]), (tuple(out_strides) + strides[d:])


def expand_strides(shape: tuple[int, ...], strides: tuple[int, ...],
                   target: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """PyTorch's inferExpandGeometry: an expanded dim gets 0; a new leading dim of size
    1 the next dim's size times its stride (of a 0-d tensor: 0, as every dim)."""
    out = [0] * len(target)
    if not shape:
        return tuple(out)
    lead = len(target) - len(shape)
    for i in range(len(target) - 1, -1, -1):
        if i >= lead:
            size, stride = shape[i - lead], strides[i - lead]
        else:
            size = 1
            stride = target[i + 1] * out[i + 1] if i + 1 < len(target) else itemsize
        out[i] = stride if size == target[i] else 0
    return tuple(out)


def overlapping_write(t: Tensor) -> bool:
    """Would writing ``t`` write one memory location twice (an ``expand``-ed tensor)?"""
    array: np.ndarray = t._array
    if array.size == 0:  # numpy gives empty arrays 0 strides; nothing is written twice
        return False
    return any(s == 0 and n > 1 for s, n in zip(array.strides, array.shape, strict=True))
