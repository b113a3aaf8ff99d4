"""The rediscovery corpus: PyTorch's own bugs, each a plain torch script, replayed here.

    python benchmarks/rediscovery.py verify [--workers 2] [--timeout 300] [--area AREA]
    python benchmarks/rediscovery.py reach REPORT.json [REPORT.json ...] [--baseline DIR]

The corpus (``benchmarks/rediscovery/*.toml``, scripts under ``scripts/``)
holds bugs reported on PyTorch's tracker in this project's area, each written
as a few lines of torch that exit 1 while the bug is there and 0 once eager
and compiled agree. A bug's ``status`` says what it gave on the torch the
corpus was recorded on: ``reproduces``, or why not (``fixed``, ``cuda-only``,
``not-reproduced``).

``verify`` replays every script on the running torch and prints, per bug,
whether it still gives its recorded status, then the counts by area. It
exits 1 when any disagrees: the corpus must be re-triaged on this torch
before its rates mean anything.

``reach`` reads the JSON reports of campaigns (``--cgraph-report``, run with
the shipped baseline on) and says which corpus bugs they met. A corpus bug
is met by bug, not by signature: its ``known_as`` lists the baseline bugs
(``bugs.toml`` ids) that are its mechanism, confirmed by reading both, and
a campaign that reports a known hit of one of them has met it, whatever op
it went through. A report's new findings are then matched against today's
baseline (no replay: signature, located layer and the program's calls, as a
campaign's judge matches): those that triage has since recorded as a form of
a corpus bug's known bug are counted apart, as met by a finding known now.
Corpus bugs with no mapping are listed apart, for triage against the
reports' remaining new findings.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the same parser, before it joined the standard library
    import tomli as tomllib

CORPUS = Path(__file__).resolve().parent / "rediscovery"

AREAS = (
    "inplace",
    "input-mutation",
    "metadata-mutation",
    "views-aliasing",
    "graph-breaks",
    "autograd-hooks",
    "rng",
    "cudagraph-trees",
)
STATUSES = ("reproduces", "fixed", "cuda-only", "not-reproduced")
SYMPTOMS = ("silent", "crash", "metadata")
KEYS = {"issue", "title", "area", "backend", "symptom", "script", "status", "note"}
#: Keys a bug may have: ``duplicate_of``, the issue upstream closed it as a duplicate of
#: (the same mechanism met through another API): counted once.
OPTIONAL_KEYS = {"duplicate_of", "known_as", "gap"}
#: Why no campaign can count a bug yet, a ``gap``'s first word: the generator
#: cannot draw its program class, the oracle does not observe its symptom, or
#: the generator can draw it and no campaign has met it (no baseline bug is its
#: mechanism to be counted as yet).
GAPS = ("generator", "oracle", "drawable")


class CorpusError(ValueError):
    """A corpus file that does not say what the corpus needs; one line says where."""


@dataclass(frozen=True)
class CorpusBug:
    """One bug of the tracker, as the corpus holds it."""

    issue: int
    title: str
    area: str
    backend: str
    symptom: str
    #: ``None``: none could be written here (a CUDA-only bug, a model not in the issue).
    script: Path | None
    status: str
    note: str
    source: Path
    duplicate_of: int | None = None
    #: The baseline bugs (``bugs.toml`` ids) that are this bug's mechanism.
    known_as: tuple[str, ...] = ()
    #: Why no campaign can count it yet (``GAPS``, then what is missing).
    gap: str = ""

    @property
    def expected_exit(self) -> int:
        """What its script exits with on a torch where its status holds."""
        return 1 if self.status == "reproduces" else 0


def load(corpus: Path = CORPUS) -> list[CorpusBug]:
    """Every bug of every ``*.toml`` under ``corpus``, checked; sorted by issue number."""
    bugs: dict[int, CorpusBug] = {}
    for source in sorted(corpus.glob("*.toml")):
        try:
            tables = tomllib.loads(source.read_text()).get("bug", [])
        except tomllib.TOMLDecodeError as error:
            raise CorpusError(f"{source}: not TOML ({error})") from None
        for number, table in enumerate(tables, start=1):
            bug = _bug(table, source, number, corpus)
            if bug.issue in bugs:
                raise CorpusError(
                    f"{source}: bug {number}: #{bug.issue} is already in {bugs[bug.issue].source}"
                )
            bugs[bug.issue] = bug
    return [bugs[issue] for issue in sorted(bugs)]


def _bug(table: dict[str, object], source: Path, number: int, corpus: Path) -> CorpusBug:
    where = f"{source}: bug {number}"
    missing = sorted(KEYS - table.keys())
    if missing:
        raise CorpusError(f"{where}: missing {', '.join(missing)}")
    extra = sorted(table.keys() - KEYS - OPTIONAL_KEYS)
    if extra:
        keys = ", ".join(sorted(KEYS | OPTIONAL_KEYS))
        raise CorpusError(f"{where}: unknown key(s) {', '.join(extra)}; the keys: {keys}")
    duplicate_of = table.get("duplicate_of")
    if duplicate_of is not None and not isinstance(duplicate_of, int):
        raise CorpusError(f"{where}: duplicate_of must be an issue number, not {duplicate_of!r}")
    known_as = table.get("known_as", [])
    if not isinstance(known_as, list) or not all(isinstance(bug, str) for bug in known_as):
        raise CorpusError(f"{where}: known_as must be a list of baseline bug ids, not {known_as!r}")
    gap = table.get("gap", "")
    if not isinstance(gap, str) or (gap and gap.split(":")[0] not in GAPS):
        raise CorpusError(f"{where}: gap must start with one of {', '.join(GAPS)}, not {gap!r}")
    for key, allowed in (("area", AREAS), ("status", STATUSES), ("symptom", SYMPTOMS)):
        if table[key] not in allowed:
            raise CorpusError(f"{where}: {key} {table[key]!r}; one of {', '.join(allowed)}")
    issue = table["issue"]
    if not isinstance(issue, int) or issue <= 0:
        raise CorpusError(f"{where}: issue must be a PyTorch issue number, not {issue!r}")
    script: Path | None = corpus / str(table["script"]) if table["script"] else None
    if script is None and table["status"] == "reproduces":
        raise CorpusError(f"{where}: a bug that reproduces needs its script")
    if script is not None and not script.is_file():
        raise CorpusError(f"{where}: no script {script}")
    return CorpusBug(
        issue=issue,
        title=str(table["title"]),
        area=str(table["area"]),
        backend=str(table["backend"]),
        symptom=str(table["symptom"]),
        script=script,
        status=str(table["status"]),
        note=str(table["note"]),
        source=source,
        duplicate_of=duplicate_of,
        known_as=tuple(known_as),
        gap=gap,
    )


@dataclass(frozen=True)
class Replay:
    """What one script gave: its exit code (``None``: it outlived the limit) and time."""

    bug: CorpusBug
    exit_code: int | None
    seconds: float
    tail: str

    @property
    def holds(self) -> bool:
        return self.exit_code == self.bug.expected_exit


def replay(bug: CorpusBug, timeout: float) -> Replay:
    """Run ``bug``'s script in a fresh process (a bug's state never leaks into the next)."""
    started = time.perf_counter()
    if bug.script is None:
        return Replay(bug, bug.expected_exit, 0.0, "no script: not replayed")
    try:
        done = subprocess.run(
            [sys.executable, str(bug.script)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
            check=False,
        )
    except subprocess.TimeoutExpired:
        return Replay(bug, None, time.perf_counter() - started, f"ran past {timeout:g} s")
    lines = (done.stdout + done.stderr).strip().splitlines()
    return Replay(bug, done.returncode, time.perf_counter() - started, lines[-1] if lines else "")


def verify(bugs: list[CorpusBug], workers: int, timeout: float) -> list[Replay]:
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda bug: replay(bug, timeout), bugs))


def summary(replays: list[Replay]) -> list[str]:
    """One line per bug, then the counts by area and by status."""
    import torch

    lines = [f"torch {torch.__version__}: {len(replays)} corpus bugs replayed"]
    for run in replays:
        bug = run.bug
        if bug.script is None:
            verdict = "no script"
        else:
            verdict = "as recorded" if run.holds else f"DIFFERS (exit {run.exit_code})"
        lines.append(
            f"#{bug.issue:<7} {bug.area:<17} {bug.backend:<9} {bug.symptom:<8} "
            f"{bug.status:<14} {verdict:<20} {run.seconds:5.1f} s  {bug.title}"
        )
        if not run.holds:
            lines.append(f"         last line: {run.tail}")
    reproducing = [run.bug for run in replays if run.bug.status == "reproduces"]
    by_area = Counter(bug.area for bug in reproducing)
    distinct = sum(bug.duplicate_of is None for bug in reproducing)
    lines.append(
        f"reproducing: {len(reproducing)} ({distinct} distinct), by area: "
        + ", ".join(f"{area} {by_area[area]}" for area in AREAS if by_area[area])
    )
    by_status = Counter(run.bug.status for run in replays)
    lines.append("by status: " + ", ".join(f"{s} {by_status[s]}" for s in STATUSES if by_status[s]))
    differs = sum(not run.holds for run in replays)
    unscripted = sum(run.bug.script is None for run in replays)
    lines.append(
        f"{len(replays) - differs - unscripted} as recorded, {differs} differ, "
        f"{unscripted} without a script"
    )
    return lines


@dataclass(frozen=True)
class Meeting:
    """A campaign's first known hit of a corpus bug: which report, backend and when."""

    report: Path
    backend: str
    seconds: float | None
    signature: str


