"""pytest-cgraph: equivalence checks of PyTorch's CUDA-graph compile path against eager.

The public names are loaded on first use, so that importing the pytest plugin
(``pytest_cgraph.plugin``, which imports this package) costs no ``import torch``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_cgraph.errors import ConfigurationError, EquivalenceError, InvalidProgram
    from pytest_cgraph.runner import CheckReport, check_equivalent

__all__ = [
    "CheckReport",
    "ConfigurationError",
    "EquivalenceError",
    "InvalidProgram",
    "check_equivalent",
]

_HOMES = {
    "CheckReport": "pytest_cgraph.runner",
    "check_equivalent": "pytest_cgraph.runner",
    "ConfigurationError": "pytest_cgraph.errors",
    "EquivalenceError": "pytest_cgraph.errors",
    "InvalidProgram": "pytest_cgraph.errors",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'pytest_cgraph' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
