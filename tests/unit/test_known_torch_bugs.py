"""The torch differences this project has recorded: the shipped baseline's repro files.

One list, not two: the baseline under ``pytest_cgraph/known/torch-X.Y/`` is
what a campaign counts as known, and what these tests check. Each file's
program, run in this process through the runner, must fail with the
signature the file was written for, and so must the file run alone as
``python FILE``: the in-process verdict and the repro's verdict agree.
When a torch release fixes one, these tests fail on that torch (and
``pytest --cgraph-check-known`` names it), so the entry is retired.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pytest_cgraph import EquivalenceError
from pytest_cgraph.registry import (
    BASE_SIGNATURE,
    baseline_dir,
    header_value,
    read_entry,
    recorded_settings,
)
from pytest_cgraph.runner import check_source

BASELINE = baseline_dir(torch.__version__)
FILES = sorted(BASELINE.glob("*.py")) if BASELINE is not None else []


def test_the_running_torch_has_a_baseline_or_none_is_claimed() -> None:
    if torch.__version__.startswith("2.13."):
        assert len(FILES) >= 9, FILES
    for path in FILES:
        entry = read_entry(path)
        assert entry is not None and entry.signature == header_value(
            path.read_text(), BASE_SIGNATURE
        )


@pytest.mark.parametrize("path", FILES, ids=[path.stem[:60] for path in FILES])
def test_recorded_difference_still_fails_in_process_with_its_signature(path: Path) -> None:
    recorded = recorded_settings(path)
    with pytest.raises(EquivalenceError) as caught:
        check_source(
            str(recorded["PROGRAM_SOURCE"]),
            backend=str(recorded["BACKEND"]),
            device=str(recorded["DEVICE"]),
        )
    assert caught.value.difference.signature == recorded["SIGNATURE"]


@pytest.mark.parametrize("path", FILES, ids=[path.stem[:60] for path in FILES])
def test_recorded_difference_file_run_alone_agrees(path: Path) -> None:
    run = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, check=False)
    assert run.returncode == 1, run.stderr[-2000:]
    assert run.stdout.startswith("REPRODUCED ("), run.stdout
    assert "DIFFERENTLY" not in run.stdout


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
    torch.__version__.startswith("2.13."), reason="torch 2.13 eager segfaults", strict=True
)
def test_hook_on_a_view_of_a_leaf_written_in_place_does_not_crash_eager() -> None:
    # Found by a campaign whose xdist worker died: the in-flight record kept
    # the program. Eager torch itself segfaults (pytorch/pytorch#196459), so
    # it runs in a subprocess; the generator steps off views before a hook.
    # Not a compile difference, so not a baseline entry.
    run = subprocess.run([sys.executable, "-c", HOOK_ON_REFRESHED_VIEW], capture_output=True)
    assert run.returncode == 0, run.returncode