def meetings(bug: CorpusBug, reports: list[tuple[Path, dict[str, Any]]]) -> list[Meeting]:
    """Every report's first hit of one of ``bug``'s baseline bugs (by their known
    entries): one per report, or one per backend that met it where the report
    tells its hits per backend (a campaign shared by several backends)."""
    found = []
    for path, data in reports:
        firsts = _first_seconds(data)
        hits = [
            entry
            for entry in data.get("known") or []
            if entry.get("bug") in bug.known_as and entry.get("hits", 0) > 0
        ]
        if not hits:
            continue
        # A campaign shared by several backends tells which of them met each
        # entry, and when: a meeting per backend. Older reports do not.
        # Hits counted without a backend (a marked test's) are left to the
        # report-wide meeting of an older report.
        backends = sorted({str(b) for entry in hits for b in entry.get("backends") or {}})
        told = {
            backend: [entry for entry in hits if (entry.get("backends") or {}).get(backend)]
            for backend in backends
        }
        for backend, entries in told.items() or [(str(data.get("backend")), hits)]:
            timed = [
                (_entry_seconds(firsts, entry, backend if told else None), entry["signature"])
                for entry in entries
            ]
            seconds, signature = min(timed, key=lambda pair: pair[0] or float("inf"))
            found.append(Meeting(path, backend, seconds, signature))
    return found


