"""Every record that crosses processes survives the crossing, and its fields are versioned.

Under pytest-xdist a worker's statistics, failures and dead programs reach
the controller as builtins (``to_json``/``from_json``, or a message's
``pack``/``unpack``), and the controller's registry entries reach its
workers the same way; an in-flight record reaches whoever finds a dead
process. A field that one of those methods forgets is lost only there: a
run in one process never packs anything, so no other test sees it. And a
worker may run another host's copy of pytest-cgraph: a field that changes
without ``SCHEMA`` (``pytest_cgraph/plugin/wire.py``) changing is a message
the other side misreads instead of refusing it in one line.

So: every such record, drawn with every field varied (nested records and
optional fields included), comes back whole through its own pair of
methods, through JSON and through execnet's serializer (xdist's channel);
the record types are found in the package, not listed by hand; and their
fields are recorded here beside the schema they belong to.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import importlib
import json
import math
import operator
import pprint
import types
import typing
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import execnet
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from pytest_cgraph.plugin.wire import SCHEMA

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_cgraph"

#: A record's two halves: how it is written to builtins and read back.
PAIRS = (("to_json", "from_json"), ("pack", "unpack"))


def wire_record_names(package: Path = PACKAGE) -> set[str]:
    """``module.Class`` of every class of the package that defines both halves of a pair.

    Read from the source, so finding them imports nothing; a record added
    anywhere is found here whether or not anyone remembered this test.
    """
    found = set()
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package.parent).with_suffix("")
        parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            methods = {
                item.name
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            }
            if any(dump in methods and load in methods for dump, load in PAIRS):
                found.add(f"{'.'.join(parts)}.{node.name}")
    return found


def resolve(qualified: str) -> type:
    module, _, name = qualified.rpartition(".")
    cls: type = getattr(importlib.import_module(module), name)
    return cls


def qualified_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


# ---------------------------------------------------------------------------
# Strategies: every field of every record drawn, from its annotation.

#: Short texts and collections: the round trip does not depend on size, and
#: small examples keep the test cheap and a failure readable.
TEXT = st.text(max_size=12)
#: execnet (xdist's channel) cannot carry an int below -2**31: it writes it in four
#: bytes. Counts and indices are never negative; only a seed given as
#: ``--cgraph-seed`` could be, and that is the option's to refuse, not a record's.
INT = st.integers(min_value=-(2**31))
#: NaN and the infinities included: a difference's largest error may be either.
FLOAT = st.floats()


def _without_nul(text: str) -> bool:
    return "\x00" not in text


#: A registry file's path as a run names it: under a directory that does not
#: exist (a statistics record looks the file's bugs file up on disk), never a
#: NUL (no file's name holds one).
REGISTRY_FILE = st.text(max_size=12).filter(_without_nul).map(lambda name: f"no-such-dir/{name}")

#: Strategies for what an annotation alone does not say: a record's own rules.
OVERRIDES: dict[str, Callable[[], st.SearchStrategy[Any]]] = {}


def for_type(hint: Any) -> st.SearchStrategy[Any]:
    """A strategy for any value of the annotation ``hint``: every union member, every
    element type, and any record of the package by its own strategy (:func:`record`)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return st.one_of([for_type(arg) for arg in args])
    if hint is type(None):
        return st.none()
    if hint is str:
        return TEXT
    if hint is bool:
        return st.booleans()
    if hint is int:
        return INT
    if hint is float:
        return FLOAT
    if hint is Path:
        return st.text(max_size=12).map(Path)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return st.sampled_from(list(hint))
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return record(hint)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return st.lists(for_type(args[0]), max_size=3).map(tuple)
        return st.tuples(*(for_type(arg) for arg in args))
    if origin is list:
        return st.lists(for_type(args[0]), max_size=3)
    if origin is frozenset:
        return st.frozensets(for_type(args[0]), max_size=3)
    if origin is Counter:
        return st.dictionaries(for_type(args[0]), INT, max_size=3).map(Counter)
    if origin is dict:
        return st.dictionaries(for_type(args[0]), for_type(args[1]), max_size=3)
    raise NotImplementedError(f"no strategy for {hint!r}: add one to for_type")


def record(cls: type) -> st.SearchStrategy[Any]:
    """Any ``cls``, with every field drawn: ``st.builds`` alone would leave each field
    that has a default at its default, and a field lost by ``to_json`` unseen."""
    name = qualified_name(cls)
    if name in OVERRIDES:
        return st.deferred(OVERRIDES[name])
    return every_field(cls)


