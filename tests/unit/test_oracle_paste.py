"""The oracle can be pasted: its modules, as one script, run with torch alone.

Every repro file carries the oracle's modules verbatim, one after another in
the order of ``MODULES`` (``pytest_cgraph/oracle/__init__.py``), with their
imports of each other taken out (``recording/repro.py``), so that it runs
the check that found its failure where pytest-cgraph is not installed. That
holds only while every oracle module

- imports torch, the standard library and other oracle modules only (an
  import of anything else by name is optional: it sits in a ``try`` that
  catches ``ImportError``);
- imports another oracle module at top level (or in a top-level ``if
  TYPE_CHECKING:``), absolutely and without renaming, as ``from
  pytest_cgraph.oracle.X import name``: that is the form the paste takes out,
  and a name renamed by it would be undefined in the script;
- comes in ``MODULES`` after the modules it imports, and ``MODULES`` names
  every module;
- binds no top-level name that another module binds to something else: in
  one script, the later binding would replace the earlier for both.

A repro run tells none of this until someone runs one without the package;
these tests read the modules' source instead.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from pytest_cgraph.oracle import MODULES

ORACLE = Path(__file__).resolve().parents[2] / "pytest_cgraph" / "oracle"
OWN = "pytest_cgraph.oracle"


def sources(folder: Path = ORACLE) -> dict[str, ast.Module]:
    return {
        path.stem: ast.parse(path.read_text())
        for path in sorted(folder.glob("*.py"))
        if path.stem != "__init__"
    }


def _type_checking(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and (
        (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
        or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")
    )


def top_level(tree: ast.Module, typing_only: bool = False) -> list[ast.stmt]:
    """The module's statements that run as it is imported, those of top-level blocks
    included (``if``, ``try``, ``with``); a top-level ``if TYPE_CHECKING:`` body
    only when ``typing_only``."""
    found: list[ast.stmt] = []

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if _type_checking(node):
                assert isinstance(node, ast.If)
                if typing_only:
                    found.extend(node.body)
                visit(node.orelse)
                continue
            found.append(node)
            if isinstance(node, ast.With):
                visit(node.body)
            elif isinstance(node, ast.If | ast.For | ast.While):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                visit(node.orelse)
                visit(node.finalbody)
                for handler in node.handlers:
                    visit(handler.body)

    visit(tree.body)
    return found


def is_allowed(module: str) -> bool:
    """torch, the standard library, or the oracle itself."""
    top = module.split(".")[0]
    return top in ("torch", "__future__") or top in sys.stdlib_module_names or _is_own(module)


def _is_own(module: str) -> bool:
    return module == OWN or module.startswith(f"{OWN}.")


def import_violations(trees: dict[str, ast.Module]) -> list[str]:
    wrong = []
    for name, tree in trees.items():
        allowed_here = {id(node) for node in top_level(tree, typing_only=True)}
        for node in ast.walk(tree):
            where = f"oracle/{name}.py:{getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if not is_allowed(alias.name):
                        wrong.append(f"{where} imports {alias.name}: torch and the stdlib only")
                    elif _is_own(alias.name):
                        wrong.append(
                            f"{where} imports {alias.name} as a module: the paste takes out "
                            f"only `from {OWN}.X import name`"
                        )
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if node.level:
                    wrong.append(
                        f"{where} imports relatively (from {'.' * node.level}{module}): a "
                        f"repro has no package; write `from {OWN}.X import name`"
                    )
                elif not is_allowed(module):
                    wrong.append(f"{where} imports {module}: torch and the stdlib only")
                elif _is_own(module):
                    if id(node) not in allowed_here:
                        wrong.append(
                            f"{where} imports {module} inside a function or block: a repro "
                            "fails there; import it at top level"
                        )
                    if module == OWN or module.count(".") != 2:
                        wrong.append(f"{where} imports {module}: name the oracle module")
                    renamed = [alias.name for alias in node.names if alias.asname]
                    if renamed:
                        wrong.append(
                            f"{where} renames {renamed} from {module}: the paste takes the "
                            "import out, and the new name would be undefined"
                        )
        wrong += _optional_by_name(name, tree)
    return wrong


def _optional_by_name(name: str, tree: ast.Module) -> list[str]:
    """An import by a constant name (``importlib.import_module("x")``, ``__import__``) of
    anything but torch and the stdlib, outside a ``try`` that catches ``ImportError``."""
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
            _catches_import_error(handler.type) for handler in node.handlers
        ):
            guarded |= {id(inner) for statement in node.body for inner in ast.walk(statement)}
    wrong = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        function = node.func
        called = (
            function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
        )
        first = node.args[0]
        if called not in ("import_module", "__import__") or not isinstance(first, ast.Constant):
            continue
        module = str(first.value)
        top = module.split(".")[0]
        if top == "torch" or top in sys.stdlib_module_names or id(node) in guarded:
            continue
        wrong.append(
            f"oracle/{name}.py:{node.lineno} imports {module} by name outside a try that "
            "catches ImportError: a repro runs where only torch is installed"
        )
    return wrong


def _catches_import_error(handler: ast.expr | None) -> bool:
    if handler is None:
        return True
    names = handler.elts if isinstance(handler, ast.Tuple) else [handler]
    return any(
        isinstance(item, ast.Name)
        and item.id in ("ImportError", "ModuleNotFoundError", "Exception", "BaseException")
        for item in names
    )


def order_violations(trees: dict[str, ast.Module], order: tuple[str, ...]) -> list[str]:
    """``order`` names every module once, each after the modules it imports at run time."""
    wrong = []
    if sorted(order) != sorted(trees) or len(set(order)) != len(order):
        missing = sorted(set(trees) - set(order))
        extra = sorted(set(order) - set(trees))
        wrong.append(
            f"MODULES in pytest_cgraph/oracle/__init__.py must name every oracle module once "
            f"(a module left out is not pasted into repros): missing {missing}, not modules "
            f"{extra}"
        )
    for name in order:
        if name not in trees:
            continue
        for node in top_level(trees[name]):
            if isinstance(node, ast.ImportFrom) and _is_own(node.module or ""):
                needed = (node.module or "").rsplit(".", 1)[-1]
                if needed in order and order.index(needed) > order.index(name):
                    wrong.append(
                        f"{name} imports {needed}, which MODULES lists after it: a repro "
                        f"defines {name}'s names before {needed}'s"
                    )
    return wrong


def _binding(node: ast.stmt) -> list[tuple[str, str]]:
    """The names a top-level statement binds, each with what it binds it to."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [(node.name, "")]
    if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [
            (name.id, "")
            for target in targets
            for name in ast.walk(target)
            if isinstance(name, ast.Name)
        ]
    if isinstance(node, ast.Import):
        return [
            (alias.asname, alias.name) if alias.asname else (alias.name.split(".")[0],) * 2
            for alias in node.names
        ]
    if isinstance(node, ast.ImportFrom) and not node.level:
        module = node.module or ""
        if module == "__future__" or _is_own(module):
            return []  # taken out by the paste
        return [(alias.asname or alias.name, f"{module}.{alias.name}") for alias in node.names]
    return []


