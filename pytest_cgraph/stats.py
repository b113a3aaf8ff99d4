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

from pytest_cgraph.failures import Failure, Outcome, Verdict

if TYPE_CHECKING:
    from pytest_cgraph.oracle.engine import CheckReport

#: Key under which a report carries its item's statistics (Hypothesis does the same).
REPORT_KEY = "_cgraph_stats"


@dataclass
class RunStats:
    """Counts over checked programs; ``merge`` adds another item's counts.

    ``programs`` counts every check; ``drawn`` the programs the generator
    drew (what ``--cgraph-examples`` bounds), the rest are shrink steps and
    replays. ``campaign`` says whether any campaign item ran (a run of
    marked tests alone has no op coverage to speak of).
    """

    programs: int = 0
    drawn: int = 0
    invalid: int = 0
    seconds: float = 0.0
    compiles: int = 0
    captured: int = 0
    campaign: bool = False
    families: Counter[str] = field(default_factory=Counter)
    features: Counter[str] = field(default_factory=Counter)
    invalid_reasons: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)
    #: Failing programs seen per signature (new and known, shrinking included).
    hits: Counter[str] = field(default_factory=Counter)
    #: Known signatures seen again: signature -> its repro file.
    known: dict[str, str] = field(default_factory=dict)

    def count_program(self, family: str, features: set[str], drawn: bool = True) -> None:
        """A program was checked (whatever the verdict); ``drawn`` unless a shrink step."""
        self.programs += 1
        self.drawn += int(drawn)
        self.families[family] += 1
        self.features.update(features)

    def count_invalid(self, reason: str) -> None:
        """Eager raised: the program has no reference behaviour."""
        self.invalid += 1
        self.invalid_reasons[reason[:120]] += 1

    def count_report(self, report: CheckReport) -> None:
        """What one passing check said about compiling and capture."""
        self.compiles += report.compiles
        self.captured += 1 if report.graphs_captured else 0
        self.skipped.update(report.skip_reasons)

    def count_hit(self, signature: str, known_repro: str | None = None) -> None:
        """A failing program; ``known_repro`` is the registry file of a known one."""
        self.hits[signature] += 1
        if known_repro is not None:
            self.known.setdefault(signature, known_repro)

    def count_outcome(self, outcome: Outcome, known_repro: str | None = None) -> None:
        """What checking one program gave: an invalid program, a pass's compile and
        capture counts, or a failing program (``known_repro``: the registry file of a
        known one)."""
        if outcome.verdict is Verdict.INVALID:
            self.count_invalid(outcome.reason)
        elif outcome.report is not None:
            self.count_report(outcome.report)
        elif outcome.difference is not None:
            self.count_hit(outcome.difference.signature, known_repro)

    def merge(self, other: RunStats) -> None:
        """Add ``other``'s counts to these."""
        self.programs += other.programs
        self.drawn += other.drawn
        self.invalid += other.invalid
        self.seconds += other.seconds
        self.compiles += other.compiles
        self.captured += other.captured
        self.campaign = self.campaign or other.campaign
        self.families.update(other.families)
        self.features.update(other.features)
        self.invalid_reasons.update(other.invalid_reasons)
        self.skipped.update(other.skipped)
        self.failures.extend(other.failures)
        self.hits.update(other.hits)
        for signature, repro in other.known.items():
            self.known.setdefault(signature, repro)

    def by_signature(self) -> dict[str, list[Failure]]:
        """The new failures grouped by signature, in the order first found."""
        grouped: dict[str, list[Failure]] = {}
        for failure in self.failures:
            grouped.setdefault(failure.signature, []).append(failure)
        return grouped

    def verified_repros(self) -> int:
        """New signatures whose repro file was written and seen to fail when run alone."""
        return sum(
            1
            for found in self.by_signature().values()
            if any(failure.repro is not None and failure.repro.verified for failure in found)
        )

    def to_json(self) -> dict[str, Any]:
        """A dict of builtins, fit for a report's ``__dict__`` and for JSON."""
        return {
            "new_signatures": len(self.by_signature()),
            "verified_repros": self.verified_repros(),
            "programs": self.programs,
            "drawn": self.drawn,
            "invalid": self.invalid,
            "seconds": self.seconds,
            "compiles": self.compiles,
            "captured": self.captured,
            "campaign": self.campaign,
            "families": dict(self.families),
            "features": dict(self.features),
            "invalid_reasons": dict(self.invalid_reasons),
            "skipped": dict(self.skipped),
            "failures": [
                {**failure.to_json(), "hits": self.hits.get(failure.signature, 0)}
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
            drawn=data.get("drawn", 0),
            invalid=data["invalid"],
            seconds=data["seconds"],
            compiles=data["compiles"],
            captured=data["captured"],
            campaign=data.get("campaign", False),
            families=Counter(data["families"]),
            features=Counter(data["features"]),
            invalid_reasons=Counter(data["invalid_reasons"]),
            skipped=Counter(data["skipped"]),
            failures=[Failure.from_json(failure) for failure in data["failures"]],
            hits=Counter(data.get("hits", {})),
            known={entry["signature"]: entry["repro"] for entry in data.get("known", [])},
        )


def report_data(stats: RunStats, wall_seconds: float, run: dict[str, Any]) -> dict[str, Any]:
    """The report: the run's counts plus ``run`` (backend, device, ...); JSON and HTML share it."""
    data = stats.to_json()
    data["seconds"] = round(wall_seconds, 3)
    data["check_seconds"] = round(stats.seconds, 3)
    data.update(run)
    return data


def write_report(
    path: Path, stats: RunStats, wall_seconds: float, run: dict[str, Any]
) -> dict[str, Any]:
    """Write the JSON report atomically; the data written, for the HTML page to reuse."""
    data = report_data(stats, wall_seconds, run)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    temporary.replace(path)
    return data


def summary_lines(stats: RunStats, wall_seconds: float, known_ops: list[str]) -> list[str]:
    """The terminal summary of a ``--cgraph`` run.

    Campaign-only lines (families, op coverage) appear only when a campaign
    item ran.
    """
    rate = stats.programs / wall_seconds if wall_seconds > 0 else 0.0
    checked = f"programs: {stats.programs} checked"
    if stats.campaign:
        checked += f" ({stats.drawn} drawn, {stats.programs - stats.drawn} while shrinking)"
    lines = [
        f"{checked}, {stats.invalid} invalid (eager raised), "
        f"{rate:.1f} programs/s over {wall_seconds:.1f} s",
    ]
    if stats.campaign and stats.families:
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
    if stats.campaign and known_ops and stats.programs:
        covered = [op for op in known_ops if stats.features.get(op)]
        rare = sorted(known_ops, key=lambda op: stats.features.get(op, 0))[:5]
        lines.append(
            f"op coverage: {len(covered)}/{len(known_ops)} ops; least used: "
            + ", ".join(f"{op} {stats.features.get(op, 0)}" for op in rare)
        )
    by_signature = stats.by_signature()
    lines.append(
        f"failures: {len(by_signature)} new signature(s), {stats.verified_repros()} with a "
        "verified repro"
    )
    for signature, found in sorted(by_signature.items()):
        first = found[0]
        repro = first.repro
        if repro is not None and repro.path:
            where = repro.path
        else:
            where = f"{first.case.nodeid} ({repro.status if repro else 'no repro'})"
        lines.append(
            f"  {signature} ({first.difference.kind}, {first.case.family}, iteration "
            f"{first.difference.iteration}, {stats.hits.get(signature, len(found))} failing "
            f"programs{'' if first.shrunk else ', not shrunk'}): {where}"
        )
    if stats.known:
        lines.append(f"known: {len(stats.known)} signature(s) seen again, not failures")
        for signature, repro in sorted(stats.known.items()):
            lines.append(
                f"  {signature} ({stats.hits.get(signature, 0)} failing programs): {repro}"
            )
    return lines
