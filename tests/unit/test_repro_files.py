"""Repro files: dedup by signature, smaller wins, foreign files kept, atomic under workers."""

from __future__ import annotations

import dataclasses
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_cgraph.checking.runner import check_source
from pytest_cgraph.errors import EquivalenceError
from pytest_cgraph.failures import Case, Failure, ReproStatus
from pytest_cgraph.oracle.compiling import Backend
from pytest_cgraph.recording.repro import make_repro
from pytest_cgraph.registry.repro_files import MARKER_LINE, write_repro
from pytest_cgraph.strategies.templates import MODULE, TEMPLATES

LOST_MUTATION = """\
# family: mutation
import torch


def program(a0):
    a0.add_(2)
    return (a0 * 1,)


def inputs(k):
    return (torch.zeros(2),)


FRESH_INPUTS = False
ITERS = 5
"""


def failing(source: str, backend: str, modules: tuple[str, ...] = ()) -> Failure:
    """The failure ``source`` shows on ``backend``, as the campaign would record it."""
    for module in modules:  # as the plugin would have: they register the backend
        importlib.import_module(module)
    with pytest.raises(EquivalenceError) as raised:
        check_source(source, backend=backend)
    case = Case(source, backend, "cpu", 5, family="mutation", size=101, setup_modules=modules)
    return Failure(case, raised.value.difference)


def text(size: int) -> str:
    return f"{MARKER_LINE}\n# size: {size}\nprint('repro of size {size}')\n"


def test_a_smaller_program_replaces_a_larger_never_the_reverse(tmp_path: Path) -> None:
    path, written = write_repro(tmp_path, "value-output_0", text(300), 300)
    assert (path.name, written) == ("value-output_0.py", True)
    assert write_repro(tmp_path, "value-output_0", text(400), 400)[1] is False  # kept smaller
    assert write_repro(tmp_path, "value-output_0", text(100), 100)[1] is True
    assert "# size: 100" in path.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".cgraph-repro.lock", "value-output_0.py"]


def verified(program: str, size: int, message: str | None = None) -> Failure:
    """A verified failure of ``program`` at aot_eager, ready to store: ``value-output``,
    or with ``message`` a compiled call's crash."""
    from pytest_cgraph.failures import ReproResult
    from pytest_cgraph.oracle.difference import Difference, Kind, Place, Role

    if message is None:
        difference = Difference(Kind.VALUE, 1, Place(Role.OUTPUT, index=0))
    else:
        difference = Difference(
            Kind.CRASH,
            1,
            Place(Role.COMPILED, name="call"),
            exception_type="RuntimeError",
            message=message,
        )
    text = stored(difference.signature, program, size)
    return Failure(
        Case(program, "cudagraphs", "cpu", 5, size=size),
        difference,
        repro=ReproResult(ReproStatus.VERIFIED, text=text, layer="aot_eager"),
    )


def stored(signature: str, program: str, size: int) -> str:
    """A repro file's text as far as a registry reads one."""
    from pytest_cgraph.registry.repro_files import BASE_SIGNATURE, LAYER, SIZE

    return (
        f"{MARKER_LINE}\n{BASE_SIGNATURE}{signature}\n{LAYER}aot_eager\n"
        f"{SIZE}{size}\nPROGRAM_SOURCE = r'''\n{program}'''\n"
    )


BY_MUL = "def program(a0):\n    a0.mul_(2)\n    return (a0,)\n"
BY_SET = "def program(a0):\n    a0.set_(a0.clone())\n    return (a0,)\n"


def test_another_mechanism_of_a_signature_is_written_beside_never_kept_out(
    tmp_path: Path,
) -> None:
    from pytest_cgraph.recording.repro import store_repro

    first = store_repro(verified(BY_MUL, 20), tmp_path).repro
    assert first is not None and first.status is ReproStatus.WRITTEN
    # the same bug (its program makes the stored one's calls), larger: the smaller stays
    larger = "def program(a0):\n    a0.mul_(2).sin_()\n    return (a0,)\n"
    kept = store_repro(verified(larger, 30), tmp_path).repro
    assert kept is not None and (kept.status, kept.path) == (ReproStatus.KEPT_SMALLER, first.path)
    # another mechanism of the signature (no mul_), even larger: its own file beside
    beside = store_repro(verified(BY_SET, 40), tmp_path).repro
    assert beside is not None and beside.status is ReproStatus.WRITTEN
    assert Path(beside.path).name == "value-output-aot_eager-2.py"
    assert "mul_" in Path(first.path).read_text() and "set_" in Path(beside.path).read_text()