def clashing_names(trees: dict[str, ast.Module]) -> list[str]:
    """Top-level names two modules bind to different things: a name a module defines
    is its own; an imported one is the import's."""
    bound: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for name, tree in trees.items():
        for node in top_level(tree):
            for bound_name, origin in _binding(node):
                bound[bound_name][origin or f"defined in oracle/{name}.py"].add(name)
    return [
        f"{name}: "
        + "; ".join(
            f"{origin} ({', '.join(sorted(mods))})" for origin, mods in sorted(origins.items())
        )
        for name, origins in sorted(bound.items())
        if len(origins) > 1
    ]


def test_oracle_modules_import_torch_the_stdlib_and_each_other_at_top_level_only() -> None:
    wrong = import_violations(sources())
    if wrong:
        pytest.fail("\n".join(wrong), pytrace=False)


def test_modules_names_every_oracle_module_after_the_modules_it_imports() -> None:
    wrong = order_violations(sources(), MODULES)
    if wrong:
        pytest.fail("\n".join(wrong), pytrace=False)


def test_top_level_names_are_distinct_across_oracle_modules() -> None:
    clashes = clashing_names(sources())
    if clashes:
        pytest.fail(
            "one pasted script binds these names twice, the later binding replacing the "
            "earlier for every module (rename one):\n" + "\n".join(clashes),
            pytrace=False,
        )


def write(folder: Path, **modules: str) -> dict[str, ast.Module]:
    for name, text in modules.items():
        (folder / f"{name}.py").write_text(text)
    return sources(folder)


def test_each_broken_rule_is_found(tmp_path: Path) -> None:
    trees = write(
        tmp_path,
        first=(
            "import numpy\n"
            "from . import second\n"
            "from pytest_cgraph.oracle.second import helper as other\n"
            "from pytest_cgraph.failures import Case\n"
            "import importlib\n"
            "def later():\n"
            "    from pytest_cgraph.oracle.second import helper\n"
            "    return importlib.import_module('pytest_cgraph.plain')\n"
            "try:\n"
            "    optional = importlib.import_module('pytest_cgraph.plain')\n"
            "except ImportError:\n"
            "    optional = None\n"
            "def helper():\n"
            "    pass\n"
        ),
        second="from collections import deque as helper\nimport torch\n",
    )
    wrong = import_violations(trees)
    assert [line.split(" ", 1)[1].split(":")[0] for line in wrong] == [
        "imports numpy",
        "imports relatively (from .)",
        "renames ['helper'] from pytest_cgraph.oracle.second",
        "imports pytest_cgraph.failures",
        "imports pytest_cgraph.oracle.second inside a function or block",
        "imports pytest_cgraph.plain by name outside a try that catches ImportError",
    ]
    assert order_violations(trees, ("first", "second")) == [
        "first imports second, which MODULES lists after it: a repro defines first's names "
        "before second's"
    ]
    assert "missing ['second']" in order_violations(trees, ("first",))[0]
    assert clashing_names(trees) == [
        "helper: collections.deque (second); defined in oracle/first.py (first)"
    ]
