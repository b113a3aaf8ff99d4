"""Run statistics: counted per item, carried as JSON, merged on the controller, summarised."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

import pytest_cgraph
from pytest_cgraph.failures import Case, Failure, Outcome, ReproResult, ReproStatus, Verdict
from pytest_cgraph.oracle.difference import Difference, Kind, Place, Role
from pytest_cgraph.registry.entries import read_bugs
from pytest_cgraph.reporting.stats import (
    RunStats,
    iterations_words,
    report_data,
    summary_lines,
    write_report,
)

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
    # New and known failing programs apart: one signature may be both.
    assert total.hits == Counter({"value-output": 2})
    assert total.known_hits == Counter({("timeout-program", "known/timeout-program.py"): 2})
    assert [f.case.nodeid for f in total.failures] == ["cgraph::views", "cgraph::mutation"]
    assert list(total.by_signature()) == ["value-output"]
    assert total.verified_repros() == 1  # one signature, verified by its written repro


def test_the_iterations_checks_ran_travel_from_workers_and_are_told_as_a_range() -> None:
    """A marked test's ``iters=4`` reaches the controller's summary from an xdist
    worker, whose counts travel as JSON (whose keys are strings)."""
    marked, fixture = RunStats(), RunStats()
    marked.count_program("marker", set(), iters=4)
    fixture.count_program("fixture", set(), iters=None)
    fixture.count_iterations(5)  # a source's own ITERS, known once it ran
    total = RunStats()
    for stats in (marked, fixture):
        total.merge(RunStats.from_json(json.loads(json.dumps(stats.to_json()))))
    assert total.iterations == Counter({4: 1, 5: 1})
    assert iterations_words(total.iterations, default=5) == "4-5 iterations"
    assert iterations_words(marked.iterations, default=5) == "4 iterations"
    assert iterations_words(Counter(), default=1) == "1 iteration"  # nothing checked


def test_a_known_bug_a_marked_test_met_is_not_said_to_be_no_failure() -> None:
    """A campaign passes over a known bug; a marked test (or a fixture check) that
    meets one fails all the same, so its summary must not say "not failures"."""
    campaign = RunStats(campaign=True)
    campaign.count_program("views", set())
    campaign.count_outcome(Outcome(Verdict.FAIL, WRONG), known_repro="known/value-output.py")
    assert summary_lines(campaign, 1.0, [])[-2].endswith("(1 registry entry), not failures")
    marked = RunStats()
    marked.count_program("marker", set(), iters=5)
    marked.count_outcome(Outcome(Verdict.FAIL, WRONG), known_repro="known/value-output.py")
    assert summary_lines(marked, 1.0, [])[-2] == (
        "known: 1 bug(s) seen again (1 registry entry), not new (a marked test or fixture "
        "check that meets one fails all the same)"
    )


def test_a_signature_both_known_and_new_counts_each_side_s_programs_apart() -> None:
    stats = RunStats()
    for known in (None, None, "known/value-output.py"):
        stats.count_hit("value-output", known)
    assert stats.hits["value-output"] == 2
    assert stats.known_hits == Counter({("value-output", "known/value-output.py"): 1})
    (group,) = stats.known_bugs()
    assert group.hits == 1


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
    assert "failures: 1 new signature(s) (1 silent), 1 with a verified repro" in lines
    assert (
        "  silent: value-output (value, views, iteration 2, 1 failing programs): /r/value-output.py"
        in lines
    )
    assert lines[-2:] == [
        "known: 1 bug(s) seen again (1 registry entry), not failures",
        "  crash: timeout-program (1 failing programs): known/timeout-program.py",
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
    assert "  silent: value-output (value, views, iteration 2, 1 failing programs): " in lines[-1]
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
        {
            "signature": "timeout-program",
            "hits": 1,
            "repro": "known/timeout-program.py",
            "bug": None,
            "title": None,
            "severity": "crash",
            "standing": None,
        }
    ]
    assert not path.with_name("report.json.tmp").exists()


CALL = Place(Role.COMPILED, name="call")
#: One difference of each severity, in an order that is not theirs.
CRASHED = Difference(Kind.CRASH, 1, CALL, exception_type="RuntimeError", message="boom")
UNSUPPORTED = Difference(
    Kind.CRASH, 1, CALL, exception_type="RuntimeError", message="set_ is not supported yet"
)
ALIASED = Difference(Kind.ALIASING, 1, Place(Role.ALIASING, index=0))
MUTATED = Difference(Kind.MUTATION, 1, Place(Role.ARGUMENT, name="x"))


def found(difference: Difference) -> Failure:
    case = Case("def program():\n    pass\n", "aot_eager", "cpu", 5, family="views")
    return Failure(case, difference, ReproResult(ReproStatus.WRITTEN, f"r/{difference.signature}"))


def test_new_failures_are_counted_and_listed_by_severity_silent_first() -> None:
    stats = RunStats()
    for difference in (UNSUPPORTED, CRASHED, ALIASED, WRONG):
        stats.count_outcome(Outcome(Verdict.FAIL, difference))
        stats.failures.append(found(difference))
    lines = summary_lines(stats, 1.0, [])
    header = lines.index(
        "failures: 4 new signature(s) (1 silent, 1 metadata, 1 crash, 1 unsupported by torch), "
        "4 with a verified repro"
    )
    listed = lines[header + 1 : header + 5]
    assert [line.split(": ", 1)[0] for line in listed] == [
        "  silent",
        "  metadata",
        "  crash",
        "  unsupported by torch",
    ]
    assert listed[0].startswith(f"  silent: {WRONG.signature} (value, views, iteration 2, ")
    assert listed[3].startswith(f"  unsupported by torch: {UNSUPPORTED.signature} (crash, ")
    data = report_data(RunStats.from_json(json.loads(json.dumps(stats.to_json()))), 1.0, {})
    assert [failure["severity"] for failure in data["failures"]] == [
        "silent",
        "metadata",
        "crash",
        "unsupported",
    ]
    assert data["failures"][0]["signature"] == WRONG.signature
    assert data["new_by_severity"] == {"silent": 1, "metadata": 1, "crash": 1, "unsupported": 1}


BUGS = """\
[[bug]]
id = "lost-clamp"
title = "AOTAutograd: a clamp_ after squeeze_ is lost"
severity = "silent"
mechanism = "m"
essential = []
forms = ["value-output.toml", "mutation-argument.toml"]

