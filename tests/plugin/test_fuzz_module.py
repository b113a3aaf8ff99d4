"""``pytest_cgraph.fuzz``: the campaign's families as plain Hypothesis tests.

Run as ``pytest --pyargs pytest_cgraph.fuzz`` from any directory, and by
HypoFuzz (``hypothesis fuzz``), which collects them through pytest. A test
fails on a new difference only: a known one (shipped baseline, a
``CGRAPH_KNOWN`` registry) and an invalid program pass.
"""

from __future__ import annotations

import fnmatch
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

# Loads, for the whole session, the fault backends the in-process checks below use
# and what pytester would otherwise unload after its runs (torch cannot be imported twice).
import cgraph_doubles.inprocess  # noqa: F401
import pytest_cgraph.fuzz as fuzz
from pytest_cgraph.recording.record import record
from pytest_cgraph.registry.entries import BASELINE_ROOT, read_entry, recorded_settings
from pytest_cgraph.registry.judge import Judgement, Ruling
from pytest_cgraph.strategies.families import FAMILIES

pytest_plugins = "pytester"

TESTS = Path(__file__).resolve().parents[1]

#: A program whose input is written in place: the fault backends break it from call 3 on.
MUTATING = """import torch


def program(a0):
    a0.add_(2)
    return (a0,)


def inputs(k):
    g = torch.Generator().manual_seed(1000)
    a0 = torch.randn((1,), generator=g)
    return (a0,)


FRESH_INPUTS = False
ITERS = 5
"""

#: A program eager itself rejects (3 elements viewed as 7).
INVALID = MUTATING.replace("a0.add_(2)\n    return (a0,)", "return (a0.view(7),)")


def with_tests_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Child processes import ``cgraph_doubles`` from ``tests/`` (and keep the rest of the path)."""
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))
    )


def fuzz_run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """``pytest --pyargs pytest_cgraph.fuzz`` in a new process, from pytester's empty directory."""
    return pytester.runpytest_subprocess(
        "--pyargs", "pytest_cgraph.fuzz", "-p", "no:cacheprovider", *args
    )


def test_there_is_one_test_per_family() -> None:
    tests = {name for name in vars(fuzz) if name.startswith("test_")}
    assert tests == {f"test_{family}" for family in FAMILIES}
    for name in tests:
        assert hasattr(getattr(fuzz, name), "hypothesis"), name  # a @given test


