"""Run statistics: gathered per test item, merged on the controller, summarised.

Everything here is plain JSON-able data, because under pytest-xdist it
travels from workers to the controller inside test reports. One code path
serves both: with or without workers, the controller merges what the
reports carry.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_cgraph.failures import Failure, Outcome, Verdict
from pytest_cgraph.registry.entries import BUGS_FILE, Bug, read_bugs
from pytest_cgraph.registry.severity import ORDER, Severity, severity_of, worst
from pytest_cgraph.registry.standing import fixed_in

if TYPE_CHECKING:
    from pytest_cgraph.oracle.engine import CheckReport


@dataclass(frozen=True)
class KnownAs:
    """What a known signature is filed as: the bug its entry is a form of, if any, and
    a severity (the bug's, else that of the difference seen).

    Resolved where the entry was matched, whose file that process can read (an
    xdist worker's baseline may be on another host than the controller), and
    carried as builtins with the run's statistics.
    """

    severity: Severity | None = None
    bug: str | None = None
    title: str | None = None
    #: Why it is not a bug to file, where it is not: outside torch.compile's contract
    #: (``outside the contract: a documented limitation``), or fixed on a newer torch.
    standing: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The keys a report's ``known`` record gains."""
        return {
            "bug": self.bug,
            "title": self.title,
            "severity": self.severity.value if self.severity is not None else None,
            "standing": self.standing,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> KnownAs:
        """The inverse of :meth:`to_json` (a record without the keys: nothing known)."""
        severity = data.get("severity")
        return cls(
            Severity(severity) if severity else None,
            data.get("bug"),
            data.get("title"),
            data.get("standing"),
        )


#: The families marked tests and ``cgraph`` fixture checks count their programs under.
TEST_FAMILIES = ("marker", "fixture")

#: A known bug's registry entry seen again: its signature and the entry's file. Two
#: entries of one broad signature (``value-output``) are two bugs, counted apart.
KnownKey = tuple[str, str]


def filing_of(repro: str, severity: Severity | None = None) -> KnownAs:
    """How the registry file ``repro`` files its signature: its bug's id, title and
    severity where its directory's bugs file groups it, else ``severity`` alone."""
    bug = bug_of_entry(repro)
    if bug is None:
        return KnownAs(severity)
    return KnownAs(bug.severity, bug.id, bug.title, standing_of(bug))


def standing_of(bug: Bug) -> str | None:
    """Why ``bug`` is not one to file, as a summary line ends: outside torch.compile's
    contract (and how), or fixed on the newest torch it was checked on; ``None`` for
    a bug to file."""
    if bug.contract is not None:
        return f"outside torch.compile's contract: {bug.contract.kind.words}"
    fixed = fixed_in(bug.checked)
    return f"fixed on torch {fixed}" if fixed is not None else None


def bug_of_entry(repro: str) -> Bug | None:
    """The bug of the bugs file beside ``repro`` that lists it as a form, if any.

    ``None`` where the file is unreadable here or its bugs file is malformed:
    the registry refuses such a file where it is loaded, and a summary must
    not fail over it.
    """
    path = Path(repro)
    try:
        stat = (path.parent / BUGS_FILE).stat()
    except OSError:
        return None
    return _bugs_by_form(path.parent, stat.st_mtime_ns, stat.st_size).get(path.name)


@functools.lru_cache(maxsize=32)
def _bugs_by_form(directory: Path, _mtime_ns: int, _size: int) -> dict[str, Bug]:
    """A directory's bugs by their forms' file names, read once per version of its
    bugs file: every failing program of a known bug asks again."""
    try:
        bugs = read_bugs(directory)
    except ValueError:
        return {}
    return {form: bug for bug in bugs for form in bug.forms}


def severity_of_new(found: list[Failure]) -> Severity:
    """The severity of a new signature's failures: the worst of them (one signature is
    one kind, so they agree unless a crash's wording does)."""
    return worst([severity_of(failure.difference) for failure in found])


def severity_counts(severities: list[Severity | None]) -> dict[str, int]:
    """How many of ``severities`` are each severity, every one named (in :data:`ORDER`);
    one not known (``None``) is left out."""
    counted = Counter(severities)
    return {severity.value: counted[severity] for severity in ORDER}


def severity_rank(severity: Severity | str | None) -> int:
    """Where ``severity`` sorts: silent first, one not known last."""
    try:
        return ORDER.index(Severity(severity)) if severity is not None else len(ORDER)
    except ValueError:
        return len(ORDER)


def severity_words(severity: Severity | None) -> str:
    """How a summary line names a severity: an unsupported finding is torch's own
    stated limitation, not a bug, and reads as such."""
    if severity is None:
        return "severity not known"
    if severity is Severity.UNSUPPORTED:
        return "unsupported by torch"
    return str(severity.value)


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
    #: Campaign programs checked per backend (a campaign may hunt on several).
    backends: Counter[str] = field(default_factory=Counter)
    #: Programs checked per iteration count: a marked test or a fixture check may
    #: run its own ``iters``, and the summary says what the checks ran.
    iterations: Counter[int] = field(default_factory=Counter)
    features: Counter[str] = field(default_factory=Counter)
    invalid_reasons: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)
    #: Failing programs of new bugs seen per signature (shrinking included).
    hits: Counter[str] = field(default_factory=Counter)
    #: Failing programs of known bugs per registry entry (signature, file): kept
    #: apart from ``hits``, since one signature may be a known bug in one
    #: program and a new one (other calls) in the next; and keyed by entry, since
    #: one broad signature is several known bugs.
    known_hits: Counter[KnownKey] = field(default_factory=Counter)
    #: What each entry seen again is filed as (its bug, its severity).
    known_as: dict[KnownKey, KnownAs] = field(default_factory=dict)
    #: Failing programs of known bugs per registry entry and campaign backend: a
    #: campaign shared by several backends says which of them met each bug.
    known_backends: dict[KnownKey, Counter[str]] = field(default_factory=dict)

    def count_program(
        self,
        family: str,
        features: set[str],
        drawn: bool = True,
        backend: str | None = None,
        iters: int | None = None,
    ) -> None:
        """A program was checked (whatever the verdict); ``drawn`` unless a shrink step;
        ``backend``: the campaign's backend it was checked on; ``iters``: the
        iterations it ran (``None``: not known before the check, see
        :meth:`count_iterations`)."""
        self.programs += 1
        self.drawn += int(drawn)
        self.families[family] += 1
        if backend is not None:
            self.backends[backend] += 1
        if iters is not None:
            self.count_iterations(iters)
        self.features.update(features)

    def count_iterations(self, iters: int) -> None:
        """A program checked ran ``iters`` iterations."""
        self.iterations[iters] += 1

    def count_invalid(self, reason: str) -> None:
        """Eager raised: the program has no reference behaviour."""
        self.invalid += 1
        self.invalid_reasons[reason[:120]] += 1

    def count_report(self, report: CheckReport) -> None:
        """What one passing check said about compiling and capture."""
        self.compiles += report.compiles
        self.captured += 1 if report.graphs_captured else 0
        self.skipped.update(report.skip_reasons)

    def count_hit(
        self,
        signature: str,
        known_repro: str | None = None,
        severity: Severity | None = None,
        backend: str | None = None,
    ) -> None:
        """A failing program; ``known_repro`` is the registry file of a known one,
        ``severity`` that of its difference (a bug's own severity takes its place),
        and ``backend`` the campaign's backend it failed on."""
        if known_repro is None:
            self.hits[signature] += 1
        else:
            key = (signature, known_repro)
            self.known_hits[key] += 1
            if backend is not None:
                self.known_backends.setdefault(key, Counter())[backend] += 1
            if self.known_as.get(key, KnownAs()).severity is None:
                self.known_as[key] = filing_of(known_repro, severity)

    def count_outcome(
        self, outcome: Outcome, known_repro: str | None = None, backend: str | None = None
    ) -> None:
        """What checking one program gave: an invalid program, a pass's compile and
        capture counts, or a failing program (``known_repro``: the registry file of a
        known one; ``backend``: the campaign's backend it was checked on)."""
        if outcome.verdict is Verdict.INVALID:
            self.count_invalid(outcome.reason)
        elif outcome.report is not None:
            self.count_report(outcome.report)
        elif outcome.difference is not None:
            difference = outcome.difference
            self.count_hit(difference.signature, known_repro, severity_of(difference), backend)

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
        self.backends.update(other.backends)
        self.iterations.update(other.iterations)
        self.features.update(other.features)
        self.invalid_reasons.update(other.invalid_reasons)
        self.skipped.update(other.skipped)
        self.failures.extend(other.failures)
        self.hits.update(other.hits)
        self.known_hits.update(other.known_hits)
        for key, backends in other.known_backends.items():
            self.known_backends.setdefault(key, Counter()).update(backends)
        for key, filed in other.known_as.items():
            mine = self.known_as.get(key)
            if mine is None or (mine.bug is None and filed.bug is not None):
                self.known_as[key] = filed

    def known_hits_by_signature(self) -> dict[str, int]:
        """Known failing programs per signature, summed over its entries."""
        summed: Counter[str] = Counter()
        for (signature, _), hits in self.known_hits.items():
            summed[signature] += hits
        return dict(summed)

    def filed_as(self, key: KnownKey) -> KnownAs:
        """What a known entry is filed as; an entry this process can read (the
        controller's ``--cgraph-known`` files, which a worker on another host cannot)
        gets its bug here when the process that matched it could not say."""
        filed = self.known_as.get(key, KnownAs())
        if filed.bug is None:
            found = filing_of(key[1], filed.severity)
            if found.bug is not None:
                return found
        return filed

    def known_bugs(self) -> list[KnownGroup]:
        """The known entries seen again, one group per bug (an entry in no bug is a
        group of its own), silent first, then by bug id and signature."""
        groups: dict[tuple[str, str], KnownGroup] = {}
        for key in sorted(self.known_hits):
            signature, repro = key
            filed = self.filed_as(key)
            grouping = (
                ("bug", f"{Path(repro).parent}/{filed.bug}")
                if filed.bug is not None
                else ("entry", repro)
            )
            group = groups.setdefault(grouping, KnownGroup(filed))
            group.signatures.setdefault(signature, repro)
            group.hits += self.known_hits[key]
            group.backends.update(self.known_backends.get(key, {}))
        return sorted(
            groups.values(),
            key=lambda group: (
                severity_rank(group.filed.severity),
                group.filed.bug is None,
                group.filed.bug or "",
                next(iter(group.signatures)),
            ),
        )

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
        """A dict of builtins, fit for a report's ``__dict__`` and for JSON.

        ``failures`` and ``known`` keep the order the statistics hold (they
        travel between processes as this); :func:`report_data` sorts them for
        a reader.
        """
        by_signature = self.by_signature()
        return {
            "new_signatures": len(by_signature),
            "new_by_severity": severity_counts(
                [severity_of_new(found) for found in by_signature.values()]
            ),
            "known_by_severity": severity_counts(
                [group.filed.severity for group in self.known_bugs()]
            ),
            "verified_repros": self.verified_repros(),
            "programs": self.programs,
            "drawn": self.drawn,
            "invalid": self.invalid,
            "seconds": self.seconds,
            "compiles": self.compiles,
            "captured": self.captured,
            "campaign": self.campaign,
            "families": dict(self.families),
            "backends": dict(self.backends),
            # JSON keys are strings: {"4": programs that ran 4 iterations}.
            "iterations": {str(iters): count for iters, count in sorted(self.iterations.items())},
            "features": dict(self.features),
            "invalid_reasons": dict(self.invalid_reasons),
            "skipped": dict(self.skipped),
            "failures": [
                {
                    **failure.to_json(),
                    "severity": severity_of_new(by_signature[failure.signature]).value,
                    "hits": self.hits.get(failure.signature, 0),
                }
                for failure in self.failures
            ],
            "known": [
                {
                    "signature": signature,
                    "hits": hits,
                    "repro": repro,
                    **self.filed_as((signature, repro)).to_json(),
                    **(
                        {"backends": dict(self.known_backends[(signature, repro)])}
                        if (signature, repro) in self.known_backends
                        else {}
                    ),
                }
                for (signature, repro), hits in sorted(self.known_hits.items())
            ],
            "hits": dict(self.hits),
            # Per signature, over its entries: what a reader of counts wants.
            "known_hits": self.known_hits_by_signature(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunStats:
        """The inverse of :meth:`to_json`."""
        known = data.get("known", [])
        return cls(
            programs=data["programs"],
            drawn=data.get("drawn", 0),
            invalid=data["invalid"],
            seconds=data["seconds"],
            compiles=data["compiles"],
            captured=data["captured"],
            campaign=data.get("campaign", False),
            families=Counter(data["families"]),
            backends=Counter(data.get("backends", {})),
            iterations=Counter(
                {int(iters): count for iters, count in data.get("iterations", {}).items()}
            ),
            features=Counter(data["features"]),
            invalid_reasons=Counter(data["invalid_reasons"]),
            skipped=Counter(data["skipped"]),
            failures=[Failure.from_json(failure) for failure in data["failures"]],
            hits=Counter(data.get("hits", {})),
            known_hits=Counter(
                {(entry["signature"], entry["repro"]): entry["hits"] for entry in known}
            ),
            known_as={
                (entry["signature"], entry["repro"]): KnownAs.from_json(entry) for entry in known
            },
            known_backends={
                (entry["signature"], entry["repro"]): Counter(entry["backends"])
                for entry in known
                if entry.get("backends")
            },
        )


@dataclass
class KnownGroup:
    """One line of the summary's ``known`` block: a bug (or an entry in none), its
    signatures seen again with a registry file of each, and their hits summed."""

    filed: KnownAs
    signatures: dict[str, str] = field(default_factory=dict)
    hits: int = 0
    #: Its failing programs per campaign backend (empty where none was told).
    backends: Counter[str] = field(default_factory=Counter)

    @property
    def where(self) -> str:
        """Where to read about it: the bugs file of its bug, else its registry file."""
        first = next(iter(self.signatures.values()))
        return str(Path(first).with_name(BUGS_FILE)) if self.filed.bug is not None else first


def report_data(stats: RunStats, wall_seconds: float, run: dict[str, Any]) -> dict[str, Any]:
    """The report: the run's counts plus ``run`` (backend, device, ...); JSON and HTML share it."""
    data = stats.to_json()
    # Silent first, for a reader (and a tool) that takes the top of the list;
    # a stable sort keeps each severity's failures in the order found.
    data["failures"].sort(key=lambda failure: severity_rank(failure["severity"]))
    data["known"].sort(key=lambda entry: severity_rank(entry["severity"]))
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


def iterations_words(iterations: Counter[int], default: int) -> str:
    """The iterations a run's checks ran, as its summary's header says them: one
    count (``4 iterations``), or the fewest and most (``4-5 iterations``) where a
    marked test or a fixture check ran its own ``iters``; ``default`` (the
    session's ``--cgraph-iters``) only where nothing was checked. The session's
    option alone would claim 5 for a run whose one test asked for 4."""
    used = [iters for iters, count in iterations.items() if count] or [default]
    low, high = min(used), max(used)
    counted = f"{low}" if low == high else f"{low}-{high}"
    return f"{counted} iteration{'' if high == 1 else 's'}"


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
    if stats.campaign and len(stats.backends) > 1:
        per_backend = ", ".join(f"{name} {count}" for name, count in stats.backends.items())
        lines.append(f"per backend: {per_backend}")
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
    # Silent first: a wrong value nothing warns of matters more than a crash.
    by_signature = {
        signature: (severity_of_new(found), found)
        for signature, found in stats.by_signature().items()
    }
    counted = ", ".join(
        f"{count} {severity_words(Severity(severity))}"
        for severity, count in severity_counts([s for s, _ in by_signature.values()]).items()
        if count
    )
    lines.append(
        f"failures: {len(by_signature)} new signature(s){f' ({counted})' if counted else ''}, "
        f"{stats.verified_repros()} with a verified repro"
    )
    ordered = sorted(by_signature.items(), key=lambda item: (ORDER.index(item[1][0]), item[0]))
    for signature, (severity, found) in ordered:
        first = found[0]
        repro = first.repro
        # One signature reached through other hazards is several bugs: every repro.
        paths = list(dict.fromkeys(f.repro.path for f in found if f.repro and f.repro.path))
        if len(paths) > 1:
            where = f"{len(paths)} bugs through other hazards: " + ", ".join(paths)
        elif repro is not None and repro.path:
            where = repro.path
        else:
            where = f"{first.case.nodeid} ({repro.status if repro else 'no repro'})"
        on = f" on {first.case.backend}" if len(stats.backends) > 1 else ""
        lines.append(
            f"  {severity_words(severity)}: {signature} "
            f"({first.difference.kind}, {first.case.family}{on}, iteration "
            f"{first.difference.iteration}, {stats.hits.get(signature, len(found))} failing "
            f"programs{'' if first.shrunk else ', not shrunk'}): {where}"
        )
    if stats.known_hits:
        groups = stats.known_bugs()
        entries = len(stats.known_hits)
        apart = sum(group.filed.standing is not None for group in groups)
        to_file = f"; {apart} of them not to file" if apart else ""
        lines.append(
            f"known: {len(groups)} bug(s) seen again ({entries} registry "
            f"{'entry' if entries == 1 else 'entries'}{to_file}), {_known_verdict(stats)}"
        )
        lines.extend(_known_line(group, len(stats.backends) > 1) for group in groups)
    return lines


def _known_verdict(stats: RunStats) -> str:
    """What a known bug seen again cost the run. A campaign item passes over one;
    a marked test or a ``cgraph`` fixture check that meets one fails all the same,
    since the user's own code gives a wrong result when compiled: "not failures"
    under a test that failed for one misled its reader."""
    if any(stats.families.get(family) for family in TEST_FAMILIES):
        return "not new (a marked test or fixture check that meets one fails all the same)"
    return "not failures"


def _known_line(group: KnownGroup, per_backend: bool = False) -> str:
    """One bug seen again (its id, title, severity, hits summed over its signatures),
    or a signature in no bug with its registry file; ``per_backend``: a campaign
    of several backends, whose hits are told per backend."""
    severity = severity_words(group.filed.severity)
    programs = f"{group.hits} failing programs"
    if per_backend and group.backends:
        programs += " (" + ", ".join(f"{b} {n}" for b, n in sorted(group.backends.items())) + ")"
    if group.filed.standing is not None:
        programs += f"; {group.filed.standing}"
    if group.filed.bug is None:
        # A file of a backend of one's own claims every signature of its face.
        signatures = ", ".join(sorted(group.signatures))
        return f"  {severity}: {signatures} ({programs}): {group.where}"
    count = len(group.signatures)
    return (
        f"  {severity}: {group.filed.bug}: {group.filed.title} ({count} signature(s), "
        f"{programs}): {group.where}"
    )
