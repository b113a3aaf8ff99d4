"""pytest-xdist hooks, registered only when xdist is active on the controller."""

from __future__ import annotations

from typing import Any


class XdistHooks:
    """Hand every worker the campaign seed the controller chose."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["cgraph_seed"] = self.seed
