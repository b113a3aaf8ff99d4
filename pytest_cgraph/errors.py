"""The exceptions of the public API.

Kept free of torch imports so that the plugin's hook module can name them
without paying for ``import torch``; the check's own live with the oracle.
"""

from __future__ import annotations

from pytest_cgraph.oracle.errors import (
    CgraphError,
    ConfigurationError,
    EquivalenceError,
    InvalidProgram,
)

__all__ = ["CgraphError", "ConfigurationError", "EquivalenceError", "InvalidProgram"]
