"""pytest-cgraph: equivalence checks of PyTorch's CUDA-graph compile path against eager.

The public names are loaded on first use, so that importing the pytest plugin
(``pytest_cgraph.plugin.hooks``, which imports this package) costs no ``import torch``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import lazy_loader

if TYPE_CHECKING:
    # For type checkers and IDEs only: at run time the names load on first use.
    from pytest_cgraph.checking.runner import CheckReport as CheckReport
    from pytest_cgraph.checking.runner import check_equivalent as check_equivalent
    from pytest_cgraph.checking.runner import check_source as check_source
    from pytest_cgraph.errors import CgraphError as CgraphError
    from pytest_cgraph.errors import ConfigurationError as ConfigurationError
    from pytest_cgraph.errors import EquivalenceError as EquivalenceError
    from pytest_cgraph.errors import InvalidProgram as InvalidProgram

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "checking.runner": ["CheckReport", "check_equivalent", "check_source"],
        "errors": ["CgraphError", "ConfigurationError", "EquivalenceError", "InvalidProgram"],
    },
)
