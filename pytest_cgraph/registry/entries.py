"""Registries of known bugs: directories of repro files and entries, read by their headers.

Two kinds of file make a registry, both written by this plugin and marked
as such by their first line. A *repro file* (``.py``, what a run writes into
its repro dir) is a standalone script: the oracle is pasted into it. An
*entry* (``.toml``, what ``python -m pytest_cgraph.record`` writes, and what
the shipped baseline holds) is data: the same header, as TOML comments, and
the program and settings as TOML keys, without the oracle: the installed
pytest-cgraph replays it, so a baseline of many entries does not carry many
copies of the oracle. Either header names the failure's base signature and
first diverging layer. A failure whose
signature a registry holds is *known*: counted, reported as seen again,
never shrunk, and (unless ``--cgraph-strict``) never failing the run.

The registries of a run, in order: the baseline of known torch differences
shipped in the package for the running torch (``pytest_cgraph/known/
torch-X.Y/``, off with ``--cgraph-no-baseline``), every ``--cgraph-known``
directory, and the run's own repro dir.

When a failure is known: its base signature (kind, place, facet, exception
type, normalised message) must be a registry's, and — unless the signature
carries an exception's message or the failure ends its process, either of
which names the bug by itself — its first diverging layer must be the
entry's too. Where a signature is broad (no message, a dead process's site,
or a message that entries of different calls share), the failing program
must also make a call of every hazard class the entry's minimal program
makes (a random draw, an in-place write, a transfer...: :mod:`pytest_cgraph.registry.hazards`),
or every call an entry declares (``ops = [...]``). So a new wrong gradient
that only the backend under test produces is never hidden by a known one
that AOTAutograd produces, a wrong value after a random draw by one after
a lost write, and one bug met again through other ops of the same kinds is
known, as the run that found it counts it.

A registry directory may also hold a *bugs file* (``bugs.toml``, not an
entry) that groups its entries by bug: one mechanism reached through
several programs is several entries (one per signature, layer and calls)
but one bug. Where a signature is broad, a grouped entry narrows by its
bug's ``essential`` calls (what every program reaching that mechanism
calls) instead of by every call of its own minimal program, so a known
mechanism met through other ops is known, not news to record again. The
signature and layer rules stay the entry's own.

Torch-free: the plugin recognises repro files while collecting.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_cgraph.errors import ConfigurationError
from pytest_cgraph.failures import siteless_signature
from pytest_cgraph.oracle.difference import Difference, error_in_headline, kin_signature
from pytest_cgraph.registry.hazards import (
    ARITHMETIC,
    CONFIG_PREFIX,
    hazards,
    mechanism_tokens,
    required_hazards,
)
from pytest_cgraph.registry.own_backend import face, is_own_backend
from pytest_cgraph.registry.repro_files import (
    BASE_SIGNATURE,
    ENTRY_LINE,
    ENTRY_SUFFIX,
    FAILURE,
    HEADER_BYTES,
    LAYER,
    MARKER_LINE,
    REPRO_SUFFIX,
    REQUIRES,
    header_value,
    is_own_text,
)
from pytest_cgraph.registry.requirements import check_requirements, device_requirements
from pytest_cgraph.registry.severity import Severity
from pytest_cgraph.registry.standing import Contract, Provenance

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the same parser, before it joined the standard library
    import tomli as tomllib

#: What a registry's TOML files raise when they do not parse.
TOMLDecodeError = tomllib.TOMLDecodeError


def parse_toml(text: str) -> dict[str, object]:
    """A registry's TOML text as a table (standard library, or tomli before 3.11)."""
    table: dict[str, object] = tomllib.loads(text)
    return table


#: Where the shipped baselines live, one directory per torch release.
BASELINE_ROOT = Path(__file__).parent.parent / "known"