@dataclass(frozen=True)
class Recognition:
    """A report's new finding that a baseline now knows: the bug it is, and when it was met."""

    meeting: Meeting
    bug: str


def recognised(
    reports: list[tuple[Path, dict[str, Any]]], baseline: Path | None = None
) -> list[Recognition]:
    """The reports' new findings that ``baseline`` knows as a filed bug.

    A campaign reports as new what its baseline did not know; triage then
    records many of them as forms of known bugs. Matching each finding
    against today's baseline with the campaign's own judge (signature,
    layer, the program's calls) counts them. The layer is the one the
    finding's repro located. A finding without one that a registered bug's
    calls may claim is replayed up the ladder (compiled, where this machine
    has the finding's device), for the rungs a lower rung's other failure
    leaves it at (:func:`~pytest_cgraph.recording.repro.masked_rungs`). ``baseline``:
    the directory of entries to match against; by default the shipped one
    of each report's torch (or the nearest release's).
    """
    from pytest_cgraph.failures import Failure
    from pytest_cgraph.recording.repro import masked_rungs
    from pytest_cgraph.registry.entries import Registry, baseline_dir, nearest_baseline_dir
    from pytest_cgraph.registry.judge import Judge

    registries: dict[Path, Registry] = {}
    found = []
    for path, data in reports:
        version = str(data.get("torch") or "")
        directory = baseline or baseline_dir(version) or nearest_baseline_dir(version)
        if directory is None:
            raise ValueError(f"{path}: no shipped baseline for torch {version!r}; name one")
        if directory not in registries:
            registries[directory] = Registry.load([directory])
        firsts = _first_seconds(data)
        for number, record in enumerate(data.get("failures") or [], start=1):
            try:
                failure = Failure.from_json(record)
            except (KeyError, TypeError, ValueError) as error:
                raise ValueError(
                    f"{path}: failure {number} is not a failure record ({error!r})"
                ) from None
            judge = Judge(
                registries[directory],
                lambda case, difference: record.get("layer"),  # noqa: B023 - used at once
                masked_at=masked_rungs if _can_replay(failure.case) else _nowhere,
            )
            known = judge.known(failure.case, failure.difference)
            if known is not None and known.bug is not None:
                # As the report names it: a signature's key may have changed since.
                signature = str(record.get("signature") or failure.signature)
                meeting = Meeting(path, str(data.get("backend")), firsts.get(signature), signature)
                found.append(Recognition(meeting, known.bug))
    return found


