"""pytest-xdist hooks, registered only when xdist is active on the controller."""

from __future__ import annotations

from typing import Any

import pytest


class XdistHooks:
    """Hand every worker the campaign seed; report what a dead worker was checking."""

    def __init__(self, config: pytest.Config, seed: int) -> None:
        self.config = config
        self.seed = seed

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["cgraph_seed"] = self.seed

    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        from pytest_cgraph.crashes import handle_crashed_item

        handle_crashed_item(self.config, crashitem, report)
