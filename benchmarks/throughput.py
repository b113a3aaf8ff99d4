"""Throughput, harness overhead, xdist scaling and memory of campaigns on this machine.

    python benchmarks/throughput.py [--examples 25] [--inductor-examples 3] [--seed 1]
                                    [--soak 2000] [--faults]

Prints, for the same run on the same machine:

- programs per second of a one-process campaign (all families) for
  ``cudagraphs``, ``aot_eager`` and ``inductor``;
- the overhead ratio: the campaign's seconds inside its items divided by a
  bare loop's seconds over exactly the programs the campaign checked (shrink
  steps included). The bare loop execs each source, ``torch.compile``\\ s
  ``program``, calls it ITERS times with backward, resets Dynamo: no eager
  run, no comparison, no Hypothesis. It is timed twice: with torch's
  defaults, and "lean", skipping the two telemetry costs the harness skips
  (so that ratio is the harness's own cost);
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

#: Inductor's on-disk caches off for every process, so that whichever of the
#: campaign and the bare loop runs second does not get the first one's compiles.
NO_DISK_CACHES = {"TORCHINDUCTOR_FX_GRAPH_CACHE": "0", "TORCHINDUCTOR_AUTOGRAD_CACHE": "0"}

BARE_LOOP = r"""
import json, sys, time, warnings
import torch
import torch.utils._pytree as pytree
from pytest_cgraph.oracle.protocol import ProgramSpec

warnings.simplefilter("ignore")
backend, path, lean = sys.argv[1], sys.argv[2], sys.argv[3] == "lean"
sources = [json.loads(line) for line in open(path)]
MODES = ("reduce-overhead", "max-autotune")
if lean:  # the two torch telemetry costs the harness skips, skipped here too
    from pytest_cgraph.oracle.compiling import drop_idle_trace_handler
    import torch._dynamo.guards
    drop_idle_trace_handler()
    torch._dynamo.guards.profile_guard_manager = lambda *args, **kwargs: 0.0


def run(source):
    namespace = {"__name__": "bare"}
    exec(compile(source, "<bare>", "exec"), namespace)
    spec = ProgramSpec.of(namespace)  # the protocol's names, read as the oracle reads them
    program, inputs, fresh = spec.program, spec.inputs, spec.fresh_inputs
    compiled = (
        torch.compile(program, mode=backend) if backend in MODES
        else torch.compile(program, backend=backend)
    )
    args = inputs(1)
    for k in range(1, spec.iters + 1):
        if fresh:
            args = inputs(k)
        torch.manual_seed(k)
        outs = pytree.tree_leaves(compiled(*args))
        roots = [o for o in outs if isinstance(o, torch.Tensor) and o.requires_grad
                 and o.dtype.is_floating_point]
        if roots:
            torch.autograd.backward(torch.stack([o.sum().double() for o in roots]).sum())
    torch._dynamo.reset()


started = time.perf_counter()
errors = 0
for source in sources:
    try:
        run(source)
    except Exception:
        errors += 1
        torch._dynamo.reset()
print(json.dumps({"seconds": time.perf_counter() - started, "programs": len(sources),
                  "errors": errors}))
"""


def campaign(
    backend: str,
    examples: int,
    seed: int,
    workers: int,
    record: Path | None,
    extra: tuple[str, ...] = (),
) -> dict:
    """Run one campaign in a fresh directory; its JSON report plus the process's wall time."""
    with tempfile.TemporaryDirectory(prefix="cgraph-bench-") as scratch:
        env = dict(
            os.environ,
            **NO_DISK_CACHES,
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


def bare_loop(backend: str, sources: Path, lean: bool) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", BARE_LOOP, backend, str(sources), "lean" if lean else "default"],
        capture_output=True, text=True, check=True, env=dict(os.environ, **NO_DISK_CACHES),
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
        "two telemetry costs the harness skips (guard-latency profiling, idle trace handler)"
    )
    print(f"\n{'backend':<11} {'programs':>8} {'item s':>8} {'prog/s':>7} "
          f"{'bare s':>8} {'ratio':>6} {'lean s':>8} {'ratio':>6}")  # fmt: skip
    one_process: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="cgraph-sources-") as scratch:
        for backend, examples in (
            ("cudagraphs", args.examples),
            ("aot_eager", args.examples),
            ("inductor", args.inductor_examples),
        ):
            record = Path(scratch) / f"{backend}.jsonl"
            report = campaign(backend, examples, args.seed, 0, record)
            one_process[backend] = report
            bare = bare_loop(backend, record, lean=False)["seconds"]
            lean = bare_loop(backend, record, lean=True)["seconds"]
            seconds = report["check_seconds"]
            print(
                f"{backend:<11} {report['programs']:>8} {seconds:>8.1f} "
                f"{report['programs'] / seconds:>7.2f} {bare:>8.1f} {seconds / bare:>6.2f} "
                f"{lean:>8.1f} {seconds / lean:>6.2f}",
                flush=True,
            )
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
