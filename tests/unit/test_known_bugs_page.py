"""docs/known-bugs.md is in step with the shipped bugs files (scripts/known_bugs_page.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "known_bugs_page", REPO / "scripts" / "known_bugs_page.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["known_bugs_page"] = module
    spec.loader.exec_module(module)
    return module


known_bugs_page = _load()


def test_the_page_lists_every_bug_of_every_baseline_as_its_bugs_file_says() -> None:
    page = known_bugs_page.PAGE.read_text()
    assert known_bugs_page.stale(page) == []


def test_a_bug_retitled_in_its_bugs_file_makes_the_page_stale() -> None:
    page = known_bugs_page.PAGE.read_text()
    first = next(line for line in page.splitlines() if line.startswith("### `"))
    assert known_bugs_page.stale(page.replace(first, first.upper())) == [first]


def test_silent_bugs_come_first_in_each_baseline() -> None:
    page = known_bugs_page.PAGE.read_text()
    for section in page.split("\n## ")[1:]:
        severities = [
            line.split("(", 1)[1].split(")", 1)[0]
            for line in section.splitlines()
            if line.startswith("### `")
        ]
        order = ["silent", "metadata", "crash", "unsupported"]
        assert severities == sorted(severities, key=order.index)
