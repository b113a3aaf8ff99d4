"""How a check ends when it does not pass. Torch-free, so the plugin can name them cheaply."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_cgraph.oracle.difference import Difference


class CgraphError(Exception):
    """What every error pytest-cgraph raises derives from: ``except CgraphError``
    catches the project's own errors, never torch's or a test's.

    The signals that must pass through ``except Exception`` (a program's time
    limit, a spent budget, a controller gone) are ``BaseException`` instead,
    and warnings stay warnings.
    """


class EquivalenceError(CgraphError, AssertionError):
    """The compiled program observably differs from eager.

    An ``AssertionError`` so that pytest reports it as a test failure (not an
    error) and so that Hypothesis treats it as a falsifying example. The
    message is short (torch's traceback of a crash is on ``difference``).
    """

    def __init__(self, difference: Difference, context: str = "") -> None:
        message = difference.describe()
        super().__init__(f"{message}\n{context}" if context else message)
        self.difference = difference
        self.context = context


class InvalidProgram(CgraphError):
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

    @property
    def reason(self) -> str:
        """What eager raised, in one line, without the iteration: groups invalid programs."""
        return f"{type(self.cause).__name__}: {_first_line(self.cause)}"


class EagerDisagrees(InvalidProgram):
    """Eager, run again from fresh copies, differs from itself: no reference either.

    A program that reads uninitialised memory (a tensor grown by ``resize_``,
    an ``empty`` never written), or draws randomness the oracle's seeding does
    not reach, gives other eager results each run; its difference from
    compiled code would be noise, not a compiler bug, so it is invalid.
    """

    def __init__(self, iteration: int, how: str) -> None:
        cause = RuntimeError(f"eager disagrees with itself when run again: {how}")
        super().__init__(iteration, "a second eager run", cause)
        self.args = (f"{cause} (iteration {iteration})",)  # it raised nothing


class ConfigurationError(CgraphError, ValueError):
    """A backend, device or option value cannot be used; the message is one line."""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"