[[bug]]
id = "set-crash"
title = "Dynamo: set_ of a graph input raises"
severity = "crash"
mechanism = "m"
essential = []
forms = ["crash.toml"]
"""


def known_stats(directory: Path) -> RunStats:
    """Known hits of two bugs' three signatures (hits: 2 + 3, and 1) and of one
    signature in no bug (a crash, 4 hits)."""
    stats = RunStats()
    for difference, entry, hits in (
        (CRASHED, "crash.toml", 1),
        (WRONG, "value-output.toml", 2),
        (MUTATED, "mutation-argument.toml", 3),
        (UNSUPPORTED, "loose.toml", 4),
    ):
        for _ in range(hits):
            stats.count_outcome(Outcome(Verdict.FAIL, difference), str(directory / entry))
    return stats


def test_known_signatures_are_summarised_one_line_per_bug_silent_first(tmp_path: Path) -> None:
    (tmp_path / "bugs.toml").write_text(BUGS)
    lines = summary_lines(known_stats(tmp_path), 1.0, [])
    start = lines.index("known: 3 bug(s) seen again (4 registry entries), not failures")
    assert lines[start + 1 :] == [
        "  silent: lost-clamp: AOTAutograd: a clamp_ after squeeze_ is lost "
        f"(2 signature(s), 5 failing programs): {tmp_path / 'bugs.toml'}",
        "  crash: set-crash: Dynamo: set_ of a graph input raises "
        f"(1 signature(s), 1 failing programs): {tmp_path / 'bugs.toml'}",
        f"  unsupported by torch: {UNSUPPORTED.signature} (4 failing programs): "
        f"{tmp_path / 'loose.toml'}",
    ]


def test_a_known_bug_not_to_file_says_why_in_the_summary_and_the_report(tmp_path: Path) -> None:
    # One bug outside torch.compile's contract, one fixed on a newer torch: seen
    # again, each says it is not one to file, and the header counts them apart.
    standing = BUGS.replace(
        'severity = "silent"\n',
        'severity = "silent"\n'
        'contract = { class = "documented-limitation", why = "set_ of an input" }\n',
    ).replace(
        'forms = ["crash.toml"]\n',
        'forms = ["crash.toml"]\n'
        'checked = { "2.13.0" = "1 of 1 forms reproduce", "2.14.1" = "fixed: its form no '
        'longer fails" }\n',
    )
    (tmp_path / "bugs.toml").write_text(standing)
    worker = RunStats.from_json(json.loads(json.dumps(known_stats(tmp_path).to_json())))
    lines = summary_lines(worker, 1.0, [])
    start = lines.index(
        "known: 3 bug(s) seen again (4 registry entries; 2 of them not to file), not failures"
    )
    assert lines[start + 1 : start + 3] == [
        "  silent: lost-clamp: AOTAutograd: a clamp_ after squeeze_ is lost "
        "(2 signature(s), 5 failing programs; outside torch.compile's contract: a documented "
        f"limitation): {tmp_path / 'bugs.toml'}",
        "  crash: set-crash: Dynamo: set_ of a graph input raises "
        f"(1 signature(s), 1 failing programs; fixed on torch 2.14.1): {tmp_path / 'bugs.toml'}",
    ]
    known = report_data(worker, 1.0, {})["known"]
    assert {entry["bug"]: entry["standing"] for entry in known} == {
        "lost-clamp": "outside torch.compile's contract: a documented limitation",
        "set-crash": "fixed on torch 2.14.1",
        None: None,
    }


def test_known_records_carry_their_bug_through_workers_and_the_report(tmp_path: Path) -> None:
    (tmp_path / "bugs.toml").write_text(BUGS)
    # As an xdist worker sends it, and as the controller merges it.
    total = RunStats()
    total.merge(RunStats.from_json(json.loads(json.dumps(known_stats(tmp_path).to_json()))))
    (tmp_path / "bugs.toml").unlink()  # the controller need not read the worker's files
    data = report_data(total, 1.0, {})
    assert [(entry["bug"], entry["severity"], entry["hits"]) for entry in data["known"]] == [
        ("lost-clamp", "silent", 3),
        ("lost-clamp", "silent", 2),
        ("set-crash", "crash", 1),
        (None, "unsupported", 4),
    ]
    assert data["known"][0]["title"] == "AOTAutograd: a clamp_ after squeeze_ is lost"
    assert data["known"][0]["repro"] == str(tmp_path / "mutation-argument.toml")
    assert data["known_by_severity"] == {"silent": 1, "metadata": 0, "crash": 1, "unsupported": 1}


def test_a_known_entry_the_worker_could_not_read_gets_its_bug_where_it_can_be(
    tmp_path: Path,
) -> None:
    worker = known_stats(tmp_path)  # no bugs file where the worker looked
    assert worker.to_json()["known"][0]["bug"] is None
    (tmp_path / "bugs.toml").write_text(BUGS)  # the controller's --cgraph-known directory
    total = RunStats()
    total.merge(RunStats.from_json(worker.to_json()))
    assert {entry["signature"]: entry["bug"] for entry in total.to_json()["known"]} == {
        CRASHED.signature: "set-crash",
        WRONG.signature: "lost-clamp",
        MUTATED.signature: "lost-clamp",
        UNSUPPORTED.signature: None,
    }


def test_a_baseline_entry_is_known_as_its_bug() -> None:
    directory = Path(pytest_cgraph.__file__).parent / "known" / "torch-2.13"
    (bug,) = [bug for bug in read_bugs(directory) if bug.id == "noop-identity-alias"]
    stats = RunStats()
    stats.count_outcome(Outcome(Verdict.FAIL, ALIASED), str(directory / bug.forms[0]))
    (entry,) = stats.to_json()["known"]
    assert (entry["bug"], entry["title"], entry["severity"]) == (bug.id, bug.title, "metadata")


def test_two_known_bugs_of_one_signature_are_counted_apart_through_workers(
    tmp_path: Path,
) -> None:
    # One broad signature (value-output) is the form of two bugs: a worker meets
    # each; neither may be counted under the other.
    (tmp_path / "bugs.toml").write_text(SHARED_SIGNATURE_BUGS)
    first, second = RunStats(), RunStats()
    for entry, hits, stats in (("first.toml", 2, first), ("second.toml", 3, second)):
        for _ in range(hits):
            stats.count_outcome(Outcome(Verdict.FAIL, WRONG), str(tmp_path / entry))
    second.count_outcome(Outcome(Verdict.FAIL, WRONG), str(tmp_path / "first.toml"))
    total = RunStats()
    for stats in (first, second):
        total.merge(RunStats.from_json(json.loads(json.dumps(stats.to_json()))))
    assert [(group.filed.bug, group.hits) for group in total.known_bugs()] == [
        ("grad-dropped", 3),
        ("view-lost", 3),
    ]
    data = report_data(total, 1.0, {})
    assert sorted((entry["bug"], entry["hits"]) for entry in data["known"]) == [
        ("grad-dropped", 3),
        ("view-lost", 3),
    ]
    assert data["known_hits"] == {WRONG.signature: 6}  # per signature, for counters
    lines = summary_lines(total, 1.0, [])
    assert "known: 2 bug(s) seen again (2 registry entries), not failures" in lines


SHARED_SIGNATURE_BUGS = """\
[[bug]]
id = "grad-dropped"
title = "a grad is dropped"
severity = "silent"
mechanism = "m"
essential = []
forms = ["first.toml"]