@dataclass(frozen=True)
class KnownBug:
    """One registry entry: a repro file and the failure it was written for."""

    signature: str
    layer: str | None
    path: Path
    #: The operations its minimal program calls (or the ``ops`` it declares): what
    #: a failing program must make to be this bug, by :meth:`claims`.
    ops: frozenset[str] = frozenset()
    #: The bug of its directory's bugs file that this entry is a form of, if any.
    bug: str | None = None
    #: That bug's essential calls, which replace ``ops`` as the condition: each
    #: item is a call, or calls joined by ``|`` of which the program makes one;
    #: an alternative may join calls by ``+``, all of which it makes.
    essential: tuple[str, ...] | None = None
    #: ``ops`` are its minimal program's calls, not declared: the condition is
    #: their hazard classes (:mod:`pytest_cgraph.registry.hazards`), not every call.
    by_hazard: bool = False
    #: Its signature with the autograd nodes its message names blanked
    #: (:attr:`Difference.kin_signature`), ``None`` where it names none.
    kin_signature: str | None = None
    #: Its bug claims every difference of a program making its essential calls
    #: (:attr:`Bug.any_symptom`).
    any_symptom: bool = False
    #: What a machine needs to show it (:mod:`pytest_cgraph.registry.requirements`):
    #: its own, its bug's and its device's; where one is lacking it is not replayed.
    requires: tuple[str, ...] = ()
    #: The backend it was recorded with: a backend of one's own files its failures
    #: by face (:mod:`pytest_cgraph.registry.own_backend`).
    backend: str | None = None
    #: Every call its program makes, where ``ops`` are declared narrower: what its
    #: bug is known to make (:meth:`Registry.explains`). Empty: ``ops`` are its calls.
    calls: frozenset[str] = frozenset()

    def claims(self, ops: frozenset[str]) -> bool:
        """Whether a failing program calling ``ops`` may be this bug."""
        if self.essential is not None:
            return all(
                any(all(call in ops for call in both.split("+")) for both in item.split("|"))
                for item in self.essential
            )
        if self.by_hazard and hazards(self.ops):
            return required_hazards(self.ops) <= hazards(ops)
        if self.by_hazard:  # a program of no hazard: its every call but its arithmetic
            return self.ops - ARITHMETIC <= ops
        return self.ops <= ops

    def named(self) -> str:
        """The line a failing test reads when it met this known bug: whose, and where filed."""
        where = f"{self.path.parent.name}/{self.path.name}"
        if self.bug is None:  # an entry of a user's registry, not a form of a filed bug
            return f"cgraph: a known difference ({where})"
        return f"cgraph: a known torch bug, {self.bug} ({where})"

    def same_claim(self, ops: frozenset[str]) -> bool:
        """Whether a program making ``ops`` is claimed by this entry on exactly the
        terms the entry's own program is: one bug met through other ops of the same
        hazards, whose smaller program may replace this one's."""
        if not self.by_hazard:
            return self.ops == ops
        if not hazards(self.ops):
            return self.ops - ARITHMETIC == ops - ARITHMETIC
        return required_hazards(self.ops) == required_hazards(ops) and bool(hazards(ops))

    def precision(self, ops: frozenset[str]) -> float:
        """How closely this entry's claim fits a program calling ``ops``, for choosing
        between bugs that both claim it: how much its essential calls ask (each call
        counts 1, an item of several alternatives the mean of their calls over their
        number, so ``a|b`` 1/2 and ``a|b+c`` 3/4; none 0), plus
        how much of its own minimal program the program shares (their Jaccard
        index, at most 1). So a ``.data=`` bug says more about a program than an
        ``inference_mode|enable_grad`` one, that more than one that claims any
        program, and a form's own program is its bug's even where another bug's
        essential calls are a little narrower."""
        if self.essential is not None:
            asked = sum(
                sum(len(both.split("+")) for both in alternatives) / len(alternatives) ** 2
                for alternatives in (item.split("|") for item in self.essential)
            )
        elif self.by_hazard and hazards(self.ops):
            asked = float(len(required_hazards(self.ops)))
        else:
            asked = float(len(self.ops))
        union = self.ops | ops
        return asked + (len(self.ops & ops) / len(union) if union else 0.0)

    @property
    def kin(self) -> tuple[str, object]:
        """What tells this entry's claim from another's of its signature: its bug,
        or (an entry in no bug) its calls."""
        if self.bug is not None:
            return ("bug", self.bug)
        if self.by_hazard and hazards(self.ops):
            return ("hazards", required_hazards(self.ops))
        return ("ops", self.ops)

    def to_json(self) -> dict[str, Any]:
        """Builtins only: an entry travels to xdist workers that cannot read its file."""
        return {
            "signature": self.signature,
            "layer": self.layer,
            "path": str(self.path),
            "ops": sorted(self.ops),
            "bug": self.bug,
            "essential": list(self.essential) if self.essential is not None else None,
            "by_hazard": self.by_hazard,
            "kin_signature": self.kin_signature,
            "any_symptom": self.any_symptom,
            "requires": list(self.requires),
            "backend": self.backend,
            "calls": sorted(self.calls),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> KnownBug:
        """The inverse of :meth:`to_json` (and of an older one's, which had no bug)."""
        essential = data.get("essential")
        return cls(
            data["signature"],
            data["layer"],
            Path(data["path"]),
            frozenset(data["ops"]),
            data.get("bug"),
            tuple(essential) if essential is not None else None,
            bool(data.get("by_hazard", False)),
            data.get("kin_signature"),
            bool(data.get("any_symptom", False)),
            tuple(data.get("requires", ())),
            data.get("backend"),
            frozenset(data.get("calls", ())),
        )


#: The bugs file of a registry directory: the bugs its entries are forms of.
BUGS_FILE = "bugs.toml"


@dataclass(frozen=True)
class Bug:
    """One mechanism of a bugs file, and the entries (its forms) that reach it."""

    id: str
    title: str
    severity: Severity
    #: How it happens, in a few sentences.
    mechanism: str
    #: The calls every program reaching it makes (``a|b``: one of them); ``()``
    #: where each form's signature names the mechanism, whichever op reaches it.
    essential: tuple[str, ...]
    #: The entry file names of its forms.
    forms: tuple[str, ...]
    #: Where torch tracks it ("unsearched": nobody has looked yet).
    upstream: str = "unsearched"
    #: Every difference of a program making its essential calls is this bug, whatever
    #: its signature: for a mechanism that writes memory the program never named
    #: (a storage rebound behind the compiler's back), whose symptom is wherever
    #: that memory is read next. Its forms are examples, not the list.
    any_symptom: bool = False
    #: What replaying its forms gave on each torch it was checked on (the torch
    #: version, e.g. ``2.14.1+cu130``, to ``7 of 8 forms reproduce``), so a report
    #: is written against the newest torch it still fails on.
    checked: dict[str, str] = field(default_factory=dict, compare=False)
    #: What a machine needs to show any of its forms (:mod:`pytest_cgraph.registry.requirements`).
    requires: tuple[str, ...] = ()
    #: Where its programs step outside what torch.compile documents: not a bug to
    #: file (:mod:`pytest_cgraph.registry.standing`); ``None``: inside, one to file.
    contract: Contract | None = None
    #: How it was found (a campaign, a user's test, a report, a probe); ``None``: not told.
    found: Provenance | None = None
    #: Keys this version does not know, kept for whoever writes the file back.
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


_BUG_KEYS = frozenset(
    {
        "id",
        "title",
        "severity",
        "mechanism",
        "essential",
        "forms",
        "upstream",
        "checked",
        "any_symptom",
        "requires",
        "contract",
        "found",
    }
)


def read_bugs(directory: Path) -> list[Bug]:
    """The bugs of ``directory``'s bugs file, in its order; none without one.

    A bugs file that does not parse, or a bug missing a key, raises
    :class:`ConfigurationError` (a ``ValueError``) in one line: ignoring it
    would silently change what counts as known.
    """
    path = directory / BUGS_FILE
    try:
        data = path.read_bytes()
    except OSError:
        return []
    try:
        table = tomllib.loads(data.decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigurationError(f"{path}: not a bugs file: {error}") from error
    bugs = []
    for raw in table.get("bug", []):
        try:
            bugs.append(
                Bug(
                    id=str(raw["id"]),
                    title=str(raw["title"]),
                    severity=Severity(raw["severity"]),
                    mechanism=str(raw["mechanism"]),
                    essential=_essential(raw["essential"]),
                    forms=tuple(str(form) for form in raw["forms"]),
                    upstream=str(raw.get("upstream", "unsearched")),
                    any_symptom=_flag(raw, "any_symptom"),
                    requires=check_requirements(raw.get("requires", [])),
                    checked={str(k): str(v) for k, v in raw.get("checked", {}).items()},
                    contract=Contract.read(raw["contract"]) if "contract" in raw else None,
                    found=Provenance.read(raw["found"]) if "found" in raw else None,
                    extra={key: value for key, value in raw.items() if key not in _BUG_KEYS},
                )
            )
        except KeyError as error:
            raise ConfigurationError(f"{path}: bug {raw.get('id', '?')!r}: no {error}") from error
        except (TypeError, ValueError) as error:
            raise ConfigurationError(f"{path}: bug {raw.get('id', '?')!r}: {error}") from error
    return bugs


def _essential(items: list[Any]) -> tuple[str, ...]:
    """A bug's essential calls, each a call or pseudo-op, alternatives joined by
    ``|`` and calls that must come together by ``+`` (``+`` binds tighter:
    ``a|b+c`` is a, or b with c). A space around ``|`` or ``+`` is an error,
    not a separator: the call would never match a program's, and the bug would
    claim nothing (a space inside a pseudo-op, ``Holder() is``, is its own)."""
    essential = tuple(str(item) for item in items)
    for item in essential:
        calls = [call for both in item.split("|") for call in both.split("+")]
        if any(not call or call != call.strip() for call in calls):
            raise ValueError(
                f"essential call {item!r}: write alternatives as 'a|b+c', no spaces around | or +"
            )
    return essential


def _essential_calls(essential: Iterable[str]) -> list[str]:
    """Every call an essential list names, alternatives and companions alike."""
    return [call for item in essential for both in item.split("|") for call in both.split("+")]


def _flag(raw: dict[str, Any], key: str) -> bool:
    """A bug's boolean key (absent: false); anything but a TOML boolean is an error."""
    value = raw.get(key, False)
    if not isinstance(value, bool):
        raise ValueError(f"{key} must be true or false, got {value!r}")
    return value


def _bugs_by_form(directory: Path) -> dict[str, Bug]:
    """``directory``'s bugs by the file names of their forms, read once per version
    of the file (a registry is read entry by entry)."""
    try:
        stat = (directory / BUGS_FILE).stat()
    except OSError:
        return {}
    return _cached_bugs_by_form(directory.resolve(), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=16)
def _cached_bugs_by_form(directory: Path, _mtime_ns: int, _size: int) -> dict[str, Bug]:
    return {form: bug for bug in read_bugs(directory) for form in bug.forms}


def is_repro_file(path: Path) -> bool:
    """Whether ``path`` is a repro file or entry this plugin wrote (its first line says so)."""
    try:
        with open(path, "rb") as stream:
            head = stream.read(max(len(MARKER_LINE), len(ENTRY_LINE)))
    except OSError:
        return False
    return is_own_text(head.decode(errors="replace"))


def read_entry(path: Path) -> KnownBug | None:
    """The entry a repro file or entry stands for; ``None`` for foreign or unreadable files.

    A file that is this plugin's (its first line says so) and names its
    signature but is not whole raises :class:`ConfigurationError`, in one
    line naming the file and what is wrong: a TOML entry that does not
    parse, a program that is not Python, a key of the wrong type. Read
    leniently, such a file would claim every program of its signature (an
    empty program calls nothing, so it asks nothing of a failing one) and
    silently hide new bugs.
    """
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return None
    head = text[:HEADER_BYTES]
    if not is_own_text(head):
        return None
    signature = header_value(head, BASE_SIGNATURE)
    if signature is None:
        # Torn before its header ends (a full disk): it claims nothing, so it hides
        # nothing, and a repro writer never overwrites it; left alone, as foreign.
        return None
    if path.suffix == ENTRY_SUFFIX:
        table = _entry_table(path, text, signature)
        program = str(table["program"])
        declared = table.get("ops")
        device = table.get("device")
        backend = table.get("backend")
    else:
        program = _program_in(text)
        if not program:
            raise _malformed(path, "it has no PROGRAM_SOURCE")
        declared = None
        settings = recorded_settings(path)
        device, backend = settings.get("device"), settings.get("backend")
    _check_program(path, program)
    bug = _bugs_by_form(path.parent).get(path.name)
    try:
        requires = check_requirements(
            dict.fromkeys(
                [
                    *(header_value(head, REQUIRES) or "").split(),
                    *(bug.requires if bug is not None else ()),
                    *device_requirements(device if isinstance(device, str) else None),
                ]
            )
        )
    except ValueError as error:
        raise _malformed(path, str(error)) from None
    layer = header_value(head, LAYER)
    headline_error = error_in_headline(header_value(head, FAILURE) or "")
    ops = (
        frozenset(str(op) for op in declared)
        if isinstance(declared, list)
        else program_ops(program)
    )
    return KnownBug(
        signature,
        None if layer in (None, "none") else layer,
        path,
        ops,
        bug.id if bug is not None else None,
        bug.essential if bug is not None else None,
        by_hazard=declared is None and bug is None,
        kin_signature=(
            kin_signature(signature, *headline_error) if headline_error is not None else None
        ),
        any_symptom=bug is not None and bug.any_symptom,
        requires=requires,
        backend=backend if isinstance(backend, str) else None,
        calls=program_ops(program) if isinstance(declared, list) else frozenset(),
    )


#: An entry's keys, by the types their values must have (``program`` and the rest
#: required, ``timeout`` and after it optional). ``ops = [...]`` is the calls a
#: failing program must make to be its bug, where the minimal program's calls say
#: too much; ``ops = []`` claims every program with the entry's signature and
#: layer (for a signature that names its mechanism whatever op triggers it).
_ENTRY_KEYS: dict[str, tuple[type, ...]] = {
    "signature": (str,),
    "backend": (str,),
    "device": (str,),
    "program": (str,),
    "backend_modules": (list,),
    "timeout": (int, float),
    "threads": (int,),
    "ops": (list,),
}
_REQUIRED_KEYS = ("signature", "backend", "device", "program")


def _entry_table(path: Path, text: str, signature: str) -> dict[str, object]:
    """An entry's TOML keys, checked: each required key present, each key of its type,
    list keys of strings, and the ``signature`` key its header's base signature."""
    try:
        table: dict[str, object] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise _malformed(path, f"it does not parse as TOML ({error})") from None
    missing = [key for key in _REQUIRED_KEYS if key not in table]
    if missing:
        raise _malformed(path, f"it has no {', '.join(missing)} key")
    for key, value in table.items():
        types = _ENTRY_KEYS.get(key)
        if types is None:
            continue  # a key of a newer pytest-cgraph: read by whoever wrote it
        if isinstance(value, bool) or not isinstance(value, types):
            wanted = " or ".join(kind.__name__ for kind in types)
            raise _malformed(path, f"its {key} is {value!r}, not a {wanted}")
        if isinstance(value, list) and not all(isinstance(item, str) for item in value):
            raise _malformed(path, f"its {key} holds something other than strings: {value!r}")
    if table["signature"] != signature:
        raise _malformed(
            path,
            f"its signature key {table['signature']!r} is not its header's base signature "
            f"{signature!r}",
        )
    return table


def _check_program(path: Path, program: str) -> None:
    """A registry file's program must be Python that defines ``program``: a program
    cut short (a file truncated while copied) would claim what it no longer calls."""
    try:
        tree = ast.parse(program)
    except SyntaxError as error:
        raise _malformed(
            path, f"its program is not Python (line {error.lineno}: {error.msg})"
        ) from None
    except ValueError as error:  # a null byte, before Python 3.12 made it a SyntaxError
        raise _malformed(path, f"its program is not Python ({error})") from None
    if not any(isinstance(node, ast.FunctionDef) and node.name == "program" for node in tree.body):
        raise _malformed(path, "its program defines no program() function")


def _malformed(path: Path, what: str) -> ConfigurationError:
    """The one line a registry file that is ours but not whole is refused with."""
    return ConfigurationError(
        f"{path}: a pytest-cgraph registry file, but {what}; restore it (or record it "
        "again with python -m pytest_cgraph.record) or remove it"
    )


def registry_files(directory: Path) -> list[Path]:
    """The files of ``directory`` a registry may hold (repro files and entries), by name."""
    return sorted(
        path
        for path in directory.glob("*")
        if path.suffix in (REPRO_SUFFIX, ENTRY_SUFFIX) and path.name != BUGS_FILE
    )


_PROGRAM_SOURCE = re.compile(r"^PROGRAM_SOURCE = r'''\n(.*?)^'''", re.MULTILINE | re.DOTALL)


def _program_in(text: str) -> str:
    """The program a repro file's text runs (its ``PROGRAM_SOURCE``), or "" if none."""
    match = _PROGRAM_SOURCE.search(text)
    return match.group(1) if match else ""


#: The one-line literals a repro file assigns, read beside its program, by their entry keys.
_RECORDED_LINE = re.compile(
    r"^(BACKEND|BACKEND_MODULES|DEVICE|TIMEOUT|SIGNATURE|THREADS) = (.*)$", re.MULTILINE
)


def recorded_settings(path: Path) -> dict[str, object]:
    """A file's ``program``, ``backend`` (and its ``backend_modules``), ``device``,
    ``timeout`` and ``threads`` (absent: none) and ``signature``, by an entry's keys.

    Read without running the file: an entry is TOML, read by ``tomllib``; a
    repro file (a whole oracle, which imports torch) is read from its
    literals, by the same reading :func:`read_entry` uses for the program.
    This is how either is replayed, refreshed and exported.
    """
    if path.suffix == ENTRY_SUFFIX:
        # Bytes, not text: a newline inside the program stays as it was written.
        entry: dict[str, object] = tomllib.loads(path.read_bytes().decode())
        return entry
    text = path.read_text(errors="replace")
    literals: dict[str, object] = {}
    for match in _RECORDED_LINE.finditer(text):
        # "NAME = 'literal'  # a comment": the line's expression is the literal.
        value = ast.parse(match.group(2)).body[0]
        assert isinstance(value, ast.Expr)
        literals.setdefault(match.group(1).lower(), ast.literal_eval(value.value))
    # An entry has no key for what is None (TOML has no null): neither has this.
    return {
        "program": _program_in(text),
        **{key: value for key, value in literals.items() if value is not None},
    }


def recorded_modules(settings: dict[str, object]) -> tuple[str, ...]:
    """The ``backend_modules`` of :func:`recorded_settings`: modules to import first."""
    modules = settings.get("backend_modules")
    return tuple(str(module) for module in modules) if isinstance(modules, list | tuple) else ()


def recorded_threads(settings: dict[str, object]) -> int | None:
    """The ``threads`` of :func:`recorded_settings`: the intra-op thread count to replay
    with, or ``None`` (absent, or not a positive whole number: torch's own)."""
    threads = settings.get("threads")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        return None
    return threads


def program_ops(source: str) -> frozenset[str]:
    """The names of what ``program`` calls: ``a0.squeeze_(0)`` gives ``squeeze_``,
    ``torch.nn.functional.dropout(...)`` gives ``dropout``; its subscripts give
    pseudo-ops (``a0[::2]``: ``[:]``, ``a0[0]``: ``[i]``, ``a0[mask]``: ``[t]``,
    ``a0[i] = v``: ``[]=``), and so do a view spelled as an attribute
    (``a0.mT``: ``mT``), a ``.data`` assignment (``.data=``), a read of
    ``.grad`` (``.grad``), an assignment to it (``.grad=``), an augmented
    assignment to a name (``a0 -= v``: ``isub``, as ``operator`` names it), a
    binary operator (``a0 * 2``: ``mul``, the torch function it calls) and a
    call of one of its own arguments, a module: ``m1(a0)`` gives the class
    ``inputs`` builds it from (``Counter()``), not the argument's name, which
    says nothing (the same module is ``m1`` in one program and ``m2`` in the
    next). A draw from a ``random.Random`` argument gives ``random.Random()``;
    ``torch.autograd.grad`` gives ``autograd.grad`` besides ``grad``; a range
    star-unpacked into a call's arguments gives ``*range``; a
    template Function used in any way gives its class name (``StraightSin``);
    reading or writing an attribute of an argument ``inputs`` builds from a
    class of the source (not a module) gives the class (``h1.count``:
    ``Holder()``), and an identity test on one gives ``Holder() is``;
    a hook that ``advance`` registers between calls gives
    ``ADVANCE.register_forward_hook``.

    A known bug's minimal program calls only what the bug needs; a program
    that fails the same way but lacks one of those calls is another bug.
    This keeps a broad signature (a value difference at an output) from
    passing over every later bug of that kind as known.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return frozenset()
    # A program compiled in stages (``COMPILE = ("stage0", "stage1")``) does
    # its work in the stages; ``program`` is the glue that calls them.
    compile_names = _module_constant(tree, "COMPILE")
    stages = {
        element.value
        for element in (
            compile_names.elts if isinstance(compile_names, (ast.Tuple, ast.List)) else ()
        )
        if isinstance(element, ast.Constant) and isinstance(element.value, str)
    }
    programs = [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and (node.name == "program" or node.name in stages)
    ]
    # A plain function of the source's own that the program calls (a marked
    # test written inline is one) does the program's work: its calls are the
    # program's. The generator's templates and decorated definitions (custom
    # ops) stay calls of their own name, as campaigns draw them.
    helpers = {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and not node.decorator_list
        and node.name not in ("program", "inputs", "advance", *stages)
        and node.name not in template_functions()
    }
    built = _built_arguments(tree)
    modules = _argument_classes(tree, built)
    generators = _python_random_arguments(built)
    objects = _object_arguments(tree, built)
    ops = set()
    followed: set[str] = set()
    while programs:
        program = programs.pop()
        for node in ast.walk(program):
            if isinstance(node, ast.Call):
                if any(_star_range(arg) for arg in node.args):
                    ops.add(STAR_RANGE)  # f(*range(n)): Dynamo passes the range's arguments
                if isinstance(node.func, ast.Attribute):
                    ops.add(node.func.attr)
                    receiver = node.func.value
                    if isinstance(receiver, ast.Attribute) and receiver.attr == "autograd":
                        ops.add(f"autograd.{node.func.attr}")  # torch.autograd.grad
                    elif (isinstance(receiver, ast.Attribute) and receiver.attr == "aten") or (
                        isinstance(receiver, ast.Name) and receiver.id == "aten"
                    ):
                        # torch.ops.aten.t_(x): the op, and how it was spelled (Dynamo
                        # traces the ATen op where it handles the method apart).
                        ops.add(f"{ATEN_SPELLING}{node.func.attr}")
                    elif isinstance(receiver, ast.Name) and receiver.id in generators:
                        ops.add(PYTHON_RANDOM)  # a draw from a random.Random argument
                elif isinstance(node.func, ast.Name) and node.func.id in helpers:
                    if node.func.id not in followed:
                        followed.add(node.func.id)
                        programs.append(helpers[node.func.id])
                elif isinstance(node.func, ast.Name) and node.func.id in modules:
                    ops.add(modules[node.func.id])
                elif isinstance(node.func, ast.Name) and node.func.id not in _BUILTIN_CALLS:
                    ops.add(node.func.id)
            elif isinstance(node, ast.Attribute) and node.attr in ATTRIBUTE_VIEWS:
                ops.add(node.attr)  # a0.mT: a view spelled as an attribute
            elif (
                isinstance(node, ast.Attribute)
                and node.attr == "grad"
                and isinstance(node.ctx, ast.Load)
            ):
                ops.add(GRAD_READ)  # a0.grad is None: a read of the attribute
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                if node.value.id in objects:
                    # State read or written on an object argument (h1.count):
                    # a use of its class.
                    ops.add(objects[node.value.id])
            elif isinstance(node, ast.Compare) and any(
                isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops
            ):
                # An identity test between an object argument's attributes
                # (h1.state is h1.on): a branch on which object it holds.
                ops.update(
                    f"{objects[side.value.id]} is"
                    for side in (node.left, *node.comparators)
                    if isinstance(side, ast.Attribute)
                    and isinstance(side.value, ast.Name)
                    and side.value.id in objects
                )
            elif isinstance(node, ast.Name) and node.id in template_classes():
                # A template Function, called or handed to a transform
                # (torch.func.jvp(StraightSin.apply, ...)): a call of its own name.
                ops.add(node.id)
            elif isinstance(node, ast.Subscript) and not _picks_from_a_sequence(node):
                ops.add(_subscript_op(node))
            elif isinstance(node, ast.Assign):
                assigned = {t.attr for t in node.targets if isinstance(t, ast.Attribute)}
                if "data" in assigned:
                    ops.add(DATA_ASSIGNED)
                if "grad" in assigned:
                    ops.add(GRAD_ASSIGNED)  # a0.grad = None: a write of the attribute
            elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
                # a0 * 2 is torch.mul(a0, 2): one op, however it is spelled.
                ops.add(_BINARY[type(node.op)])
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                # a0 -= v: an in-place op whose result the name is bound to again
                # (an attribute's h1.count += 1 is the object's state, read above).
                ops.add(_AUGMENTED[type(node.op)])
    # How the inputs change between calls is a cause the program's calls cannot
    # show: inputs built differently by call (aliased on odd calls only), inputs
    # that are views of one tensor (``ALIASED_INPUTS``), or the outputs fed back
    # as the next call's inputs (``advance``).
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        if node.name == "inputs":
            if any(isinstance(sub, ast.IfExp) for sub in ast.walk(node)):
                ops.add(INPUTS_BY_CALL)
            if _aliased_inputs(node):
                ops.add(ALIASED_INPUTS)
        elif node.name == "advance":
            ops.add(ADVANCED)
            # A hook registered between calls (on a module argument, say) is
            # met by the compiled function without its making the call; kept
            # apart from the same registration inside the program.
            ops.update(
                f"{ADVANCED}.{sub.func.attr}"
                for sub in ast.walk(node)
                if isinstance(sub, ast.Call)
                and isinstance(sub.func, ast.Attribute)
                and _HOOK_REGISTRATION.fullmatch(sub.func.attr)
            )
    # An autocast around every call (``AUTOCAST = "bfloat16"``) changes what
    # each op computes in without the program making a call: a pseudo-op.
    autocast = _module_constant(tree, AUTOCAST)
    if autocast is not None and not (isinstance(autocast, ast.Constant) and autocast.value is None):
        ops.add(AUTOCAST)
    # A compile setting (``COMPILE_CONFIG = {"torch._functorch.config.X": v}``)
    # changes how every graph is compiled: a pseudo-op per setting, ``CONFIG.X``.
    config = _module_constant(tree, COMPILE_CONFIG)
    if isinstance(config, ast.Dict):
        ops.update(
            CONFIG_PREFIX + key.value.rpartition(".")[2]
            for key in config.keys
            if isinstance(key, ast.Constant) and isinstance(key.value, str)
        )
    # A custom op of the source's own that writes its arguments' values is the
    # templates' add_one_ under another name: what it is, not what it is called.
    own_writes = ops & _value_writing_custom_ops(tree)
    if own_writes:
        ops = (ops - own_writes) | {CUSTOM_OP_WRITE}
    # Compiling in stages splits the graph where the program says so, which
    # is a cause of its own: the pseudo-op says the program was staged.
    return frozenset((ops - stages) | ({STAGED} if stages else set()))


def without_calls(source: str, tokens: frozenset[str]) -> str | None:
    """``source`` less the statements of its program (and stages) whose calls have a
    mechanism token in ``tokens``, and less the compile settings named by them;
    ``None`` where nothing would be deleted, or the program would be left empty.

    Each top-level statement is judged as the program's only one (the rest of the
    module kept), so that its calls are read as :func:`program_ops` reads them.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    compile_names = _module_constant(tree, STAGED)
    stages = {
        element.value
        for element in (
            compile_names.elts if isinstance(compile_names, (ast.Tuple, ast.List)) else ()
        )
        if isinstance(element, ast.Constant) and isinstance(element.value, str)
    }
    deleted = False
    gone: set[str] = set()
    around = mechanism_tokens(_pseudo_ops(tree))  # no statement of the program makes them
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or node.name not in ("program", *stages):
            continue
        kept: list[ast.stmt] = []
        for statement in node.body:
            if isinstance(statement, ast.Return):
                kept.append(statement)
                continue
            alone = _with_program(tree, stages, node.args, [statement])
            calls = program_ops(ast.unparse(alone))
            if mechanism_tokens(calls) & (tokens - around):
                deleted = True
                gone |= {
                    n.id
                    for n in ast.walk(statement)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                }
            else:
                kept.append(statement)
        for statement in kept:
            # What the deleted statements bound is no longer returned.
            if isinstance(statement, ast.Return) and isinstance(statement.value, ast.Tuple):
                statement.value.elts = [
                    e
                    for e in statement.value.elts
                    if not (isinstance(e, ast.Name) and e.id in gone)
                ]
        if not any(not isinstance(s, ast.Return) for s in kept) and len(node.body) > 1:
            return None
        node.body = kept or [ast.Pass()]
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == COMPILE_CONFIG for t in node.targets)
            and isinstance(node.value, ast.Dict)
        ):
            pairs = [
                (key, value)
                for key, value in zip(node.value.keys, node.value.values, strict=True)
                if not (
                    isinstance(key, ast.Constant)
                    and CONFIG_PREFIX + str(key.value).rpartition(".")[2] in tokens
                )
            ]
            if len(pairs) != len(node.value.keys):
                deleted = True
                node.value.keys = [k for k, _ in pairs]
                node.value.values = [v for _, v in pairs]
    return ast.unparse(tree) if deleted else None


