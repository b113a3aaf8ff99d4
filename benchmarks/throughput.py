"""Throughput, harness overhead, xdist scaling and memory of campaigns on this machine.

    python benchmarks/throughput.py [--examples 25] [--inductor-examples 3] [--seed 1]
                                    [--backends cudagraphs,aot_eager,inductor]
                                    [--no-xdist] [--soak 2000] [--faults]

Prints, for the same run on the same machine:

- programs per second of a one-process campaign (all families) for
  ``cudagraphs``, ``aot_eager`` and ``inductor``;
- the overhead ratio: the campaign's seconds inside its items divided by a
  bare loop's seconds over exactly the programs the campaign checked (shrink
  steps included). The bare loop (``bare_loop.py``) runs each source's
  compiled side as the protocol defines it (its compiled functions, ITERS
  calls with backward, ``advance``, grad mode, compiled autograd): no eager
  run, no comparison, no Hypothesis. It is timed three ways: with torch's
  defaults; "lean", skipping the two telemetry costs the harness skips
  (so that ratio is the harness's own cost); and "frozen", lean with the
  long-lived heap frozen as a campaign item freezes it (the leanest loop).
  With ``--rounds N``, campaign and loops each run N times and their
  minimums are compared (this machine's noise is about a tenth). Each
  campaign and loop compiles its Inductor kernels anew, in a copy of a
  kernel cache that has only run the toolchain's one-off checks
  (``bare_loop.cold_kernel_cache``): a cache shared between them would
  hand the second the first one's kernels;
- ``-n 2`` over ``-n 0`` throughput (programs per wall second, startup
  included);
- with ``--soak N``: RSS after 100 and after N programs in one process
  (``benchmarks/soak.py``);
- with ``--faults``: seconds from first failure to written repro per
  fault-injection backend and their median (``benchmarks/fault_repros.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = Path(__file__).resolve().parent

sys.path.insert(0, str(BENCHMARKS))

from bare_loop import NO_DISK_CACHES, cold_kernel_cache, primed_kernel_cache  # noqa: E402


def campaign(
    backend: str,
    examples: int,
    seed: int,
    workers: int,
    record: Path | None,
    extra: tuple[str, ...] = (),
    caches: dict[str, str] = NO_DISK_CACHES,
) -> dict:
    """Run one campaign in a fresh directory; its JSON report plus the process's wall time."""
    with tempfile.TemporaryDirectory(prefix="cgraph-bench-") as scratch:
        env = dict(
            os.environ,
            **caches,
            PYTHONPATH=os.pathsep.join([str(BENCHMARKS), str(ROOT / "tests")]),
        )
        command = [
            sys.executable, "-m", "pytest", "--cgraph", "-q", "-p", "no:cacheprovider",
            f"--cgraph-backend={backend}", f"--cgraph-examples={examples}",
            f"--cgraph-seed={seed}", "--cgraph-report=report.json",
            "--cgraph-repro-dir=repros", "-n", str(workers), *extra,
        ]  # fmt: skip
        if record is not None:
            env["CGRAPH_RECORD_SOURCES"] = str(record)
            command += ["-p", "_record_sources"]
        started = time.perf_counter()
        subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        report = json.loads((Path(scratch) / "report.json").read_text())
    report["process_seconds"] = wall
    return report


