"""``python -m pytest_cgraph.plain``: a repro file as a plain torch script and a report to file.

The command keeps this name: scripts run it, and repro files (those written
by earlier versions too) import it by name for ``--issue``; its code is
:mod:`pytest_cgraph.recording.plain`.
"""

from __future__ import annotations

import sys

from pytest_cgraph.recording.issue import ready_to_file
from pytest_cgraph.recording.plain import main, make_plain

__all__ = ["main", "make_plain", "ready_to_file"]

if __name__ == "__main__":
    sys.exit(main())