def _pseudo_ops(tree: ast.Module) -> frozenset[str]:
    """What :func:`program_ops` reads off the module rather than off the program's
    statements (inputs handed over aliased, advance, autocast, settings)."""
    return program_ops(ast.unparse(_with_program(tree, frozenset(), None, [ast.Pass()])))


def _with_program(
    tree: ast.Module,
    stages: set[str] | frozenset[str],
    args: ast.arguments | None,
    body: list[ast.stmt],
) -> ast.Module:
    """``tree`` with one ``def program`` of ``body`` in place of its program and stages
    (and no ``COMPILE``): how one statement's calls are read on their own."""
    program = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "program"), None
    )
    arguments = args or (
        program.args
        if program is not None
        else ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[])
    )
    kept: list[ast.stmt] = []
    for n in tree.body:
        if isinstance(n, ast.FunctionDef) and (n.name == "program" or n.name in stages):
            continue
        if isinstance(n, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == STAGED for t in n.targets
        ):
            continue
        kept.append(n)
    kept.append(
        ast.FunctionDef(
            name="program",
            args=arguments,
            body=body,
            decorator_list=[],
            returns=None,
        )
    )
    return ast.fix_missing_locations(ast.Module(body=kept, type_ignores=[]))


def _value_writing_custom_ops(tree: ast.Module) -> frozenset[str]:
    """The names of the source's ``torch.library.custom_op`` functions that declare
    ``mutates_args`` and change no metadata (no ``set_`` or ``resize_`` in their
    body), by function and by op name (``"ns::bump_"`` gives ``bump_``)."""
    names = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef):
            continue
        for decorator in node.decorator_list:
            called = decorator.func if isinstance(decorator, ast.Call) else None
            spelled = getattr(called, "attr", getattr(called, "id", None))
            if not isinstance(decorator, ast.Call) or spelled != "custom_op":
                continue
            mutates = next((k.value for k in decorator.keywords if k.arg == "mutates_args"), None)
            if mutates is None or (isinstance(mutates, ast.Tuple | ast.List) and not mutates.elts):
                continue
            body_calls = {
                sub.func.attr
                for sub in ast.walk(node)
                if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute)
            }
            if body_calls & {"set_", "resize_", "resize_as_"}:
                continue
            names.add(node.name)
            if decorator.args and isinstance(decorator.args[0], ast.Constant):
                names.add(str(decorator.args[0].value).rpartition("::")[2])
    return frozenset(names)


