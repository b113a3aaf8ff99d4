"""``pytest --cgraph``: campaign items per family, summary, JSON report, seeds, xdist."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import cgraph_doubles.inprocess  # noqa: F401  (kept loaded across in-process runs)
from cgraph_doubles import heapwatch
from cgraph_doubles.workers import WORKERS
from pytest_cgraph.strategies import OPS
from pytest_cgraph.strategies.families import FAMILIES

pytest_plugins = "pytester"


def torch_version() -> str:
    import torch

    return str(torch.__version__)


TESTS = Path(__file__).resolve().parents[1]
QUIET = ["-p", "no:cacheprovider", "--cgraph-backend=aot_eager"]


def campaign(pytester: pytest.Pytester, *args: str, fresh: bool = False) -> pytest.RunResult:
    """A campaign run: in process, unless it starts xdist workers or is asked not to be."""
    run = pytester.runpytest_subprocess if fresh or "-n" in args else pytester.runpytest
    return run("--cgraph", *QUIET, *args)


@pytest.mark.parametrize("workers", WORKERS)
def test_campaign_runs_families_and_reports_them(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    result = campaign(
        pytester,
        "--cgraph-families=views,transfer",
        "--cgraph-examples=4",
        "--cgraph-seed=7",
        "--cgraph-report=r.json",
        *workers,
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines_random(
        [
            "cgraph: backend=aot_eager device=cpu iters=5 * seed=7 (rerun with --cgraph-seed=7)",
            "*cgraph summary*",
            "programs: * checked (* drawn, 0 while shrinking), * invalid (eager raised), "
            "* programs/s over * s",
            "per family: transfer *, views *",
            "compiles: *; CUDA graphs: 0 programs captured, 0 graphs skipped",
            f"op coverage: */{len(OPS)} ops; least used: *",
            "failures: 0 new signature(s), 0 with a verified repro",
            "JSON report: r.json",
        ]
    )
    report = json.loads((pytester.path / "r.json").read_text())
    assert {
        "programs",
        "invalid",
        "seconds",
        "families",
        "features",
        "captured",
        "skipped",
        "failures",
        "backend",
        "device",
        "iters",
        "seed",
    } <= set(report)
    assert report["programs"] == sum(report["families"].values()) >= 8
    assert set(report["families"]) == {"views", "transfer"}
    assert (report["backend"], report["device"], report["iters"], report["seed"]) == (
        "aot_eager",
        "cpu",
        5,
        7,
    )
    assert report["failures"] == [] and report["captured"] == 0
    assert (report["new_signatures"], report["verified_repros"]) == (0, 0)
    assert report["drawn"] == 8 and report["torch"] == torch_version()
    assert f"programs: {report['programs']} checked" in result.stdout.str()


def test_same_seed_draws_the_same_programs_whatever_the_workers(pytester: pytest.Pytester) -> None:
    # Both runs in a fresh process: with the same seed, an in-process run
    # (inside this test's process, the suite's modules loaded) draws other
    # programs than a fresh ``pytest --cgraph`` does, as Hypothesis's draws
    # depend on more than the seed.
    features = []
    for workers in ([], ["-n", "2"]):
        campaign(
            pytester,
            "--cgraph-families=views,rng",
            "--cgraph-examples=4",
            "--cgraph-seed=11",
            "--cgraph-report=r.json",
            *workers,
            fresh=True,
        )
        features.append(json.loads((pytester.path / "r.json").read_text())["features"])
    assert features[0] == features[1]


def test_k_selects_campaign_items(pytester: pytest.Pytester) -> None:
    # A fixed seed: the verdict of two random views programs on a real
    # torch is not what this test is about (and some seeds meet a torch bug).
    result = campaign(pytester, "--cgraph-examples=2", "--cgraph-seed=7", "-k", "views", "-v")
    result.stdout.fnmatch_lines(["cgraph::views PASSED*"])
    result.assert_outcomes(passed=1, deselected=len(FAMILIES) - 1)


def test_items_check_with_the_long_lived_heap_frozen_and_hand_it_back(
    pytester: pytest.Pytester,
) -> None:
    import gc

    heapwatch.FROZEN_AT_COMPILE.clear()
    frozen_before = gc.get_freeze_count()
    result = pytester.runpytest(
        "--cgraph",
        "-p",
        "no:cacheprovider",
        "--cgraph-backend=cgraph_doubles.heapwatch:watching_backend",
        "--cgraph-families=views",
        "--cgraph-examples=2",
        "--cgraph-seed=7",
    )
    result.assert_outcomes(passed=1)
    assert heapwatch.FROZEN_AT_COMPILE, "no program was compiled"
    assert min(heapwatch.FROZEN_AT_COMPILE) > frozen_before
    assert gc.get_freeze_count() == frozen_before


def test_unknown_family_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--cgraph", "--cgraph-families=views,nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --cgraph-families: unknown 'nope'; choose from * (from command line)"]
    )


def faulty_campaign(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    backends: str,
    *args: str,
    family: str = "mutation",
) -> pytest.RunResult:
    """A campaign of one family (seed 3) on ``backends``, the fault doubles loaded."""
    monkeypatch.setenv("PYTHONPATH", str(TESTS))
    return pytester.runpytest_subprocess(
        "--cgraph",
        "-p",
        "no:cacheprovider",
        "-p",
        "cgraph_doubles.faults",
        f"--cgraph-backend={backends}",
        f"--cgraph-families={family}",
        "--cgraph-examples=40",
        "--cgraph-seed=3",
        *args,
    )


# A 40-program hunt that shrinks the fault, verifies every repro, then runs
# each. The fault is a frozen random stream, one signature (lost input writes
# show as six, each shrunk and verified, for nothing more this asks); the
# default suite covers a campaign's fault, repro and regression run through
# the cheaper test_known_bugs and test_marker runs; this is deep.
@pytest.mark.deep
def test_broken_backend_from_a_plugin_fails_with_a_shrunk_program(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = faulty_campaign(pytester, monkeypatch, "faulty_frozen_rng", family="rng")
    result.assert_outcomes(failed=1)
    # Each replay restarts the random stream where it stood when the graph was
    # recorded (the second call): the third call is the first to differ.
    # The campaign keeps hunting, so torch's own bugs may be listed beside it.
    result.stdout.fnmatch_lines(
        [
            "* new failure signature(s) in rng programs*",
            "* difference at iteration 3, *",
            "program (rng):",
            "def program(*",
            "repro (written): cgraph-repros/*.py -- first diverging layer: only the backend *",
            "failures: * new signature(s) (*), * with a verified repro",
            "  * (*, rng, iteration 3, * failing programs): cgraph-repros/*.py",
        ]
    )
    of_the_fault = [
        path
        for path in (pytester.path / "cgraph-repros").glob("*.py")
        if "first diverging layer: none below the backend itself" in path.read_text()
    ]
    assert of_the_fault
    # Each repro of the fault reproduces standalone, passes on a correct
    # backend, and is collected as a failing regression test.
    for repro in of_the_fault:
        failing = subprocess.run([sys.executable, str(repro)], capture_output=True, text=True)
        assert failing.returncode == 1, failing.stderr
        assert failing.stdout.startswith("REPRODUCED")
        fixed = subprocess.run(
            [sys.executable, str(repro), "--backend", "aot_eager"], capture_output=True, text=True
        )
        assert fixed.returncode == 0, fixed.stderr
    regression = pytester.runpytest_subprocess("-p", "no:cacheprovider", *map(str, of_the_fault))
    regression.assert_outcomes(failed=len(of_the_fault))
    body = result.stdout.str().split("program (rng):", 1)[1].split("def inputs", 1)[0]
    # The function's own lines: a module class the program calls is defined above it.
    function = body.split("def program", 1)[1]
    statements = [line for line in function.splitlines() if line.startswith("    ")]
    assert len(statements) <= 3, body  # shrunk: one random draw and the return, give or take


FAST_PROGRESS = """
import pytest_cgraph.plugin.campaign

