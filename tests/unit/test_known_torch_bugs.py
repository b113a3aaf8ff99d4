"""The torch differences this project has recorded: the shipped baseline's entries.

One list, not two: the baseline under ``pytest_cgraph/known/torch-X.Y/`` (TOML
data files) is what a campaign counts as known, and what these tests check.
Each entry's program, run in this process through the runner, must fail with the
signature the entry was written for; and the entry's standalone repro
(``python -m pytest_cgraph.record --export``), run alone as ``python FILE``,
must agree. The in-process check covers every entry in the default run;
the standalone one costs a process and a compile per entry, so one entry
runs it by default and one form of every bug under ``-m deep`` (CI runs
both): exporting is the same code for every form of a bug. Those files run
in children forked from one process that imported torch already
(``cgraph_doubles.prestarted``): alone, as ``python -I FILE`` runs them, less
the import each would repeat.
When a torch release fixes one, these tests fail on that torch (and
``pytest --cgraph-check-known`` names it), so the entry is retired. An entry
that needs what this machine lacks (``# requires: avx512``, a CUDA device)
is skipped with the reason: it cannot show here, which says nothing of torch.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from cgraph_doubles.prestarted import Prestarted
from pytest_cgraph import EquivalenceError
from pytest_cgraph.checking.runner import check_source
from pytest_cgraph.failures import ends_process
from pytest_cgraph.oracle.engine import intra_op_threads
from pytest_cgraph.plugin.known_items import DEAD_PROCESS_TRIES
from pytest_cgraph.recording.record import main as record_main
from pytest_cgraph.recording.repro import recorded_case, replay_file
from pytest_cgraph.registry.entries import (
    BASELINE_ROOT,
    baseline_dir,
    read_bugs,
    read_entry,
    recorded_settings,
    registry_files,
)
from pytest_cgraph.registry.repro_files import BASE_SIGNATURE, ENTRY_LINE, header_value
from pytest_cgraph.registry.requirements import unmet

BASELINE = baseline_dir(torch.__version__)
# Its entries; the bugs file beside them (``bugs.toml``) is no entry.
FILES = registry_files(BASELINE) if BASELINE is not None else []
#: The entry whose standalone file the default run checks: a small, quick one.
SAMPLE = "grad-grad-aot_eager.toml"
#: An entry's keys (``timeout`` and ``threads`` only where it has them, ``ops`` where it
#: declares them).
KEYS = {"signature", "backend", "backend_modules", "device", "program"}


def test_the_running_torch_has_a_baseline_or_none_is_claimed() -> None:
    if torch.__version__.startswith("2.13."):
        assert len(FILES) >= 9, FILES
    for path in FILES:
        text = path.read_text()
        entry = read_entry(path)
        assert entry is not None and entry.signature == header_value(text, BASE_SIGNATURE)
        # Entries, not standalone files: the baseline carries no oracle copies.
        assert text.startswith(ENTRY_LINE), path
        assert "def replay(" not in text and len(text.splitlines()) < 200, path
        # TOML data: its keys and nothing else.
        assert KEYS <= set(recorded_settings(path)) <= {*KEYS, "timeout", "ops", "threads"}, path
    # No repro file (or entry of the older kind) is read beside them.
    assert BASELINE is None or not list(BASELINE.glob("*.py"))


@pytest.mark.parametrize("path", FILES, ids=[path.stem[:60] for path in FILES])
def test_recorded_difference_still_fails_in_process_with_its_signature(path: Path) -> None:
    _skip_where_it_cannot_show(path)
    case = recorded_case(path)
    if ends_process(case.signature):  # it would take this process with it: a subprocess
        # Memory corruption ends the process one way or another: as check-known
        # does, a few replays, one of which must die as recorded.
        lines = []
        for _ in range(DEAD_PROCESS_TRIES):
            lines.append(replay_file(path))
            if lines[-1].startswith("REPRODUCED: python FILE killed by "):
                return
        pytest.fail(f"never killed as recorded in {DEAD_PROCESS_TRIES} replays: {lines}")
    # With the thread count it was recorded with (Inductor's CPU code differs by it).
    with pytest.raises(EquivalenceError) as caught, intra_op_threads(case.threads):
        check_source(case.source, backend=case.backend, device=case.device)
    assert caught.value.difference.signature == case.signature


def _skip_where_it_cannot_show(path: Path) -> None:
    """Skip an entry that needs what this machine lacks, saying what."""
    entry = read_entry(path)
    assert entry is not None, path
    lacking = unmet(entry.requires)
    if lacking is not None:
        pytest.skip(f"{path.name} {lacking}")


def _standalone_params() -> list[object]:
    """:data:`SAMPLE`, and under ``-m deep`` the first form of every bug."""
    firsts = {bug.forms[0] for bug in read_bugs(BASELINE)} if BASELINE is not None else set()
    return [
        pytest.param(path, id=path.stem[:60], marks=() if path.name == SAMPLE else pytest.mark.deep)
        for path in FILES
        if path.name == SAMPLE or path.name in firsts
    ]


@pytest.fixture(scope="module")
def prestarted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prestarted]:
    server = Prestarted(tmp_path_factory.mktemp("prestarted"))
    yield server
    server.close()


@pytest.mark.parametrize("path", _standalone_params())
def test_exported_standalone_file_run_alone_agrees(
    path: Path, tmp_path: Path, prestarted: Prestarted
) -> None:
    _skip_where_it_cannot_show(path)
    out = tmp_path / path.name
    assert record_main(["--export", str(path), str(out)]) == 0
    assert "from pytest_cgraph" not in out.read_text()
    # Run with no path to this package: the exported file needs torch alone.
    run = prestarted.run(out)
    if ends_process(recorded_case(path).signature):  # the signal is its reproduction
        assert run.returncode < 0 and "Fatal Python error" in run.stderr, run.stderr[-2000:]
        return
    assert run.returncode == 1, run.stderr[-2000:]
    assert run.stdout.startswith("REPRODUCED ("), run.stdout
    assert "DIFFERENTLY" not in run.stdout


def test_an_entry_replays_with_the_installed_oracle() -> None:
    # As ``--cgraph-check-known`` replays it, in this process: the entry is
    # data, the oracle is this one.
    line = replay_file(BASELINE_ROOT / "torch-2.13" / SAMPLE)
    assert line.startswith("REPRODUCED (aot_eager): grad difference"), line


HOOK_ON_REFRESHED_VIEW = """
import torch
a0 = torch.randn(2, requires_grad=True)
a1 = a0[:1]
with torch.no_grad():
    a0.mul_(0.9)
a1.register_hook(lambda grad: grad)
print("survived")
"""


@pytest.mark.xfail(
    torch.__version__.startswith(("2.13.", "2.14.")),
    reason="torch 2.13 and 2.14 eager segfault",
    strict=True,
)
def test_hook_on_a_view_of_a_leaf_written_in_place_does_not_crash_eager() -> None:
    # Found by a campaign whose xdist worker died: the in-flight record kept
    # the program. Eager torch itself segfaults (pytorch/pytorch#196459), so
    # it runs in a subprocess; the generator steps off views before a hook.
    # Not a compile difference, so not a baseline entry.
    run = subprocess.run([sys.executable, "-c", HOOK_ON_REFRESHED_VIEW], capture_output=True)
    assert run.returncode == 0, run.returncode
