"""The failure record: outcomes, signatures from fields, and a failure's trip through JSON."""

from __future__ import annotations

import json
import signal

import pytest

from pytest_cgraph.failures import (
    IN_A_GRAPH,
    Case,
    Failure,
    Outcome,
    ReproResult,
    ReproStatus,
    Verdict,
    crash_site,
    death,
    describe_exit,
    ends_process,
    is_hang,
)
from pytest_cgraph.oracle.difference import Difference, Kind, Place, Role

CASE = Case(
    "def program(x):\n    return x\n",
    "aot_eager",
    "cpu",
    5,
    family="views",
    nodeid="cgraph::views",
    seed=7,
    size=12,
    statements=2,
    timeout=30.0,
    setup_modules=("cgraph_doubles.faults",),
)

GRAD = Difference(
    Kind.GRAD,
    3,
    Place(Role.GRAD, name="net.lin.weight"),
    facet="presence",
    expected="a tensor",
    actual="None",
)


def test_how_a_process_ended_is_described_and_becomes_a_died_outcome() -> None:
    assert describe_exit(-signal.SIGSEGV) == "killed by SIGSEGV"
    assert describe_exit(-signal.SIGABRT) == "killed by SIGABRT"
    assert describe_exit(3) == "exited with status 3"
    assert describe_exit(None) == "did not exit"
    killed = Outcome.exited(-signal.SIGSEGV)
    assert killed.verdict is Verdict.DIED and killed.difference is not None
    assert killed.difference.signature == "crash-process-SIGSEGV"
    assert killed.difference.headline() == "crash of the process: killed by SIGSEGV"
    exited = Outcome.exited(3).difference
    assert exited is not None and exited.signature == "crash-process-exit"


# faulthandler's dump of a real torch 2.13 segfault (a view replayed on its base
# by AOTAutograd's runtime wrapper), cut short, its paths shortened.
SEGFAULT_DUMP = """\
Fatal Python error: Segmentation fault

Current thread 0x00007f63a9667b80 (most recent call first):
  File "/sp/torch/_ops.py", line 841 in __call__
  File "/sp/torch/_functorch/_aot_autograd/functional_utils.py", line 3 in gen_alias_from_base
  File "/sp/torch/_functorch/_aot_autograd/codegen.py:codegen(wrapper)", line 3 in _alias_fn
  File "/sp/torch/_functorch/_aot_autograd/wrappers.py", line 9 in _replay_alias
  File "<cgraph program 55ea8979e441>", line 7 in program
  File "/tmp/repro.py", line 1695 in _run_side

Thread 0x00007f63a0000000 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 324 in wait

Extension modules: torch._C (total: 1)
"""


def test_a_crash_is_placed_at_torchs_innermost_frame_past_the_trampolines() -> None:
    # _ops.py only passes the call on: the frame below it in the dump names the bug
    site = "in gen_alias_from_base (torch/_functorch/_aot_autograd/functional_utils.py)"
    assert crash_site(SEGFAULT_DUMP) == site
    # only torch's files name a site: another's path differs between the run
    # that found a crash and its repro (the pasted oracle, Inductor's hashes)
    elsewhere = SEGFAULT_DUMP.replace("torch/_functorch", "other")
    assert crash_site(elsewhere) is None
    in_ctypes = SEGFAULT_DUMP.replace("/sp/torch/_ops.py", "/usr/lib/python3.11/ctypes/__init__.py")
    assert crash_site(in_ctypes) == site

    # trampolines are never a site: a module's or an FX graph's __call__, a dispatch mode
    def dump(*frames: tuple[str, str]) -> str:
        lines = "".join(f'  File "{path}", line 1 in {name}\n' for path, name in frames)
        return f"Fatal Python error: Aborted\n\nStack (most recent call first):\n{lines}"

    assert crash_site(dump(("/x/torch/_ops.py", "__call__"))) is None
    runtime = ("/x/torch/_functorch/_aot_autograd/runtime_wrappers.py", "__torch_dispatch__")
    module = ("/x/torch/nn/modules/module.py", "_call_impl")
    # a crash inside generated graph code: the op is in C++, out of sight
    graph = ("<eval_with_key>.5", "forward")
    assert crash_site(dump(("/x/torch/_ops.py", "__call__"), graph, runtime)) == IN_A_GRAPH
    assert crash_site(dump(graph, module)) == IN_A_GRAPH
    inductor = ("/tmp/torchinductor_root/xy/cxyabc.py", "call")
    assert crash_site(dump(inductor, module)) == IN_A_GRAPH
    one_thread = SEGFAULT_DUMP.replace("Current thread 0x00007f63a9667b80", "Stack")
    assert crash_site(one_thread) == site
    # no fatal error (a hang's dump, an empty file): no site
    assert crash_site("Timeout (0:00:05)!\n" + SEGFAULT_DUMP.split("\n", 2)[2]) is None
    assert crash_site("") is None