def _can_replay(case: Any) -> bool:
    """Whether this machine can climb ``case``'s ladder: a program on a device it has."""
    import torch

    return bool(case.source) and (
        not str(case.device).startswith("cuda") or torch.cuda.is_available()
    )


def _nowhere(case: Any, difference: Any) -> tuple[str, ...]:
    return ()


def _entry_seconds(
    firsts: dict[Any, float], entry: dict[str, Any], backend: str | None = None
) -> float | None:
    """When a report's known entry was first met (on ``backend``, where the report
    tells backends apart; by signature alone in a report written before entries
    were told apart)."""
    key = (entry["signature"], entry.get("repro"))
    if backend is not None and (*key, backend) in firsts:
        return firsts[(*key, backend)]
    return firsts.get(key) or firsts.get(entry["signature"])


def _first_seconds(data: dict[str, Any]) -> dict[Any, float]:
    """Each new signature's first time in a report's timeline, and each known entry's
    (signature, registry file): one broad signature is several known bugs, met at
    different times. A report written before entries were told apart has
    signatures alone."""
    firsts: dict[Any, float] = {}
    for entry in data.get("timeline") or []:
        repro, backend = entry.get("repro"), entry.get("backend")
        key = entry.get("signature") if repro is None else (entry.get("signature"), repro)
        firsts.setdefault(key, entry.get("seconds"))
        if repro is not None and backend is not None:
            # Each backend's first meeting of the entry, beside the entry's first.
            firsts.setdefault((entry.get("signature"), repro, backend), entry.get("seconds"))
    return firsts


def _share(count: int, total: int) -> str:
    return f"{count} ({100 * count / total:.1f} %)" if total else str(count)


def _when(found: list[Meeting]) -> str:
    return ", ".join(
        f"{m.backend} {m.seconds:.0f} s" if m.seconds is not None else m.backend for m in found
    )


