"""Campaigns keep hunting after a failure; the repro dir is the registry of known bugs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

# Loaded here so the in-process runs below do not drop (and then reload) them.
import cgraph_doubles.inprocess  # noqa: F401

pytest_plugins = "pytester"

TESTS = Path(__file__).resolve().parents[1]


def campaign(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict]:
    # In process: these backends raise, they do not kill or hang the process.
    result = pytester.runpytest(
        "--cgraph", "-p", "no:cacheprovider", "--cgraph-report=r.json", *args
    )
    return result, json.loads((pytester.path / "r.json").read_text())


def test_one_run_reports_two_independent_faults_each_with_a_repro(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(TESTS))
    result, report = campaign(
        pytester,
        "-p",
        "cgraph_doubles.faults",
        "--cgraph-backend=faulty_two_crashes",  # one per graph arity
        "--cgraph-families=mixed",
        "--cgraph-examples=40",
        "--cgraph-seed=5",
    )
    result.assert_outcomes(failed=1)
    errors = {failure["difference"]["exception_type"] for failure in report["failures"]}
    assert {"RuntimeError", "ValueError"} <= errors, result.stdout.str()
    repros = list((pytester.path / "cgraph-repros").glob("*.py"))
    assert len(repros) == len(report["failures"]) >= 2
    # Two findings of one broad signature (two value differences of different calls)
    # are two bugs, each with its repro, under one signature.
    signatures = len({failure["signature"] for failure in report["failures"]})
    result.stdout.fnmatch_lines([f"*{signatures} new failure signature(s) in mixed programs*"])
    assert all(failure["hits"] >= 1 for failure in report["failures"])


# Every replay crashes the same way under this backend: one signature,
# whatever the program, so reruns are deterministic.
ONE_BUG = (
    "-p",
    "cgraph_doubles.faults",
    "--cgraph-backend=faulty_crash_on_replay",
    "--cgraph-families=views",
    "--cgraph-examples=15",
    "--cgraph-seed=2",
)


def test_known_bugs_pass_strict_fails_and_a_deleted_repro_is_new_again(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(TESTS))
    first, report = campaign(pytester, *ONE_BUG)
    first.assert_outcomes(failed=1)
    (signature,) = [failure["signature"] for failure in report["failures"]]
    (repro,) = (pytester.path / "cgraph-repros").glob("*.py")

    again, report = campaign(pytester, *ONE_BUG)
    again.assert_outcomes(passed=1)
    assert report["failures"] == []
    assert [entry["signature"] for entry in report["known"]] == [signature]
    assert report["known"][0]["hits"] >= 1
    again.stdout.fnmatch_lines(["known: 1 bug(s) seen again (1 registry entry), not failures"])

    strict, _ = campaign(pytester, *ONE_BUG, "--cgraph-strict")
    assert strict.ret == pytest.ExitCode.TESTS_FAILED

    repro.unlink()
    renewed, report = campaign(pytester, *ONE_BUG)
    renewed.assert_outcomes(failed=1)
    assert [failure["signature"] for failure in report["failures"]] == [signature]
    assert report["known"] == []


def test_a_repro_that_no_longer_reproduces_is_reported_fixed(pytester: pytest.Pytester) -> None:
    repro_dir = pytester.mkdir("cgraph-repros")
    (repro_dir / "value-output_0.py").write_text(
        "# pytest-cgraph repro\n# base signature: value-output_0\n"
        "def test_value_output_0():\n    assert True\n"
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "cgraph-repros")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["cgraph: fixed: */cgraph-repros/value-output_0.py no longer reproduces; retire it"]
    )


def test_check_known_fails_an_entry_whose_program_now_fails_another_way(
    pytester: pytest.Pytester,
) -> None:
    # The same program under another recorded signature: replayed, it fails
    # as grad-grad, which is another bug than the entry names. "REPRODUCED
    # DIFFERENTLY" is not "REPRODUCED": the entry hides a bug it does not name.
    from pytest_cgraph.registry.entries import BASELINE_ROOT

    registry = pytester.mkdir("known")
    entry = (BASELINE_ROOT / "torch-2.13" / "grad-grad-aot_eager.toml").read_text()
    relabelled = entry.replace("grad-grad", "value-output")
    assert 'signature = "value-output"' in relabelled
    (registry / "value-output-aot_eager.toml").write_text(relabelled)
    result = pytester.runpytest(
        "--cgraph-check-known", "--cgraph-no-baseline", f"--cgraph-known={registry}"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "CHANGED: */known/value-output-aot_eager.toml now fails another way "
            "(REPRODUCED DIFFERENTLY (aot_eager): grad difference *"
            "was value-output, now grad-grad*); it no longer shows the bug it names*"
        ]
    )


def test_a_truncated_entry_stops_the_run_in_one_line(pytester: pytest.Pytester) -> None:
    # Read leniently it had no program, so it called nothing and claimed every
    # failing program of its signature: a new bug would have passed as known.
    from pytest_cgraph.registry.entries import BASELINE_ROOT

    registry = pytester.mkdir("known")
    whole = (BASELINE_ROOT / "torch-2.13" / "grad-grad-aot_eager.toml").read_text()
    cut = registry / "grad-grad-aot_eager.toml"
    cut.write_text(whole[: whole.index("program = ") + 40])
    # A run of marked tests and fixture checks alone uses the registry it names too.
    for run in ("--cgraph", "--cgraph-check-known", "-q"):
        result = pytester.runpytest(run, f"--cgraph-known={registry}", "-p", "no:cacheprovider")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        lines = [line for line in result.errlines if line]
        assert len(lines) == 1, lines
        assert lines[0].startswith(
            f"ERROR: pytest-cgraph: {cut}: a pytest-cgraph registry file, but it does not "
            "parse as TOML ("
        ), lines
        assert lines[0].endswith(
            "); restore it (or record it again with python -m pytest_cgraph.record) or remove it"
        ), lines


def test_check_known_skips_an_entry_this_machine_cannot_show_never_calling_it_fixed(
    pytester: pytest.Pytester,
) -> None:
    # A CUDA entry on a machine without CUDA, and an entry that needs an AVX-512
    # CPU on one whose Inductor kernels are AVX2: neither can show here, and
    # "no longer reproduces" would say torch fixed what it did not.
    from pytest_cgraph.registry.entries import BASELINE_ROOT

    registry = pytester.mkdir("known")
    whole = (BASELINE_ROOT / "torch-2.13" / "grad-grad-aot_eager.toml").read_text()
    (registry / "grad-grad-cuda.toml").write_text(
        whole.replace('device = "cpu"', 'device = "cuda"')
    )
    (registry / "grad-grad-avx512.toml").write_text(
        whole.replace("# found by: ", "# requires: avx512\n# found by: ")
    )
    # The machine as seen by the checks: AVX2 kernels, no CUDA device (whatever
    # this one has), so both entries are skipped on every machine the suite runs on.
    pytester.makeconftest(
        "from pytest_cgraph.registry import requirements\n"
        "requirements.inductor_vector_isa = lambda: 'avx2'\n"
        "requirements._LACKS['cuda'] = lambda: 'this machine has no CUDA device'\n"
    )
    result = pytester.runpytest(
        "--cgraph-check-known", "--cgraph-no-baseline", f"--cgraph-known={registry}", "-rs"
    )
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines_random(
        [
            "SKIPPED * grad-grad-avx512.toml needs a CPU whose Inductor kernels are vectorised "
            "with AVX-512 (AVX2 kernels hide it); Inductor vectorises this CPU's kernels with avx2",
            "SKIPPED * grad-grad-cuda.toml needs a CUDA device and a CUDA build of torch; this "
            "machine has no CUDA device",
        ]
    )
    result.stdout.no_fnmatch_line("*FIXED*")


# Two replay faults in one backend (a frozen random stream, lost input writes):
# one signature (a wrong value) reached through either is two bugs.
TWO_FAULTS = (
    "-p",
    "cgraph_doubles.faults",
    "--cgraph-backend=faulty_two_faults",
    "--cgraph-families=mixed",
    "--cgraph-examples=60",
    "--cgraph-seed=3",
    "--cgraph-no-baseline",
)


@pytest.mark.deep  # two campaigns of 60 programs: about 100 s
def test_a_second_run_knows_every_bug_the_first_wrote_met_through_other_ops(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_cgraph.registry.entries import Registry, read_entry
    from pytest_cgraph.registry.own_backend import face

    monkeypatch.setenv("PYTHONPATH", str(TESTS))
    first, report = campaign(pytester, *TWO_FAULTS)
    first.assert_outcomes(failed=1)
    written = Registry.load([pytester.path / "cgraph-repros"])
    found = {failure["signature"] for failure in report["failures"]}
    assert found and len(written) == len(report["failures"])

    # A second file of one signature is another bug: no file written before it
    # (NAME.py, then NAME-2.py, ...) claims its program.
    def order(path: Path) -> int:
        number = path.stem.rsplit("-", 1)[-1]
        return int(number) if number.isdigit() else 1

    for entry in written.entries():
        for earlier in written.entries():
            if earlier.signature == entry.signature and order(earlier.path) < order(entry.path):
                assert not earlier.claims(entry.ops), (earlier.path.name, entry.path.name)
    # What no torch layer shows is the backend's own: one file per face (inputs,
    # outputs, gradients), not one per signature and op family.
    own = [face(entry.signature) for entry in written.entries() if entry.layer is None]
    assert own and len(own) == len(set(own)), own

    _, report = campaign(pytester, *TWO_FAULTS)
    known = {entry["signature"] for entry in report["known"]}
    # The bugs the first run wrote are met again, through other ops, and known
    # (no baseline: only the first run's files can know them); the backend's own
    # through other signatures of the faces it was filed by too.
    assert known, report
    assert all(s in found or face(s) in own for s in known), (found, known)
    for failure in report["failures"]:
        # New only where no file of its signature and layer claims its calls: another
        # hazard than every one of them (or a signature the first run never met).
        if not failure["repro"]:
            continue
        new = read_entry(pytester.path / failure["repro"])
        assert new is not None
        if new.layer is None:  # the backend's own: only a crash's message makes it new
            assert face(new.signature) == new.signature, failure["repro"]
        for entry in written.entries():
            if (entry.signature, entry.layer) == (new.signature, new.layer):
                assert not entry.claims(new.ops), (entry.path.name, failure["repro"])


def test_check_known_replays_a_dead_process_again_before_calling_it_changed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Memory corruption ends a process one way or another (a segfault, or a
    # MemoryError first): once shown in a few replays, the bug is still there.
    from types import SimpleNamespace

    from pytest_cgraph.oracle.driver import ReplayVerdict
    from pytest_cgraph.plugin.known_items import DEAD_PROCESS_TRIES
    from pytest_cgraph.recording import repro
    from pytest_cgraph.registry.entries import BASELINE_ROOT

    name = "crash-process-SIGSEGV-in_gen_alias_from_base_torch_functorch_a_225743.toml"
    registry = pytester.mkdir("known")
    (registry / name).write_text((BASELINE_ROOT / "torch-2.13" / name).read_text())
    verdicts = [ReplayVerdict.REPRODUCED_DIFFERENTLY, ReplayVerdict.REPRODUCED]
    replays: list[Path] = []

    def replay(path: Path) -> SimpleNamespace:
        replays.append(path)
        return SimpleNamespace(verdict=verdicts[min(len(replays), len(verdicts)) - 1], line="x")

    monkeypatch.setattr(repro, "replay_verdict", replay)
    arguments = ("--cgraph-check-known", "--cgraph-no-baseline", f"--cgraph-known={registry}")
    pytester.runpytest(*arguments).assert_outcomes(passed=1)
    assert len(replays) == 2
    # Another way every time: changed, after DEAD_PROCESS_TRIES replays.
    verdicts[:] = [ReplayVerdict.REPRODUCED_DIFFERENTLY]
    replays.clear()
    result = pytester.runpytest(*arguments)
    result.assert_outcomes(failed=1)
    assert len(replays) == DEAD_PROCESS_TRIES
