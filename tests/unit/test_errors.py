"""Every error pytest-cgraph raises derives from ``CgraphError``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import pytest_cgraph
from pytest_cgraph import CgraphError, ConfigurationError, EquivalenceError, InvalidProgram

#: Signals that must pass through ``except Exception``: BaseException on purpose.
SIGNALS = {"ProgramTimeout", "BudgetSpent", "ControllerGone"}


def _project_exceptions() -> list[type[BaseException]]:
    found = {}
    for module in pkgutil.walk_packages(pytest_cgraph.__path__, "pytest_cgraph."):
        loaded = importlib.import_module(module.name)
        for _, value in inspect.getmembers(loaded, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__.startswith("pytest_cgraph"):
                found[value.__qualname__] = value
    return list(found.values())


def test_every_project_error_is_a_cgraph_error() -> None:
    errors = _project_exceptions()
    assert len(errors) >= 15
    for error in errors:
        if issubclass(error, Warning) or error.__name__ in SIGNALS:
            assert not issubclass(error, CgraphError), error
            continue
        assert issubclass(error, CgraphError), f"{error.__module__}.{error.__qualname__}"


@pytest.mark.parametrize(
    ("error", "builtin"),
    [(EquivalenceError, AssertionError), (ConfigurationError, ValueError)],
)
def test_the_public_errors_keep_the_builtin_they_were(
    error: type[Exception], builtin: type[Exception]
) -> None:
    # pytest reports an AssertionError as a test failure, and callers catch ValueError.
    assert issubclass(error, builtin) and issubclass(error, CgraphError)
    assert issubclass(InvalidProgram, CgraphError)