[[bug]]
id = "view-lost"
title = "a view is lost"
severity = "silent"
mechanism = "m"
essential = []
forms = ["second.toml"]
"""


def test_known_hits_are_told_per_backend_through_workers_and_the_summary(
    tmp_path: Path,
) -> None:
    # A campaign shared by two backends: one bug met by both, on two workers.
    (tmp_path / "bugs.toml").write_text(SHARED_SIGNATURE_BUGS)
    entry = str(tmp_path / "first.toml")
    on_one, on_other = RunStats(backends=Counter(cudagraphs=4)), RunStats()
    on_other.backends["inductor"] = 2
    for _ in range(3):
        on_one.count_outcome(Outcome(Verdict.FAIL, WRONG), entry, "cudagraphs")
    on_other.count_outcome(Outcome(Verdict.FAIL, WRONG), entry, "inductor")
    total = RunStats()
    for stats in (on_one, on_other):
        total.merge(RunStats.from_json(json.loads(json.dumps(stats.to_json()))))
    [group] = total.known_bugs()
    assert group.hits == 4 and group.backends == Counter(cudagraphs=3, inductor=1)
    [record] = report_data(total, 1.0, {})["known"]
    assert record["backends"] == {"cudagraphs": 3, "inductor": 1}
    assert any(
        line.startswith("  silent: grad-dropped:")
        and "(1 signature(s), 4 failing programs (cudagraphs 3, inductor 1))" in line
        for line in summary_lines(total, 1.0, [])
    )
    # One backend: the line is as it always was.
    alone = RunStats.from_json(json.loads(json.dumps(on_one.to_json())))
    assert any(
        "(1 signature(s), 3 failing programs):" in line for line in summary_lines(alone, 1.0, [])
    )
