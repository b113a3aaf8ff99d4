"""The inner pytest runs of the plugin tests: without xdist workers, and with two.

The xdist variant starts three more processes that each import torch, on a
machine whose two cores already run the suite's own workers: it is the
costliest part of those tests and checks the same output through another
transport. So it is deep (``-m deep``, run by CI after the default suite);
the default suite keeps xdist covered by the same-seed and dead-worker tests.
"""

from __future__ import annotations

import pytest

WORKERS = [
    pytest.param([], id="plain"),
    pytest.param(["-n", "2"], id="xdist", marks=pytest.mark.deep),
]
