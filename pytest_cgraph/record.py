"""``python -m pytest_cgraph.record``: record a hand-written program as a known bug.

The command keeps this name (repro files and scripts run it); its code is
:mod:`pytest_cgraph.recording.record`.
"""

from __future__ import annotations

import sys

from pytest_cgraph.recording.record import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
