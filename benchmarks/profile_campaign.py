"""Where a campaign's time goes, per program: a sampling profile by activity and phase.

    python benchmarks/profile_campaign.py [--backend cudagraphs] [--examples 25] [--seed 1]
                                 [--interval-ms 2] [--families mutation,views]

Runs one campaign in this process (``pytest --cgraph``, no xdist) while a
thread samples the main thread's stack every ``--interval-ms``. Each sample
is put in one *activity* (what the harness or torch was doing) and one
*phase* (why: drawing new programs, shrinking a failure, making its repro):

activities, the first that applies:
  imports             first imports of modules (torch's lazily imported parts: once a process)
  compile             Dynamo and the backend compiling (``convert_frame`` on the stack)
  compiler reset      ``torch._dynamo.reset`` between programs
  snapshots           reading observations (``oracle/observe.py``)
  clones              per-side argument copies (``oracle/cloning.py``, ``graphs.py``,
                      ``sides.py``)
  comparisons         comparing the sides (``oracle/compare.py``)
  compiled calls      the compiled side's calls and backward (``engine._run_side``)
  eager calls         the eager side's calls and backward
  drawing             the strategies building a program (statements run while drawn)
  repro files         rendering, verifying and writing repro files (``repro.py``)
  other harness       the rest of ``pytest_cgraph`` (bookkeeping, stats, signatures)
  hypothesis          Hypothesis's own engine (choices, database, shrinker logic)
  pytest and startup  everything else (collection, reporting, imports)
phases: shrinking (Hypothesis's shrinker on the stack), layer ladder
(``oracle/ladder.py``), repro (``repro.py``), generation (the rest of
Hypothesis), outside (before and after the hunt).

Sampling costs little and needs no change to the code measured; a sample
lands where the main thread holds the GIL, so time in C++ that releases it
is attributed to the Python frame that called it. Figures are shares of
wall time, scaled to seconds, and per program checked (the JSON report's
``programs``: drawn programs, shrink steps and replays).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from types import FrameType

#: Activities in the order the table prints them.
ACTIVITIES = (
    "imports",
    "compile",
    "compiler reset",
    "compiled calls",
    "eager calls",
    "snapshots",
    "clones",
    "comparisons",
    "drawing",
    "repro files",
    "other harness",
    "hypothesis",
    "pytest and startup",
)
PHASES = ("generation", "shrinking", "layer ladder", "repro", "outside")

_OWN = f"{os.sep}pytest_cgraph{os.sep}"
_STRATEGIES = (f"{os.sep}strategies{os.sep}", f"{_OWN}strategies{os.sep}")
_ORACLE_FILES = {
    "observe.py": "snapshots",
    "cloning.py": "clones",
    "graphs.py": "clones",
    "sides.py": "clones",
    "compare.py": "comparisons",
}


def stack_of(frame: FrameType | None) -> list[FrameType]:
    """The frames from innermost to outermost."""
    frames = []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    return frames


def activity_of(frames: list[FrameType]) -> str:
    """The activity a sample's stack (innermost first) belongs to."""
    names = [(f.f_code.co_filename, f.f_code.co_name) for f in frames]
    if any(path.startswith("<frozen importlib") for path, _ in names):
        return "imports"
    if any(path.endswith(f"_dynamo{os.sep}convert_frame.py") for path, _ in names):
        return "compile"
    if any(name == "reset" and f"_dynamo{os.sep}" in path for path, name in names):
        return "compiler reset"
    for frame, (path, name) in zip(frames, names, strict=True):
        if any(part in path for part in _STRATEGIES):
            return "drawing"
        if _OWN not in path:
            continue
        base = os.path.basename(path)
        if base in _ORACLE_FILES:
            return _ORACLE_FILES[base]
        if base == "engine.py" and name == "_run_side":
            side = frame.f_locals.get("side")
            return "compiled calls" if getattr(side, "compiled", False) else "eager calls"
        if base == "repro.py":
            return "repro files"
    if any(_OWN in path for path, _ in names):
        innermost_own = next(i for i, (path, _) in enumerate(names) if _OWN in path)
        inner = names[:innermost_own]
        if inner and all(f"{os.sep}hypothesis{os.sep}" in path for path, _ in inner):
            return "hypothesis"
        return "other harness"
    if any(f"{os.sep}hypothesis{os.sep}" in path for path, _ in names):
        return "hypothesis"
    return "pytest and startup"