def _aliased_inputs(inputs: ast.FunctionDef) -> bool:
    """Whether two arguments ``inputs`` returns are views of one tensor it built
    (``a1 = a0.reshape(-1)[0:1]``, or both sliced from one base), on some call
    at least: arguments that share storage, which the program may separate.

    Each local name is traced to the tensors it may view: a subscript or a
    method call other than a copying one (``clone``, ``to``, ...) keeps its
    receiver's, either branch of a conditional counts, and anything else
    (``torch.ones(1)``, ``torch.zeros_like(a0)``, ``a0.clone()``) is a tensor
    of its own. A copy shares nothing, so it is no aliasing."""
    origins: dict[str, frozenset[str]] = {}
    for node in inputs.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            (target,) = node.targets
            if isinstance(target, ast.Name):
                origins[target.id] = _viewed(node.value, origins) or frozenset({target.id})
    returned = [
        origins.get(element.id, frozenset({element.id}))
        for node in ast.walk(inputs)
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple)
        for element in node.value.elts
        if isinstance(element, ast.Name)
    ]
    return any(a & b for i, a in enumerate(returned) for b in returned[i + 1 :])


#: Tensor methods whose result never shares its receiver's storage.
_COPYING_METHODS = frozenset(
    {"clone", "copy", "contiguous", "to", "float", "double", "half", "cpu", "cuda", "numpy"}
)


