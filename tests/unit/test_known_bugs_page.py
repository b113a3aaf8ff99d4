"""docs/known-bugs.md is in step with the shipped bugs files (scripts/known_bugs_page.py)."""

from __future__ import annotations

from cgraph_doubles.scripts import load_script

known_bugs_page = load_script("known_bugs_page")


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