def test_a_file_making_fewer_calls_is_kept_even_against_a_smaller_program(
    tmp_path: Path,
) -> None:
    from pytest_cgraph.recording.repro import store_repro

    first = store_repro(verified(BY_MUL, 40), tmp_path).repro
    # another hazard besides the write (a random draw): the file claims every
    # program the smaller one would, and more: it stays
    more_calls = "def program(a0):\n    a0.mul_(2)\n    return (a0 + torch.rand_like(a0),)\n"
    kept = store_repro(verified(more_calls, 10), tmp_path).repro
    assert kept is not None and first is not None
    assert (kept.status, kept.path) == (ReproStatus.KEPT_SMALLER, first.path)
    assert "rand_like" not in Path(first.path).read_text()
    # the same hazard through another op, smaller: the same bug, and the smaller wins
    by_add = "def program(a0):\n    a0.add_(2)\n    return (a0,)\n"
    replaced = store_repro(verified(by_add, 20), tmp_path).repro
    assert replaced is not None
    assert (replaced.status, replaced.path) == (ReproStatus.WRITTEN, first.path)
    assert "add_" in Path(first.path).read_text()


def test_the_same_bug_s_file_is_found_past_a_gap_and_another_bug_s_file(
    tmp_path: Path,
) -> None:
    from pytest_cgraph.recording.repro import store_repro

    name, signature = "value-output-aot_eager", verified(BY_MUL, 1).signature
    # value-output-aot_eager.py was deleted after triage; -2 is another bug, -3 this one
    (tmp_path / f"{name}-2.py").write_text(stored(signature, BY_SET, 30))
    (tmp_path / f"{name}-3.py").write_text(stored(signature, BY_MUL, 30))
    smaller = store_repro(verified(BY_MUL, 20), tmp_path).repro
    assert smaller is not None and smaller.status is ReproStatus.WRITTEN
    assert Path(smaller.path).name == f"{name}-3.py"
    assert sorted(path.name for path in tmp_path.glob("*.py")) == [f"{name}-2.py", f"{name}-3.py"]


def test_a_message_one_file_names_is_one_bug_until_files_of_other_calls_share_it(
    tmp_path: Path,
) -> None:
    from pytest_cgraph.recording.repro import store_repro

    message = "one of the variables needed for gradient computation has been modified"
    first = store_repro(verified(BY_MUL, 30, message), tmp_path).repro
    # the message alone names the bug (as the registry says): the smaller replaces it
    replaced = store_repro(verified(BY_SET, 20, message), tmp_path).repro
    assert first is not None and replaced is not None
    assert (replaced.status, replaced.path) == (ReproStatus.WRITTEN, first.path)
    # once a file of other calls shares the message, the calls tell its bugs apart
    name = Path(first.path).stem
    signature = verified(BY_MUL, 1, message).signature
    (tmp_path / f"{name}-2.py").write_text(stored(signature, BY_MUL, 25))
    # (a view: a hazard neither file's program has; mul_ and set_ are writes)
    by_t = "def program(a0):\n    return (a0.t(),)\n"
    beside = store_repro(verified(by_t, 10, message), tmp_path).repro
    assert beside is not None and Path(beside.path).name == f"{name}-3.py"


def test_a_hang_whose_faulthandler_dump_crashed_still_reproduced_its_hang() -> None:
    import subprocess as sp

    from pytest_cgraph.oracle.driver import ReplayVerdict
    from pytest_cgraph.recording.repro import _subprocess_verdict

    dump = 'Timeout (0:00:01)!\nThread 0x7f (most recent call first):\n  File "x.py", line 3\n'
    segfault = "Fatal Python error: Segmentation fault\n"
    crashed = sp.CompletedProcess(["python"], -11, "", dump + segfault)
    verdict = _subprocess_verdict(crashed, 121.0, "TIMEOUT = 1 s")
    assert verdict.verdict_for("timeout-program") is ReplayVerdict.REPRODUCED
    assert verdict.said == "python FILE hung past TIMEOUT = 1 s" and verdict.death is None
    # without the watchdog's header, a signal is a death, not a hang
    died = sp.CompletedProcess(["python"], -11, "", segfault)
    verdict = _subprocess_verdict(died, 121.0, "TIMEOUT = 1 s")
    assert verdict.death is not None
    assert verdict.verdict_for("timeout-program") is ReplayVerdict.REPRODUCED_DIFFERENTLY