def bare_loop(
    backend: str, sources: Path, mode: str, caches: dict[str, str] = NO_DISK_CACHES
) -> dict:
    """``bare_loop.py`` over ``sources`` in a fresh process (``mode``: default, lean, frozen)."""
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "bare_loop.py"), backend, str(sources), mode],
        capture_output=True, text=True, check=True, env=dict(os.environ, **caches),
    )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=25, help="programs per family item")
    parser.add_argument("--inductor-examples", type=int, default=3)
    parser.add_argument("--xdist-examples", type=int, default=50)
    parser.add_argument(
        "--xdist-shards", type=int, default=2, help="--cgraph-shards of the xdist comparison"
    )
    parser.add_argument("--dist", default="worksteal", help="xdist --dist of the -n 2 run")
    parser.add_argument(
        "--only-xdist", action="store_true", help="only the -n 2 over -n 0 comparison"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--backends",
        default="cudagraphs,aot_eager,inductor",
        help="comma-separated backends of the campaign rows",
    )
    parser.add_argument(
        "--no-xdist", action="store_true", help="skip the -n 2 over -n 0 comparison"
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="runs of each campaign and loop; minimums compared"
    )
    parser.add_argument("--soak", type=int, default=0, help="programs for the RSS soak")
    parser.add_argument("--faults", action="store_true", help="also time fault repros")
    args = parser.parse_args()
    import torch

    print(
        f"{time.strftime('%Y-%m-%d')} · {platform.node()} · {os.cpu_count()} cores · "
        f"Python {platform.python_version()} · torch {torch.__version__} · "
        f"CUDA {'yes' if torch.cuda.is_available() else 'no (CPU: capture skipped)'}"
    )
    if args.only_xdist:
        xdist_scaling(args)
        return
    print(
        "\nbare s: the bare loop with torch's defaults; lean s: the bare loop skipping the\n"
        "two telemetry costs the harness skips (guard-latency profiling, idle trace handler);\n"
        f"frozen s: lean, with the heap frozen as campaign items freeze it; each the minimum of "
        f"{args.rounds} run(s)"
    )
    print(f"\n{'backend':<11} {'programs':>8} {'item s':>8} {'prog/s':>7} "
          f"{'bare s':>8} {'ratio':>6} {'lean s':>8} {'ratio':>6} "
          f"{'frozen s':>8} {'ratio':>6}")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="cgraph-sources-") as scratch:
        # Every campaign and loop compiles its kernels anew: Inductor's kernel
        # cache is on disk by source, so a shared one would hand the second
        # process the first one's compiles.
        primed = primed_kernel_cache(Path(scratch))
        for backend in args.backends.split(","):
            examples = args.inductor_examples if backend == "inductor" else args.examples
            reports, loops = [], {"default": [], "lean": [], "frozen": []}
            for _ in range(args.rounds):
                record = Path(scratch) / f"{backend}.jsonl"
                record.unlink(missing_ok=True)  # each campaign round's own programs
                caches = cold_kernel_cache(primed, Path(scratch))
                reports.append(campaign(backend, examples, args.seed, 0, record, (), caches))
                for mode, seconds in loops.items():
                    caches = cold_kernel_cache(primed, Path(scratch))
                    seconds.append(bare_loop(backend, record, mode, caches)["seconds"])
            report = min(reports, key=lambda report: report["check_seconds"])
            item = report["check_seconds"]
            bare, lean, frozen = (min(loops[mode]) for mode in ("default", "lean", "frozen"))
            print(
                f"{backend:<11} {report['programs']:>8} {item:>8.1f} "
                f"{report['programs'] / item:>7.2f} {bare:>8.1f} {item / bare:>6.2f} "
                f"{lean:>8.1f} {item / lean:>6.2f} {frozen:>8.1f} {item / frozen:>6.2f}",
                flush=True,
            )
    if not args.no_xdist:
        xdist_scaling(args)
    if args.soak:
        print(f"\nRSS soak, {args.soak} programs in one process (cudagraphs):", flush=True)
        subprocess.run(
            [sys.executable, str(BENCHMARKS / "soak.py"), "--programs", str(args.soak)], check=True
        )
    if args.faults:
        print("\nfirst failure -> written repro, per fault-injection backend:", flush=True)
        subprocess.run([sys.executable, str(BENCHMARKS / "fault_repros.py")], check=True)


def xdist_scaling(args: argparse.Namespace) -> None:
    """``-n 2`` over ``-n 0`` on the same sharded campaign, startup included."""
    print(
        f"\nxdist scaling (cudagraphs, {args.xdist_examples} examples per family in "
        f"{args.xdist_shards} shards, programs per wall second of the whole run):"
    )
    shards = (f"--cgraph-shards={args.xdist_shards}",)
    serial = campaign("cudagraphs", args.xdist_examples, args.seed, 0, None, shards)
    parallel = campaign(
        "cudagraphs", args.xdist_examples, args.seed, 2, None, (*shards, f"--dist={args.dist}")
    )
    serial_rate = serial["programs"] / serial["process_seconds"]
    parallel_rate = parallel["programs"] / parallel["process_seconds"]
    # The drawn programs are the same for one seed and budget; shrink steps
    # are bounded in seconds, so their number follows the machine's load.
    same = serial["drawn"] == parallel["drawn"]
    print(
        f"  -n 0: {serial['programs']} programs in {serial['process_seconds']:.1f} s "
        f"= {serial_rate:.2f}/s\n  -n 2 --dist {args.dist}: {parallel['programs']} programs in "
        f"{parallel['process_seconds']:.1f} s = {parallel_rate:.2f}/s\n"
        f"  speed-up: {parallel_rate / serial_rate:.2f}x ({serial['drawn']} and "
        f"{parallel['drawn']} drawn: {'the same' if same else 'NOT the same'} programs)"
    )


if __name__ == "__main__":
    main()
