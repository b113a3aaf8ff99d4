"""Campaigns against each fault-injection backend: time to the first failure and to its repro.

    python benchmarks/fault_repros.py [--examples 100] [--workers 2] [--families all]
                                      [--seed 1] [--faults NAME,...]

For every backend of ``tests/cgraph_doubles/faults.py`` this runs
``pytest --cgraph -p cgraph_doubles.faults --cgraph-backend faulty_<name>``
in a fresh directory (default settings unless given), then checks each repro
file it wrote: ``python repro.py`` must exit 1, ``python repro.py --backend
aot_eager`` must exit 0, and ``pytest <repro-dir>`` must fail. It prints, per
fault: the failure of the fault's own kind, programs checked before the
first failure, seconds from first failure to written repro, statements in
the repro, and the three exit codes; then the median seconds to repro.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from cgraph_doubles.faults import FAULTS  # noqa: E402


def run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    # This checkout's package and test doubles, whatever is installed.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")]))
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--families", default="all")
    parser.add_argument("--seed", type=int, default=1)
    names = ",".join(case.name for case in FAULTS)
    parser.add_argument("--faults", default=names, help=f"some of {names}")
    args = parser.parse_args()
    chosen = args.faults.split(",")
    unknown = sorted(set(chosen) - {case.name for case in FAULTS})
    if unknown:
        parser.error(f"--faults: no fault double named {', '.join(unknown)}; the doubles: {names}")
    rows, delays = [], []
    for case in (case for case in FAULTS if case.name in chosen):
        with tempfile.TemporaryDirectory() as scratch:
            here = Path(scratch)
            run(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    "--cgraph",
                    "-p",
                    "cgraph_doubles.faults",
                    f"--cgraph-backend=faulty_{case.name}",
                    f"--cgraph-examples={args.examples}",
                    f"--cgraph-families={args.families}",
                    f"--cgraph-seed={args.seed}",
                    "--cgraph-report=r.json",
                    "-n",
                    str(args.workers),
                    "-q",
                    "-p",
                    "no:cacheprovider",
                ],
                here,
            )
            report = json.loads((here / "r.json").read_text())
            # The fault's own kind if found, else its first symptom of another
            # kind (a lost input write often shows first in an output).
            written = [f for f in report["failures"] if f["repro"]]
            own = [f for f in written if f["kind"] == case.kind] or written
            if not own:
                rows.append(f"{case.name:22} {case.kind:13} no repro written")
                continue
            first = min(own, key=lambda f: f["examples_to_failure"] or 0)
            repro = here / first["repro"]
            exits = (
                run([sys.executable, str(repro)], here).returncode,
                run([sys.executable, str(repro), "--backend", "aot_eager"], here).returncode,
                run(
                    [
                        sys.executable,
                        "-m",
                        "pytest",
                        "-q",
                        "-p",
                        "no:cacheprovider",
                        str(repro.parent),
                    ],
                    here,
                ).returncode,
            )
            delays.append(first["seconds_to_repro"])
            rows.append(
                f"{case.name:22} {first['kind']:13} {first['family']:9} "
                f"{first['examples_to_failure']:>5} {first['seconds_to_repro']:>7.1f} "
                f"{first['statements']:>5}   python={exits[0]} aot_eager={exits[1]} "
                f"pytest={exits[2]}"
            )
    print(f"{'fault':22} {'kind found':13} {'family':9} {'progs':>5} {'s→repro':>7} {'stmts':>5}")
    print("\n".join(rows))
    if delays:
        print(
            f"median seconds from first failure to written repro: {statistics.median(delays):.1f}"
        )


if __name__ == "__main__":
    main()