def _viewed(value: ast.expr, origins: dict[str, frozenset[str]]) -> frozenset[str]:
    """The tensors built earlier in ``inputs`` that ``value`` may be a view of (see
    ``_aliased_inputs``); empty for a tensor of its own."""
    if isinstance(value, ast.IfExp):
        return _viewed(value.body, origins) | _viewed(value.orelse, origins)
    while True:
        if isinstance(value, ast.Subscript):
            value = value.value
        elif (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr not in _COPYING_METHODS
        ):
            value = value.func.value
        elif isinstance(value, ast.Attribute) and value.attr in ("T", "mT", "H", "real", "imag"):
            value = value.value
        else:
            break
    # Only a name bound earlier in inputs() is a tensor: ``torch.ones`` ends at ``torch``.
    if isinstance(value, ast.Name) and value.id in origins:
        return origins[value.id]
    return frozenset()


def _module_constant(tree: ast.Module, name: str) -> ast.expr | None:
    """The value a source assigns to ``name`` at module level (``COMPILE = (...)``), if any."""
    return next(
        (
            node.value
            for node in tree.body
            if isinstance(node, ast.Assign)
            and any(isinstance(target, ast.Name) and target.id == name for target in node.targets)
        ),
        None,
    )


#: A hook registration's method name (``register_forward_hook``, ``register_hook``, ...).
_HOOK_REGISTRATION = re.compile(r"register_\w*hook")


def _built_arguments(tree: ast.Module) -> dict[str, ast.Call]:
    """The program's parameters that ``inputs`` builds by a call, with that call
    (``r1 = random.Random(7)``, ``h2 = Holder()``, or the call in the returned tuple)."""
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    program, inputs = functions.get("program"), functions.get("inputs")
    if program is None or inputs is None:
        return {}
    assigned: dict[str, ast.expr] = {}
    returned: list[ast.expr] = []
    for node in ast.walk(inputs):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned[target.id] = node.value
        elif isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple):
            returned = node.value.elts
    built = {}
    for argument, element in zip(program.args.args, returned, strict=False):
        if isinstance(element, ast.Name):
            element = assigned.get(element.id, element)
        if isinstance(element, ast.Call):
            built[argument.arg] = element
    return built


def _python_random_arguments(built: dict[str, ast.Call]) -> frozenset[str]:
    """The parameters built as ``random.Random(...)``."""
    return frozenset(
        name
        for name, call in built.items()
        if isinstance(call.func, ast.Attribute)
        and call.func.attr == "Random"
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == "random"
    )


def _object_arguments(tree: ast.Module, built: dict[str, ast.Call]) -> dict[str, str]:
    """The parameters built by calling a class the source defines (``Holder()``), by
    the pseudo-op their use is: the class, not the argument's name (``h1`` in one
    program, ``h3`` in the next). torch's own classes (``nn.Parameter``) are not
    objects of the program's state."""
    classes = {
        node.name
        for node in tree.body
        if isinstance(node, ast.ClassDef)
        # A module argument is named by its calls (_argument_classes).
        and not any(ast.unparse(base).endswith("Module") for base in node.bases)
    }
    return {
        name: f"{call.func.id}()"
        for name, call in built.items()
        if isinstance(call.func, ast.Name) and call.func.id in classes
    }


@functools.cache
def template_functions() -> frozenset[str]:
    """The module-level functions the generator's templates define (``checkpointed_sin``):
    a call of one is an op of its own name, whatever it does inside."""
    from pytest_cgraph.strategies.templates import TEMPLATES

    return frozenset(
        name for text in TEMPLATES.values() for name in re.findall(r"^def (\w+)", text, re.M)
    )


