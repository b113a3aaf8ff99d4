"""Run statistics: counted per item, carried as JSON, merged on the controller, summarised."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

from pytest_cgraph.failures import Case, Failure, Outcome, ReproResult, ReproStatus, Verdict
from pytest_cgraph.oracle.difference import Difference, Kind, Place, Role
from pytest_cgraph.stats import RunStats, summary_lines, write_report

WRONG = Difference(Kind.VALUE, 2, Place(Role.OUTPUT, index=0))


def failure(nodeid: str, repro: ReproResult | None) -> Failure:
    case = Case("def program():\n    pass\n", "aot_eager", "cpu", 5, family="views", nodeid=nodeid)
    return Failure(case, WRONG, repro)


def item_stats(nodeid: str, repro: ReproResult | None) -> RunStats:
    stats = RunStats(campaign=True, seconds=1.5)
    stats.count_program("views", {"add", "mul"})
    stats.count_program("views", {"add"}, drawn=False)
    stats.count_outcome(Outcome(Verdict.INVALID, reason="RuntimeError: shape"))
    stats.count_outcome(Outcome(Verdict.FAIL, WRONG))
    stats.count_outcome(Outcome.timed_out(3), known_repro="known/timeout-program.py")
    stats.failures.append(failure(nodeid, repro))
    return stats


def test_stats_survive_json_and_merging_adds_every_count() -> None:
    written = ReproResult(ReproStatus.WRITTEN, "/r/value-output.py", "reproduced")
    first = item_stats("cgraph::views", written)
    second = item_stats("cgraph::mutation", ReproResult(ReproStatus.FLAKY, detail="passed"))
    again = RunStats.from_json(json.loads(json.dumps(first.to_json())))
    assert again == first
    total = RunStats()
    total.merge(again)
    total.merge(RunStats.from_json(second.to_json()))
    assert (total.programs, total.drawn, total.invalid, total.seconds) == (4, 2, 2, 3.0)
    assert total.campaign
    assert total.families == Counter(views=4)
    assert total.features == Counter(add=4, mul=2)
    assert total.invalid_reasons == Counter({"RuntimeError: shape": 2})
    assert total.hits == Counter({"value-output": 2, "timeout-program": 2})
    assert total.known == {"timeout-program": "known/timeout-program.py"}
    assert [f.case.nodeid for f in total.failures] == ["cgraph::views", "cgraph::mutation"]
    assert list(total.by_signature()) == ["value-output"]
    assert total.verified_repros() == 1  # one signature, verified by its written repro


def test_a_pass_counts_its_compiles_and_whether_it_captured() -> None:
    from pytest_cgraph.oracle.engine import CheckReport

    stats = RunStats()
    for captured in (0, 2):
        report = CheckReport(5, "cudagraphs", "cpu", 1, captured, 1, {"cpu device": 1}, 0)
        stats.count_outcome(Outcome(Verdict.PASS, report=report))
    assert (stats.compiles, stats.captured, stats.skipped) == (2, 1, Counter({"cpu device": 2}))


def test_the_summary_says_counts_coverage_failures_and_known_bugs() -> None:
    stats = item_stats("cgraph::views", ReproResult(ReproStatus.WRITTEN, "/r/value-output.py"))
    lines = summary_lines(stats, 2.0, ["add", "mul", "sub"])
    assert lines[0] == (
        "programs: 2 checked (1 drawn, 1 while shrinking), 1 invalid (eager raised), "
        "1.0 programs/s over 2.0 s"
    )
    assert "per family: views 2" in lines
    assert "  invalid x1: RuntimeError: shape" in lines
    assert "op coverage: 2/3 ops; least used: sub 0, mul 1, add 2" in lines
    assert "failures: 1 new signature(s), 1 with a verified repro" in lines
    assert "  value-output (value, views, iteration 2, 1 failing programs): /r/value-output.py" in (
        lines
    )
    assert lines[-2:] == [
        "known: 1 signature(s) seen again, not failures",
        "  timeout-program (1 failing programs): known/timeout-program.py",
    ]


def test_the_summary_says_which_failure_was_not_shrunk() -> None:
    stats = RunStats(campaign=True)
    stats.failures.append(dataclasses.replace(failure("cgraph::views", None), shrunk=False))
    (line,) = [line for line in summary_lines(stats, 1.0, ["add"]) if "value-output" in line]
    assert "(value, views, iteration 2, 1 failing programs, not shrunk): " in line


def test_a_run_of_marked_tests_alone_has_no_campaign_lines() -> None:
    stats = RunStats()
    stats.count_program("marker", set())
    stats.failures.append(failure("test_x.py::test_y", None))
    lines = summary_lines(stats, 1.0, ["add"])
    assert lines[0].startswith("programs: 1 checked, 0 invalid")
    assert not any(line.startswith(("per family", "op coverage")) for line in lines)
    assert "  value-output (value, views, iteration 2, 1 failing programs): " in lines[-1]
    assert lines[-1].endswith("test_x.py::test_y (no repro)")


def test_the_json_report_holds_the_run_and_its_wall_time(tmp_path: Path) -> None:
    stats = item_stats("cgraph::views", None)
    path = tmp_path / "deep" / "report.json"
    write_report(path, stats, 12.3456, {"backend": "aot_eager", "seed": 4})
    data = json.loads(path.read_text())
    assert (data["seconds"], data["check_seconds"]) == (12.346, 1.5)
    assert (data["backend"], data["seed"], data["new_signatures"]) == ("aot_eager", 4, 1)
    assert data["failures"][0]["hits"] == 1
    assert data["known"] == [
        {"signature": "timeout-program", "hits": 1, "repro": "known/timeout-program.py"}
    ]
    assert not path.with_name("report.json.tmp").exists()
