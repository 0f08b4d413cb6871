"""The numpy engine. Importing any of its modules binds Tensor's methods and operators
(``methods.py``): ``dyngraph``'s package root loads the engine only on first use."""

from . import methods  # noqa: F401
