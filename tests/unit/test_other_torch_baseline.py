"""A torch with no shipped baseline: what a run loads today, the nearest one, the note."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from pytest_cgraph.plugin import session
from pytest_cgraph.plugin.options import OPTIONS_KEY
from pytest_cgraph.registry import entries as registry
from pytest_cgraph.registry.entries import (
    BASELINE_ROOT,
    baseline_dir,
    baseline_note,
    nearest_baseline_dir,
    shipped_baselines,
)


def _config(repro_dir: Path) -> SimpleNamespace:
    """As much of a pytest config as ``session.registry_dirs`` reads."""
    options = SimpleNamespace(baseline=True, known_dirs=(), repro_dir=repro_dir)
    return SimpleNamespace(stash={OPTIONS_KEY: options})


@pytest.mark.parametrize("version", ["2.12.0+cu128", "2.15.0", "2.15.0.dev20270101+cu130"])
def test_today_a_run_on_another_torch_loads_no_baseline_at_all(
    version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch, "__version__", version)
    assert baseline_dir(version) is None
    assert session.registry_dirs(_config(tmp_path)) == [tmp_path]  # the repro dir alone


def test_the_running_torch_keeps_its_own_baseline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch, "__version__", "2.13.0+cpu")
    assert session.registry_dirs(_config(tmp_path)) == [BASELINE_ROOT / "torch-2.13", tmp_path]
    assert nearest_baseline_dir("2.13.0+cpu") is None
    assert baseline_note("2.13.1+cu128") is None


def test_the_shipped_baselines_are_found_by_release() -> None:
    assert shipped_baselines()[(2, 13)] == BASELINE_ROOT / "torch-2.13"
    assert shipped_baselines()[(2, 14)] == BASELINE_ROOT / "torch-2.14"
    assert baseline_dir("2.14.1+cu130") == BASELINE_ROOT / "torch-2.14"
    # Re-checked and found on an H100 with torch 2.11.0+cu130.
    assert shipped_baselines()[(2, 11)] == BASELINE_ROOT / "torch-2.11"
    assert baseline_dir("2.11.0+cu130") == BASELINE_ROOT / "torch-2.11"


@pytest.fixture
def two_baselines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("torch-2.9", "torch-2.13", "torch-notes"):
        (tmp_path / name).mkdir()
    (tmp_path / "torch-2.12").write_text("a file, not a baseline")
    monkeypatch.setattr(registry, "BASELINE_ROOT", tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    ("version", "nearest"),
    [
        ("2.11.0+cu128", "torch-2.13"),  # as near as 2.9: the newer
        ("2.10.1", "torch-2.9"),
        ("2.14.0", "torch-2.13"),
        ("2.6.0", "torch-2.9"),
        ("3.1.0", "torch-2.13"),  # the last of the major before
        ("1.13.1", "torch-2.9"),
        ("2.13.0+cpu", None),  # its own
        ("2.9.1", None),
        ("nightly", None),
    ],
)
def test_the_nearest_baseline_is_the_nearest_release(
    two_baselines: Path, version: str, nearest: str | None
) -> None:
    found = nearest_baseline_dir(version)
    assert (found.name if found else None) == nearest


def test_no_shipped_baseline_has_no_nearest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(registry, "BASELINE_ROOT", tmp_path / "none")
    assert nearest_baseline_dir("2.11.0") is None
    assert baseline_note("2.11.0") == (
        "no baseline of known torch differences for torch 2.11: every difference counts as new"
    )


def test_the_note_says_which_baseline_is_nearest_and_whether_it_is_used() -> None:
    assert baseline_note("2.12.0+cu128") == (
        "no baseline of known torch differences for torch 2.12 (nearest: torch-2.13, "
        "not used): torch's own differences count as new"
    )
    assert baseline_note("2.15.0", rechecked=57) == (
        "no baseline of known torch differences for torch 2.15: 57 entries of torch-2.14 "
        "that reproduce here are known, the rest count as new"
    )
