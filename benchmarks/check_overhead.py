"""One check's cost over a lean bare loop, on the same drawn program sources.

    python benchmarks/check_overhead.py [--programs 150] [--backend cudagraphs]
                                        [--seed 1] [--rounds 3]

Draws ``--programs`` sources (all families, a fixed seed), then times, each
in a fresh process and alternating, ``rounds`` times:

- ``check``: ``pytest_cgraph.checking.runner.check_source`` on every source (the
  oracle as a campaign runs it: eager beside compiled, clones, snapshots,
  comparisons, retained outputs), differences caught and counted;
- ``lean``: ``bare_loop.py`` in its lean form: the compiled side alone, as
  the protocol defines it (compiled functions, ITERS calls with backward,
  ``advance``, grad mode, compiled autograd), without torch's two
  telemetry costs the harness skips.

Prints each one's minimum and median seconds and the ratio of minimums:
what the oracle costs beyond the compiles and calls it exists to run. No
drawing, shrinking or bookkeeping is in either figure (``profile_campaign.py``
shows those).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCHMARKS))

from bare_loop import NO_DISK_CACHES  # noqa: E402

CHECK_LOOP = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
import torch
from pytest_cgraph.checking.runner import check_source

backend, path = sys.argv[1], sys.argv[2]
sources = [json.loads(line) for line in open(path)]
started = time.perf_counter()
errors = 0
for source in sources:
    try:
        check_source(source, backend=backend)
    except Exception:
        errors += 1
print(json.dumps({"seconds": time.perf_counter() - started, "programs": len(sources),
                  "errors": errors}))
"""


def timed(*argv: str) -> dict:
    """Run ``python *argv`` in a fresh process; its last line, a JSON timing."""
    done = subprocess.run(
        [sys.executable, *argv],
        capture_output=True, text=True, check=True, env=dict(os.environ, **NO_DISK_CACHES),
    )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=150)
    parser.add_argument("--backend", default="cudagraphs")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    import torch

    from pytest_cgraph.strategies import FAMILIES, draw_programs

    print(
        f"{time.strftime('%Y-%m-%d')} · {platform.node()} · {os.cpu_count()} cores · "
        f"Python {platform.python_version()} · torch {torch.__version__} · "
        f"backend {args.backend}"
    )
    programs = draw_programs(args.programs, families=tuple(FAMILIES), seed=args.seed)
    with tempfile.TemporaryDirectory(prefix="cgraph-overhead-") as scratch:
        sources = Path(scratch) / "sources.jsonl"
        sources.write_text("".join(json.dumps(p.render()) + "\n" for p in programs))
        check, lean = [], []
        for _ in range(args.rounds):
            check.append(timed("-c", CHECK_LOOP, args.backend, str(sources)))
            lean.append(timed(str(BENCHMARKS / "bare_loop.py"), args.backend, str(sources), "lean"))
    print(
        f"{len(programs)} programs; differences or invalid in the check loop: "
        f"{check[0]['errors']}; errors in the bare loop: {lean[0]['errors']}"
    )
    for name, runs in (("check", check), ("lean", lean)):
        seconds = [run["seconds"] for run in runs]
        print(
            f"{name:<6} min {min(seconds):7.1f} s  median {statistics.median(seconds):7.1f} s  "
            f"({', '.join(f'{s:.1f}' for s in seconds)})"
        )
    ratio = min(run["seconds"] for run in check) / min(run["seconds"] for run in lean)
    print(f"check / lean (minimums): {ratio:.2f}x")


if __name__ == "__main__":
    main()