def test_pyargs_collects_every_family_from_an_empty_directory(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CGRAPH_FUZZ_EXAMPLES", "3")
    assert not list(pytester.path.iterdir())
    result = fuzz_run(pytester, "-k", "mutation", "-v")
    selected = f"*collected {len(FAMILIES)} items / {len(FAMILIES) - 1} deselected / 1 selected"
    result.stdout.fnmatch_lines([selected])
    # Collected and run. What it draws depends on Hypothesis's profile; a torch
    # difference no shipped entry claims yet fails it, in the module's own
    # words, and says nothing about collection.
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 1, result.stdout.str()
    assert outcomes.get("deselected") == len(FAMILIES) - 1
    if outcomes.get("failed"):
        result.stdout.fnmatch_lines(["*test_mutation FAILED*", "E * new difference *"])
    else:
        result.stdout.fnmatch_lines(["*test_mutation PASSED*"])


def test_a_new_difference_fails_its_test_and_a_recorded_one_passes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_tests_on_path(monkeypatch)
    # Every replay raises under this backend: one signature whatever the program.
    monkeypatch.setenv("CGRAPH_BACKEND", "faulty_crash_on_replay")
    monkeypatch.setenv("CGRAPH_FUZZ_EXAMPLES", "5")
    run = ("-p", "cgraph_doubles.faults", "-k", "views", "--hypothesis-seed=2")

    new = fuzz_run(pytester, *run)
    new.assert_outcomes(failed=1, deselected=len(FAMILIES) - 1)
    new.stdout.fnmatch_lines(
        [
            "E * new difference crash-compiled_call-RuntimeError-replay_crashed_*",
            "E * crash difference at iteration 3, compiled call: RuntimeError: replay crashed",
            "E * program (views):",
            "E * def program(*",
            "E * to count it as known: * --backend faulty_crash_on_replay --device cpu --into DIR*",
        ]
    )

    known = pytester.path / "known"
    recorded = record(
        MUTATING,
        backend="faulty_crash_on_replay",
        device="cpu",
        iters=5,
        into=known,
        origin="mutating.py",
        setup_modules=("cgraph_doubles.faults",),
    )
    assert recorded.repro is not None and recorded.repro.verified
    monkeypatch.setenv("CGRAPH_KNOWN", str(known))
    again = fuzz_run(pytester, *run, "--hypothesis-show-statistics")
    again.assert_outcomes(passed=1, deselected=len(FAMILIES) - 1)
    again.stdout.fnmatch_lines(["*known: crash-compiled_call-RuntimeError-replay_crashed_*.toml"])


def judge(source: str, **settings: object) -> Judgement:
    fuzzer = fuzz.Fuzzer(fuzz.FuzzSettings(**settings))  # type: ignore[arg-type]
    return fuzzer.judge(fuzzer.case(source, "mutation"))


def test_a_difference_is_known_only_by_its_signature_and_layer(tmp_path: Path) -> None:
    backend = "faulty_lost_input_mutation"
    judgement = judge(MUTATING, backend=backend, baseline=False)
    assert judgement.failure is not None and fuzz.event_of(judgement) is None
    message = str(fuzz.NewDifference(judgement.failure))
    assert message.startswith(f"new difference {judgement.failure.signature}\n")
    assert "def program(a0):\n    a0.add_(2)" in message

    faults = ("cgraph_doubles.faults",)
    record(
        MUTATING,
        backend=backend,
        device="cpu",
        iters=5,
        into=tmp_path,
        origin="m.py",
        setup_modules=faults,
    )
    (entry,) = tmp_path.glob("*.toml")
    known = judge(MUTATING, backend=backend, baseline=False, known_dirs=(tmp_path,))
    assert known.failure is None and known.known is not None
    assert known.ruling is Ruling.KNOWN and fuzz.event_of(known) == f"known: {entry.name}"
    # The same signature from another layer is another bug: the entry's is
    # the backend itself, aot_eager's is the baseline's squeeze_ + clamp_.
    baseline_program = recorded_settings(
        BASELINE_ROOT / "torch-2.13" / "value-output_argument-aot_eager.toml"
    )["program"]
    assert isinstance(baseline_program, str)
    other = judge(baseline_program, backend="aot_eager", baseline=False, known_dirs=(tmp_path,))
    assert other.failure is not None and other.failure.signature == entry.stem


def test_the_shipped_baseline_is_known_unless_turned_off() -> None:
    entry = BASELINE_ROOT / "torch-2.13" / "value-output_argument-aot_eager.toml"
    program = recorded_settings(entry)["program"]
    assert isinstance(program, str)
    known = judge(program, backend="aot_eager")
    # Known as its bug: whichever of the bug's forms the registry meets first.
    assert known.failure is None and known.known is not None
    assert known.known.bug == read_entry(entry).bug
    assert (fuzz.event_of(known) or "").startswith("known: ")
    assert judge(program, backend="aot_eager", baseline=False).failure is not None


def test_an_invalid_program_is_rejected_not_failed() -> None:
    judgement = judge(INVALID, backend="aot_eager")
    assert judgement.ruling is Ruling.INVALID and judgement.failure is None
    assert fuzz.event_of(judgement) == fuzz.INVALID_EVENT


def test_an_isolated_check_judges_alike_in_a_child_process() -> None:
    fuzzer = fuzz.Fuzzer(fuzz.FuzzSettings(backend="aot_eager", isolate=True))
    try:
        assert fuzzer.judge(fuzzer.case(INVALID, "mutation")).ruling is Ruling.INVALID
        assert fuzzer.judge(fuzzer.case(MUTATING, "mutation")).ruling is Ruling.PASSED
        assert fuzzer.checker.child_pid not in (None, os.getpid())  # type: ignore[attr-defined]
    finally:
        fuzzer.close()


def test_settings_come_from_the_environment(tmp_path: Path) -> None:
    (first, second) = (tmp_path / "a", tmp_path / "b")
    first.mkdir()
    second.mkdir()
    settings = fuzz.FuzzSettings.from_environment(
        {
            "CGRAPH_BACKEND": " aot_eager ",
            "CGRAPH_DEVICE": "auto",
            "CGRAPH_ITERS": "3",
            "CGRAPH_TIMEOUT": "0",
            "CGRAPH_KNOWN": os.pathsep.join([str(first), "", str(second)]),
            "CGRAPH_NO_BASELINE": "yes",
            "CGRAPH_ISOLATE": "0",
            "CGRAPH_FUZZ_EXAMPLES": "7",
        }
    )
    assert settings == fuzz.FuzzSettings(
        backend="aot_eager",
        device="cpu",
        iters=3,
        timeout=0.0,
        known_dirs=(first, second),
        baseline=False,
        isolate=False,
        examples=7,
    )
    assert settings.registry_dirs() == [first, second]
    defaults = fuzz.FuzzSettings.from_environment({})
    assert (defaults.backend, defaults.device, defaults.iters, defaults.isolate) == (
        "cudagraphs",
        "cpu",
        5,
        False,  # HypoFuzz is not running this process
    )
    assert defaults.registry_dirs() == [BASELINE_ROOT / "torch-2.13"]


@pytest.mark.parametrize(
    ("variable", "value", "line"),
    [
        ("CGRAPH_BACKEND", "nope", "unknown backend 'nope'; valid: *"),
        ("CGRAPH_BACKEND", " ", "empty name; give a torch.compile backend"),
        ("CGRAPH_DEVICE", "gpu", "unknown device 'gpu'; use auto, cpu, cuda or cuda:N"),
        ("CGRAPH_ITERS", "0", "iterations must be a positive integer, got '0'"),
        ("CGRAPH_TIMEOUT", "-1", "the time limit must be a non-negative number, got '-1'"),
        ("CGRAPH_KNOWN", "/no/such/dir", "'/no/such/dir' is not a directory of repro files"),
        ("CGRAPH_NO_BASELINE", "maybe", "the value must be 1 or 0 (true/false, *), got 'maybe'"),
        ("CGRAPH_ISOLATE", "2", "the value must be 1 or 0 (true/false, *), got '2'"),
        ("CGRAPH_FUZZ_EXAMPLES", "many", "examples must be a positive integer, got 'many'"),
    ],
)
def test_a_bad_value_is_one_line_naming_its_variable(variable: str, value: str, line: str) -> None:
    with pytest.raises(fuzz.FuzzConfigurationError) as raised:
        fuzz.FuzzSettings.from_environment({variable: value})
    message = str(raised.value)
    assert "\n" not in message
    assert fnmatch.fnmatch(message, f"pytest-cgraph: {variable}: {line}"), message


def test_a_bad_value_stops_collection_with_that_one_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CGRAPH_ITERS", "0")
    result = fuzz_run(pytester)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "*ERROR collecting*",
            "pytest-cgraph: CGRAPH_ITERS: iterations must be a positive integer, got '0'",
            "*short test summary info*",
        ]
    )
    assert "Traceback" not in result.stdout.str() and "fuzz.py:" not in result.stdout.str()


