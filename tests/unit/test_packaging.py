"""The built wheel ships the baseline: every entry of every torch release, as package data."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.deep
def test_the_wheel_holds_every_baseline_entry_and_builds_without_warnings(tmp_path: Path) -> None:
    pytest.importorskip("setuptools", reason="building the wheel offline needs setuptools")
    pytest.importorskip("wheel", reason="building the wheel offline needs wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation",
         "-w", str(tmp_path), str(ROOT)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-2000:]
    # A data directory setuptools does not know as a package would be dropped one day.
    assert "absent from" not in built.stdout + built.stderr
    (wheel,) = tmp_path.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {name for name in names if name.startswith("pytest_cgraph/known/")}
    expected = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "pytest_cgraph" / "known").glob("*/*.toml")
    }
    assert expected and shipped == expected
    assert "pytest_cgraph/py.typed" in names