pytest_cgraph.plugin.campaign.PROGRESS_SECONDS = 0.0
"""


@pytest.mark.parametrize("workers", WORKERS)
def test_a_running_item_shows_its_progress_with_v(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    pytester.makeconftest(FAST_PROGRESS)
    result = campaign(
        pytester,
        "--cgraph-families=views",
        "--cgraph-examples=4",
        "--cgraph-seed=7",
        "-v",
        *workers,
    )
    result.assert_outcomes(passed=1)
    progress = "cgraph::views: * drawn, * checked, 0 new, * known, * programs/s, * s"
    if workers:
        result.stderr.fnmatch_lines([f"[[]gw?[]] {progress}"])
    else:
        result.stdout.fnmatch_lines([progress])
    quiet = campaign(
        pytester, "--cgraph-families=views", "--cgraph-examples=4", "--cgraph-seed=7", *workers
    )
    assert "cgraph::views: " not in quiet.stdout.str() + quiet.stderr.str()


def _mine(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_mine="""
        import pytest, torch

        @pytest.mark.cgraph_equivalent
        def test_double(x=torch.ones(2)):
            return x * 2
        """
    )


def test_a_named_path_runs_its_own_tests_without_the_campaign(pytester: pytest.Pytester) -> None:
    _mine(pytester)
    result = campaign(pytester, "test_mine.py")
    result.assert_outcomes(passed=1)
    assert "cgraph::" not in result.stdout.str()


@pytest.mark.parametrize("option", ["--cgraph-examples=2", "--cgraph-families=views"])
def test_a_campaign_option_with_a_path_runs_the_campaign_too(
    pytester: pytest.Pytester, option: str
) -> None:
    _mine(pytester)
    args = [option, "--cgraph-seed=7", "-v"]
    if option.startswith("--cgraph-families"):
        args.append("--cgraph-examples=2")
    result = campaign(pytester, "test_mine.py", *args)
    outcomes = result.parseoutcomes()
    assert outcomes["passed"] > 1
    result.stdout.fnmatch_lines(["*cgraph::views PASSED*"])


def test_a_duration_is_shared_by_the_items(
    pytester: pytest.Pytester,
) -> None:
    from pytest_cgraph.plugin.campaign import make_items
    from pytest_cgraph.plugin.options import read_options

    config = pytester.parseconfigure(
        "--cgraph", "--cgraph-duration=60s", "--cgraph-families=views,rng,scalars,mutation"
    )
    session = pytest.Session.from_config(config)
    options = read_options(config)
    items = make_items(session, options, seed=1, workers=2)
    assert [item.budget.duration for item in items] == [30.0] * 4
    lone = make_items(session, options, seed=1, workers=8)
    assert [item.budget.duration for item in lone] == [60.0] * 4


def test_several_backends_split_a_duration_and_check_the_same_programs(
    pytester: pytest.Pytester,
) -> None:
    from pytest_cgraph.plugin.campaign import make_items
    from pytest_cgraph.plugin.options import read_options

    def items_of(*args: str) -> list:
        config = pytester.parseconfigure("--cgraph", "--cgraph-families=views,rng", *args)
        return make_items(pytest.Session.from_config(config), read_options(config), seed=1)

    both = items_of("--cgraph-backend=aot_eager, inductor", "--cgraph-duration=60s")
    assert [item.nodeid for item in both] == [
        "cgraph::views[aot_eager]",
        "cgraph::views[inductor]",
        "cgraph::rng[aot_eager]",
        "cgraph::rng[inductor]",
    ]
    assert [item.backend for item in both] == ["aot_eager", "inductor"] * 2
    # An equal share of the box each, however slowly a backend compiles.
    assert [item.budget.duration for item in both] == [15.0] * 4
    # Each backend draws the programs a run on it alone draws.
    alone = items_of("--cgraph-backend=inductor")
    assert [item.nodeid for item in alone] == ["cgraph::views", "cgraph::rng"]
    assert [item.item_seed for item in both] == [alone[0].item_seed] * 2 + [alone[1].item_seed] * 2
    assert alone[0].item_seed != alone[1].item_seed
    sharded = items_of("--cgraph-backend=aot_eager,inductor", "--cgraph-shards=2")
    assert [item.nodeid for item in sharded][:4] == [
        "cgraph::views[aot_eager-0]",
        "cgraph::views[aot_eager-1]",
        "cgraph::views[inductor-0]",
        "cgraph::views[inductor-1]",
    ]
    shards_alone = items_of("--cgraph-backend=inductor", "--cgraph-shards=2")
    assert sharded[3].item_seed == shards_alone[1].item_seed == sharded[1].item_seed
    # --cgraph-examples is each backend's.
    assert {item.budget.examples for item in items_of("--cgraph-backend=eager,aot_eager")} == {100}


def test_a_campaign_on_two_backends_tells_which_one_failed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A frozen random stream: one signature to shrink and verify (lost input
    # writes show as six, each verified, for nothing more this test asks).
    result = faulty_campaign(
        pytester,
        monkeypatch,
        "eager,faulty_frozen_rng",
        "--cgraph-examples=10",
        "--cgraph-shrink-seconds=2",
        "--cgraph-report=r.json",
        "-v",
        family="rng",
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines_random(
        [
            "cgraph: backend=eager,faulty_frozen_rng device=cpu *",
            # (``?`` for the brackets, which fnmatch reads as a character set)
            "cgraph::rng?eager? PASSED*",
            "cgraph::rng?faulty_frozen_rng? FAILED*",
            "backend eager,faulty_frozen_rng, device cpu, 5 iterations, seed 3",
            "per backend: eager *, faulty_frozen_rng *",
            "  * (*, rng on faulty_frozen_rng, iteration 3, * failing programs): "
            "cgraph-repros/*.py",
        ]
    )
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["backend"] == "eager,faulty_frozen_rng"
    # Both hunted; the failing one shrank too.
    assert report["backends"]["eager"] >= 5
    assert report["backends"]["faulty_frozen_rng"] > report["backends"]["eager"]
    assert report["failures"]
    assert {failure["backend"] for failure in report["failures"]} == {"faulty_frozen_rng"}
    # Each repro replays on the backend that failed, and its rerun line runs that one alone.
    for failure in report["failures"]:
        text = (pytester.path / failure["repro"]).read_text()
        assert "BACKEND = 'faulty_frozen_rng'" in text
        assert "--cgraph-backend faulty_frozen_rng -k rng" in text
    # Run again in the same directory: the repro dir is the next run's registry,
    # so the fault is known, and told per backend.
    again = faulty_campaign(
        pytester,
        monkeypatch,
        "eager,faulty_frozen_rng",
        "--cgraph-examples=10",
        "--cgraph-shrink-seconds=2",
        "--cgraph-report=again.json",
        family="rng",
    )
    # (the faulty backend may still meet a program of other hazards: a new bug)
    again.stdout.fnmatch_lines(["  *failing programs (*faulty_frozen_rng *)*"])
    known = json.loads((pytester.path / "again.json").read_text())["known"]
    told = [record["backends"] for record in known if "cgraph-repros" in record["repro"]]
    assert told and all(set(backends) == {"faulty_frozen_rng"} for backends in told)
    timeline = json.loads((pytester.path / "again.json").read_text())["timeline"]
    assert {event.get("backend") for event in timeline if event["new"] is False} >= {
        "faulty_frozen_rng"
    }


ON_A_TERMINAL = """
import pytest

