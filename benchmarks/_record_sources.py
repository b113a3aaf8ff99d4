"""A pytest plugin for benchmarks: append every program source the campaign checks to a file.

Loaded with ``-p _record_sources`` (``benchmarks/`` on ``PYTHONPATH``) and
``CGRAPH_RECORD_SOURCES=<path>``; the bare loop of ``throughput.py`` then
replays exactly the programs the campaign checked, shrink steps included.
"""

from __future__ import annotations

import json
import os
from typing import Any

from pytest_cgraph.checking import checkers
from pytest_cgraph.failures import Case

_original = checkers.InProcessChecker.check


def _recording(self: checkers.InProcessChecker, case: Case, *args: Any, **kwargs: Any) -> Any:
    with open(os.environ["CGRAPH_RECORD_SOURCES"], "a") as stream:
        stream.write(json.dumps(case.source) + "\n")
    return _original(self, case, *args, **kwargs)


checkers.InProcessChecker.check = _recording  # type: ignore[method-assign]
