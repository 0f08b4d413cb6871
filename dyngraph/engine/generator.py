"""``torch.Generator``: a seedable stream of random numbers that ``randn(generator=g)``,
``randperm``, ``DataLoader(shuffle=True, generator=g)`` and ``random_split`` draw from.

Each wraps a numpy ``Generator`` (PCG64): the same seed gives the same numbers on every
run and machine, though not PyTorch's numbers. ``default_generator`` is the global one
that ``dyngraph.manual_seed`` reseeds.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

DEFAULT_SEED = 67280421310721  # PyTorch's default seed for a new Generator


class Generator:
    """>>> import dyngraph as torch
    >>> g = torch.Generator().manual_seed(42)
    >>> torch.randperm(4, generator=g).tolist() == \\
    ...     torch.randperm(4, generator=torch.Generator().manual_seed(42)).tolist()
    True
    """

    def __init__(self, device: Any = "cpu") -> None:
        if str(device) not in ("cpu", "cpu:0"):
            raise NotImplementedError(f"dyngraph runs on the CPU only (asked for {device!r})")
        self._seed = DEFAULT_SEED
        self._rng = np.random.default_rng(DEFAULT_SEED)

    @property
    def numpy(self) -> np.random.Generator:
        """The numpy generator the numbers come from."""
        return self._rng

    @property
    def device(self) -> str:
        return "cpu"

    def manual_seed(self, seed: int) -> Generator:
        self._seed = int(seed)
        self._rng = np.random.default_rng(self._seed)
        return self

    def seed(self) -> int:
        """Reseed from the operating system; return the seed used."""
        value = int(np.random.default_rng().integers(2**63))
        self.manual_seed(value)
        return value

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> Any:
        """The stream's position, as a uint8 tensor (PyTorch's type for it)."""
        from .tensor import _wrap

        state = json.dumps({"seed": self._seed, "numpy": self._rng.bit_generator.state})
        return _wrap(np.frombuffer(state.encode(), dtype=np.uint8).copy())

    def set_state(self, new_state: Any) -> Generator:
        array = new_state._array if hasattr(new_state, "_array") else np.asarray(new_state)
        try:
            state = json.loads(np.asarray(array, dtype=np.uint8).tobytes().decode())
            rng = np.random.default_rng()
            rng.bit_generator.state = state["numpy"]
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
            raise RuntimeError(f"Generator.set_state: not a dyngraph generator state ({e})"
                               ) from None
        self._seed, self._rng = int(state["seed"]), rng
        return self

    def __repr__(self) -> str:
        return f"<dyngraph.Generator object at {id(self):#x}>"


class _DefaultGenerator(Generator):
    """The global generator: its numbers are those of ``dyngraph.manual_seed``'s stream."""

    def __init__(self) -> None:
        self._seed = DEFAULT_SEED

    @property  # type: ignore[override]
    def _rng(self) -> np.random.Generator:
        from . import creation

        return creation.generator()

    @_rng.setter
    def _rng(self, rng: np.random.Generator) -> None:
        from . import creation

        creation._rng = rng

    def manual_seed(self, seed: int) -> Generator:
        from . import creation

        creation.manual_seed(seed)
        self._seed = int(seed)
        return self


default_generator = _DefaultGenerator()


def manual_seed(seed: int) -> Generator:
    """Seed the global generator (creation functions, dropout, init, shuffling) and return
    it, as ``torch.manual_seed`` does."""
    return default_generator.manual_seed(seed)


def initial_seed() -> int:
    """The seed last given to ``manual_seed``."""
    return default_generator.initial_seed()


def numpy_rng(generator: Generator | None) -> np.random.Generator:
    """The numpy generator behind ``generator=`` (the global one for None)."""
    if generator is None:
        from . import creation

        return creation.generator()
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be a dyngraph.Generator, not {type(generator).__name__}")
    return generator._rng