@functools.cache
def template_classes() -> frozenset[str]:
    """The autograd Functions the generator's templates define (``StraightSin``): a
    program that uses one makes a call of that name, however it reaches it (called,
    or handed to a transform)."""
    from pytest_cgraph.strategies.templates import TEMPLATES

    return frozenset(
        name
        for text in TEMPLATES.values()
        for name in re.findall(r"^class (\w+)\(torch\.autograd\.Function\)", text, re.M)
    )


def _argument_classes(tree: ast.Module, built: dict[str, ast.Call]) -> dict[str, str]:
    """The program's arguments that ``inputs`` builds by calling a class (a module),
    by name: ``{"m1": "Counter()"}``, the pseudo-op a call of the argument is.

    Read from ``inputs``'s last ``return`` of a tuple, position by position
    against ``program``'s parameters: an element that is a call (``Counter()``)
    or a name last assigned one in ``inputs`` (``m1 = Counter()``); a class by
    its last dotted name (``torch.nn.Linear(1, 1)``: ``Linear()``), capitalised
    as classes are. An argument called though ``inputs`` does not show its
    class (built by a factory function, say) is :data:`MODULE_CALL`: a module
    call still, of no known class.
    """
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    program = functions.get("program")
    if program is None:
        return {}
    parameters = [argument.arg for argument in program.args.args]
    called = {
        node.func.id
        for function in functions.values()
        for node in ast.walk(function)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    classes = dict.fromkeys((name for name in parameters if name in called), MODULE_CALL)
    writers = _buffer_writing_classes(tree)
    for name, call in built.items():
        if name in classes:
            callee = str(getattr(call.func, "attr", None) or getattr(call.func, "id", ""))
            if callee == REBUILT and call.args and isinstance(call.args[0], ast.Name):
                callee = call.args[0].id  # a marked test's module, rebuilt from its class
            if callee in writers:
                classes[name] = BUFFER_WRITING_MODULE
            elif callee[:1].isupper():  # a class; a factory function says nothing of one
                classes[name] = f"{callee}()"
    return classes


#: The prefix of an op spelled as its ATen op (``torch.ops.aten.t_``: ``aten.t_``).
ATEN_SPELLING = "aten."
#: The two places autograd's own checks are raised from, each with the other.
_BACKWARD_SITES = (
    ("crash-compiled_call-", "crash-compiled_backward-"),
    ("crash-compiled_backward-", "crash-compiled_call-"),
)


def _other_backward_site(signature: str) -> str | None:
    """``signature`` of a crash raised at the other of :data:`_BACKWARD_SITES`, if any."""
    for site, other in _BACKWARD_SITES:
        if signature.startswith(site):
            return other + signature[len(site) :]
    return None


#: How a repro file rebuilds a marked test's module argument: ``_rebuilt(M, ...)``.
REBUILT = "_rebuilt"
#: A module whose forward writes its own state in place (``self.n += 1``), as the
#: templates' ``Counter`` does: a module of that kind is read as a ``Counter()``,
#: whatever the source calls its class.
BUFFER_WRITING_MODULE = "Counter()"


def _buffer_writing_classes(tree: ast.Module) -> frozenset[str]:
    """The source's classes whose ``forward`` writes an attribute of ``self`` in place:
    an augmented assignment to it, or an in-place method (``self.n.add_(1)``)."""
    writers = set()
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        for method in node.body:
            if not isinstance(method, ast.FunctionDef) or method.name != "forward":
                continue
            if not method.args.args:
                continue
            own = method.args.args[0].arg

            def on_self(target: ast.expr, own: str = own) -> bool:
                return (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == own
                )

            for sub in ast.walk(method):
                if (isinstance(sub, ast.AugAssign) and on_self(sub.target)) or (
                    isinstance(sub, ast.Call)
                    and isinstance(sub.func, ast.Attribute)
                    and sub.func.attr.endswith("_")
                    and not sub.func.attr.startswith("_")
                    and on_self(sub.func.value)
                ):
                    writers.add(node.name)
    return frozenset(writers)


def _subscript_op(node: ast.Subscript) -> str:
    """A subscript as a pseudo-op: indexing is an op too (a slice is a view, an
    integer a select, a tensor index a gather or a data-dependent shape, an
    assignment ``index_put_``), and a bug its minimal program reaches through
    one is another bug than the same signature reached without."""
    if isinstance(node.ctx, ast.Store):
        return "[]="
    parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    if any(isinstance(part, ast.Slice) or _is_view_constant(part) for part in parts):
        return "[:]"
    if all(_is_int_constant(part) for part in parts):
        return "[i]"
    return "[t]"


#: Calls that return a tuple or list of tensors, and metadata that is a sequence
#: of numbers: ``x.unbind(0)[0]`` or ``x.shape[0]`` picks an element, which is
#: no indexing of a tensor (the call itself is the op). ``apply`` is an
#: autograd Function's: the generator's templates index only those returning
#: tuples. (``max``/``min`` return a tuple only with a dim: not listed.)
_SEQUENCE_CALLS = frozenset(
    {"unbind", "split", "chunk", "tensor_split", "split_with_sizes", "hsplit", "vsplit",
     "dsplit", "unsafe_split", "unsafe_chunk", "grad", "size", "stride", "sort", "topk",
     "aminmax", "kthvalue", "frexp", "apply"}
)  # fmt: skip
_SEQUENCE_ATTRIBUTES = frozenset({"shape"})


def _picks_from_a_sequence(node: ast.Subscript) -> bool:
    """Whether the subscript reads an element of a tuple of tensors or of metadata."""
    value = node.value
    if isinstance(value, ast.Call):
        function = value.func
        name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
        return name in _SEQUENCE_CALLS
    return isinstance(value, ast.Attribute) and value.attr in _SEQUENCE_ATTRIBUTES


def _is_view_constant(node: ast.expr) -> bool:
    """``...`` or ``None`` in an index: a view, as a slice is."""
    return isinstance(node, ast.Constant) and (node.value is Ellipsis or node.value is None)


def _is_int_constant(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, int)


#: Views a program takes by reading an attribute (``a0.mT``), not by a call:
#: each is an op of the program, as ``transpose`` is.
ATTRIBUTE_VIEWS = frozenset({"T", "mT", "H", "mH"})

#: What :func:`program_ops` adds for a program compiled in stages (``COMPILE``).
#: Errors autograd raises from its own checks, whatever compiled the program:
#: many mechanisms end in each (any compiled write that autograd records on a
#: leaf, a saved tensor or a custom Function's view). A crash with one of
#: them is a registered bug's only if the program makes the bug's calls.
AUTOGRAD_CHECKS = (
    "a leaf Variable that requires grad is being used in an in-place operation",
    "one of the variables needed for gradient computation has been modified by an inplace",
    "is a view and is being modified inplace",
    "Trying to backward through the graph a second time",
)

STAGED = "COMPILE"
#: ... for ``inputs(k)`` that chooses by call (``a0[0:1] if k % 2 else ...``).
INPUTS_BY_CALL = "INPUTS_BY_CALL"
#: ... for ``inputs(k)`` that builds one argument from another (``a1 = a0[0:1]``):
#: arguments that may share storage, which the program may then separate.
ALIASED_INPUTS = "ALIASED_INPUTS"
#: ... for a program whose outputs or state feed the next call (``advance``).
ADVANCED = "ADVANCE"
#: ... for a call of a custom op of the source's own that writes its arguments'
#: values (``mutates_args``, no metadata change): one more spelling of the
#: templates' ``add_one_``.
CUSTOM_OP_WRITE = "CUSTOM_OP_WRITE"
#: ... for a program run under an autocast (``AUTOCAST = "bfloat16"``).
AUTOCAST = "AUTOCAST"
#: Where a source sets compile settings (read for ``CONFIG.X`` pseudo-ops).
COMPILE_CONFIG = "COMPILE_CONFIG"
#: ... for an assignment to a tensor's ``.data`` (``a0.data = ...``): no call, but
#: a cause of its own (Dynamo traces it as ``set_`` of a graph input).
DATA_ASSIGNED = ".data="
#: ... for an assignment to a tensor's ``.grad`` (``a0.grad = None``).
GRAD_ASSIGNED = ".grad="
#: A binary operator, by its AST class, named as the torch function it calls on a
#: tensor (``a0 / 2`` is ``torch.div``): so ``a0 * 1`` and ``a0.mul(1)`` make one op.
_BINARY: dict[type[ast.operator], str] = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.Div: "div",
    ast.FloorDiv: "floor_divide",
    ast.Mod: "remainder",
    ast.Pow: "pow",
    ast.MatMult: "matmul",
    ast.BitAnd: "bitwise_and",
    ast.BitOr: "bitwise_or",
    ast.BitXor: "bitwise_xor",
    ast.LShift: "bitwise_left_shift",
    ast.RShift: "bitwise_right_shift",
}

