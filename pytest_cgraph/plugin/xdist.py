"""pytest-xdist hooks, registered only when xdist is active on the controller."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest

from pytest_cgraph.plugin.options import OPTIONS, OPTIONS_KEY, OptionKind


class XdistHooks:
    """Hand every worker the campaign seed, database, the controller's known bugs and
    the directory of the run's findings, and the option values as given, whatever
    directory it runs in; report what a dead worker was checking."""

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        # A worker that finished sends the programs of dead workers it
        # found in its directory (see pytest_cgraph.plugin.crashes).
        from pytest_cgraph.plugin.crashes import receive_dead_programs
        from pytest_cgraph.plugin.wire import DEAD_KEY, ending_the_run_on_mismatch

        messages = getattr(node, "workeroutput", {}).get(DEAD_KEY)
        if messages:
            with ending_the_run_on_mismatch():
                receive_dead_programs(self.config, messages)

    def __init__(self, config: pytest.Config, seed: int) -> None:
        self.config = config
        self.seed = seed

    def pytest_xdist_setupnodes(self, config: pytest.Config) -> None:
        """Give xdist every ``--cgraph-* VALUE`` as the one word ``--cgraph-*=VALUE``.

        For a worker that is not a local process in the controller's
        directory (``--tx popen//chdir=...``, ``ssh=...``), xdist rewrites
        every command-line word that is an existing path relative to an
        rsync root, and stops the run with an internal error for one that
        is under none: ``--cgraph-database /abs/dir`` hands it the word
        ``/abs/dir``. Joined, the value is no path, and argparse reads it alike.
        """
        params = config.invocation_params
        args = joined_option_values(params.args)
        if args != params.args:
            # Read by xdist as it sets up each node, after this hook.
            config.invocation_params = dataclasses.replace(params, args=args)

    def pytest_configure_node(self, node: Any) -> None:
        from pytest_cgraph.plugin.session import (
            FOUND_INPUT,
            KNOWN_INPUT,
            found_directory,
            shared_entries,
        )

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
        from pytest_cgraph.plugin.crashes import handle_crashed_item

        handle_crashed_item(self.config, crashitem, report)


def joined_option_values(args: Sequence[Any]) -> tuple[Any, ...]:
    """``args`` with each ``--cgraph-*`` option that takes a value and its value one word.

    The words are ones pytest parsed already, so the word after such a flag
    is its value; after ``--`` every word is left as it is.
    """
    takes_value = {option.flag for option in OPTIONS if option.kind is not OptionKind.FLAG}
    joined: list[Any] = []
    words = iter(args)
    for word in words:
        if word == "--":
            joined += [word, *words]
            break
        elif str(word) in takes_value:
            value = next(words, None)
            joined.append(word if value is None else f"{word}={value}")
        else:
            joined.append(word)
    return tuple(joined)
