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


def test_each_bug_is_listed_once_and_silent_bugs_to_file_come_first() -> None:
    page = known_bugs_page.PAGE.read_text()
    lines = [line for line in page.splitlines() if line.startswith("### `")]
    ids = [line.split("`")[1] for line in lines]
    assert len(ids) == len(set(ids)) == len(known_bugs_page.page_bugs())
    # The bugs to file first, by severity; then those outside the contract, then the fixed.
    to_file = page.split(f"\n## {known_bugs_page.OUTSIDE} (")[0]
    lines = [line for line in to_file.splitlines() if line.startswith("### `")]
    severities = [line.split("(", 1)[1].split(")", 1)[0] for line in lines]
    order = ["silent", "metadata", "crash", "unsupported"]
    assert severities == sorted(severities, key=order.index)
    assert severities[0] == "silent"


def test_a_bug_outside_the_contract_is_shown_apart_and_not_counted_to_file() -> None:
    entries = known_bugs_page.page_bugs()
    outside = [e for e in entries if e.bug.contract is not None]
    assert outside, "the shipped baselines class some bugs outside the contract"
    page = known_bugs_page.PAGE.read_text()
    heading = f"\n## {known_bugs_page.OUTSIDE} ({len(outside)})\n"
    assert heading in page
    after = page.split(heading)[1].split("\n## ")[0]
    for entry in outside:
        assert known_bugs_page.bug_line(entry.bug) in after
        assert not entry.to_file
    to_file = sum(e.to_file for e in entries)
    assert f"{len(entries)} bugs: {to_file} to file (" in page
    # ... and of those, how many the tracker has already, by their upstream lines.
    assert known_bugs_page.tracked("pytorch/pytorch#197893 (open)") == "reported"
    assert known_bugs_page.tracked("pytorch/pytorch#1 (related: another op)") == "related"
    assert known_bugs_page.tracked("none found (2026-12-07; searched: ...)") == "none found"
    assert "Of the bugs to file, on PyTorch's tracker: " in page


def test_a_contract_or_provenance_changed_in_a_bugs_file_makes_the_page_stale() -> None:
    page = known_bugs_page.PAGE.read_text()
    entry = next(e for e in known_bugs_page.page_bugs() if e.bug.contract is not None)
    found, contract = known_bugs_page.standing_lines(entry)[:2]
    assert contract.startswith("- outside torch.compile's contract (")
    assert found.startswith("- found by: ")
    at = page.index(known_bugs_page.bug_line(entry.bug))
    for line in (contract, found):
        # Dropped from this bug's section only: other bugs may share the line.
        edited = page[:at] + page[at:].replace(line + "\n", "", 1)
        assert known_bugs_page.stale(edited) == [line]


def test_regenerating_keeps_a_bug_s_script_only_while_its_forms_are_unchanged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    page = known_bugs_page.PAGE.read_text()
    kept = known_bugs_page.examples_of(page)
    assert len(kept) == len(known_bugs_page.page_bugs())
    first, *rest = known_bugs_page.page_bugs()
    # One bug's forms changed since the page was written: its script is made anew.
    kept[first.bug.id] = ("- forms in `torch-2.14`: `another.toml`", "stale example\n")
    made = []
    monkeypatch.setattr(
        known_bugs_page, "example", lambda entry, pythons: made.append(entry.bug.id) or "new\n"
    )
    text = known_bugs_page._entry(first, {}, True, kept)
    assert made == [first.bug.id] and text.endswith("new\n")
    text = known_bugs_page._entry(rest[0], {}, True, kept)
    assert made == [first.bug.id] and text.endswith(kept[rest[0].bug.id][1])


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