#: An augmented assignment to a name, by its operator's AST class, named as Python's
#: ``operator`` module names it: ``a0 -= v`` gives ``isub`` (an in-place op;
#: :data:`pytest_cgraph.registry.hazards.AUGMENTED`). Not ``-=``: ``+`` and ``|`` join
#: a bug's essential calls.
_AUGMENTED: dict[type[ast.operator], str] = {
    ast.Add: "iadd",
    ast.Sub: "isub",
    ast.Mult: "imul",
    ast.Div: "itruediv",
    ast.FloorDiv: "ifloordiv",
    ast.Mod: "imod",
    ast.Pow: "ipow",
    ast.MatMult: "imatmul",
    ast.BitAnd: "iand",
    ast.BitOr: "ior",
    ast.BitXor: "ixor",
    ast.LShift: "ilshift",
    ast.RShift: "irshift",
}
#: ... for a read of a tensor's ``.grad`` (``a0.grad is None``, ``a0.grad * 1``):
#: no call, but what a branch on it or a use of it depends on.
GRAD_READ = ".grad"
#: ... for a call of an argument (a module) whose class ``inputs`` does not show.
MODULE_CALL = "MODULE()"
#: ... for a draw from an argument that ``inputs`` builds as a Python
#: ``random.Random``: its methods are names any object could have; the object
#: drawn from is the cause.
PYTHON_RANDOM = "random.Random()"

#: A range star-unpacked into a call's arguments (``x.permute(*range(2))``): a
#: spelling Dynamo traces apart from the same arguments written out.
STAR_RANGE = "*range"


def _star_range(argument: ast.expr) -> bool:
    return (
        isinstance(argument, ast.Starred)
        and isinstance(argument.value, ast.Call)
        and isinstance(argument.value.func, ast.Name)
        and argument.value.func.id == "range"
    )


_BUILTIN_CALLS = frozenset(
    {"range", "len", "tuple", "list", "float", "int", "bool", "isinstance", "min", "max"}
)


def baseline_dir(torch_version: str) -> Path | None:
    """The shipped baseline for a torch version (``2.13.0+cpu`` -> ``torch-2.13``), if any."""
    match = re.match(r"(\d+)\.(\d+)", torch_version)
    if not match:
        return None
    directory = BASELINE_ROOT / f"torch-{match.group(1)}.{match.group(2)}"
    return directory if directory.is_dir() else None


def _release(torch_version: str) -> tuple[int, int] | None:
    """``2.11.0+cu128`` -> ``(2, 11)``; ``None`` for a version that names no release."""
    match = re.match(r"(\d+)\.(\d+)", torch_version)
    return (int(match.group(1)), int(match.group(2))) if match else None


def shipped_baselines() -> dict[tuple[int, int], Path]:
    """Every baseline shipped in the package, by the torch release it was recorded on."""
    found = {}
    for directory in BASELINE_ROOT.glob("torch-*"):
        release = _release(directory.name.removeprefix("torch-"))
        if release is not None and directory.is_dir():
            found[release] = directory
    return found


def nearest_baseline_dir(torch_version: str) -> Path | None:
    """The shipped baseline of the release nearest ``torch_version``, when none is its own.

    ``None`` when the running torch has a baseline (:func:`baseline_dir`) or
    none is shipped. Nearest by release: of the same major release the
    nearest minor, between two equally near the newer (its entries were drawn
    by the current generator); else the release next to it in release order.
    Its entries were recorded on another torch: some may be fixed there or
    behave differently, so they are known on this torch only once replayed
    here (see :func:`baseline_note`).
    """
    release = _release(torch_version)
    shipped = shipped_baselines()
    if release is None or not shipped or baseline_dir(torch_version) is not None:
        return None

    def distance(other: tuple[int, int]) -> tuple[int, int, int]:
        if other[0] == release[0]:
            return (0, abs(other[1] - release[1]), -other[1])
        # Another major release: the one next to it in release order.
        return (abs(other[0] - release[0]), -other[1] if other < release else other[1], 0)

    return shipped[min(shipped, key=distance)]


def baseline_note(torch_version: str, rechecked: int | None = None) -> str | None:
    """One line for a run on a torch with no shipped baseline; ``None`` when it has one.

    Without a baseline, torch's own differences recorded for other releases
    are failures like any new one (shrunk, reported, failing their item),
    which a reader must know before reading the run's failures as news.
    ``rechecked``: how many of the nearest baseline's entries reproduced on
    this torch and are used as known (``None``: they were not replayed).
    """
    if baseline_dir(torch_version) is not None:
        return None
    release = _release(torch_version)
    name = f"torch {release[0]}.{release[1]}" if release else f"torch {torch_version!r}"
    nearest = nearest_baseline_dir(torch_version)
    if nearest is None:
        return f"no baseline of known torch differences for {name}: every difference counts as new"
    if rechecked is None:
        return (
            f"no baseline of known torch differences for {name} (nearest: {nearest.name}, "
            "not used): torch's own differences count as new"
        )
    return (
        f"no baseline of known torch differences for {name}: {rechecked} entries of "
        f"{nearest.name} that reproduce here are known, the rest count as new"
    )


