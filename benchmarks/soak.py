"""Soak: check thousands of programs in one process and print its memory as it goes.

    python benchmarks/soak.py [--programs 2000] [--backend cudagraphs] [--seed 0] [--isolate]

Programs are drawn up front (all families, fixed seed), then checked one
after another exactly as a campaign checks them (``check_source``: compile,
run eager and compiled, compare, reset). RSS is read from /proc after 100
programs and at every 250 after, so that growth from compile caches,
CUDA-graph trees or kept references shows as a rising line.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def rss_mb(pid: int | None = None) -> float:
    """Resident set size of this process (or ``pid``) now, in MB."""
    try:
        status = Path(f"/proc/{pid or 'self'}/status").read_text()
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 if pid is None else 0.0
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def soak(
    count: int, backend: str, seed: int, isolate: bool, report_every: int = 250
) -> dict[int, float]:
    """Check ``count`` programs; RSS in MB after 100 and every ``report_every`` programs.

    With ``isolate``, programs go to ``--cgraph-isolate``'s child process and
    the reading is this process's RSS plus the child's.
    """
    from pytest_cgraph.checkers import IsolatedChecker
    from pytest_cgraph.errors import EquivalenceError, InvalidProgram
    from pytest_cgraph.guard import InFlightProgram
    from pytest_cgraph.runner import check_source
    from pytest_cgraph.strategies import FAMILIES
    from pytest_cgraph.strategies.generate import draw_programs

    sources: list[str] = []
    while len(sources) < count:
        batch = draw_programs(min(count - len(sources), 500), families=FAMILIES, seed=seed)
        sources.extend(program.render() for program in batch)
        seed += 1
    isolated = IsolatedChecker((), timeout=120.0) if isolate else None

    def memory() -> float:
        child = isolated.child_pid if isolated is not None else None
        return rss_mb() + (rss_mb(child) if child else 0.0)

    readings: dict[int, float] = {0: memory()}
    verdicts = {"pass": 0, "fail": 0, "invalid": 0}
    started = time.perf_counter()
    print(f"{'programs':>8} {'RSS MB':>8} {'seconds':>8}", flush=True)
    for number, source in enumerate(sources[:count], start=1):
        if isolated is not None:
            record = InFlightProgram("soak", "all", source, backend, "cpu", 5, 120.0, (), 0)
            verdict = isolated.check(source, backend, "cpu", 5, record).verdict
            verdicts[verdict] = verdicts.get(verdict, 0) + 1
        else:
            try:
                check_source(source, backend=backend, device="cpu")
                verdicts["pass"] += 1
            except EquivalenceError:
                verdicts["fail"] += 1
            except InvalidProgram:
                verdicts["invalid"] += 1
        if number == 100 or number % report_every == 0 or number == count:
            readings[number] = memory()
            seconds = time.perf_counter() - started
            print(f"{number:>8} {readings[number]:>8.1f} {seconds:>8.1f}", flush=True)
    print(f"verdicts: {verdicts}")
    return readings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=2000)
    parser.add_argument("--backend", default="cudagraphs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--isolate", action="store_true", help="check in --cgraph-isolate's recycled child"
    )
    args = parser.parse_args()
    readings = soak(args.programs, args.backend, args.seed, args.isolate)
    if 100 in readings and args.programs in readings:
        growth = readings[args.programs] - readings[100]
        print(
            f"RSS after 100 programs: {readings[100]:.1f} MB; after {args.programs}: "
            f"{readings[args.programs]:.1f} MB; growth {growth:+.1f} MB (target <= 100 MB)"
        )


if __name__ == "__main__":
    main()