def test_the_crash_site_is_part_of_a_deaths_signature() -> None:
    here = Outcome.exited(-signal.SIGSEGV, SEGFAULT_DUMP).difference
    elsewhere = Outcome.exited(
        -signal.SIGSEGV, SEGFAULT_DUMP.replace("gen_alias_from_base", "unbind")
    ).difference
    assert here is not None and elsewhere is not None
    assert here.signature.startswith("crash-process-SIGSEGV-in_gen_alias_from_base_torch_")
    assert here.signature != elsewhere.signature
    assert here.headline() == (
        "crash of the process: killed by SIGSEGV in gen_alias_from_base "
        "(torch/_functorch/_aot_autograd/functional_utils.py)"
    )
    assert ends_process(here.signature)
    assert death("killed by SIGSEGV", "SIGSEGV").signature == "crash-process-SIGSEGV"


def test_a_timeout_is_a_hang_of_the_program() -> None:
    timeout = Outcome.timed_out(3)
    assert timeout.verdict is Verdict.TIMEOUT and timeout.difference is not None
    assert timeout.difference.signature == "timeout-program"
    assert timeout.difference.ends_process
    assert timeout.difference.headline() == (
        "timeout of the program: it ran longer than the 3 s time limit"
    )
    assert Outcome.timed_out(None).difference == Outcome.timed_out(0).difference


@pytest.mark.parametrize(
    ("signature", "hang", "ends"),
    [
        ("timeout-program", True, True),
        ("crash-process-SIGSEGV", False, True),
        ("crash-process-died", False, True),
        ("crash-compiled_call-RuntimeError-boom_123abc", False, False),
        ("timeouts-are-not-a-kind", False, False),
        ("grad-grad-presence", False, False),
    ],
)
def test_which_signatures_end_their_process(signature: str, hang: bool, ends: bool) -> None:
    assert (is_hang(signature), ends_process(signature)) == (hang, ends)


def test_the_signature_is_computed_from_fields_and_the_layer_joins_it_once_located() -> None:
    failure = Failure(CASE, GRAD)
    assert failure.signature == "grad-grad-presence"
    assert failure.full_signature == "grad-grad-presence"  # no repro, no layer yet
    located = failure.with_repro(
        ReproResult(ReproStatus.WRITTEN, "/r/grad.py", "reproduced", layer="aot_eager"),
        examples_to_failure=4,
    )
    assert located.full_signature == "grad-grad-presence-aot_eager"
    assert located.examples_to_failure == 4
    assert failure.repro is None  # frozen: the original is unchanged


def test_a_failure_reads_as_difference_program_and_repro() -> None:
    failure = Failure(CASE, GRAD).with_repro(
        ReproResult(ReproStatus.NOT_REPRODUCIBLE, detail="it passed when replayed")
    )
    text = failure.report()
    assert text.splitlines()[0] == "grad difference at iteration 3, grad of net.lin.weight"
    assert "program (views):\ndef program(x):\n    return x" in text
    assert text.splitlines()[-1] == "no repro file (not reproducible): it passed when replayed"
    assert not failure.repro.verified  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("status", "verified"),
    [(status, status in (ReproStatus.WRITTEN, ReproStatus.KEPT_SMALLER)) for status in ReproStatus],
)
def test_only_a_written_or_smaller_kept_repro_is_verified(
    status: ReproStatus, verified: bool
) -> None:
    assert ReproResult(status, "/r/x.py").verified is verified


def test_a_failure_survives_json_unchanged_in_every_field() -> None:
    failure = Failure(CASE, GRAD).with_repro(
        ReproResult(ReproStatus.KEPT_SMALLER, "/r/g.py", "kept", "aot_eager", True),
        examples_to_failure=9,
        seconds_to_repro=1.5,
    )
    data = json.loads(json.dumps(failure.to_json()))
    assert Failure.from_json(data) == failure
    assert data["signature"] == "grad-grad-presence"
    assert data["full_signature"] == "grad-grad-presence-aot_eager"
    assert (data["kind"], data["place"]) == ("grad", "grad of net.lin.weight")
    assert data["verified"] is True
    assert data["repro_result"]["status"] == "kept smaller"  # a plain string, not an enum


def test_a_failure_without_a_repro_survives_json() -> None:
    failure = Failure(CASE, Outcome.exited(-signal.SIGKILL).difference)  # type: ignore[arg-type]
    assert Failure.from_json(json.loads(json.dumps(failure.to_json()))) == failure


def test_the_innermost_side_frame_says_whether_eager_died() -> None:
    from pytest_cgraph.failures import died_in_eager

    def dump(*functions: str) -> str:
        frames = "".join(f'  File "/o/engine.py", line 1 in {name}\n' for name in functions)
        return f"Fatal Python error: Aborted\n\nStack (most recent call first):\n{frames}"

    assert died_in_eager(dump("unbind", "_run_side", "_run_eager_side", "_iterate"))
    assert not died_in_eager(dump("unbind", "_run_side", "_run_compiled_side", "_iterate"))
    # a stack too deep for the dump to reach a side: counted as the compiled side's
    assert not died_in_eager(dump("unbind", "_run_side"))
    assert not died_in_eager("")