def test_a_verdict_line_is_read_whole_never_by_its_first_word() -> None:
    import subprocess as sp

    from pytest_cgraph.oracle.driver import ReplayVerdict
    from pytest_cgraph.recording.repro import _subprocess_verdict

    differently = "REPRODUCED DIFFERENTLY (aot_eager): value difference [was a, now b]"
    for line, verdict in [
        ("REPRODUCED (aot_eager): value difference", ReplayVerdict.REPRODUCED),
        (differently, ReplayVerdict.REPRODUCED_DIFFERENTLY),
        ("NOT REPRODUCED (eager): eager and compiled agree", ReplayVerdict.NOT_REPRODUCED),
    ]:
        assert ReplayVerdict.of_line(line) is verdict
        run = _subprocess_verdict(sp.CompletedProcess([], 1, f"{line}\n", ""), 1.0, None)
        assert (run.verdict_for("value-output"), run.line("value-output")) == (verdict, line)
    for other in ("REPRODUCEDX (a): b", "REPRODUCED", "REPRODUCED: python FILE hung", ""):
        assert ReplayVerdict.of_line(other) is None
    # a crash's file that outlives its limit has not crashed; a hang's has hung
    assert _subprocess_verdict(None, 9.0, None).verdict_for("x") is ReplayVerdict.NOT_REPRODUCED
    assert _subprocess_verdict(None, 9.0, "its TIMEOUT").verdict_for("x") is (
        ReplayVerdict.REPRODUCED
    )


def test_a_foreign_file_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "value-output_0.py").write_text("# my own notes\n")
    path, written = write_repro(tmp_path, "value-output_0", text(100), 100)
    assert (path.name, written) == ("value-output_0-2.py", True)
    assert (tmp_path / "value-output_0.py").read_text() == "# my own notes\n"


def test_a_corrupted_repro_of_ours_is_kept_and_ours_goes_beside_it(tmp_path: Path) -> None:
    corrupted = f"{MARKER_LINE}\n\x00\x17 truncated by a full disk".encode()
    (tmp_path / "value-output_0.py").write_bytes(corrupted)
    path, written = write_repro(tmp_path, "value-output_0", text(100), 100)
    assert (path.name, written) == ("value-output_0-2.py", True)
    assert (tmp_path / "value-output_0.py").read_bytes() == corrupted
    assert path.stat().st_mode & 0o044 == 0o044  # readable by others, unlike mkstemp's files


RACE = """
import sys
from pathlib import Path
from pytest_cgraph.registry.repro_files import MARKER_LINE, write_repro

directory, size = Path(sys.argv[1]), int(sys.argv[2])
text = f"{MARKER_LINE}\\n# size: {size}\\nprint('repro of size {size}')\\n"
for _ in range(20):
    write_repro(directory, "crash-compiled_call", text, size)
"""


def test_two_workers_writing_one_signature_leave_one_valid_file(tmp_path: Path) -> None:
    workers = [
        subprocess.Popen([sys.executable, "-c", RACE, str(tmp_path), str(size)])
        for size in (200, 150)
    ]
    assert [worker.wait(120) for worker in workers] == [0, 0]
    files = sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("."))
    assert files == ["crash-compiled_call.py"]
    assert (tmp_path / "crash-compiled_call.py").read_text() == text(150)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from cgraph_doubles.faults import FAULTS  # registers the faulty backends

    assert FAULTS
    directory = tmp_path_factory.mktemp("repros")
    failure = failing(LOST_MUTATION, "faulty_lost_input_mutation", ("cgraph_doubles.faults",))
    repro = make_repro(failure, directory).repro
    assert repro is not None and repro.status is ReproStatus.WRITTEN, repro
    assert repro.path is not None and repro.layer is None
    return Path(repro.path)


def run_repro(
    path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
        "PATH": "/usr/bin:/bin",
        **(env or {}),
    }
    return subprocess.run(
        [sys.executable, str(path), *args], capture_output=True, text=True, env=env, timeout=300
    )


