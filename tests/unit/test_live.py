"""The controller's running total: repros written once, findings over time, shares of a budget,
dead records claimed by one process, draws that do not depend on local modules."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_cgraph.checking.guard import InFlight, claim_stale_records, stale_records
from pytest_cgraph.failures import Case, Failure, FailureText, ReproResult, ReproStatus, Shown
from pytest_cgraph.hunting.hunt import Budget
from pytest_cgraph.oracle.difference import Difference, Kind, Place, Role
from pytest_cgraph.plugin.live import LiveRun
from pytest_cgraph.plugin.wire import ItemMessage, WireMismatch
from pytest_cgraph.registry.repro_files import MARKER_LINE
from pytest_cgraph.reporting.stats import RunStats
from pytest_cgraph.strategies.seeded_draws import without_local_constants

WRONG = Difference(Kind.VALUE, 2, Place(Role.OUTPUT, index=0))
SOURCE = "def program():\n    pass\n"


def verified(nodeid: str) -> Failure:
    """A failure as a worker sends it: verified, its text attached, nothing written."""
    case = Case(SOURCE, "aot_eager", "cpu", 5, family="views", nodeid=nodeid, size=7)
    text = f"{MARKER_LINE}\n# size: 7\nprint('repro')\n"
    repro = ReproResult(ReproStatus.VERIFIED, "r/value-output.py", "reproduced", text=text)
    return Failure(case, WRONG, repro)


def stats_with(*failures: Failure, programs: int = 3) -> RunStats:
    """An item's statistics as the controller reads them from a worker's message."""
    stats = RunStats(programs=programs, drawn=programs, campaign=True)
    for failure in failures:
        stats.failures.append(failure)
        stats.count_hit(failure.signature)
    return ItemMessage.unpack(ItemMessage(stats).pack()).stats


def test_a_verified_repro_is_written_once_and_the_report_rewritten_as_it_arrives(
    tmp_path: Path,
) -> None:
    clock = iter(float(second) for second in range(100))
    live = LiveRun(tmp_path / "r", tmp_path / "r.json", {"seed": 1}, 0.0, lambda: next(clock))
    live.write(force=True)
    assert json.loads((tmp_path / "r.json").read_text())["programs"] == 0
    snapshot = live.receive("cgraph::views", "gw0", stats_with(verified("cgraph::views")), rss=9.5)
    [sent] = snapshot.failures
    assert sent.repro is not None and sent.repro.status is ReproStatus.WRITTEN
    assert sent.repro.text is None
    # The item's final report carries the same failure again: not written twice.
    final = live.receive(
        "cgraph::views", "gw0", stats_with(verified("cgraph::views"), programs=5), final=True
    )
    assert final.failures[0].repro is not None
    assert final.failures[0].repro.status is ReproStatus.WRITTEN
    assert [p.name for p in (tmp_path / "r").glob("*.py")] == ["value-output.py"]
    report = json.loads((tmp_path / "r.json").read_text())
    # The item's latest figures replace its earlier ones; nothing is counted twice.
    assert report["programs"] == 5 and report["new_signatures"] == 1
    assert report["complete"] is False and report["seed"] == 1
    assert [entry["signature"] for entry in report["timeline"]] == ["value-output"]
    assert report["timeline"][0]["new"] is True
    assert report["workers"]["gw0"]["peak_rss_mb"] == 9.5
    live.write(force=True, complete=True)
    assert json.loads((tmp_path / "r.json").read_text())["complete"] is True


def test_a_budget_is_dealt_out_over_shards_not_multiplied() -> None:
    assert [share.examples for share in Budget(5).shares(3)] == [2, 2, 1]
    assert [share.examples for share in Budget(2).shares(3)] == [1, 1]  # none with nothing
    assert [share.duration for share in Budget(9, duration=60.0).shares(4)] == [15.0] * 4


def test_a_dead_record_is_claimed_by_one_process_only(tmp_path: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    inflight = InFlight(tmp_path, "cgraph::views")
    inflight.start(Case(SOURCE, "aot_eager", "cpu", 5, nodeid="cgraph::views"), pid=gone.pid)
    [dead] = claim_stale_records(tmp_path)
    assert dead.case.nodeid == "cgraph::views" and not inflight.path.exists()
    # Claimed by a live process (this one): nobody else takes it, nor sees it as stale.
    assert claim_stale_records(tmp_path) == [] and stale_records(tmp_path) == []
    dead.forget()
    assert not list(tmp_path.rglob("*.json"))


def test_campaign_rounds_see_no_constants_of_local_modules(tmp_path: Path) -> None:
    from hypothesis.internal.conjecture import providers

    module = tmp_path / "local_constants_here.py"
    module.write_text("VALUES = (123456789, 98765.4321, 'a local string')\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import local_constants_here  # noqa: F401  (a local module, as Hypothesis sees it)

        assert 123456789 in providers._get_local_constants().integers
        with without_local_constants():
            assert 123456789 not in providers._get_local_constants().integers
        assert 123456789 in providers._get_local_constants().integers
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("local_constants_here", None)


def test_a_program_not_verified_once_is_still_written_when_a_verified_copy_comes(
    tmp_path: Path,
) -> None:
    live = LiveRun(tmp_path / "r", None, {}, 0.0)
    unverified = verified("cgraph::views[0]").with_repro(
        ReproResult(ReproStatus.NOT_REPRODUCIBLE, detail="passed when replayed")
    )
    assert live.store(unverified).repro.status is ReproStatus.NOT_REPRODUCIBLE
    assert live.store(verified("cgraph::views[1]")).repro.status is ReproStatus.WRITTEN
    assert [p.name for p in (tmp_path / "r").glob("*.py")] == ["value-output.py"]


def test_a_dead_program_stays_counted_when_its_item_reports_again(tmp_path: Path) -> None:
    live = LiveRun(tmp_path / "r", None, {}, 0.0)
    live.add_failure("cgraph::views", verified("cgraph::views"))
    live.receive("cgraph::views", "gw0", stats_with(programs=4), final=True)
    total = live.total()
    assert total.programs == 4 and [f.signature for f in total.failures] == ["value-output"]
    assert total.hits["value-output"] == 1


def test_a_workers_failure_text_is_rendered_from_the_failure_as_written(tmp_path: Path) -> None:
    live = LiveRun(tmp_path / "r", None, {}, 0.0)
    failure = verified("cgraph::views")
    sent = FailureText(("1 new failure signature(s) in views programs\n", Shown(failure)))
    assert "verified; the run's controller writes it" in sent.render()
    message = ItemMessage.unpack(ItemMessage(stats_with(failure), 1.0, sent).pack())
    assert message.text == sent  # the record survives the wire whole
    live.receive("cgraph::views", "gw0", message.stats, final=True)
    shown = live.rendered(message.text)
    assert shown.startswith("1 new failure signature(s) in views programs\n")
    assert "repro (written): " in shown and "verified; the run" not in shown
    # A failure this run never stored is shown as it was sent.
    unstored = Failure(Case("def program():\n    return 1\n", "aot_eager", "cpu", 5), WRONG)
    other = FailureText((Shown(unstored.with_repro(ReproResult(ReproStatus.FLAKY))),))
    assert live.rendered(other) == other.render()


def test_a_message_of_another_schema_is_refused_in_one_line() -> None:
    packed = ItemMessage(RunStats()).pack()
    with pytest.raises(
        WireMismatch, match="install the same pytest-cgraph on every host"
    ) as raised:
        ItemMessage.unpack({**packed, "schema": 0})
    assert "\n" not in str(raised.value)


def test_two_known_bugs_of_one_signature_are_each_on_the_timeline(tmp_path: Path) -> None:
    clock = iter(float(second) for second in range(100))
    live = LiveRun(tmp_path / "r", tmp_path / "r.json", {}, 0.0, lambda: next(clock))
    first = RunStats(programs=1, drawn=1, campaign=True)
    first.count_hit("value-output", "known/first.py")
    live.receive("cgraph::views", "gw0", first)
    later = RunStats(programs=2, drawn=2, campaign=True)
    later.count_hit("value-output", "known/first.py")
    later.count_hit("value-output", "known/second.py")
    live.receive("cgraph::views", "gw0", later)
    live.write(force=True)
    timeline = json.loads((tmp_path / "r.json").read_text())["timeline"]
    assert [(entry["repro"], entry["new"]) for entry in timeline] == [
        ("known/first.py", False),
        ("known/second.py", False),
    ]
    assert timeline[0]["seconds"] < timeline[1]["seconds"]


def test_each_backend_of_a_shared_campaign_has_its_first_meeting_on_the_timeline(
    tmp_path: Path,
) -> None:
    clock = iter(float(second) for second in range(100))
    live = LiveRun(tmp_path / "r", tmp_path / "r.json", {}, 0.0, lambda: next(clock))
    on_cudagraphs = RunStats(programs=1, drawn=1, campaign=True)
    on_cudagraphs.count_hit("value-output", "known/first.py", backend="cudagraphs")
    live.receive("cgraph::views[cudagraphs]", "gw0", on_cudagraphs)
    on_inductor = RunStats(programs=2, drawn=2, campaign=True)
    on_inductor.count_hit("value-output", "known/first.py", backend="inductor")
    on_inductor.count_hit("value-output", "known/first.py", backend="inductor")
    live.receive("cgraph::views[inductor]", "gw1", on_inductor)
    live.write(force=True)
    timeline = json.loads((tmp_path / "r.json").read_text())["timeline"]
    assert [(entry["repro"], entry["backend"]) for entry in timeline] == [
        ("known/first.py", "cudagraphs"),
        ("known/first.py", "inductor"),
    ]
    assert timeline[0]["seconds"] < timeline[1]["seconds"]