class Registry:
    """Known bugs by base signature, from one or more directories of repro files."""

    def __init__(self, entries: Iterable[KnownBug] = ()) -> None:
        self._entries: dict[str, list[KnownBug]] = {}
        self._kin: dict[str, list[KnownBug]] = {}
        #: One form of each bug that claims any difference of its calls.
        self._any_symptom: dict[str, KnownBug] = {}
        #: Per bug, what its forms' calls and its essential calls say of its mechanism
        #: (:func:`mechanism_tokens`): a program making a call of another meaning is
        #: not met through it (:meth:`explains`).
        self._mechanism: dict[str, set[str]] = {}
        for entry in entries:
            if entry.bug is not None:
                calls = [*entry.ops, *entry.calls, *_essential_calls(entry.essential or ())]
                self._mechanism.setdefault(entry.bug, set()).update(mechanism_tokens(calls))
            self._entries.setdefault(entry.signature, []).append(entry)
            if entry.kin_signature is not None:
                self._kin.setdefault(entry.kin_signature, []).append(entry)
            if entry.any_symptom and entry.bug is not None:
                self._any_symptom.setdefault(entry.bug, entry)

    @classmethod
    def load(cls, directories: Iterable[Path]) -> Registry:
        """Every repro file and entry of ``directories`` (missing ones are skipped), in order."""
        entries: list[KnownBug] = []
        for directory in directories:
            if directory.is_dir():
                entries.extend(
                    entry
                    for path in registry_files(directory)
                    if (entry := read_entry(path)) is not None
                )
        return cls(entries)

    def joined(self, entries: Iterable[KnownBug]) -> Registry:
        """This registry and ``entries`` after it, less those whose file it has already."""
        have = {entry.path.resolve() for entry in self.entries()}
        return Registry([*self.entries(), *(e for e in entries if e.path.resolve() not in have)])

    def __len__(self) -> int:
        return sum(len(entries) for entries in self._entries.values())

    def entries(self) -> list[KnownBug]:
        """Every entry, in the order loaded."""
        return [entry for entries in self._entries.values() for entry in entries]

    def may_know(self, difference: Difference) -> bool:
        """Whether any entry has this base signature (cheap: no layer needed yet)."""
        return difference.signature in self._entries

    def mechanism_calls(self, bug: str) -> frozenset[str]:
        """What ``bug``'s forms and essential calls say of its mechanism
        (:func:`mechanism_tokens`): a program it claims makes no call beyond these."""
        return frozenset(self._mechanism.get(bug, ()))

    def explains(self, entry: KnownBug, ops: frozenset[str]) -> bool:
        """Whether every call of a failing program that tells a mechanism apart
        (:func:`mechanism_tokens`: a metadata change, an index write, a hook, a grad
        mode, a transform, a custom op, a module holding state, a transfer, a random
        draw, an in-place write) is one ``entry``'s bug is known to make, by its
        forms or its essential calls.

        A shrunk program keeps only what its failure needs: a call of a meaning
        no form of the bug ever had is part of another mechanism, met with this
        bug's calls around it. So ``transpose_(0, 0)`` of a saved input is not
        the one-node-for-all-outputs bug because both raise autograd's version
        check after a backward; an entry of no bug (a user's repro file) claims
        by hazard class, as it always has.
        """
        if entry.bug is None or not entry.essential or not ops:
            # No bug, or one whose forms' signatures name it whichever op reaches it.
            return True
        return mechanism_tokens(ops) <= self.mechanism_calls(entry.bug)

    def unexplained(self, difference: Difference, ops: frozenset[str]) -> frozenset[str]:
        """The calls that alone keep a registered bug from claiming this failure: of
        the entries of its signature (or kin, or other backward site) whose bug's
        essential calls the program makes, the mechanism calls (:func:`mechanism_tokens`)
        no form of that bug makes. Empty where no entry comes that close.

        A time-boxed campaign's shrink may end before such calls are deleted: a
        judge that can check a program again (:class:`pytest_cgraph.registry.judge.Judge`)
        deletes the statements that make them and asks once more.
        """
        signatures = {difference.signature, _other_backward_site(difference.signature)} - {None}
        candidates = [e for signature in signatures for e in self._entries.get(str(signature), [])]
        if difference.kin_signature is not None:
            candidates += self._kin.get(difference.kin_signature, [])
        tokens = mechanism_tokens(ops)
        extra: set[str] = set()
        for entry in candidates:
            if (
                entry.bug
                and entry.essential
                and entry.claims(ops)
                and not self.explains(entry, ops)
            ):
                extra |= tokens - self.mechanism_calls(entry.bug)
        return frozenset(extra)

    def narrows(self, difference: Difference) -> bool:
        """Whether this failure is an entry's only if its program makes the calls that
        tell the entry's bug apart (:meth:`KnownBug.claims`).

        A crash's normalised message names its bug, unless torch raises it
        from several mechanisms (a version-counter error from any saved
        tensor written in place): then entries of different calls share it,
        and a program that makes none of their calls is a mechanism of its
        own. (The same entry held twice, a repro file and the entry recorded
        from it, shares nothing; nor do the forms of one bug.) autograd's own
        checks (:data:`AUTOGRAD_CHECKS`) are such messages whatever the
        registry holds: one bug's entries alone do not make them its. Any
        other signature is broad, and the program's calls narrow it. So is a
        dead process's site: a crash in a compiled graph's C++ has no finer one.
        """
        if not difference.message or difference.ends_process:
            return True
        if any(check in difference.message for check in AUTOGRAD_CHECKS):
            return True
        return len({entry.kin for entry in self._entries.get(difference.signature, [])}) > 1

    def layer_decides(self, difference: Difference) -> bool:
        """Whether a crash's message is one of autograd's own checks (raised by any
        mechanism that saves a tensor and writes it, or frees a graph): then the
        first layer that raises it is part of what names its bug."""
        message = difference.message or ""
        return not difference.ends_process and any(check in message for check in AUTOGRAD_CHECKS)

    def needs_layer(self, difference: Difference) -> bool:
        """Whether telling this failure known or new takes its first diverging layer."""
        return self.may_know(difference) and not difference.message and not difference.ends_process

    def match(
        self,
        difference: Difference,
        layer_of: Callable[[], str | None],
        ops: frozenset[str] = frozenset(),
        backend: str | None = None,
    ) -> KnownBug | None:
        """The entry ``difference`` is an instance of, or ``None`` for a new bug.

        An entry matches on the base signature; where that is broad (no
        exception message in it), also on the layer, and only if the entry
        claims the failing program's calls (``ops``; :meth:`KnownBug.claims`:
        its bug's essential calls, its declared ops, or its program's hazard
        classes). A message that entries of different calls share is broad
        too: their calls, not the message, tell their bugs apart.
        ``layer_of`` is called (once) only when the layer decides it. Where no
        entry matches, a bug that claims any difference of its calls
        (:attr:`Bug.any_symptom`) and whose calls the program makes is it.
        A failure of a backend of one's own (``backend``) that no torch layer
        shows is an entry's of that backend and face that no torch layer
        showed either, whatever its calls or exact signature
        (:mod:`pytest_cgraph.registry.own_backend`).
        """
        # What ``advance`` does between calls has not run before the first call's
        # difference: it is no part of this failure's mechanism (it still counts
        # where an entry claims by its calls' hazards).
        mechanism_ops = (
            frozenset(op for op in ops if op.split(".")[0] != ADVANCED)
            if difference.iteration == 1
            else ops
        )
        candidates = self._entries.get(difference.signature, [])
        if self.layer_decides(difference):
            # autograd's own check is raised where the backward runs: in the
            # compiled call when the function calls backward itself, else in the
            # caller's backward. Where is how it is seen, not its mechanism.
            swapped = _other_backward_site(difference.signature)
            if swapped is not None:
                candidates = candidates + self._entries.get(swapped, [])
        if difference.ends_process and difference.message:
            # An entry of a dead process recorded without its site (an older
            # version's) claims any site of its signal, narrowed by ops below.
            siteless = siteless_signature(difference)
            candidates = candidates + self._entries.get(siteless, [])
        # A bug's form is this failure's only if the bug is known to make each call
        # of the program that names a mechanism, whatever the signature says.
        candidates = [entry for entry in candidates if self.explains(entry, mechanism_ops)]
        if ops:
            # A message names its bug only in a program that makes the bug's
            # essential calls: Dynamo's own checks ("Guard failed on the same
            # frame it was created") end mechanisms of other calls too.
            candidates = [
                entry
                for entry in candidates
                if entry.bug is None or not entry.essential or entry.claims(ops)
            ]
        by_kin = not candidates and difference.kin_signature is not None
        if by_kin:
            # autograd's check named another node (the op that made the tensor):
            # an entry of the same check is this failure's only if the program
            # makes its bug's calls.
            candidates = self._kin.get(difference.kin_signature or "", [])
            candidates = [entry for entry in candidates if self.explains(entry, mechanism_ops)]
        if by_kin or self.narrows(difference):
            candidates = [entry for entry in candidates if entry.claims(ops)]
            # A filed bug's form goes before an entry of no bug (a user's, or the
            # run's own repro of this very failure), which keep their order; and
            # several bugs may claim one program (it writes .data inside an
            # inference_mode region): the one whose claim fits it closest is its.
            candidates.sort(
                key=lambda entry: (1, entry.precision(ops)) if entry.bug else (0, 0.0),
                reverse=True,
            )
        if candidates and self.layer_decides(difference):
            # autograd's own check names no mechanism, and the calls alone do not
            # tell one bug from another making them: the layer that first raises
            # it must be the entry's too.
            layer = layer_of()
            candidates = [entry for entry in candidates if entry.layer == layer]
        elif candidates and not self.needs_layer(difference):
            return candidates[0]
        if candidates:
            layer = layer_of()
            known = next((entry for entry in candidates if entry.layer == layer), None)
            if known is not None:
                return known
        if is_own_backend(backend) and not difference.message and not difference.ends_process:
            wanted = face(difference.signature)
            own = [
                entry
                for entry in self.entries()
                if entry.backend == backend
                and entry.layer is None
                and face(entry.signature) == wanted
            ]
            if own and layer_of() is None:
                return own[0]
        # Last, a bug whose mechanism shows as any difference, if the program makes
        # its calls: no signature, layer or message of its forms asked.
        claiming = [
            entry
            for entry in self._any_symptom.values()
            if entry.claims(ops) and self.explains(entry, mechanism_ops)
        ]
        return max(claiming, key=lambda entry: entry.precision(ops), default=None)


@functools.cache
def cached_is_repro_file(path: Path) -> bool:
    """:func:`is_repro_file`, once per path per process (collection asks per file)."""
    return is_repro_file(path)