def test_repro_header_says_what_failed_where(written: Path) -> None:
    head = written.read_text().split("\n\n", 1)[0]
    assert head.startswith(MARKER_LINE)
    assert "# failure: mutation difference at iteration 3, argument a0" in head
    assert "# base signature: mutation-argument" in head
    assert "# layer: none" in head
    assert "# backend: faulty_lost_input_mutation; device: cpu; iterations: 5" in head
    assert "# first diverging layer: none below the backend itself" in head
    assert "# size: 101" in head
    assert "import cgraph_doubles" not in head


def test_repro_exits_1_while_the_bug_is_there_and_0_on_a_correct_backend(written: Path) -> None:
    failing = run_repro(written)
    assert failing.returncode == 1, failing.stderr
    assert failing.stdout.startswith("REPRODUCED (faulty_lost_input_mutation): ")
    assert len(failing.stdout.strip().splitlines()) == 1
    assert "eager:    [6.0, 6.0]" in failing.stderr  # the details go to stderr
    passing = run_repro(written, "--backend", "aot_eager")
    assert passing.returncode == 0, passing.stderr
    assert passing.stdout.strip() == "NOT REPRODUCED (aot_eager): eager and compiled agree"


def test_repro_prints_a_report_ready_to_file_with_the_backends_that_fail(written: Path) -> None:
    # pytest-cgraph is installed here: the report carries the verified plain script.
    report = run_repro(written, "--issue")
    assert report.returncode == 0, report.stderr
    text = report.stdout
    assert text.startswith("### Title\n")
    assert 'torch.compile(fn, backend="faulty_lost_input_mutation")' in text
    assert "def program(a0):" not in text  # no harness code
    assert "### Versions" in text
    # Torch's own backends agree with eager; the file's backend alone fails.
    for backend in ("eager", "aot_eager", "aot_eager_decomp_partition"):
        assert f'| compiled with `backend="{backend}"` | passes |' in text
    assert "| compiled with `torch.compile(fn)` | passes |" in text
    assert '| compiled with `backend="faulty_lost_input_mutation"` | **fails** |' in text


def test_repro_against_another_backend_prints_the_harness_report(written: Path) -> None:
    report = run_repro(written, "--issue", "--backend", "aot_eager")
    assert report.returncode == 0, report.stderr
    text = report.stdout
    assert text.startswith("### 🐛 Describe the bug")
    assert "def program(a0):" in text and "### Versions" in text
    assert "| `aot_eager` |" in text
    assert "fallback_random" in text


def test_a_program_that_does_not_reproduce_is_not_written(tmp_path: Path) -> None:
    failure = failing(LOST_MUTATION, "faulty_lost_input_mutation", ("cgraph_doubles.faults",))
    correct = dataclasses.replace(
        failure, case=dataclasses.replace(failure.case, backend="aot_eager")
    )
    repro = make_repro(correct, tmp_path).repro
    assert repro is not None
    assert (repro.path, repro.status) == (None, ReproStatus.NOT_REPRODUCIBLE)
    assert "eager and compiled agree" in repro.detail
    assert not list(tmp_path.glob("*.py"))


def test_a_lower_rung_crashing_with_another_message_leaves_the_layer_untold(
    tmp_path: Path,
) -> None:
    # fill_ of an expanded input: aot_eager raises "more than one element of
    # the written-to tensor refers to a single memory location" while
    # compiling, cudagraphs raises "unsupported operation: ..." when it runs.
    # Another message is another signature: aot_eager is not the layer of
    # cudagraphs' crash, and nothing above it can be blamed either.
    source = LOST_MUTATION.replace("a0.add_(2)", "a0.fill_(1.5)").replace(
        "torch.zeros(2)", "torch.zeros(1).expand(2)"
    )
    failure = failing(source, "cudagraphs")
    repro = make_repro(failure, tmp_path).repro
    assert repro is not None and repro.verified
    assert repro.layer is None and not repro.cudagraph_specific
    assert repro.path is not None and repro.path.endswith(f"/{failure.signature}.py")
    assert "# first diverging layer: not located: aot_eager: fails differently (crash-" in (
        Path(repro.path).read_text()
    )