import pytest_cgraph.plugin.live

pytest_cgraph.plugin.live.SNAPSHOT_SECONDS = 0.0


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    reporter.isatty = lambda: {tty}
"""


@pytest.mark.parametrize("tty", [True, False])
def test_a_status_line_shows_the_run_so_far_on_a_terminal_only(
    pytester: pytest.Pytester, tty: bool
) -> None:
    pytester.makeconftest(ON_A_TERMINAL.format(tty=tty))
    result = campaign(pytester, "--cgraph-families=views", "--cgraph-examples=4", "--cgraph-seed=7")
    result.assert_outcomes(passed=1)
    status = "*cgraph: * programs checked, */s, 0 new, * known, * s*"
    if tty:
        result.stdout.fnmatch_lines([status])
    else:
        assert "programs checked, " not in result.stdout.str()


def test_a_time_boxed_run_says_how_its_box_was_spent(pytester: pytest.Pytester) -> None:
    result = campaign(
        pytester, "--cgraph-families=views,rng", "--cgraph-duration=4s", "--cgraph-seed=7"
    )
    # What a time box draws depends on the clock: a torch difference no entry
    # claims may fail an item, which says nothing about the box itself.
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 2
    result.stdout.fnmatch_lines(
        ["time box 4 s over 2 campaign item(s) on 1 worker(s): each hunted *-* s; the run took *"]
    )


# About 15 s: a fresh checking child and a compile per family.
@pytest.mark.deep
def test_every_family_of_a_short_time_box_checks_programs(pytester: pytest.Pytester) -> None:
    """The first item of a box pays the checking child's start and the first
    compiles, seconds past its share of a short box: before, the items after it
    on the worker found the box over and checked nothing (a family with 0
    programs was never tested). Each item now shares out the time left as it
    starts, and checks a program however late it starts."""
    result = campaign(
        pytester,
        "--cgraph-families=views,schedules,mixed",
        "--cgraph-duration=3s",
        "--cgraph-seed=1",
        "--cgraph-report=r.json",
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 3
    report = json.loads((pytester.path / "r.json").read_text())
    assert set(report["families"]) == {"views", "schedules", "mixed"}, report["families"]
    assert min(report["families"].values()) >= 1


THREADS_CONFTEST = """
import torch


