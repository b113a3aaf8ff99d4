"""Importing the plugin costs no torch, no hypothesis, never initialises CUDA, and works on
any platform pytest runs on: it is loaded by every pytest run where it is installed."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

#: The package's modules every pytest start imports, through the ``pytest11``
#: entry point (``pytest_cgraph.plugin.hooks``), in any environment where the
#: plugin is installed, whether the run uses it or not. Each must stay
#: torch-free and cheap; one that joins this list makes every pytest run slower,
#: and one that leaves it may be read lazily now (then say so here).
STARTUP_MODULES = (
    "pytest_cgraph",
    "pytest_cgraph.checking",
    "pytest_cgraph.checking.validation",
    "pytest_cgraph.errors",
    "pytest_cgraph.failures",
    "pytest_cgraph.hunting",
    "pytest_cgraph.hunting.database",
    "pytest_cgraph.oracle",
    "pytest_cgraph.oracle.difference",
    "pytest_cgraph.oracle.errors",
    "pytest_cgraph.plugin",
    "pytest_cgraph.plugin.fixture",
    "pytest_cgraph.plugin.hooks",
    "pytest_cgraph.plugin.marker",
    "pytest_cgraph.plugin.options",
    "pytest_cgraph.plugin.session",
    "pytest_cgraph.plugin.wire",
    "pytest_cgraph.registry",
    "pytest_cgraph.registry.entries",
    "pytest_cgraph.registry.hazards",
    "pytest_cgraph.registry.own_backend",
    "pytest_cgraph.registry.repro_files",
    "pytest_cgraph.registry.requirements",
    "pytest_cgraph.registry.severity",
    "pytest_cgraph.registry.standing",
    "pytest_cgraph.reporting",
    "pytest_cgraph.reporting.stats",
    "pytest_cgraph.strategies",
    "pytest_cgraph.strategies.families",
)
#: What no pytest start may import: seconds of import, and CUDA's state with torch.
HEAVY = ("torch", "hypothesis", "numpy")

#: A fresh interpreter imports the hook module as pytest's entry point does, and
#: says what it loaded; ``-X importtime`` says who imported each module.
STARTUP = """
import json, sys
import pytest_cgraph.plugin.hooks
print(json.dumps({
    "modules": sorted(m for m in sys.modules if m.split(".")[0] == "pytest_cgraph"),
    "heavy": sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY)),
}))
"""


def run_child(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return result.stdout.strip()


def importers(importtime: str) -> dict[str, str]:
    """Each module ``-X importtime`` lists, and the module whose import imported it.

    A module's line comes once its import ends, after those it imported, each
    indented one step further: its importer is the next line indented less.
    """
    rows = []
    for line in importtime.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1]
            rows.append((len(name) - len(name.lstrip()), name.strip()))
    found = {}
    for index, (depth, name) in enumerate(rows):
        parent = next((other for d, other in rows[index + 1 :] if d < depth), "<the entry point>")
        found[name] = parent
    return found


def startup_drift(loaded: list[str], by: dict[str, str], declared: tuple[str, ...]) -> str:
    """What changed in the modules a pytest start imports, and what to do about it."""
    joined = [
        f"  {name} (imported by {by.get(name, '?')})" for name in loaded if name not in declared
    ]
    left = [f"  {name}" for name in declared if name not in loaded]
    lines = []
    if joined:
        lines += [
            "these modules are now imported by every pytest start (the pytest11 entry point, "
            "pytest_cgraph.plugin.hooks, whether the run uses the plugin or not):",
            *joined,
            "import them inside the function that needs them if you can; if they must load at "
            "start, keep them torch-free and cheap and add them to STARTUP_MODULES in "
            "tests/unit/test_import_cost.py",
        ]
    if left:
        lines += [
            "these modules are no longer imported at start: remove them from STARTUP_MODULES in "
            "tests/unit/test_import_cost.py",
            *left,
        ]
    return "\n".join(lines)


@dataclass(frozen=True)
class Startup:
    """What a fresh interpreter loaded importing the hook module."""

    modules: list[str]
    heavy: list[str]
    by: dict[str, str]


@pytest.fixture(scope="module")
def startup() -> Startup:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"HEAVY = {HEAVY!r}\n{STARTUP}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    found = json.loads(result.stdout)
    return Startup(found["modules"], found["heavy"], importers(result.stderr))


def test_hook_module_imports_neither_torch_nor_hypothesis(startup: Startup) -> None:
    # The hook module imports the package itself, whose public names load lazily.
    assert "pytest_cgraph" in startup.modules
    if startup.heavy:
        pytest.fail(
            "every pytest start now imports "
            + ", ".join(
                f"{name} (imported by {startup.by.get(name, '?')})" for name in startup.heavy
            )
            + ": import it inside the function that needs it",
            pytrace=False,
        )


def test_the_modules_every_pytest_start_imports_are_the_declared_ones(startup: Startup) -> None:
    drift = startup_drift(startup.modules, startup.by, STARTUP_MODULES)
    if drift:
        pytest.fail(drift, pytrace=False)


def test_a_module_joining_the_start_is_named_with_its_importer() -> None:
    importtime = (
        "import time: self [us] | cumulative | imported package\n"
        "import time:       100 |        100 |       pytest_cgraph.oracle.engine\n"
        "import time:       100 |        200 |     pytest_cgraph.registry.judge\n"
        "import time:       100 |        300 |   pytest_cgraph.plugin.session\n"
        "import time:       100 |        400 | pytest_cgraph.plugin.hooks\n"
    )
    by = importers(importtime)
    assert by["pytest_cgraph.registry.judge"] == "pytest_cgraph.plugin.session"
    drift = startup_drift(
        ["pytest_cgraph.plugin.hooks", "pytest_cgraph.registry.judge"],
        by,
        ("pytest_cgraph.plugin.hooks", "pytest_cgraph.plugin.wire"),
    )
    assert "  pytest_cgraph.registry.judge (imported by pytest_cgraph.plugin.session)" in drift
    assert "no longer imported at start" in drift and "  pytest_cgraph.plugin.wire" in drift


def test_public_api_loads_on_first_use_without_initialising_cuda() -> None:
    out = run_child(
        """
        import pytest_cgraph, torch
        report = pytest_cgraph.check_equivalent(torch.sin, torch.randn(2), backend="aot_eager")
        print(report.iterations, torch.cuda.is_initialized())
        """
    )
    assert out == "5 False"


def test_the_plugin_loads_and_runs_where_fcntl_does_not_exist(tmp_path: Path) -> None:
    # ``sys.modules[name] = None`` makes ``import name`` raise ImportError, as on Windows.
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert 1 + 1 == 2\n")
    out = run_child(
        f"""
        import sys
        sys.modules["fcntl"] = None
        import pytest
        import pytest_cgraph.plugin.hooks, pytest_cgraph.plugin.campaign
        import pytest_cgraph.plugin.crashes, pytest_cgraph.recording.repro
        import pytest_cgraph.checking.guard, pytest_cgraph.checking.checkers
        # --cgraph-iters is refused unless the plugin's hooks are loaded.
        code = pytest.main(["-q", "-p", "no:cacheprovider", "--cgraph-iters=3", {str(tmp_path)!r}])
        print("exit", int(code), "fcntl" in sys.modules and sys.modules["fcntl"] is not None)
        """
    )
    assert out.splitlines()[-1] == "exit 0 False"
