"""``python -m pytest_cgraph.report``: a campaign's JSON report as one HTML page.

The command keeps this name (scripts run it); its code is
:mod:`pytest_cgraph.reporting.report`.
"""

from __future__ import annotations

import sys

from pytest_cgraph.reporting.report import load_report, main, render_html, write_html

__all__ = ["load_report", "main", "render_html", "write_html"]

if __name__ == "__main__":
    sys.exit(main())
