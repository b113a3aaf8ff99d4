"""Scale-out: shards, a pool of workers in directories of their own, a report that
survives the controller's death."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_cgraph.plugin.wire import SCHEMA
from pytest_cgraph.registry.repro_files import BASE_SIGNATURE, SIZE, header_value

pytest_plugins = "pytester"

TESTS = Path(__file__).resolve().parents[1]


def test_shards_split_each_family_budget_over_items(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(
        "--cgraph",
        "-p",
        "no:cacheprovider",
        "--cgraph-backend=aot_eager",
        "--cgraph-families=views",
        "--cgraph-examples=5",
        "--cgraph-shards=3",
        "--cgraph-seed=5",
        "--cgraph-report=r.json",
        "-v",
    )
    result.stdout.fnmatch_lines(
        [
            "cgraph: * examples=5 in 3 shards per family *",
            "cgraph::views[[]0[]] PASSED*",
            "cgraph::views[[]1[]] PASSED*",
            "cgraph::views[[]2[]] PASSED*",
        ]
    )
    report = json.loads((pytester.path / "r.json").read_text())
    # The family's budget is dealt out (2 + 2 + 1), not multiplied.
    assert report["drawn"] == 5 and report["families"] == {"views": report["programs"]}
    assert report["complete"] is True


POOL_ARGS = (
    "--cgraph",
    "-p",
    "no:cacheprovider",
    "-p",
    "cgraph_doubles.faults",
    # A frozen random stream: one signature, which both shards meet, one
    # shrinks and the other passes over (seed 3: about 20 s a run). The lost
    # input write of mutation programs shows as six signatures, each shrunk:
    # five times the time for no more of what a pool must keep.
    "--cgraph-backend=faulty_frozen_rng",
    "--cgraph-families=rng",
    "--cgraph-examples=12",
    "--cgraph-seed=3",
    "--cgraph-shards=2",
    # Shrinking ends when Hypothesis is done, not on the clock: a time
    # bound would cut it at a point that depends on the machine's load.
    "--cgraph-shrink-seconds=600",
    "--cgraph-report=r.json",
    "-q",
)


def _run(directory: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return _pytest(directory, *POOL_ARGS, *extra)


def _pytest(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A pytest run in ``directory``, with this suite's test doubles importable."""
    env = dict(os.environ, PYTHONPATH=str(TESTS))
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _found_by(repro: str) -> str | None:
    """The item a repro file names as the one that found it (its shard)."""
    found = header_value(repro, "# found by: ")
    return found.split(";", 1)[0] if found is not None else None


def test_a_pool_in_directories_of_its_own_finds_and_writes_what_one_process_does(
    tmp_path: Path,
) -> None:
    # Two workers on popen gateways, each in a directory of its own, as on
    # hosts that share no filesystem with the controller.
    alone, controller, *workers = (tmp_path / name for name in ("alone", "ctl", "w0", "w1"))
    for directory in (alone, controller, *workers):
        directory.mkdir()
    serial = _run(alone)
    pool = _run(controller, "--dist=load", *(f"--tx=popen//chdir={worker}" for worker in workers))
    assert serial.returncode == pool.returncode == 1, serial.stdout + pool.stdout
    one, many = (json.loads((d / "r.json").read_text()) for d in (alone, controller))
    for key in ("programs", "drawn", "invalid", "families", "features", "hits"):
        assert one[key] == many[key], key
    signatures = sorted(failure["signature"] for failure in one["failures"])
    assert signatures and signatures == sorted(f["signature"] for f in many["failures"])
    assert all(failure["verified"] for failure in many["failures"])
    assert set(many["workers"]) == {"gw0", "gw1"}
    # The same repro files, written by the controller alone. Where two shards
    # meet one signature, the one that meets it first shrinks it and the
    # other passes it over; in a pool which one is first depends on timing,
    # so only a repro found by the same shard in both runs is the same
    # program (derandomized draws, shrinking not bounded by the clock).
    repros = sorted(path.name for path in (alone / "cgraph-repros").glob("*.py"))
    assert repros == sorted(path.name for path in (controller / "cgraph-repros").glob("*.py"))
    for name in repros:
        ours, theirs = ((d / "cgraph-repros" / name).read_text() for d in (alone, controller))
        assert header_value(ours, BASE_SIGNATURE) == header_value(theirs, BASE_SIGNATURE)
        if _found_by(ours) == _found_by(theirs):
            assert header_value(ours, SIZE) == header_value(theirs, SIZE), name
    for worker in workers:
        assert not (worker / "cgraph-repros").exists() and not (worker / "r.json").exists()


