"""``python -m pytest_cgraph.issue FILE|BASELINE``: reports ready for PyTorch's tracker.

The command's name; the report itself is :mod:`pytest_cgraph.recording.issue`.
"""

from __future__ import annotations

import sys

from pytest_cgraph.recording.issue import build_report, main

__all__ = ["build_report", "main"]

if __name__ == "__main__":
    sys.exit(main())
