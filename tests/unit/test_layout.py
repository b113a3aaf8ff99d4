"""The package's folders are its stages, and a stage imports only the stages below it.

The order is the one ``docs/architecture.md`` draws. An import that runs the
other way (a lazy one inside a function too, or one by name:
``importlib.import_module("...")``, ``__import__``, ``lazy_loader``, or a
module's name kept in a string for such a loader) would tie a lower stage to
a higher one: the layers would then be a convention, not the code. The
oracle's stricter rule (torch and the standard library only) has its own
test, ``test_oracle_paste.py``, as repro files paste it.

The docs draw the same order and name every module of the package: a reader
who opens ``docs/architecture.md`` to find where something lives must find
it there, in the stage it is in.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pytest_cgraph"

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
COMMANDS = ("record", "report", "plain", "issue", "backends")


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


#: Calls that import the module their first argument names: ``importlib``'s,
#: the builtin, ``lazy_loader.load`` and ``importlib.resources.files``.
LOADERS = ("import_module", "__import__", "load", "files")
#: A string that is a dotted name in the package (a loader's argument kept in a variable).
DOTTED = re.compile(r"pytest_cgraph(?:\.\w+)+")


def imported_by_name(path: Path) -> list[str]:
    """Every ``pytest_cgraph`` module ``path`` imports by name.

    The constant argument of a loader (:data:`LOADERS`; a relative one is
    resolved against the module's package), the submodules a
    ``lazy_loader.attach`` names, and any other string (not a docstring)
    that is the dotted name of one of the package's modules: a list of
    modules to load in a loop holds its names so.
    """
    tree = ast.parse(path.read_text())
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    docstrings = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            called = _called(node)
            first = node.args[0] if node.args else None
            if called in LOADERS and isinstance(first, ast.Constant):
                name = str(first.value)
                found.append(f"{package}{name}" if name.startswith(".") else name)
            elif called == "attach":
                found += [f"{package}.{sub}" for sub in _attached(node)]
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and DOTTED.fullmatch(node.value)
            and _is_module(node.value)
        ):
            found.append(node.value)
    return sorted({name for name in found if name.split(".")[0] == "pytest_cgraph"})


def _called(call: ast.Call) -> str:
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return call.func.id if isinstance(call.func, ast.Name) else ""


def _attached(call: ast.Call) -> list[str]:
    """The submodules ``lazy_loader.attach(__name__, submodules=..., submod_attrs=...)``
    names, relative to its package."""
    names: list[object] = []
    for keyword in call.keywords:
        value = keyword.value
        if keyword.arg == "submodules" and isinstance(value, ast.List | ast.Tuple | ast.Set):
            names += [item.value for item in value.elts if isinstance(item, ast.Constant)]
        elif keyword.arg == "submod_attrs" and isinstance(value, ast.Dict):
            names += [key.value for key in value.keys if isinstance(key, ast.Constant)]
    return [str(name) for name in names]


def _is_module(name: str) -> bool:
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return ".".join(parts)


#: Imports by name that run against the stages: (importer, imported) and the reason
#: each is allowed. Only an import by name may be declared here.
DECLARED = {
    ("pytest_cgraph.oracle.driver", "pytest_cgraph.plain"): (
        "a repro file's --issue prints a plain torch script where pytest-cgraph is "
        "installed beside the file. The driver is pasted into repro files that run "
        "without the package, so it cannot import the writer; handing the writer in "
        "would move the same optional import into every repro file's own text. It "
        "looks the command up by name, in a try that reads an ImportError as 'no "
        "writer' (test_oracle_paste.py holds it to that), by the name repro files of "
        "earlier versions use too; nothing else of the oracle depends on the package."
    ),
}


def backward_imports() -> list[str]:
    public = {"CheckReport", "check_equivalent", "check_source"}
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = stage_of(module_name(path))
        if source in ("__init__", "commands"):
            continue  # the public face and the commands sit above every stage
        by_name = imported_by_name(path)
        for module in [*imported_modules(path), *by_name]:
            how = " by name" if module in by_name else ""
            if how and (module_name(path), module) in DECLARED:
                continue
            target = stage_of(module)
            if target == "__init__" or module.rsplit(".", 1)[-1] in public:
                target = "checking"  # the lazy public API is the runner's
            if target == source:
                continue
            if target == "commands":
                wrong.append(f"{module_name(path)} imports the command {module}{how}")
            elif target not in STAGES or STAGES.index(target) > STAGES.index(source):
                wrong.append(f"{module_name(path)} ({source}) imports {module} ({target}){how}")
    return wrong


def test_every_stage_imports_only_the_stages_below_it() -> None:
    wrong = backward_imports()
    if wrong:
        pytest.fail(
            "these imports run against the stages (STAGES, bottom first: "
            f"{', '.join(STAGES)}; the commands above them all):\n"
            + "\n".join(wrong)
            + "\nmove the code to the stage that needs it, or pass what it needs in",
            pytrace=False,
        )


def test_every_declared_import_by_name_is_still_made() -> None:
    # A declared exception that no import needs any more would allow the next one.
    made = {
        (module_name(path), module)
        for path in PACKAGE.rglob("*.py")
        for module in imported_by_name(path)
    }
    assert set(DECLARED) <= made, f"no longer made, remove from DECLARED: {set(DECLARED) - made}"


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


JUDGE = '''"""Prose naming pytest_cgraph.hunting.hunt is no import."""
import importlib
LATER = ["pytest_cgraph.recording.plain"]
def later():
    importlib.import_module("pytest_cgraph.hunting.hunt")
    __import__("pytest_cgraph.plain")
    importlib.import_module(".entries", __package__)
'''


def test_a_backward_import_by_name_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each way of importing by name is seen: a loader's constant argument, a name
    # kept for a loader in a variable, a relative name, lazy_loader's submodules;
    # the command a declared exception allows the driver is refused to the ladder.
    package = tmp_path / "pytest_cgraph"
    for folder in ("registry", "hunting", "recording", "oracle"):
        (package / folder).mkdir(parents=True)
    for module in ("hunting/hunt", "recording/plain", "registry/entries", "plain"):
        (package / f"{module}.py").write_text("")
    (package / "registry" / "judge.py").write_text(JUDGE)
    (package / "registry" / "__init__.py").write_text(
        "import lazy_loader\n"
        "__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submodules=['judge'])\n"
    )
    loads_plain = 'import importlib\nimportlib.import_module("pytest_cgraph.plain")\n'
    (package / "oracle" / "ladder.py").write_text(loads_plain)
    (package / "oracle" / "driver.py").write_text(loads_plain)
    monkeypatch.setitem(globals(), "PACKAGE", package)
    assert imported_by_name(package / "registry" / "__init__.py") == [
        "pytest_cgraph.registry.judge"
    ]
    assert imported_by_name(package / "registry" / "judge.py") == [
        "pytest_cgraph.hunting.hunt",
        "pytest_cgraph.plain",
        "pytest_cgraph.recording.plain",
        "pytest_cgraph.registry.entries",
    ]
    assert backward_imports() == [
        "pytest_cgraph.oracle.ladder imports the command pytest_cgraph.plain by name",
        "pytest_cgraph.registry.judge (registry) imports pytest_cgraph.hunting.hunt "
        "(hunting) by name",
        "pytest_cgraph.registry.judge imports the command pytest_cgraph.plain by name",
        "pytest_cgraph.registry.judge (registry) imports pytest_cgraph.recording.plain "
        "(recording) by name",
    ]


# ---------------------------------------------------------------------------
# The docs draw the stages in this order and name every module in its stage.

ARCHITECTURE = ROOT / "docs" / "architecture.md"
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
#: A name in the left column of a layout drawing: ``oracle/`` or ``failures.py``.
ENTRY = re.compile(r"^  (\S.*?)(?:\s{2,}|$)")
MODULE = re.compile(r"\b(\w+)\.py\b")


def layout_block(text: str, heading: str) -> list[str]:
    """The lines of the first fenced block after ``heading`` (the package's drawing)."""
    after = f"\n{text}".split(f"\n{heading}\n", 1)[1]
    return after.split("```", 2)[1].splitlines()[1:]


def drawn_layout(lines: list[str]) -> list[tuple[str, list[str]]]:
    """The package's drawing, top line down: each entry (``oracle/``, ``failures.py``)
    with the modules named in its lines. An entry line starts two spaces in, its
    names in the left column; the lines indented further below a folder go on
    describing it, and name its modules as ``name.py``. The drawing ends at the
    first line that is not indented (another folder of the repository)."""
    drawn: list[tuple[str, list[str]]] = []
    for line in lines[1:]:
        if line and not line.startswith(" "):
            break
        entry = ENTRY.match(line)
        if entry:
            for name in (part.strip() for part in entry.group(1).split(",")):
                if name:
                    drawn.append((name, []))
            line = line[entry.end() :]
        if drawn and drawn[-1][0].endswith("/"):
            drawn[-1][1].extend(MODULE.findall(line))
    return drawn


def stage_order(drawn: list[tuple[str, list[str]]]) -> list[str]:
    """The stages and commands as drawn, bottom first; data folders left out."""
    names = [name.removesuffix("/").removesuffix(".py") for name, _ in drawn]
    return [name for name in names if name in STAGES or name in COMMANDS or name == "__init__"]


def expected_order() -> list[str]:
    return [*STAGES, *COMMANDS]


def order_drift(drawn: list[str], where: str) -> str | None:
    stages = [name for name in drawn if name in STAGES]
    commands = [name for name in drawn if name in COMMANDS]
    last = drawn[-len(COMMANDS) :]
    if stages == list(STAGES) and sorted(commands) == sorted(COMMANDS) and last == commands:
        return None
    return (
        f"{where} draws the stages as {drawn}; tests/unit/test_layout.py's STAGES (which the "
        f"imports are held to), bottom first, then the commands, are {expected_order()}: "
        "draw that order, or change STAGES where the code changed"
    )


def missing_modules(drawn: list[tuple[str, list[str]]], package: Path) -> list[str]:
    """Modules of ``package`` the drawing does not name in their folder, and modules it
    names that are not there. A folder's entry names its ``__init__.py``."""
    named = set()
    for name, modules in drawn:
        if name.endswith("/"):
            folder = name.removesuffix("/")
            named.add(f"{folder}/__init__.py")
            named |= {f"{folder}/{module}.py" for module in modules}
        elif name.endswith(".py"):
            named.add(name)
    named.add("__init__.py")  # the drawing's top line, the package itself
    actual = {
        path.relative_to(package).as_posix()
        for path in package.rglob("*.py")
        if not any(part.startswith(".") for part in path.parts)
    }
    data = {  # a folder of data files (the shipped baseline), no stage
        name.removesuffix("/")
        for name, _ in drawn
        if name.endswith("/") and not (package / name / "__init__.py").exists()
    }
    named = {name for name in named if name.split("/")[0] not in data}
    return [f"not named: pytest_cgraph/{name}" for name in sorted(actual - named)] + [
        f"named but not in the package: pytest_cgraph/{name}" for name in sorted(named - actual)
    ]


def test_the_architecture_names_every_module_in_its_stage() -> None:
    drawn = drawn_layout(layout_block(ARCHITECTURE.read_text(), "## The parts"))
    wrong = missing_modules(drawn, PACKAGE)
    if wrong:
        pytest.fail(
            "docs/architecture.md's drawing of the package (## The parts) must name every "
            "module as name.py under its folder (a top-level one as its own entry):\n"
            + "\n".join(wrong),
            pytrace=False,
        )


@pytest.mark.parametrize(
    ("path", "heading"), [(ARCHITECTURE, "## The parts"), (CONTRIBUTING, "## Layout")]
)
def test_the_docs_draw_the_stages_in_the_order_the_imports_keep(path: Path, heading: str) -> None:
    drawn = stage_order(drawn_layout(layout_block(path.read_text(), heading)))
    drift = order_drift([name for name in drawn if name != "__init__"], path.name)
    if drift is not None:
        pytest.fail(drift, pytrace=False)


def test_a_drawing_out_of_date_is_found(tmp_path: Path) -> None:
    text = """## The parts

```
pytest_cgraph/
  failures.py, errors.py   the failure record
  oracle/                  checking: compare.py
                           driver.py
  known/                   data
docs/                      not the package
```
"""
    drawn = drawn_layout(layout_block(text, "## The parts"))
    assert drawn == [
        ("failures.py", []),
        ("errors.py", []),
        ("oracle/", ["compare", "driver"]),
        ("known/", []),
    ]
    order = stage_order(drawn)
    assert order == ["failures", "errors", "oracle"]
    drift = order_drift(order, "architecture.md")
    assert drift is not None and "draws the stages as ['failures', 'errors', 'oracle']" in drift
    package = tmp_path / "pytest_cgraph"
    (package / "oracle").mkdir(parents=True)
    (package / "known").mkdir()
    for module in ("__init__", "failures", "errors", "oracle/__init__", "oracle/compare"):
        (package / f"{module}.py").write_text("")
    (package / "oracle" / "ladder.py").write_text("")
    assert missing_modules(drawn, package) == [
        "not named: pytest_cgraph/oracle/ladder.py",
        "named but not in the package: pytest_cgraph/oracle/driver.py",
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