def reach(bugs: list[CorpusBug], paths: list[Path], baseline: Path | None = None) -> list[str]:
    """Which reproducing corpus bugs the campaigns of ``paths`` met, and the rates.

    Two counts, kept apart: the bugs the campaigns met as known hits (what
    their baseline knew as they ran), and those met counting the new
    findings that today's baseline (``baseline``; see :func:`recognised`)
    knows as one of a corpus bug's known bugs, found by triage after the run.
    """
    reports = [(path, json.loads(path.read_text())) for path in paths]
    later = recognised(reports, baseline)
    distinct = [bug for bug in bugs if bug.status == "reproduces" and bug.duplicate_of is None]
    mapped = [bug for bug in distinct if bug.known_as]
    lines = []
    met = met_later = 0
    for bug in mapped:
        found = meetings(bug, reports)
        known_later = [r.meeting for r in later if r.bug in bug.known_as]
        met += bool(found)
        met_later += bool(found or known_later)
        where = _when(found) or "not met"
        if known_later and not found:
            where += f" as run; by a new finding known now: {_when(known_later)}"
        lines.append(f"#{bug.issue:<7} {'/'.join(bug.known_as):<32} {where}")
    backends = sorted({str(data.get("backend")) for _, data in reports})
    lines.append(
        f"met {met} of {len(mapped)} corpus bugs mapped to a known bug, by "
        f"{len(reports)} report(s) ({', '.join(backends)}); "
        f"{len(distinct) - len(mapped)} of the {len(distinct)} distinct reproducing bugs "
        "have no known bug to be counted by (their gaps below; triage the reports' new "
        "findings against them)"
    )
    lines.append(
        f"met {met_later} of {len(mapped)} counting the reports' new findings "
        "that today's baseline knows"
    )
    lines.append(
        f"reach, of the {len(distinct)} distinct reproducing corpus bugs: "
        f"{_share(met, len(distinct))} as run, {_share(met_later, len(distinct))} "
        "counting those findings"
    )
    new = sum(len(data.get("failures") or []) for _, data in reports)
    known_bugs = sorted({r.bug for r in later})
    lines.append(
        f"new findings in the reports: {new}; today's baseline knows {len(later)} of them "
        f"({', '.join(known_bugs) or 'none'}); {new - len(later)} left for triage"
    )
    unmapped = [bug for bug in distinct if not bug.known_as]
    why = Counter(bug.gap.split(":")[0] if bug.gap else "untriaged" for bug in unmapped)
    if unmapped:
        lines.append(
            "why the unmapped cannot be counted: "
            + ", ".join(f"{kind} {count}" for kind, count in why.most_common())
        )
    lines += [f"#{bug.issue:<7} {bug.gap or 'untriaged'}" for bug in unmapped]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("verify", help="replay every corpus script on this torch")
    check.add_argument("--workers", type=int, default=2)
    check.add_argument("--timeout", type=float, default=300.0)
    check.add_argument("--area", choices=AREAS, help="only this area's bugs")
    check.add_argument("--corpus", type=Path, default=CORPUS, help=argparse.SUPPRESS)
    met = commands.add_parser("reach", help="the corpus bugs campaigns' JSON reports met")
    met.add_argument("reports", nargs="+", type=Path, metavar="REPORT.json")
    met.add_argument(
        "--baseline",
        type=Path,
        help="the entries to match the reports' new findings against "
        "(default: the shipped baseline of each report's torch)",
    )
    met.add_argument("--corpus", type=Path, default=CORPUS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        bugs = load(args.corpus)
    except CorpusError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.command == "reach":
        if args.baseline is not None and not args.baseline.is_dir():
            print(f"error: --baseline {args.baseline}: not a directory of entries", file=sys.stderr)
            return 2
        try:
            lines = reach(bugs, args.reports, args.baseline)
        except (OSError, ValueError) as error:
            print(f"error: a report cannot be read: {error}", file=sys.stderr)
            return 2
        print("\n".join(lines))
        return 0
    if args.area:
        bugs = [bug for bug in bugs if bug.area == args.area]
    replays = verify(bugs, args.workers, args.timeout)
    for line in summary(replays):
        print(line)
    return 0 if all(run.holds for run in replays) else 1


if __name__ == "__main__":
    sys.exit(main())
