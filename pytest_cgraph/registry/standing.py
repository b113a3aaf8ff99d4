"""What a known bug is to the people who would fix it, and how it was found.

A bug's severity says how bad its difference is; two more questions decide
what a maintainer does with it. Is it a bug to file at all, or does its
program step outside what ``torch.compile`` documents (an API torch calls
unsupported under compile, a non-default setting, a private API, a
difference in object identity alone, eager's own undefined behaviour)?
Such a case is real and worth knowing, but it is not counted among the
bugs to file: the page and the run's summary show it apart. And how was it
found: by a campaign's random programs (which seed, family and backend),
by a user's own test, by reproducing a report already on torch's tracker,
or by a probe written by hand to study a mechanism? Only the first is the
harness finding bugs; the counts keep them apart.

Both are keys of a bug in a bugs file, checked when the file is read, so a
misspelt class fails loudly instead of quietly counting a bug as one to
file::

    contract = { class = "documented-limitation", why = "torch.compile does not ..." }
    found = { by = "campaign", backend = "inductor", family = "schedules", seed = 11 }
    found = { by = "report", issue = 197893 }

Torch-free: read with the bugs file.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Any


class ContractClass(str, enum.Enum):
    """How a program steps outside what ``torch.compile`` documents."""

    #: Torch documents that compile does not support or guard it (``.data``
    #: assignment, ``set_``/``resize_`` of a graph input, a hook added after compiling).
    DOCUMENTED_LIMITATION = "documented-limitation"
    #: It needs a torch setting other than its default.
    NON_DEFAULT_SETTING = "non-default-setting"
    #: It calls a private API (``torch._foreach_*``, ``torch._dynamo...``).
    PRIVATE_API = "private-api"
    #: Only object identity differs: values, metadata and aliasing agree.
    IDENTITY_ONLY = "identity-only"
    #: Eager's own result is unspecified (repeated indices of ``index_put_``).
    EAGER_UNDEFINED = "eager-undefined"
    #: Eager itself is wrong (an autograd bug eager meets without compiling): a
    #: bug to file, against autograd, not torch.compile.
    EAGER_BUG = "eager-bug"

    def __str__(self) -> str:
        return self.value

    @property
    def words(self) -> str:
        """The class as a reader's sentence ends it: outside the contract, because ..."""
        return _WORDS[self]


_WORDS = {
    ContractClass.DOCUMENTED_LIMITATION: "a documented limitation",
    ContractClass.NON_DEFAULT_SETTING: "needs a non-default setting",
    ContractClass.PRIVATE_API: "calls a private API",
    ContractClass.IDENTITY_ONLY: "object identity only",
    ContractClass.EAGER_UNDEFINED: "eager's result is undefined",
    ContractClass.EAGER_BUG: "eager itself is wrong (an autograd bug, not compile's)",
}


@dataclass(frozen=True)
class Contract:
    """Where a bug's programs step outside ``torch.compile``'s contract, and why."""

    kind: ContractClass
    #: One sentence: what the program does that the contract leaves out, and where
    #: torch says so (its documentation, a source comment, a setting's default).
    why: str

    @classmethod
    def read(cls, raw: object) -> Contract:
        """From a bugs file's ``contract`` table; a ``ValueError`` names what is wrong."""
        table = _table(raw, "contract", {"class", "why"})
        kind = _choice(table, "class", ContractClass, "contract")
        why = _text(table, "why", "contract")
        return cls(kind, why)


