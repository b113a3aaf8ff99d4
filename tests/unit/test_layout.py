"""The package's folders are its stages, and a stage imports only the stages below it.

The order is the one ``docs/architecture.md`` draws. An import that runs the
other way (a lazy one inside a function too) would tie a lower stage to a
higher one: the layers would then be a convention, not the code. The
oracle's stricter rule (torch and the standard library only) has its own
test, as repro files paste it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_cgraph"

#: Bottom up. A module may import its own stage and any stage before it.
STAGES = (
    "oracle",
    "errors",
    "failures",
    "strategies",
    "checking",
    "registry",
    "recording",
    "reporting",
    "hunting",
    "plugin",
    "fuzz",
)
#: The commands' names (``python -m pytest_cgraph.record``): each forwards to its stage.
COMMANDS = ("record", "report", "plain", "backends")


def stage_of(module: str) -> str:
    """``pytest_cgraph.registry.entries`` -> ``registry``; the package itself -> ``__init__``."""
    parts = module.split(".")
    if len(parts) < 2:
        return "__init__"
    return "commands" if parts[1] in COMMANDS else parts[1]


def imported_modules(path: Path) -> list[str]:
    """Every ``pytest_cgraph`` module ``path`` imports, at top level or inside a function."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "pytest_cgraph":
                # ``from pytest_cgraph import X``: X is a module or a public name.
                found += [f"pytest_cgraph.{alias.name}" for alias in node.names]
            else:
                found.append(node.module)
    return [name for name in found if name.split(".")[0] == "pytest_cgraph"]


def module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return ".".join(parts)


def backward_imports() -> list[str]:
    public = {"CheckReport", "check_equivalent", "check_source"}
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = stage_of(module_name(path))
        if source in ("__init__", "commands"):
            continue  # the public face and the commands sit above every stage
        for module in imported_modules(path):
            target = stage_of(module)
            if target == "__init__" or module.rsplit(".", 1)[-1] in public:
                target = "checking"  # the lazy public API is the runner's
            if target == source:
                continue
            if target == "commands":
                wrong.append(f"{module_name(path)} imports the command {module}")
            elif target not in STAGES or STAGES.index(target) > STAGES.index(source):
                wrong.append(f"{module_name(path)} ({source}) imports {module} ({target})")
    return wrong


def test_every_stage_imports_only_the_stages_below_it() -> None:
    assert backward_imports() == []


def test_every_folder_of_the_package_is_a_stage() -> None:
    folders = {
        path.name for path in PACKAGE.iterdir() if path.is_dir() and (path / "__init__.py").exists()
    }
    assert folders == {stage for stage in STAGES if (PACKAGE / stage).is_dir()}
    assert len(folders) == 8


def test_a_backward_import_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The rule fires: a registry module that imports the hunt is refused.
    package = tmp_path / "pytest_cgraph"
    (package / "registry").mkdir(parents=True)
    (package / "registry" / "entries.py").write_text(
        "def later():\n    from pytest_cgraph.hunting.hunt import Hunt\n    return Hunt\n"
    )
    monkeypatch.setitem(globals(), "PACKAGE", package)
    assert backward_imports() == [
        "pytest_cgraph.registry.entries (registry) imports pytest_cgraph.hunting.hunt (hunting)"
    ]


def test_the_public_surface_is_where_users_import_it() -> None:
    import pytest_cgraph
    from pytest_cgraph.checking import runner

    assert set(pytest_cgraph.__all__) == {
        "CgraphError",
        "CheckReport",
        "ConfigurationError",
        "EquivalenceError",
        "InvalidProgram",
        "check_equivalent",
        "check_source",
    }
    assert pytest_cgraph.check_source is runner.check_source
    # The commands keep their names: each forwards to its stage's main.
    from pytest_cgraph import backends, plain, record, report
    from pytest_cgraph.recording import plain as plain_stage

    assert plain.make_plain is plain_stage.make_plain
    assert all(callable(command.main) for command in (backends, plain, record, report))