def test_the_repository_run_does_not_collect_the_module(pytester: pytest.Pytester) -> None:
    # The module's name is no test_*.py: a directory run (this repository's
    # testpaths, or the installed package's directory) never collects it.
    package = Path(fuzz.__file__).parent
    result = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider", str(package))
    assert "fuzz.py" not in result.stdout.str()


#: Run by the deep test in the fuzzing directory: HypoFuzz's own view of what it ran
#: (its collection gives each test's database key; its reports count the inputs).
REPORTS = """
import json
from hypothesis import settings
from hypofuzz.collection import collect_tests
from hypofuzz.database import HypofuzzDatabase

database = HypofuzzDatabase(settings().database)
found = {}
for target in collect_tests(ARGS).fuzz_targets:
    reports = sorted(database.reports.fetch(target.database_key), key=lambda r: r.elapsed_time)
    if reports:
        found[target.nodeid] = {
            "inputs": sum(reports[-1].status_counts.values()),
            "seconds": reports[-1].elapsed_time,
        }
print(json.dumps(found))
"""


@pytest.mark.deep
def test_hypofuzz_fuzzes_a_family_test(tmp_path: Path) -> None:
    pytest.importorskip("hypofuzz", reason="HypoFuzz is not installed (pip install -e '.[fuzz]')")
    command = Path(sys.executable).with_name("hypothesis")
    if not command.exists():
        pytest.skip(f"no hypothesis command beside {sys.executable}")
    args = ["--pyargs", "pytest_cgraph.fuzz", "-k", "transfer", "-p", "no:cacheprovider"]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")])),
        "CGRAPH_BACKEND": "aot_eager",
    }
    fuzzing = subprocess.Popen(
        [str(command), "fuzz", "-n", "1", "--no-dashboard", "--", *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its workers share its process group: stopped together
    )
    try:
        time.sleep(30)
    finally:
        os.killpg(fuzzing.pid, signal.SIGINT)
        try:
            output, _ = fuzzing.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(fuzzing.pid, signal.SIGKILL)
            output, _ = fuzzing.communicate()
    assert "collecting tests... done" in output, output
    assert "using 1 process to fuzz 1 test" in output, output
    reports = subprocess.run(
        [sys.executable, "-c", f"ARGS = {args!r}\n{textwrap.dedent(REPORTS)}"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(reports.stdout.strip().splitlines()[-1])
    ((nodeid, report),) = found.items()
    assert nodeid.endswith("::test_transfer")
    assert report["inputs"] > 0, found