class FoundBy(str, enum.Enum):
    """How a bug was first met."""

    #: A campaign's random programs (``pytest --cgraph``).
    CAMPAIGN = "campaign"
    #: A user's own test: a marked test or a ``cgraph`` fixture check.
    USER_TEST = "user-test"
    #: Reproduced from a report already on torch's tracker.
    REPORT = "report"
    #: A program written by hand to study a mechanism (neither of the above).
    PROBE = "probe"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Provenance:
    """How a bug was found: by what, and what it takes to find it again."""

    by: FoundBy
    #: The tracker issue reproduced (``report``; required there).
    issue: int | None = None
    #: The campaign's backend, family and seed, and the torch it ran on (``campaign``).
    backend: str | None = None
    family: str | None = None
    seed: int | None = None
    torch: str | None = None
    #: A few words more: the test that met it, the date, the run.
    note: str | None = None

    @classmethod
    def read(cls, raw: object) -> Provenance:
        """From a bugs file's ``found`` table; a ``ValueError`` names what is wrong."""
        table = _table(raw, "found", {"by", "issue", "backend", "family", "seed", "torch", "note"})
        by = _choice(table, "by", FoundBy, "found")
        issue = _number(table, "issue")
        seed = _number(table, "seed")
        words = {key: _optional_text(table, key) for key in ("backend", "family", "torch", "note")}
        if by is FoundBy.REPORT and issue is None:
            raise ValueError("found: a bug reproduced from a report names it: issue = NUMBER")
        if by is FoundBy.CAMPAIGN and words["backend"] is None:
            raise ValueError(
                "found: a campaign's bug names its backend "
                '(backend = "inductor"; family = "mutation" and seed = N where known)'
            )
        return cls(by, issue, seed=seed, **words)

    def words(self) -> str:
        """How the page and a report say it: ``a campaign (inductor, schedules, seed 11,
        torch 2.14.1)``, ``reproduced from pytorch/pytorch#197893``."""
        if self.by is FoundBy.REPORT:
            said = f"reproduced from pytorch/pytorch#{self.issue}"
        elif self.by is FoundBy.CAMPAIGN:
            details = [self.backend, self.family or "family not recorded"]
            details += [f"seed {self.seed}"] if self.seed is not None else []
            details += [f"torch {self.torch}"] if self.torch else []
            said = f"a campaign ({', '.join(str(d) for d in details)})"
        elif self.by is FoundBy.USER_TEST:
            said = "a user's test"
        else:
            said = "a probe written by hand"
        return f"{said}; {self.note}" if self.note else said


def _table(raw: object, key: str, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ValueError(f"{key} must be a table ({key} = {{ ... }}), got {raw!r}")
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise ValueError(f"{key}: unknown key(s) {', '.join(unknown)}; known: {sorted(allowed)}")
    return raw


def _choice(table: dict[str, Any], key: str, kind: type[enum.Enum], where: str) -> Any:
    value = table.get(key)
    try:
        return kind(value)
    except ValueError:
        choices = ", ".join(repr(member.value) for member in kind)
        raise ValueError(f"{where}: {key} = {value!r} is none of {choices}") from None


def _text(table: dict[str, Any], key: str, where: str) -> str:
    value = table.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: {key} must be a non-empty string, got {value!r}")
    return " ".join(value.split())


def _optional_text(table: dict[str, Any], key: str) -> str | None:
    return None if table.get(key) is None else _text(table, key, "found")


def _number(table: dict[str, Any], key: str) -> int | None:
    value = table.get(key)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise ValueError(f"found: {key} must be a whole number, got {value!r}")
    return value


#: How a bugs file's ``checked`` table says a torch no longer shows a bug: ``fixed:
#: none of its 4 forms fails``, ``0 of 1 forms reproduce``, ``no difference: ...``.
_NOT_FAILING = re.compile(r"^(?:fixed\b|0 of \d+ forms? reproduce|no difference\b)")


def fixed_in(checked: dict[str, str]) -> str | None:
    """The torch a bug was found fixed on: the newest torch its ``checked`` table
    names, where replaying its forms there failed no more (``None`` where the newest
    check still fails, or none was made). A fix on an older torch that a newer one
    undid is no fix."""
    if not checked:
        return None
    newest = max(checked, key=version_order)
    return newest if _NOT_FAILING.match(checked[newest]) else None


def version_order(version: str) -> tuple[int, ...]:
    """``2.14.1+cu130`` -> ``(2, 14, 1)``: torch versions, and baselines' names
    (``torch-2.14``), in release order, whatever the build."""
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0]))