def every_field(cls: type, **given: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    hints = typing.get_type_hints(cls)
    fields = {
        field.name: given.pop(field.name) if field.name in given else for_type(hints[field.name])
        for field in dataclasses.fields(cls)
    }
    assert not given, f"{cls.__name__} has no fields {sorted(given)}"
    return st.builds(cls, **fields)


@st.composite
def run_stats(draw: st.DrawFn) -> Any:
    """Statistics whose known entries agree with each other, as counting makes them:
    an entry seen again has hits, a filing, and maybe the backends it was met on.
    (They travel as one record per entry: an entry's filing or backends without
    its hits are never counted, and so never sent.)"""
    from pytest_cgraph.reporting.stats import KnownAs, RunStats

    keys = draw(st.lists(st.tuples(TEXT, REGISTRY_FILE), max_size=3, unique=True))
    known_hits = Counter({key: draw(st.integers(1, 2**31)) for key in keys})
    known_as = {key: draw(record(KnownAs)) for key in keys}
    backends = st.dictionaries(TEXT, st.integers(1, 2**31), min_size=1, max_size=2)
    known_backends = {key: Counter(draw(backends)) for key in keys if draw(st.booleans())}
    return draw(
        every_field(
            RunStats,
            known_hits=st.just(known_hits),
            known_as=st.just(known_as),
            known_backends=st.just(known_backends),
        )
    )


OVERRIDES["pytest_cgraph.reporting.stats.RunStats"] = run_stats


def known_bug_path() -> st.SearchStrategy[Any]:
    """A registry entry: its path is a file's (text with no NUL)."""
    from pytest_cgraph.registry.entries import KnownBug

    return every_field(KnownBug, path=st.text(max_size=12).filter(_without_nul).map(Path))


OVERRIDES["pytest_cgraph.registry.entries.KnownBug"] = known_bug_path

#: Every record type that crosses processes: the ones the round trip is checked for.
COVERED = (
    "pytest_cgraph.failures.Case",
    "pytest_cgraph.failures.Failure",
    "pytest_cgraph.failures.FailureText",
    "pytest_cgraph.oracle.difference.Difference",
    "pytest_cgraph.registry.entries.KnownBug",
    "pytest_cgraph.reporting.stats.KnownAs",
    "pytest_cgraph.reporting.stats.RunStats",
    "pytest_cgraph.plugin.wire.ItemMessage",
    "pytest_cgraph.plugin.wire.DeadProgramMessage",
)


# ---------------------------------------------------------------------------
# What "came back whole" means.


def same(left: Any, right: Any, where: str = "record") -> list[str]:
    """Where ``left`` and ``right`` differ, field by field: the same types throughout (a
    tuple that came back a list is a difference), NaN equal to NaN. Empty: the same."""
    if type(left) is not type(right):
        return [
            f"{where}: {type(left).__name__} {left!r} came back {type(right).__name__} {right!r}"
        ]
    if dataclasses.is_dataclass(left) and not isinstance(left, type):
        return [
            found
            for field in dataclasses.fields(left)
            for found in same(
                getattr(left, field.name), getattr(right, field.name), f"{where}.{field.name}"
            )
        ]
    if isinstance(left, dict):
        if set(left) != set(right):
            return [f"{where}: keys {sorted(map(repr, left))} came back {sorted(map(repr, right))}"]
        return [found for key in left for found in same(left[key], right[key], f"{where}[{key!r}]")]
    if isinstance(left, list | tuple):
        if len(left) != len(right):
            return [f"{where}: {len(left)} items came back {len(right)}"]
        return [
            found
            for index, (one, other) in enumerate(zip(left, right, strict=True))
            for found in same(one, other, f"{where}[{index}]")
        ]
    if isinstance(left, float) and math.isnan(left) and math.isnan(right):
        return []
    return [] if left == right else [f"{where}: {left!r} came back {right!r}"]


#: What a record may be written as: builtins exactly, never a subclass (xdist's
#: channel refuses a str-based enum, which ``json.dumps`` would write silently).
BUILTINS = (dict, list, tuple, str, int, float, bool, type(None))


def not_builtins(data: Any, where: str = "json") -> list[str]:
    if type(data) not in BUILTINS:
        return [f"{where}: {type(data).__name__} {data!r}"]
    if isinstance(data, dict):
        return [f"{where}: key {key!r}" for key in data if type(key) is not str] + [
            found
            for key, value in data.items()
            for found in not_builtins(value, f"{where}[{key!r}]")
        ]
    if isinstance(data, list | tuple):
        return [
            found
            for index, item in enumerate(data)
            for found in not_builtins(item, f"{where}[{index}]")
        ]
    return []


def halves(cls: type) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    for dump, load in PAIRS:
        if hasattr(cls, dump) and hasattr(cls, load):
            return operator.methodcaller(dump), getattr(cls, load)
    raise AssertionError(f"{cls.__name__} has neither pair of {PAIRS}")


@pytest.mark.parametrize("name", COVERED)
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    # No shrinking: the message names the field that was lost (``same``), which a
    # smaller record would not make clearer, and shrinking nested records takes minutes.
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
@given(data=st.data())
def test_a_record_comes_back_whole_through_json_and_xdist_s_channel(
    name: str, data: st.DataObject
) -> None:
    cls = resolve(name)
    dump, load = halves(cls)
    value = data.draw(record(cls), label=cls.__name__)
    written = dump(value)
    assert not_builtins(written) == [], f"{name} writes more than builtins"
    assert same(value, load(written)) == [], f"{name} loses a field in its own round trip"
    through_json = json.loads(json.dumps(written))
    assert same(written, through_json, "json") == [], f"{name} writes what JSON changes"
    assert same(value, load(through_json)) == [], f"{name} loses a field through JSON"
    through_execnet = execnet.loads(execnet.dumps(written))
    assert same(value, load(through_execnet)) == [], f"{name} loses a field through execnet"


def test_every_record_that_crosses_processes_is_drawn_by_the_round_trip_test() -> None:
    found = wire_record_names()
    assert found - set(COVERED) == set(), (
        f"{sorted(found - set(COVERED))} define a to_json/from_json (or pack/unpack) pair "
        "but the round trip test does not draw them: add each to COVERED (and, where its "
        "fields have rules an annotation does not say, to OVERRIDES), and its fields to "
        "RECORDED_FIELDS below"
    )
    assert set(COVERED) - found == set(), f"{sorted(set(COVERED) - found)} no longer exist"
    not_dataclasses = [name for name in COVERED if not dataclasses.is_dataclass(resolve(name))]
    assert not_dataclasses == [], (
        f"{not_dataclasses} are not dataclasses: make them so, so that their fields are "
        "drawn and versioned here"
    )


def test_a_record_of_another_module_is_found(tmp_path: Path) -> None:
    # Discovery reads every module's classes: a new record anywhere is seen.
    package = tmp_path / "pytest_cgraph"
    (package / "hunting").mkdir(parents=True)
    (package / "hunting" / "news.py").write_text(
        "class Found:\n    def to_json(self):\n        ...\n"
        "    @classmethod\n    def from_json(cls, data):\n        ...\n"
        "class Halfway:\n    def to_json(self):\n        ...\n"
    )
    assert wire_record_names(package) == {"pytest_cgraph.hunting.news.Found"}


# ---------------------------------------------------------------------------
# The fields, versioned.


def reachable(roots: list[type]) -> list[type]:
    """The records and every dataclass and enum of the package their fields hold."""
    seen: dict[str, type] = {}
    todo = list(roots)
    while todo:
        cls = todo.pop()
        name = qualified_name(cls)
        if name in seen or not cls.__module__.startswith("pytest_cgraph"):
            continue
        seen[name] = cls
        if dataclasses.is_dataclass(cls):
            todo += [
                inner
                for hint in typing.get_type_hints(cls).values()
                for inner in _types_in(hint)
                if dataclasses.is_dataclass(inner) or issubclass(inner, enum.Enum)
            ]
    return [seen[name] for name in sorted(seen)]


def _types_in(hint: Any) -> list[type]:
    found = [hint] if isinstance(hint, type) and not typing.get_args(hint) else []
    for arg in typing.get_args(hint):
        found += _types_in(arg)
    return found


def fingerprint(classes: list[type]) -> dict[str, tuple[str, ...]]:
    """Each record's fields as ``name: annotation`` (sorted), each enum's members as
    ``NAME = value``: what the other side of a process boundary reads."""
    prints: dict[str, tuple[str, ...]] = {}
    for cls in reachable(classes):
        if issubclass(cls, enum.Enum):
            prints[qualified_name(cls)] = tuple(
                sorted(f"{member.name} = {member.value!r}" for member in cls)
            )
        else:
            prints[qualified_name(cls)] = tuple(
                sorted(
                    f"{field.name}: {_annotation(field)}"
                    for field in dataclasses.fields(typing.cast(Any, cls))
                )
            )
    return prints


def _annotation(field: dataclasses.Field[Any]) -> str:
    """A field's annotation as written (its modules use postponed annotations)."""
    return field.type if isinstance(field.type, str) else repr(field.type)


#: The ``SCHEMA`` (``pytest_cgraph/plugin/wire.py``) the fields below belong to. A
#: field that keeps its name and annotation but changes meaning is not seen here:
#: bump the schema for it by hand.
RECORDED_SCHEMA = 5
#: The fields of every record that crosses processes, and of what they hold, as of
#: ``RECORDED_SCHEMA``.
RECORDED_FIELDS: dict[str, tuple[str, ...]] = {
    "pytest_cgraph.failures.Case": (
        "backend: str",
        "device: str",
        "family: str",
        "iters: int",
        "nodeid: str",
        "replay: str | None",
        "seed: int | None",
        "setup_modules: tuple[str, ...]",
        "size: int",
        "source: str",
        "statements: int | None",
        "threads: int | None",
        "timeout: float | None",
    ),
    "pytest_cgraph.failures.Failure": (
        "case: Case",
        "difference: Difference",
        "examples_to_failure: int | None",
        "repro: ReproResult | None",
        "seconds_to_repro: float | None",
        "shrunk: bool",
    ),
    "pytest_cgraph.failures.FailureText": ("parts: tuple[str | Shown, ...]",),
    "pytest_cgraph.failures.ReproResult": (
        "cudagraph_specific: bool",
        "detail: str",
        "entry: bool",
        "layer: str | None",
        "path: str | None",
        "status: ReproStatus",
        "text: str | None",
    ),
    "pytest_cgraph.failures.ReproStatus": (
        "FLAKY = 'flaky'",
        "KEPT_SMALLER = 'kept smaller'",
        "NOT_INLINABLE = 'not written inline'",
        "NOT_REPRODUCIBLE = 'not reproducible'",
        "VERIFIED = 'verified, to be written'",
        "WRITE_FAILED = 'write failed'",
        "WRITTEN = 'written'",
    ),
    "pytest_cgraph.failures.Shown": ("failure: Failure", "verbose: bool", "whole: bool"),
    "pytest_cgraph.oracle.difference.Difference": (
        "actual: str | None",
        "detail: str",
        "exception_type: str | None",
        "expected: str | None",
        "facet: str | None",
        "index: tuple[int, ...] | None",
        "iteration: int",
        "kind: Kind",
        "max_abs: float | None",
        "max_rel: float | None",
        "message: str | None",
        "place: Place",
        "traceback: str",
    ),
    "pytest_cgraph.oracle.difference.Kind": (
        "ALIASING = 'aliasing'",
        "CRASH = 'crash'",
        "GRAD = 'grad'",
        "METADATA = 'metadata'",
        "MUTATION = 'mutation'",
        "STALE_OUTPUT = 'stale output'",
        "TIMEOUT = 'timeout'",
        "VALUE = 'value'",
    ),
    "pytest_cgraph.oracle.difference.Place": (
        "argument: str | None",
        "index: int | None",
        "iteration: int | None",
        "name: str | None",
        "role: Role",
    ),
    "pytest_cgraph.oracle.difference.Role": (
        "ALIASING = 'aliasing'",
        "ARGUMENT = 'argument'",
        "COMPILED = 'compiled'",
        "GRAD = 'grad'",
        "OUTPUT = 'output'",
        "PROCESS = 'process'",
        "PROGRAM = 'program'",
        "RETAINED = 'retained'",
        "STRUCTURE = 'structure'",
    ),
    "pytest_cgraph.plugin.wire.DeadProgramMessage": ("nodeid: str", "text: FailureText"),
    "pytest_cgraph.plugin.wire.ItemMessage": (
        "rss_mb: float | None",
        "stats: RunStats",
        "text: FailureText | None",
    ),
    "pytest_cgraph.registry.entries.KnownBug": (
        "any_symptom: bool",
        "backend: str | None",
        "bug: str | None",
        "by_hazard: bool",
        "calls: frozenset[str]",
        "essential: tuple[str, ...] | None",
        "kin_signature: str | None",
        "layer: str | None",
        "ops: frozenset[str]",
        "path: Path",
        "requires: tuple[str, ...]",
        "signature: str",
    ),
    "pytest_cgraph.registry.severity.Severity": (
        "CRASH = 'crash'",
        "METADATA = 'metadata'",
        "SILENT = 'silent'",
        "UNSUPPORTED = 'unsupported'",
    ),
    "pytest_cgraph.reporting.stats.KnownAs": (
        "bug: str | None",
        "severity: Severity | None",
        "standing: str | None",
        "title: str | None",
    ),
    "pytest_cgraph.reporting.stats.RunStats": (
        "backends: Counter[str]",
        "campaign: bool",
        "captured: int",
        "compiles: int",
        "drawn: int",
        "failures: list[Failure]",
        "families: Counter[str]",
        "features: Counter[str]",
        "hits: Counter[str]",
        "invalid: int",
        "invalid_reasons: Counter[str]",
        "iterations: Counter[int]",
        "known_as: dict[KnownKey, KnownAs]",
        "known_backends: dict[KnownKey, Counter[str]]",
        "known_hits: Counter[KnownKey]",
        "programs: int",
        "seconds: float",
        "skipped: Counter[str]",
    ),
}


def schema_drift(
    schema: int,
    recorded_schema: int,
    now: Mapping[str, tuple[str, ...]],
    recorded: Mapping[str, tuple[str, ...]],
) -> str | None:
    """What a contributor must do, or ``None`` where the fields and the schema agree."""
    if schema == recorded_schema and now == recorded:
        return None
    changes = []
    for name in sorted(set(now) | set(recorded)):
        added = sorted(set(now.get(name, ())) - set(recorded.get(name, ())))
        removed = sorted(set(recorded.get(name, ())) - set(now.get(name, ())))
        if name not in recorded:
            changes.append(f"  {name} is new")
        elif name not in now:
            changes.append(f"  {name} is gone")
        if added and name in recorded:
            changes.append(f"  {name} gained {added}")
        if removed and name in now:
            changes.append(f"  {name} lost {removed}")
    target = schema + 1 if schema == recorded_schema else schema
    record = (
        f"RECORDED_SCHEMA = {target}\nRECORDED_FIELDS: dict[str, tuple[str, ...]] = "
        f"{pprint.pformat(now, width=96)}"
    )
    if schema == recorded_schema:
        return (
            f"the records that cross processes changed, but SCHEMA is still {schema}:\n"
            + "\n".join(changes)
            + f"\na worker of another version would misread them. Bump SCHEMA in "
            f"pytest_cgraph/plugin/wire.py to {target}, then record the new fields in "
            f"tests/unit/test_wire_records.py:\n{record}"
        )
    return (
        f"SCHEMA is {schema}, but the fields in tests/unit/test_wire_records.py were recorded "
        f"for schema {recorded_schema}"
        + (":\n" + "\n".join(changes) if changes else " (no field changed)")
        + f"\nrecord them for schema {schema}:\n{record}"
    )


def test_fields_that_cross_processes_change_only_with_the_schema() -> None:
    now = fingerprint([resolve(name) for name in COVERED])
    drift = schema_drift(SCHEMA, RECORDED_SCHEMA, now, RECORDED_FIELDS)
    if drift is not None:
        pytest.fail(drift, pytrace=False)


def test_a_field_changed_without_a_schema_bump_says_what_to_do() -> None:
    recorded = {"pytest_cgraph.failures.Case": ("backend: str", "source: str")}
    now = {"pytest_cgraph.failures.Case": ("backend: str", "source: str", "threads: int | None")}
    drift = schema_drift(1, 1, now, recorded)
    assert drift is not None
    assert "pytest_cgraph.failures.Case gained ['threads: int | None']" in drift
    assert "Bump SCHEMA in pytest_cgraph/plugin/wire.py to 2" in drift
    assert "RECORDED_SCHEMA = 2\n" in drift
    # Bumped without recording: told to record; recorded with the bump: quiet.
    assert "record them for schema 2" in str(schema_drift(2, 1, now, recorded))
    assert schema_drift(2, 2, now, now) is None