# Deep: two more campaigns; the pool test above stays in the default run.
@pytest.mark.deep
def test_a_pool_knows_what_an_earlier_run_wrote_in_the_controllers_repro_dir(
    tmp_path: Path,
) -> None:
    controller, *workers = (tmp_path / name for name in ("ctl", "w0", "w1"))
    for directory in (controller, *workers):
        directory.mkdir()
    first = _run(controller)
    found = {f["signature"] for f in json.loads((controller / "r.json").read_text())["failures"]}
    assert found, first.stdout[-3000:]
    # The workers cannot read the controller's repro dir, but its entries travel
    # with them, so what the first run found is known, not new. (A program of a
    # broad signature that lacks an entry's ops is still new.)
    again = _run(controller, "--dist=load", *(f"--tx=popen//chdir={worker}" for worker in workers))
    rerun = json.loads((controller / "r.json").read_text())
    # Hits of the shipped baseline's bugs (a bug id) may come in either run.
    ours = [hit for hit in rerun["known"] if hit["repro"].startswith(str(controller))]
    assert ours and {hit["signature"] for hit in ours} <= found, again.stdout[-3000:]
    assert all(hit in ours or hit["bug"] for hit in rerun["known"])


FAST_SNAPSHOTS = """
import pytest_cgraph.plugin.live

pytest_cgraph.plugin.live.SNAPSHOT_SECONDS = 0.2
pytest_cgraph.plugin.live.WRITE_SECONDS = 0.0
pytest_cgraph.plugin.live.SAMPLE_SECONDS = 0.0
"""


COUNT_SETUP_REPORTS = """
SEEN = []


def pytest_runtest_logreport(report):
    if report.when == "setup" and report.passed:
        SEEN.append(report.nodeid)


def pytest_terminal_summary(terminalreporter):
    kept = len(terminalreporter.stats.get("", []))
    terminalreporter.write_line(f"passed setups seen {len(SEEN)}, kept {kept}")
"""


