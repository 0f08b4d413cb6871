"""The tensor values a paused run can show: this iteration's and a few before it.

The child keeps references to op outputs, leaves and gradients as they are produced, so a
value request is answered from memory without re-running anything. Memory is bounded:

- ``KEEP_ITERATIONS`` (2) finished iterations are kept besides the current one;
- all kept values together stay under ``MAX_BYTES`` (256 MiB): past it the oldest
  finished iteration is dropped first, then the current iteration's oldest values.

Values are kept by reference, not copied (copying every op output would double the run's
memory traffic): a tensor later modified in place (a parameter after ``optimizer.step()``)
shows its new contents.
"""

from __future__ import annotations

from collections import deque

import numpy as np

KEEP_ITERATIONS = 2
MAX_BYTES = 256 * 1024 * 1024


class _Iteration:
    __slots__ = ("index", "values", "grads", "nbytes")

    def __init__(self, index: int) -> None:
        self.index = index
        self.values: dict[int, np.ndarray] = {}
        self.grads: dict[int, np.ndarray] = {}
        self.nbytes = 0


class ValueStore:
    """Tensor id -> array for recent iterations, under a byte cap.

    >>> store = ValueStore()
    >>> store.put(7, np.ones(3))
    >>> store.get(7)
    array([1., 1., 1.])
    """

    def __init__(self, keep_iterations: int = KEEP_ITERATIONS, max_bytes: int = MAX_BYTES) -> None:
        self.keep_iterations = keep_iterations
        self.max_bytes = max_bytes
        self.current = _Iteration(1)
        self.previous: deque[_Iteration] = deque()
        self.nbytes = 0

    def new_iteration(self, index: int) -> None:
        if self.current.values or self.current.grads:
            self.previous.append(self.current)
        self.current = _Iteration(index)
        while len(self.previous) > self.keep_iterations:
            self.nbytes -= self.previous.popleft().nbytes

    def put(self, tensor_id: int, array: np.ndarray) -> None:
        self._add(self.current.values, tensor_id, array)

    def put_grad(self, tensor_id: int, array: np.ndarray) -> None:
        self._add(self.current.grads, tensor_id, array)

    def _add(self, table: dict[int, np.ndarray], tensor_id: int, array: np.ndarray) -> None:
        # Called for every op output and backward step: the common case (a new id, under
        # the cap) stays inline.
        cur = self.current
        if tensor_id in table:
            self._put(table, tensor_id, array)
            return
        table[tensor_id] = array
        size = array.nbytes
        cur.nbytes += size
        self.nbytes += size
        if self.nbytes > self.max_bytes:
            self._evict()

    def _put(self, table: dict[int, np.ndarray], tensor_id: int, array: np.ndarray) -> None:
        size = array.nbytes
        old = table.get(tensor_id)
        if old is not None:
            self.current.nbytes -= old.nbytes
            self.nbytes -= old.nbytes
        table[tensor_id] = array
        self.current.nbytes += size
        self.nbytes += size
        if self.nbytes > self.max_bytes:
            self._evict()

    def _evict(self) -> None:
        while self.nbytes > self.max_bytes and self.previous:
            self.nbytes -= self.previous.popleft().nbytes
        cur = self.current
        for table in (cur.grads, cur.values):
            while self.nbytes > self.max_bytes and len(table) > 1:
                dropped = table.pop(next(iter(table)))
                cur.nbytes -= dropped.nbytes
                self.nbytes -= dropped.nbytes

    def get(self, tensor_id: int, grad: bool = False) -> np.ndarray | None:
        """The newest kept value (or gradient) of ``tensor_id``, or None if not kept."""
        for it in (self.current, *reversed(self.previous)):
            found = (it.grads if grad else it.values).get(tensor_id)
            if found is not None:
                return found
        return None

    def __len__(self) -> int:
        return sum(len(it.values) + len(it.grads) for it in (self.current, *self.previous))
