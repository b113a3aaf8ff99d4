"""The built wheel ships every module at its import path, and the baseline as package data."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _tracked_tree(destination: Path) -> Path:
    """The files git tracks, copied to ``destination``; the checkout itself outside git.

    Built in place, setuptools reuses a ``build/`` directory an earlier build
    left (git ignores it): a wheel of an older set of entries.
    """
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True)
    except OSError:  # no git
        return ROOT
    if listed.returncode != 0:
        return ROOT
    for name in listed.stdout.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, destination / name)
    return destination


@pytest.mark.deep
def test_the_wheel_holds_every_baseline_entry_and_builds_without_warnings(tmp_path: Path) -> None:
    pytest.importorskip("setuptools", reason="building the wheel offline needs setuptools")
    pytest.importorskip("wheel", reason="building the wheel offline needs wheel")
    source = _tracked_tree(tmp_path / "source")
    wheels = tmp_path / "wheels"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation",
         "-w", str(wheels), str(source)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-2000:]
    # A data directory setuptools does not know as a package would be dropped one day.
    assert "absent from" not in built.stdout + built.stderr
    (wheel,) = wheels.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {name for name in names if name.startswith("pytest_cgraph/known/")}
    expected = {
        path.relative_to(source).as_posix()
        for path in (source / "pytest_cgraph" / "known").glob("*/*.toml")
    }
    assert expected and shipped == expected
    assert "pytest_cgraph/py.typed" in names
    # Every module of every stage folder, at the path it is imported by.
    modules = {
        path.relative_to(source).as_posix() for path in (source / "pytest_cgraph").rglob("*.py")
    }
    assert len(modules) > 60 and modules <= names
    assert "pytest_cgraph/strategies/generate.py" in names