# Deep: a 12-second campaign under xdist.
@pytest.mark.deep
def test_snapshot_reports_do_not_pile_up_on_the_controller(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(FAST_SNAPSHOTS + COUNT_SETUP_REPORTS)
    result = pytester.runpytest_subprocess(
        "--cgraph", "-p", "no:cacheprovider", "--cgraph-backend=aot_eager",
        "--cgraph-families=views", "--cgraph-duration=30s", "--cgraph-seed=7", "-n", "1",
    )  # fmt: skip
    line = next(line for line in result.outlines if line.startswith("passed setups seen"))
    seen, kept = (int(word.strip(",")) for word in line.split()[3::2])
    # a snapshot after each program 0.2 s after the last, each a passed setup report:
    # one kept at most, beside the item's own setup report (and its teardown's). Two
    # snapshots seen (four reports) tell a pile-up; a loaded machine checks few
    # programs in the box (3 in 12 s on a busy CI run), so the box is 30 s.
    assert seen >= 4 and kept <= 3, line


def test_a_controller_killed_mid_run_leaves_a_valid_report(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(FAST_SNAPSHOTS)
    report = pytester.path / "r.json"
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "--cgraph",
            "-p",
            "no:cacheprovider",
            "--cgraph-backend=aot_eager",
            "--cgraph-families=views",
            "--cgraph-duration=120s",
            "--cgraph-seed=7",
            "--cgraph-report=r.json",
            "-n",
            "1",
        ],
        cwd=pytester.path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 90
        seen = 0
        while time.monotonic() < deadline and seen < 3:
            time.sleep(0.2)
            if report.exists():
                seen = json.loads(report.read_text())["programs"]
        assert seen >= 3, "the report never showed the running item's programs"
        workers = subprocess.run(
            ["pgrep", "-P", str(run.pid)], capture_output=True, text=True, check=False
        ).stdout.split()
        assert workers, "no xdist worker under the controller"
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait()
    # Its worker notices the controller is gone and stops, rather than hunting on.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in workers):
        time.sleep(0.5)
    assert not any(Path(f"/proc/{pid}").exists() for pid in workers)
    data = json.loads(report.read_text())  # atomic rewrites: never half a file
    assert data["complete"] is False and data["programs"] >= 3
    assert data["progress"] and data["progress"][-1]["programs"] <= data["programs"]
    assert data["workers"]["gw0"]["rss_mb"] > 0
    assert not list(pytester.path.glob("r.json.tmp"))


NESTED = """
import pytest
import torch

pytest_plugins = "pytester"


@pytest.mark.cgraph_equivalent
def test_a():
    return torch.ones(3) * 2


def test_inner(pytester):
    pytester.makepyfile("def test_x(): pass")
    pytester.runpytest_inprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


@pytest.mark.cgraph_equivalent
def test_b():
    return torch.ones(3) + 1
"""


def test_a_session_inside_the_run_does_not_stop_the_runs_own_counts(
    pytester: pytest.Pytester,
) -> None:
    # A test that runs pytest in process (as plugin test suites do) has a
    # session of its own; the outer run goes on counting after it.
    pytester.makepyfile(test_nest=NESTED)
    result = pytester.runpytest_subprocess(
        "--cgraph",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:xdist",
        "--cgraph-backend=eager",
        "--cgraph-examples=1",
        "--cgraph-families=views",
        "--cgraph-seed=7",
        "--cgraph-report=r.json",
        "test_nest.py",
    )
    result.assert_outcomes(passed=4)
    report = json.loads((pytester.path / "r.json").read_text())
    # Both marked tests (one check each) and the campaign item are counted.
    assert report["programs"] >= 3 and report["families"]["views"] >= 1


#: The one signature of ``faulty_crash_on_replay``: nearly every program meets it,
#: so even a loaded machine that checks two programs in the time box meets it.
REPLAY_CRASH = "crash-compiled_call-RuntimeError-replay_crashed_c380cb"

MARK_FOUND_BY_ANOTHER_WORKER = f"""
from pathlib import Path

import pytest

from pytest_cgraph.hunting.findings import FoundSignatures
from pytest_cgraph.plugin.session import FOUND_INPUT


@pytest.hookimpl(trylast=True)
def pytest_configure_node(node):
    # As if another worker had found the fault's bug before this one starts.
    shared = Path(node.workerinput[FOUND_INPUT])
    FoundSignatures(shared).add("{REPLAY_CRASH}")
    Path("shared.txt").write_text(str(shared))
"""


def test_a_bug_another_worker_found_is_passed_over_not_shrunk_again(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(MARK_FOUND_BY_ANOTHER_WORKER)
    run = _pytest(
        tmp_path,
        "--cgraph", "-p", "no:cacheprovider",
        "-p", "cgraph_doubles.faults", "--cgraph-backend=faulty_crash_on_replay",
        "--cgraph-families=mutation", "--cgraph-duration=10s", "--cgraph-seed=3",
        "--cgraph-report=r.json", "-n", "1", "-q",
    )  # fmt: skip
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["hits"].get(REPLAY_CRASH, 0) > 0, run.stdout[-3000:]
    assert REPLAY_CRASH not in {failure["signature"] for failure in report["failures"]}
    # The directory lives as long as the run.
    assert not Path((tmp_path / "shared.txt").read_text()).exists()


@pytest.mark.deep
def test_a_worker_of_another_message_schema_ends_the_run_in_one_line(
    pytester: pytest.Pytester,
) -> None:
    # The worker speaks another schema (as another pytest-cgraph version would).
    pytester.makeconftest(
        """
        def pytest_configure(config):
            if hasattr(config, "workerinput"):
                import pytest_cgraph.plugin.wire as wire
                wire.SCHEMA = 99
        """
    )
    result = pytester.runpytest_subprocess(
        "--cgraph",
        "-n",
        "1",
        "-p",
        "no:cacheprovider",
        "--cgraph-backend=aot_eager",
        "--cgraph-families=views",
        "--cgraph-examples=2",
        "--cgraph-seed=5",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        [
            "*an xdist worker sent pytest-cgraph message schema 99, this controller reads "
            f"{SCHEMA}: install the same pytest-cgraph on every host of the run*"
        ]
    )
    # One line: no traceback of the plugin's (xdist may still note the worker it stopped).
    assert "Traceback" not in result.stdout.str() and "WireMismatch" not in result.stderr.str()