# Two bugs on two rungs (found by a 60-minute campaign): aot_eager loses the
# module parameter's grad (grad-grad-presence); the default partitioner (the
# one cudagraphs uses) moves the unused bernoulli into backward, which then
# finds v0 written in place and raises. Whether aot_eager would raise too is
# hidden by its own bug: the crash's layer cannot be told.
TWO_BUGS_TWO_RUNGS = (
    "\nimport torch\n\n"
    + TEMPLATES[MODULE]  # the generator's module argument, as the campaign drew it
    + """

def stage0(a0, m1):
    v0 = m1(a0)
    v1 = torch.bernoulli(torch.full_like(v0, 0.5))
    return (v0,)


def stage1(a0, m1, v0):
    v3 = a0 + 2
    v0.add_(2)
    return (v3,)


def program(a0, m1):
    (v0,) = stage0(a0, m1)
    return stage1(a0, m1, v0)


def inputs(k):
    a0 = torch.full((1,), 0.25)
    a0.requires_grad_(True)
    return (a0, Counter())


COMPILE = ("stage0", "stage1")
"""
)


def test_a_lower_rung_with_another_bug_is_not_walked_past(tmp_path: Path) -> None:
    from pytest_cgraph.oracle.ladder import climb

    failure = failing(TWO_BUGS_TWO_RUNGS, "cudagraphs")
    assert failure.signature.startswith("crash-compiled_backward-RuntimeError-one_of_the_")
    rungs = climb(TWO_BUGS_TWO_RUNGS, "cudagraphs", None, 5, stop_at_first=False)
    signatures = [rung.difference.signature if rung.difference else None for rung in rungs]
    assert signatures == [None, "grad-grad-presence", failure.signature, failure.signature]
    repro = make_repro(failure, tmp_path).repro
    assert repro is not None and repro.verified
    assert repro.layer is None and not repro.cudagraph_specific
    assert repro.path is not None and repro.path.endswith(f"/{failure.signature}.py")
    head = Path(repro.path).read_text().split("\n\n", 1)[0]
    assert (
        "# first diverging layer: not located: aot_eager: fails differently "
        "(grad-grad-presence): the layer cannot be told (ladder eager -> aot_eager -> "
        "aot_eager_default_partitioner -> cudagraphs); CUDA-graph path specific: unknown"
    ) in head
    assert "# layer: none" in head


# Iteration 1 differs from aot_eager up (torch 2.13 calls the hook of a
# tensor off the output's backward path with None); the input detached in
# place makes eager's own iteration 2 invalid, which Dynamo's eager rung
# reaches first, since it does not diverge at iteration 1.
HOOK_OFF_THE_PATH = """
import torch


def program(a0):
    v0 = a0 + 2
    v1 = v0.clone()
    a0.detach_()
    a0.add_(2)
    v1.register_hook(lambda grad: grad * 2)
    return (v0,)


def inputs(k):
    return (torch.ones(1, requires_grad=True),)
"""


def test_an_invalid_lower_rung_does_not_stop_the_ladder(tmp_path: Path) -> None:
    repro = make_repro(failing(HOOK_OFF_THE_PATH, "cudagraphs"), tmp_path).repro
    assert repro is not None and repro.verified
    assert repro.layer == "aot_eager", repro.detail