def phase_of(frames: list[FrameType]) -> str:
    """Why the sample's work was done."""
    paths = [f.f_code.co_filename for f in frames]
    if any(path.endswith(f"conjecture{os.sep}shrinker.py") for path in paths):
        return "shrinking"
    if any(path.endswith(f"oracle{os.sep}ladder.py") for path in paths):
        return "layer ladder"
    if any(path.endswith(f"pytest_cgraph{os.sep}repro.py") for path in paths):
        return "repro"
    if any(f"{os.sep}hypothesis{os.sep}" in path for path in paths):
        return "generation"
    return "outside"


class Sampler:
    """Samples one thread's stack at a fixed interval, into (phase, activity) counts."""

    def __init__(self, thread_id: int, interval: float) -> None:
        self.thread_id = thread_id
        self.interval = interval
        self.counts: Counter[tuple[str, str]] = Counter()
        #: For "other harness" samples: the innermost function of the harness.
        self.harness: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="cgraph-sampler")

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            frame = sys._current_frames().get(self.thread_id)
            frames = stack_of(frame)
            activity = activity_of(frames)
            self.counts[phase_of(frames), activity] += 1
            if activity == "other harness":
                own = next(f.f_code for f in frames if _OWN in f.f_code.co_filename)
                self.harness[f"{os.path.basename(own.co_filename)}:{own.co_name}"] += 1
            del frame, frames


def campaign(args: argparse.Namespace, scratch: Path) -> tuple[Sampler, float, dict]:
    """One in-process campaign under the sampler; the sampler, wall seconds, JSON report."""
    import pytest

    argv = [
        "--cgraph", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly",
        f"--cgraph-backend={args.backend}", f"--cgraph-examples={args.examples}",
        f"--cgraph-seed={args.seed}", f"--cgraph-report={scratch / 'report.json'}",
        f"--cgraph-repro-dir={scratch / 'repros'}", f"--rootdir={scratch}",
        "-o", "addopts=", str(scratch),
    ]  # fmt: skip
    if args.families:
        argv += ["-k", " or ".join(args.families.split(","))]
    os.chdir(scratch)
    with Sampler(threading.get_ident(), args.interval_ms / 1000) as sampler:
        started = time.perf_counter()
        pytest.main(argv)
        wall = time.perf_counter() - started
    return sampler, wall, json.loads((scratch / "report.json").read_text())


def print_table(sampler: Sampler, wall: float, report: dict) -> None:
    total = sum(sampler.counts.values()) or 1
    programs = max(report.get("programs", 0), 1)

    def seconds(count: int) -> float:
        return wall * count / total

    by_activity: Counter[str] = Counter()
    by_phase: Counter[str] = Counter()
    for (phase, activity), count in sampler.counts.items():
        by_activity[activity] += count
        by_phase[phase] += count
    print(
        f"{report.get('programs', 0)} programs checked ({report.get('drawn', 0)} drawn) "
        f"in {wall:.1f} s wall; {total} samples\n"
    )
    header = f"{'activity':<20} {'s':>7} {'share':>6} {'ms/prog':>8}"
    print(header + "".join(f" {phase[:10]:>10}" for phase in PHASES))
    for activity in ACTIVITIES:
        count = by_activity[activity]
        cells = "".join(f" {seconds(sampler.counts[phase, activity]):>10.1f}" for phase in PHASES)
        print(
            f"{activity:<20} {seconds(count):>7.1f} {count / total:>6.1%} "
            f"{1000 * seconds(count) / programs:>8.1f}{cells}"
        )
    cells = "".join(f" {seconds(by_phase[phase]):>10.1f}" for phase in PHASES)
    print(f"{'all':<20} {wall:>7.1f} {1:>6.1%} {1000 * wall / programs:>8.1f}{cells}")
    print("\nother harness, by its innermost function:")
    for name, count in sampler.harness.most_common(8):
        share = seconds(count)
        print(f"  {name:<44} {share:>6.1f} s {1000 * share / programs:>7.1f} ms/prog")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cudagraphs")
    parser.add_argument("--examples", type=int, default=25, help="programs per family item")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--interval-ms", type=float, default=2.0)
    parser.add_argument("--families", default="", help="comma-separated families (all)")
    args = parser.parse_args()
    os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "0")
    os.environ.setdefault("TORCHINDUCTOR_AUTOGRAD_CACHE", "0")
    import torch

    print(
        f"{time.strftime('%Y-%m-%d')} · {platform.node()} · {os.cpu_count()} cores · "
        f"Python {platform.python_version()} · torch {torch.__version__} · "
        f"backend {args.backend} · {args.examples} programs per family, seed {args.seed}"
    )
    with tempfile.TemporaryDirectory(prefix="cgraph-profile-") as scratch:
        sampler, wall, report = campaign(args, Path(scratch))
    print_table(sampler, wall, report)


if __name__ == "__main__":
    main()