def pytest_configure(config):
    torch.set_num_threads({threads})
"""


@pytest.mark.parametrize("threads", [1, 2])
def test_a_time_boxed_campaign_checks_and_replays_with_one_thread_count(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, threads: int
) -> None:
    # A time box checks in a child and replays what it finds in the process
    # that drew it (an xdist worker sets its share of the cores). The backend
    # fails only with several threads: with one, nothing fails (and nothing
    # is left "not reproducible"); with two, the failure is verified and its
    # repro says so and sets it.
    monkeypatch.setenv("PYTHONPATH", str(TESTS))
    pytester.makeconftest(THREADS_CONFTEST.format(threads=threads))
    result = pytester.runpytest_subprocess(
        "--cgraph",
        "-p",
        "no:cacheprovider",
        "-p",
        "cgraph_doubles.faults",
        "--cgraph-backend=faulty_crash_with_threads",
        "--cgraph-families=views",
        "--cgraph-duration=3s",
        "--cgraph-seed=7",
        "--cgraph-report=r.json",
    )
    failures = json.loads((pytester.path / "r.json").read_text())["failures"]
    if threads == 1:
        result.assert_outcomes(passed=1)
        assert failures == []
        return
    result.assert_outcomes(failed=1)
    assert failures and all(failure["verified"] for failure in failures), failures
    repros = list((pytester.path / "cgraph-repros").glob("*.py"))
    assert repros
    for repro in repros:
        text = repro.read_text()
        assert "; torch threads: 2\n" in text and "\nTHREADS = 2  #" in text
