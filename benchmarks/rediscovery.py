"""The rediscovery corpus: PyTorch's own bugs, each a plain torch script, replayed here.

    python benchmarks/rediscovery.py verify [--workers 2] [--timeout 300] [--area AREA]

The corpus (``benchmarks/rediscovery/*.toml``, scripts under ``scripts/``)
holds bugs reported on PyTorch's tracker in this project's area, each written
as a few lines of torch that exit 1 while the bug is there and 0 once eager
and compiled agree. A bug's ``status`` says what it gave on the torch the
corpus was recorded on: ``reproduces``, or why not (``fixed``, ``cuda-only``,
``not-reproduced``).

``verify`` replays every script on the running torch and prints, per bug,
whether it still gives its recorded status, then the counts by area. It
exits 1 when any disagrees: the corpus must be re-triaged on this torch
before its rates mean anything. Matching what campaigns find against the
corpus comes on top of this (issue-level reach: one bug, whatever op met it).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

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
OPTIONAL_KEYS = {"duplicate_of"}


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
        allowed = sorted(KEYS | OPTIONAL_KEYS)
        raise CorpusError(f"{where}: unknown key(s) {', '.join(extra)}; allowed: {allowed}")
    duplicate_of = table.get("duplicate_of")
    if duplicate_of is not None and not isinstance(duplicate_of, int):
        raise CorpusError(f"{where}: duplicate_of must be an issue number, not {duplicate_of!r}")
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("verify", help="replay every corpus script on this torch")
    check.add_argument("--workers", type=int, default=2)
    check.add_argument("--timeout", type=float, default=300.0)
    check.add_argument("--area", choices=AREAS, help="only this area's bugs")
    check.add_argument("--corpus", type=Path, default=CORPUS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        bugs = load(args.corpus)
    except CorpusError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.area:
        bugs = [bug for bug in bugs if bug.area == args.area]
    replays = verify(bugs, args.workers, args.timeout)
    for line in summary(replays):
        print(line)
    return 0 if all(run.holds for run in replays) else 1


if __name__ == "__main__":
    sys.exit(main())
