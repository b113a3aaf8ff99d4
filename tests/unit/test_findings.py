"""The run's findings: a set per process, shared through a directory by a machine's workers."""

from __future__ import annotations

from pathlib import Path

from pytest_cgraph.hunting.findings import FoundSignatures

SIGNATURE = "crash-compiled_call-AssertionError-Encountered_a_set_on_a_graph_367ce1"


def test_workers_sharing_a_directory_see_each_others_findings(tmp_path: Path) -> None:
    gw0, gw1 = FoundSignatures(tmp_path), FoundSignatures(tmp_path)
    assert SIGNATURE not in gw1
    gw0.add(SIGNATURE)
    assert SIGNATURE in gw1 and "value-output" not in gw1
    assert set(gw1) == {SIGNATURE} and len(gw0) == 1
    assert not list(tmp_path.glob(".*.part"))  # written whole, then renamed


def test_without_a_directory_the_set_is_the_process_own(tmp_path: Path) -> None:
    alone, other = FoundSignatures(), FoundSignatures(tmp_path)
    alone.add(SIGNATURE)
    assert SIGNATURE in alone and SIGNATURE not in other
    assert list(tmp_path.iterdir()) == []


def test_a_directory_removed_at_the_end_of_the_run_loses_nothing_already_known(
    tmp_path: Path,
) -> None:
    shared = tmp_path / "found"
    shared.mkdir()
    found = FoundSignatures(shared)
    found.add("value-output")
    shared.joinpath(next(p.name for p in shared.iterdir())).unlink()
    shared.rmdir()
    found.add(SIGNATURE)  # no error: the controller removed the directory
    assert {"value-output", SIGNATURE} <= set(found) and SIGNATURE in found
