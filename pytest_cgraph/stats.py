"""Run statistics: gathered per test item, merged on the controller, summarised.

Everything here is plain JSON-able data, because under pytest-xdist it
travels from workers to the controller inside test reports. One code path
serves both: with or without workers, the controller merges what the
reports carry.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_cgraph.compare import Difference

#: Key under which a report carries its item's statistics (Hypothesis does the same).
REPORT_KEY = "_cgraph_stats"


@dataclass
class Failure:
    """One failing signature, as found by one item."""

    signature: str
    kind: str
    family: str
    iteration: int
    place: str
    repro: str | None = None
    nodeid: str = ""
    layer: str | None = None
    statements: int | None = None
    examples_to_failure: int | None = None
    seconds_to_repro: float | None = None
    #: How the replay of a failure that did not reproduce went ("passed", ...).
    flaky: str | None = None

    @classmethod
    def of(cls, difference: Difference, family: str, nodeid: str, **found: Any) -> Failure:
        """The record of ``difference``, found by ``nodeid`` in ``family`` programs."""
        return cls(
            signature=difference.signature,
            kind=difference.kind,
            family=family,
            iteration=difference.iteration,
            place=difference.place,
            nodeid=nodeid,
            **found,
        )


@dataclass
class RunStats:
    """Counts over checked programs; ``merge`` adds another item's counts."""

    programs: int = 0
    invalid: int = 0
    seconds: float = 0.0
    compiles: int = 0
    captured: int = 0
    families: Counter[str] = field(default_factory=Counter)
    features: Counter[str] = field(default_factory=Counter)
    invalid_reasons: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)
    #: Failing programs seen per signature (new and known, shrinking included).
    hits: Counter[str] = field(default_factory=Counter)
    #: Known signatures seen again: signature -> its repro file.
    known: dict[str, str] = field(default_factory=dict)

    def count_program(self, family: str, features: set[str]) -> None:
        """A program was drawn and checked (whatever the verdict)."""
        self.programs += 1
        self.families[family] += 1
        self.features.update(features)

    def count_invalid(self, reason: str) -> None:
        """Eager raised: the program has no reference behaviour."""
        self.invalid += 1
        self.invalid_reasons[reason[:120]] += 1

    def count_report(self, compiles: int, captured: int, skip_reasons: dict[str, int]) -> None:
        """What one check said about compiling and capture."""
        self.compiles += compiles
        self.captured += 1 if captured else 0
        self.skipped.update(skip_reasons)

    def count_hits(self, hits: dict[str, int], known: dict[str, str], new: set[str]) -> None:
        """Failing programs per signature; those with a repro from before are known."""
        self.hits.update(hits)
        for signature in hits:
            if signature in known and signature not in new:
                self.known[signature] = known[signature]

    def merge(self, other: RunStats) -> None:
        """Add ``other``'s counts to these."""
        self.programs += other.programs
        self.invalid += other.invalid
        self.seconds += other.seconds
        self.compiles += other.compiles
        self.captured += other.captured
        self.families.update(other.families)
        self.features.update(other.features)
        self.invalid_reasons.update(other.invalid_reasons)
        self.skipped.update(other.skipped)
        self.failures.extend(other.failures)
        self.hits.update(other.hits)
        self.known.update(other.known)

    def to_json(self) -> dict[str, Any]:
        """A dict of builtins, fit for a report's ``__dict__`` and for JSON."""
        return {
            "programs": self.programs,
            "invalid": self.invalid,
            "seconds": self.seconds,
            "compiles": self.compiles,
            "captured": self.captured,
            "families": dict(self.families),
            "features": dict(self.features),
            "invalid_reasons": dict(self.invalid_reasons),
            "skipped": dict(self.skipped),
            "failures": [
                {**vars(failure), "hits": self.hits.get(failure.signature, 0)}
                for failure in self.failures
            ],
            "known": [
                {"signature": signature, "hits": self.hits.get(signature, 0), "repro": repro}
                for signature, repro in sorted(self.known.items())
            ],
            "hits": dict(self.hits),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunStats:
        """The inverse of :meth:`to_json`."""
        return cls(
            programs=data["programs"],
            invalid=data["invalid"],
            seconds=data["seconds"],
            compiles=data["compiles"],
            captured=data["captured"],
            families=Counter(data["families"]),
            features=Counter(data["features"]),
            invalid_reasons=Counter(data["invalid_reasons"]),
            skipped=Counter(data["skipped"]),
            failures=[
                Failure(**{k: v for k, v in failure.items() if k != "hits"})
                for failure in data["failures"]
            ],
            hits=Counter(data.get("hits", {})),
            known={entry["signature"]: entry["repro"] for entry in data.get("known", [])},
        )


def write_report(path: Path, stats: RunStats, wall_seconds: float, run: dict[str, Any]) -> None:
    """Write the JSON report: the run's counts plus ``run`` (backend, device, iters, seed)."""
    data = stats.to_json()
    data["seconds"] = round(wall_seconds, 3)
    data["check_seconds"] = round(stats.seconds, 3)
    data.update(run)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    temporary.replace(path)


def summary_lines(stats: RunStats, wall_seconds: float, known_ops: list[str]) -> list[str]:
    """The terminal summary of a ``--cgraph`` run."""
    rate = stats.programs / wall_seconds if wall_seconds > 0 else 0.0
    lines = [
        f"programs: {stats.programs} checked, {stats.invalid} invalid (eager raised), "
        f"{rate:.1f} programs/s over {wall_seconds:.1f} s",
    ]
    if stats.families:
        per_family = ", ".join(f"{name} {count}" for name, count in sorted(stats.families.items()))
        lines.append(f"per family: {per_family}")
    for reason, count in stats.invalid_reasons.most_common(3):
        lines.append(f"  invalid x{count}: {reason}")
    skipped = sum(stats.skipped.values())
    reasons = ", ".join(f"{reason} x{count}" for reason, count in stats.skipped.most_common())
    lines.append(
        f"compiles: {stats.compiles}; CUDA graphs: {stats.captured} programs captured, "
        f"{skipped} graphs skipped" + (f" ({reasons})" if reasons else "")
    )
    if known_ops and stats.programs:
        covered = [op for op in known_ops if stats.features.get(op)]
        rare = sorted(known_ops, key=lambda op: stats.features.get(op, 0))[:5]
        lines.append(
            f"op coverage: {len(covered)}/{len(known_ops)} ops; least used: "
            + ", ".join(f"{op} {stats.features.get(op, 0)}" for op in rare)
        )
    by_signature: dict[str, list[Failure]] = {}
    for failure in stats.failures:
        by_signature.setdefault(failure.signature, []).append(failure)
    lines.append(f"failures: {len(by_signature)} new signature(s)")
    for signature, found in sorted(by_signature.items()):
        first = found[0]
        where = first.repro or f"{first.nodeid} (no repro file)"
        if first.flaky:
            where = f"FLAKY (replay {first.flaky}), {first.nodeid}"
        lines.append(
            f"  {signature} ({first.kind}, {first.family}, iteration {first.iteration}, "
            f"{stats.hits.get(signature, len(found))} failing programs): {where}"
        )
    if stats.known:
        lines.append(f"known: {len(stats.known)} signature(s) seen again, not failures")
        for signature, repro in sorted(stats.known.items()):
            lines.append(
                f"  {signature} ({stats.hits.get(signature, 0)} failing programs): {repro}"
            )
    return lines
