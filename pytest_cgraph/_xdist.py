"""pytest-xdist hooks, registered only when xdist is active on the controller."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_cgraph.options import OPTIONS_KEY


class XdistHooks:
    """Hand every worker the campaign seed, database, the controller's known bugs and
    the directory of the run's findings; report what a dead worker was checking."""

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        # A worker that finished sends the programs of dead workers it
        # found in its directory (see pytest_cgraph.crashes).
        from pytest_cgraph.crashes import DEAD_KEY, receive_dead_programs

        messages = getattr(node, "workeroutput", {}).get(DEAD_KEY)
        if messages:
            receive_dead_programs(self.config, messages)

    def __init__(self, config: pytest.Config, seed: int) -> None:
        self.config = config
        self.seed = seed

    def pytest_configure_node(self, node: Any) -> None:
        from pytest_cgraph.session import FOUND_INPUT, KNOWN_INPUT, found_directory, shared_entries

        node.workerinput["cgraph_seed"] = self.seed
        found = found_directory(self.config)
        if found is not None:
            node.workerinput[FOUND_INPUT] = found
        # Read for each worker, a replacement too: it knows what was written since.
        node.workerinput[KNOWN_INPUT] = shared_entries(self.config)
        # Resolved here: a worker started in another directory uses the same database.
        database = self.config.stash[OPTIONS_KEY].database
        if database is not None:
            node.workerinput["cgraph_database"] = str(database)

    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        from pytest_cgraph.crashes import handle_crashed_item

        handle_crashed_item(self.config, crashitem, report)