def _builtins_only(value: object, where: str = "failure") -> None:
    """Exact builtin types, as pytest-xdist's channel demands (no str-based enums)."""
    if isinstance(value, dict):
        for key, item in value.items():
            assert type(key) is str, where
            _builtins_only(item, f"{where}.{key}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _builtins_only(item, f"{where}[{index}]")
    else:
        assert type(value) in (str, int, float, bool, type(None)), (where, type(value))


def test_a_recorded_failure_is_plain_builtins_and_survives_json(tmp_path: Path) -> None:
    failure = failing(LOST_MUTATION, "faulty_lost_input_mutation", ("cgraph_doubles.faults",))
    recorded = make_repro(failure, tmp_path)
    assert recorded.repro is not None and recorded.repro.verified
    data = recorded.to_json()
    _builtins_only(data)
    assert Failure.from_json(data) == recorded


def test_of_two_equally_small_repros_the_same_one_stays_whatever_their_order(
    tmp_path: Path,
) -> None:
    first = text(100) + "# found by: cgraph::mutation[0]\n"
    second = text(100) + "# found by: cgraph::mutation[1]\n"
    kept = []
    for order in ((first, second), (second, first)):
        directory = tmp_path / str(len(kept))
        for candidate in order:
            path, _ = write_repro(directory, "value-output_0", candidate, 100)
        kept.append(path.read_text())
    assert kept == [first, first]


def test_an_entry_or_a_hand_recorded_program_is_never_replaced_by_an_equal_one(
    tmp_path: Path,
) -> None:
    kept = text(0) + "# the entry recorded first\n"
    later = text(0) + "# another program of the same signature\n"
    for suffix in (".py", ".toml"):
        write_repro(tmp_path, "grad-grad-presence", kept, 0, suffix)
        path, written = write_repro(tmp_path, "grad-grad-presence", later, 0, suffix)
        assert written is False and path.read_text() == kept


def test_a_repro_that_dies_elsewhere_does_not_reproduce_the_death() -> None:
    from pytest_cgraph.failures import death
    from pytest_cgraph.oracle.driver import ReplayVerdict
    from pytest_cgraph.recording.repro import ScriptRun

    here = death("killed by SIGSEGV", "SIGSEGV", "in unbind (torch/_tensor.py)")
    elsewhere = death("killed by SIGSEGV", "SIGSEGV", "in gen_alias (torch/_functorch/x.py)")
    run = ScriptRun(None, f"python FILE {here.detail}", here)
    assert run.verdict_for(here.signature) is ReplayVerdict.REPRODUCED
    assert run.line(here.signature) == (
        "REPRODUCED: python FILE killed by SIGSEGV in unbind (torch/_tensor.py)"
    )
    assert run.verdict_for(elsewhere.signature) is ReplayVerdict.REPRODUCED_DIFFERENTLY
    abort = death("killed by SIGABRT", "SIGABRT").signature
    assert run.verdict_for(abort) is ReplayVerdict.REPRODUCED_DIFFERENTLY
    # a file written before sites were read names the signal alone: any site will do
    assert run.verdict_for("crash-process-SIGSEGV") is ReplayVerdict.REPRODUCED
    # a run that printed its verdict line is judged by that line's verdict, whole
    printed = ScriptRun(ReplayVerdict.REPRODUCED_DIFFERENTLY, "REPRODUCED DIFFERENTLY (a): x")
    assert printed.verdict_for("anything") is ReplayVerdict.REPRODUCED_DIFFERENTLY


# The cudagraphs backend gives a leaf only written under no_grad a zero grad;
# eager leaves it None, and every rung below cudagraphs agrees with eager.
ZERO_GRAD_ON_CUDAGRAPHS = """
import torch


def program(a0, p1):
    with torch.no_grad():
        a0.mul_(0.9)
    return (p1 * 2,)


def inputs(k):
    return (torch.ones(2, requires_grad=True), torch.nn.Parameter(torch.ones(2)))
"""


def test_the_ladder_takes_the_backends_own_rung_from_the_failure_not_a_second_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pytest_cgraph.oracle import ladder

    failure = failing(ZERO_GRAD_ON_CUDAGRAPHS, "cudagraphs")
    checked: list[str] = []
    check = ladder.check_source

    def counting_check(source: str, *, backend: Backend, **settings: object) -> object:
        checked.append(backend.name)
        return check(source, backend=backend, **settings)

    monkeypatch.setattr(ladder, "check_source", counting_check)
    source = ZERO_GRAD_ON_CUDAGRAPHS
    rungs = ladder.climb(source, "cudagraphs", None, 5, like=failure.difference)
    assert checked == ["eager", "aot_eager", "aot_eager_default_partitioner"]
    assert [rung.name for rung in rungs] == [*checked, "cudagraphs"]
    assert rungs[-1].difference == failure.difference
    assert ladder.locate(rungs, failure.difference)[:2] == ("cudagraphs", True)


@pytest.mark.parametrize("ends", ["hang", "death"])
def test_a_process_ending_repro_whose_file_fails_another_way_is_not_verified(
    tmp_path: Path, ends: str
) -> None:
    # Recorded as a hang (or a dead process), the program instead raises on
    # replay under this backend: its file prints "REPRODUCED DIFFERENTLY",
    # which shows another bug, not the one the file would be named after.
    from cgraph_doubles.faults import FAULTS  # registers the faulty backends
    from pytest_cgraph.failures import death, hang

    assert FAULTS
    case = Case(
        LOST_MUTATION,
        "faulty_crash_on_replay",
        "cpu",
        5,
        size=101,
        timeout=30.0,
        setup_modules=("cgraph_doubles.faults",),
    )
    recorded = hang(30.0) if ends == "hang" else death("killed by SIGSEGV", "SIGSEGV")
    repro = make_repro(Failure(case, recorded), tmp_path).repro
    assert repro is not None
    assert (repro.status, repro.path) == (ReproStatus.NOT_REPRODUCIBLE, None), repro
    assert "REPRODUCED DIFFERENTLY (faulty_crash_on_replay): crash difference" in repro.detail
    assert not list(tmp_path.glob("*.py"))


def test_a_crash_repro_prints_one_line_and_its_traceback_only_with_v(tmp_path: Path) -> None:
    from cgraph_doubles.faults import FAULTS  # registers the faulty backends

    assert FAULTS
    failure = failing(LOST_MUTATION, "faulty_crash_on_replay", ("cgraph_doubles.faults",))
    assert failure.signature.startswith("crash-compiled_call-RuntimeError-replay_crashed")
    repro = make_repro(failure, tmp_path).repro
    assert repro is not None and repro.status is ReproStatus.WRITTEN and repro.path, repro
    quiet = run_repro(Path(repro.path))
    assert quiet.returncode == 1
    assert (quiet.stdout + quiet.stderr).strip().splitlines() == [
        "REPRODUCED (faulty_crash_on_replay): crash difference at iteration 3, compiled call: "
        "RuntimeError: replay crashed (-v for the traceback)"
    ]
    for flag in ("-v", "--verbose"):
        loud = run_repro(Path(repro.path), flag)
        assert loud.returncode == 1
        assert loud.stdout.strip() == (
            "REPRODUCED (faulty_crash_on_replay): crash difference at iteration 3, "
            "compiled call: RuntimeError: replay crashed"
        )
        assert "Traceback (most recent call last)" in loud.stderr
        assert "RuntimeError: replay crashed" in loud.stderr


#: A torch 2.13 crash inside an FX graph's generated code: FX itself prints
#: the failing line of the graph and a traceback to stderr as it raises.
FX_CRASH = "crash-compiled_backward-IndexError-list_index_out_of_range_f71717-aot_eager.toml"


def test_what_torch_prints_as_a_graph_crashes_is_held_back_without_v(tmp_path: Path) -> None:
    import torch

    from pytest_cgraph.recording.record import main as record_main
    from pytest_cgraph.registry.entries import BASELINE_ROOT

    entry = BASELINE_ROOT / "torch-2.13" / FX_CRASH
    if not torch.__version__.startswith("2.13.") or not entry.exists():
        pytest.skip("the crash is torch 2.13's")
    out = tmp_path / "fx_crash.py"
    assert record_main(["--export", str(entry), str(out)]) == 0
    quiet = run_repro(out)
    assert quiet.returncode == 1
    assert (quiet.stdout + quiet.stderr).strip().splitlines() == [
        "REPRODUCED (aot_eager): crash difference at iteration 1, compiled backward: "
        "IndexError: list index out of range (-v for the traceback)"
    ]
    loud = run_repro(out, "-v")
    assert loud.returncode == 1 and "(-v for" not in loud.stdout
    assert "Traceback (most recent call last)" in loud.stderr
    assert "Call using an FX-traced Module" in loud.stderr  # what FX printed


def test_a_repro_replays_with_the_thread_count_it_was_found_with(tmp_path: Path) -> None:
    # Found with two threads by a process that now runs one (an xdist worker
    # verifying what its child found): the file sets the count, so it is
    # located, verified and later replayed as it was found.
    import torch

    from cgraph_doubles.faults import FAULTS  # registers the faulty backends

    assert FAULTS
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        found = failing(LOST_MUTATION, "faulty_crash_with_threads", ("cgraph_doubles.faults",))
        torch.set_num_threads(1)
        failure = dataclasses.replace(found, case=dataclasses.replace(found.case, threads=2))
        repro = make_repro(failure, tmp_path).repro
        assert torch.get_num_threads() == 1  # set back after the replay
    finally:
        torch.set_num_threads(before)
    assert repro is not None and repro.status is ReproStatus.WRITTEN and repro.path, repro
    text = Path(repro.path).read_text()
    assert "\nTHREADS = 2  #" in text and "; torch threads: 2\n" in text
    env_one_thread = {"OMP_NUM_THREADS": "1"}
    replayed = run_repro(Path(repro.path), env=env_one_thread)
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert replayed.stdout.startswith("REPRODUCED (faulty_crash_with_threads): crash difference")
