"""Yield: distinct differences a time-boxed campaign finds, per backend, for one or two trees.

    python benchmarks/yield.py [--minutes 10] [--workers 2] [--seed 1]
                               [--backends cudagraphs,aot_eager,inductor]
                               [--before PATH] [--after PATH]

Runs the same campaign (all families, ``--cgraph-duration`` so each tree
gets the same wall time, ``-n WORKERS``, ``--cgraph-no-baseline`` so that
differences the shipped baseline already knows are counted too) against the
package of each tree: ``--after`` defaults to this checkout, ``--before`` to
none (e.g. a ``git worktree`` of an older commit). Prints, per tree and
backend: programs checked, distinct signatures, signatures per hour, and
each signature with its kind, first diverging layer and hits.

Each tree runs from a temporary overlay (its ``pytest_cgraph`` with its
``strategies`` inside), first on ``PYTHONPATH``, so an editable install of
another checkout does not leak into the measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_cgraph.strategies.families import FAMILIES

ROOT = Path(__file__).resolve().parents[1]


def overlay(tree: Path, into: Path) -> Path:
    """A directory whose ``pytest_cgraph`` is ``tree``'s, strategies included."""
    package = into / "pytest_cgraph"
    shutil.copytree(tree / "pytest_cgraph", package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(
        tree / "strategies", package / "strategies", ignore=shutil.ignore_patterns("__pycache__")
    )
    return into


def campaign(
    tree: Path,
    backend: str,
    minutes: float,
    workers: int,
    seed: int,
    keep: Path | None,
    examples: int | None = None,
) -> dict:
    """Run one time-boxed campaign (or one of ``examples`` programs per item).

    Returns its JSON report and wall time. A budget in programs is what to
    compare on a loaded machine: its findings do not depend on the load.

    With ``keep``, the repro files and the report are copied there to triage.
    """
    with tempfile.TemporaryDirectory(prefix="cgraph-yield-") as scratch:
        work = Path(scratch)
        path = overlay(tree, work / "overlay")
        # Items share the workers: each item hunts for its share of the box.
        per_item = max(10, int(minutes * 60 * workers / len(FAMILIES)))
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(path), str(tree / "tests")]),
            "PYTHONHASHSEED": "0",
        }
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--cgraph",
            f"--cgraph-backend={backend}",
            *(
                [f"--cgraph-examples={examples}"]
                if examples
                else [f"--cgraph-duration={per_item}s", "--cgraph-examples=1000000"]
            ),
            f"--cgraph-seed={seed}",
            "--cgraph-no-baseline",
            "--cgraph-report=report.json",
            "--cgraph-repro-dir=repros",
            "-q",
        ]
        if workers > 1:
            command += ["-n", str(workers)]
        started = time.perf_counter()
        subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        report_path = work / "report.json"
        if not report_path.exists():
            raise SystemExit(f"error: {backend} campaign on {tree} wrote no report")
        report = json.loads(report_path.read_text())
        report["wall"] = wall
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            shutil.copy(report_path, keep / "report.json")
            if (work / "repros").exists():
                shutil.copytree(work / "repros", keep / "repros", dirs_exist_ok=True)
        return report


def distinct(failures: list[dict]) -> list[dict]:
    """One entry per signature: items of several families can find the same one.

    A failure's ``hits`` already counts the whole campaign's failing programs.
    """
    merged = {failure["signature"]: failure for failure in failures}
    return sorted(merged.values(), key=lambda f: (f["kind"], f["signature"]))


def describe(label: str, backend: str, report: dict) -> list[str]:
    found = distinct(report["failures"])
    hours = report["wall"] / 3600
    lines = [
        f"{label:<8} {backend:<11} {report['programs']:>8} {len(found):>10}"
        f" {len(found) / hours:>9.1f} {report['wall']:>7.0f}"
        f" {1000 * len(found) / max(report['programs'], 1):>9.1f}"
    ]
    for failure in found:
        lines.append(
            f"           {failure['kind']:<9} {failure.get('layer') or '-':<10}"
            f" x{failure['hits']:<3} {failure['signature'][:90]}"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="wall time per campaign")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--backends", default="cudagraphs,aot_eager,inductor")
    parser.add_argument("--before", type=Path, default=None, help="an older checkout")
    parser.add_argument("--after", type=Path, default=ROOT, help="default: this checkout")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here too")
    parser.add_argument("--keep", type=Path, default=None, help="keep repros and reports here")
    parser.add_argument(
        "--examples",
        type=int,
        default=None,
        help="programs per item instead of --minutes (findings independent of the load)",
    )
    options = parser.parse_args()
    trees = [("before", options.before)] if options.before else []
    trees.append(("after", options.after))
    budget = (
        f"{options.examples} programs per item"
        if options.examples
        else f"{options.minutes:g} min per campaign"
    )
    print(f"yield: {budget}, -n {options.workers}, seed {options.seed}, baseline off")
    header = ("tree", "backend", "programs", "signatures", "per hour", "wall s", "per 1k")
    print("{:<8} {:<11} {:>8} {:>10} {:>9} {:>7} {:>9}".format(*header))
    results = []
    for backend in options.backends.split(","):
        for label, tree in trees:
            keep = options.keep / f"{label}-{backend}" if options.keep else None
            report = campaign(
                tree.resolve(),
                backend,
                options.minutes,
                options.workers,
                options.seed,
                keep,
                options.examples,
            )
            print("\n".join(describe(label, backend, report)), flush=True)
            results.append(
                {
                    "tree": label,
                    "backend": backend,
                    "programs": report["programs"],
                    "wall": report["wall"],
                    "signatures": [
                        {k: f.get(k) for k in ("signature", "kind", "layer", "hits", "repro")}
                        for f in distinct(report["failures"])
                    ],
                }
            )
    if options.json:
        options.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
