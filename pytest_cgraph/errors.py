"""Exceptions raised by the equivalence check.

Kept free of torch imports so that the plugin's hook module can name them
without paying for ``import torch``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_cgraph.compare import Difference


class EquivalenceError(AssertionError):
    """The compiled program observably differs from eager.

    An ``AssertionError`` so that pytest reports it as a test failure (not an
    error) and so that Hypothesis treats it as a falsifying example.
    """

    def __init__(self, difference: Difference, context: str = "") -> None:
        message = difference.describe()
        super().__init__(f"{message}\n{context}" if context else message)
        self.difference = difference


class InvalidProgram(Exception):
    """Eager PyTorch itself raised, so the program has no reference behaviour.

    This is not a compiler bug: compiled code may legitimately accept programs
    that eager rejects (PyTorch's fuzzer rules), so campaigns count these
    instead of failing on them.
    """

    def __init__(self, iteration: int, phase: str, cause: BaseException) -> None:
        super().__init__(
            f"eager raised {type(cause).__name__} during {phase} of iteration {iteration}: "
            f"{_first_line(cause)}"
        )
        self.iteration = iteration
        self.phase = phase
        self.cause = cause


class ConfigurationError(ValueError):
    """A backend, device or option value cannot be used; the message is one line."""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"
