"""docs/known-bugs.md is in step with the shipped bugs files (scripts/known_bugs_page.py)."""

from __future__ import annotations

import pytest

from cgraph_doubles.scripts import load_script

known_bugs_page = load_script("known_bugs_page")


def test_the_page_lists_every_bug_of_every_baseline_as_its_bugs_file_says() -> None:
    page = known_bugs_page.PAGE.read_text()
    assert known_bugs_page.stale(page) == []


def test_a_bug_retitled_in_its_bugs_file_makes_the_page_stale() -> None:
    page = known_bugs_page.PAGE.read_text()
    first = next(line for line in page.splitlines() if line.startswith("### `"))
    assert known_bugs_page.stale(page.replace(first, first.upper())) == [first]


def test_each_bug_is_listed_once_and_silent_bugs_come_first() -> None:
    page = known_bugs_page.PAGE.read_text()
    lines = [line for line in page.splitlines() if line.startswith("### `")]
    ids = [line.split("`")[1] for line in lines]
    assert len(ids) == len(set(ids)) == len(known_bugs_page.page_bugs())
    severities = [line.split("(", 1)[1].split(")", 1)[0] for line in lines]
    order = ["silent", "metadata", "crash", "unsupported"]
    assert severities == sorted(severities, key=order.index)
    assert severities[0] == "silent"


def test_a_bug_held_by_two_baselines_shows_both_and_what_each_torch_gave() -> None:
    entry = next(e for e in known_bugs_page.page_bugs() if len(e.held) > 1 and e.checked)
    held = [directory.name for directory, _ in entry.held]
    assert held == sorted(held, key=lambda name: known_bugs_page._release(name), reverse=True)
    text = known_bugs_page._entry(entry, {}, with_examples=False)
    for directory, bug in entry.held:
        assert f"`{directory.name}` ({len(bug.forms)} forms)" in text
    for version, result in entry.checked.items():
        assert f"{version}: {result}" in text


def test_a_baseline_that_gained_a_bug_makes_the_page_stale() -> None:
    page = known_bugs_page.PAGE.read_text()
    directory = known_bugs_page.baselines()[0]
    count = len(known_bugs_page.read_bugs(directory))
    line = known_bugs_page.baselines_line(directory, count)
    assert line in page
    older = page.replace(line, known_bugs_page.baselines_line(directory, count - 1))
    assert known_bugs_page.stale(older) == [line]


def test_a_bug_written_by_hand_without_a_form_is_listed_with_none() -> None:
    # A bug found where no repro file could be written (a fixture check on a
    # GPU) is on file by its mechanism alone until a form is recorded.
    formless = [e for e in known_bugs_page.page_bugs() if not e.held[0][1].forms]
    if not formless:
        pytest.skip("every shipped bug has a form now")
    entry = formless[0]
    text = known_bugs_page._entry(entry, {}, with_examples=False)
    assert "- forms in `" in text and ": none yet" in text
    assert known_bugs_page.example(entry, {}).startswith("No form recorded yet")
