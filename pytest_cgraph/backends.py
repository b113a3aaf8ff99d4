"""``python -m pytest_cgraph.backends [MODULE ...]``: the backend names ``--cgraph-backend`` takes.

The command keeps this name (error messages and docs name it); its code is
:mod:`pytest_cgraph.checking.backends`.
"""

from __future__ import annotations

import sys

from pytest_cgraph.checking.backends import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
