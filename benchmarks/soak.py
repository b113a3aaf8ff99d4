"""Soak: thousands of programs in one process, and whose memory grows: torch's or the harness's.

    python benchmarks/soak.py [--programs 2000] [--backend cudagraphs] [--seed 0] [--isolate]

Programs are drawn up front (all families, fixed seed) and written to a
file. Then two fresh processes go through exactly those sources, at once:

- ``bare``: the lean bare loop of ``bare_loop.py`` (each source's compiled
  side as the protocol defines it), without the harness: what torch itself
  keeps per compile (the class of pytorch/pytorch#174468);
- ``check``: ``pytest_cgraph.checking.runner.check_source`` on each, as a campaign
  checks them (eager beside compiled, clones, snapshots, comparisons);
  with ``--isolate``, in ``--cgraph-isolate``'s recycled child, counting
  the child's memory with this process's.

Each prints its RSS after 100 programs and at every 250 after. The
harness's own growth is the check's growth minus the bare loop's over the
same programs, both from program 100 on (imports and first compiles are
done by then).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bare_loop import bare_runner  # noqa: E402

#: The harness's own growth per 2,000 programs this project allows (issue target).
OWN_GROWTH_TARGET_MB = 10.0


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


def draw_sources(count: int, seed: int) -> list[str]:
    """``count`` program sources over every family, in a fixed order."""
    from pytest_cgraph.strategies import FAMILIES
    from pytest_cgraph.strategies.generate import draw_programs

    sources: list[str] = []
    while len(sources) < count:
        batch = draw_programs(min(count - len(sources), 500), families=FAMILIES, seed=seed)
        sources.extend(program.render() for program in batch)
        seed += 1
    return sources[:count]


def check_runner(backend: str, isolate: bool):  # noqa: ANN201
    """One source through ``check_source`` (or the isolated child): the harness's check."""
    from pytest_cgraph.checking.checkers import IsolatedChecker
    from pytest_cgraph.checking.runner import check_source
    from pytest_cgraph.errors import EquivalenceError, InvalidProgram
    from pytest_cgraph.failures import Case

    isolated = IsolatedChecker((), timeout=120.0) if isolate else None

    def run(source: str) -> str:
        if isolated is not None:
            return str(isolated.check(Case(source, backend, "cpu", 5)).verdict)
        try:
            check_source(source, backend=backend, device="cpu")
        except EquivalenceError:
            return "fail"
        except InvalidProgram:
            return "invalid"
        return "pass"

    def child() -> int | None:
        return isolated.child_pid if isolated is not None else None

    if isolated is not None:
        import atexit

        atexit.register(isolated.close)  # its child and dump file go with this process
    return run, child


def soak_one(kind: str, sources: list[str], backend: str, isolate: bool) -> None:
    """The ``--worker`` side: go through ``sources``, print one JSON line per reading."""
    child = None
    if kind == "bare":
        run = bare_runner(backend)
    else:
        run, child = check_runner(backend, isolate)
    verdicts: dict[str, int] = {}
    started = time.perf_counter()
    for number, source in enumerate(sources, start=1):
        verdict = run(source)
        verdicts[verdict] = verdicts.get(verdict, 0) + 1
        if number == 100 or number % 250 == 0 or number == len(sources):
            pid = child() if child is not None else None
            memory = rss_mb() + (rss_mb(pid) if pid else 0.0)
            reading = {"programs": number, "rss_mb": memory}
            print(json.dumps({**reading, "seconds": time.perf_counter() - started}), flush=True)
    print(json.dumps({"verdicts": verdicts}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=2000)
    parser.add_argument("--backend", default="cudagraphs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--isolate", action="store_true", help="check in --cgraph-isolate's recycled child"
    )
    parser.add_argument("--worker", choices=("bare", "check"), help=argparse.SUPPRESS)
    parser.add_argument("--sources", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        sources = json.loads(args.sources.read_text())
        soak_one(args.worker, sources, args.backend, args.isolate)
        return
    import torch

    print(
        f"{time.strftime('%Y-%m-%d')} · {os.cpu_count()} cores · torch {torch.__version__} · "
        f"backend {args.backend} · {args.programs} programs · seed {args.seed}"
        + (" · checks in the isolated child" if args.isolate else ""),
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="cgraph-soak-") as scratch:
        path = Path(scratch) / "sources.json"
        path.write_text(json.dumps(draw_sources(args.programs, args.seed)))
        common = ["--backend", args.backend, "--sources", str(path)]
        if args.isolate:
            common.append("--isolate")
        runs = {
            kind: subprocess.Popen(
                [sys.executable, __file__, "--worker", kind, *common],
                stdout=subprocess.PIPE,
                text=True,
            )
            for kind in ("bare", "check")
        }
        lines = {kind: run.communicate()[0].splitlines() for kind, run in runs.items()}
    readings = {
        kind: {
            row["programs"]: row
            for row in (json.loads(line) for line in output if line.startswith("{"))
            if "programs" in row
        }
        for kind, output in lines.items()
    }
    print(f"\n{'programs':>8} {'bare RSS MB':>12} {'check RSS MB':>13}")
    for number in sorted(readings["check"]):
        bare = readings["bare"].get(number, {}).get("rss_mb", float("nan"))
        print(f"{number:>8} {bare:>12.1f} {readings['check'][number]['rss_mb']:>13.1f}")
    last = args.programs
    if any(100 not in rows or last not in rows for rows in readings.values()):
        print("a run ended early (see its output above): no growth to compare")
        return
    torch_growth = readings["bare"][last]["rss_mb"] - readings["bare"][100]["rss_mb"]
    check_growth = readings["check"][last]["rss_mb"] - readings["check"][100]["rss_mb"]
    own = check_growth - torch_growth
    per_2000 = own * 2000 / max(last - 100, 1)
    print(
        f"\nRSS growth, programs 100 -> {last}: torch alone (bare loop) {torch_growth:+.1f} MB, "
        f"with the harness {check_growth:+.1f} MB;\nthe harness's own {own:+.1f} MB "
        f"({per_2000:+.1f} MB per 2,000 programs; target <= {OWN_GROWTH_TARGET_MB:g})"
    )
    for kind, output in lines.items():
        verdicts = [json.loads(line)["verdicts"] for line in output if '"verdicts"' in line]
        print(f"{kind}: {verdicts[0] if verdicts else 'no verdicts (did it die?)'}")


if __name__ == "__main__":
    main()
