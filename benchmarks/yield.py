"""Yield in bugs: what a time-boxed campaign finds that the baselines do not know, per hour.

    python benchmarks/yield.py [--minutes 10] [--workers 2] [--seed 1]
                               [--backends aot_eager,cudagraphs,inductor]
                               [--families training,mutation] [--no-baseline]
                               [--triage triage.json] [--examples N] [--keep DIR]
                               [--json FILE] [--reports REPORT.json ...]

Runs one campaign per backend (``--cgraph-duration``, so each gets the same
wall time, ``-n WORKERS``) with the shipped baselines on: a difference a
baseline already names is a known bug seen again, not a finding. Prints,
per backend: programs checked, the new findings (distinct signatures the
judge could not name), the known bugs met again (by bug id), and new
findings per hour; per family: its programs and new findings.

A new finding is not yet a bug: triage reads its repro file (``--keep``
keeps them) and says what it is. ``--triage FILE`` (JSON) maps a finding's
repro file name, or its signature, to what triage made of it: a bug id for
a genuine bug (two findings of one bug count once), ``"known:ID"`` for a
known bug met through other calls, ``"limitation"`` for what torch refuses on
purpose, ``"false-alarm"`` for a difference that
is no bug. With it, the table also gives bugs after triage and bugs per
hour; findings triage has not seen are listed as untriaged.

``--before PATH`` runs an older checkout's package beside this one (its
``pytest_cgraph`` first on ``PYTHONPATH``), to compare two generators.
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
from collections import Counter
from pathlib import Path
from typing import Any

from pytest_cgraph.strategies.families import FAMILIES

ROOT = Path(__file__).resolve().parents[1]


def overlay(tree: Path, into: Path) -> Path:
    """A directory holding ``tree``'s ``pytest_cgraph``, to put first on ``PYTHONPATH``."""
    shutil.copytree(
        tree / "pytest_cgraph",
        into / "pytest_cgraph",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    return into


def campaign(
    tree: Path,
    backend: str,
    families: list[str],
    options: argparse.Namespace,
    keep: Path | None,
) -> dict[str, Any]:
    """Run one time-boxed campaign; its JSON report, with its wall time under ``wall``."""
    with tempfile.TemporaryDirectory(prefix="cgraph-yield-") as scratch:
        work = Path(scratch)
        path = overlay(tree, work / "overlay")
        # --cgraph-duration boxes the whole campaign (the plugin gives each item
        # its share of the workers' time): the box is the campaign's wall time.
        box = max(10, int(options.minutes * 60))
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
                [f"--cgraph-examples={options.examples}"]
                if options.examples
                else [f"--cgraph-duration={box}s", "--cgraph-examples=1000000"]
            ),
            f"--cgraph-seed={options.seed}",
            f"--cgraph-families={','.join(families)}",
            "--cgraph-report=report.json",
            "--cgraph-repro-dir=repros",
            "-q",
            *(["--cgraph-no-baseline"] if options.no_baseline else []),
            *(["-n", str(options.workers)] if options.workers > 1 else []),
        ]
        started = time.perf_counter()
        done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - started
        report_path = work / "report.json"
        if not report_path.exists():
            tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
            raise SystemExit(
                f"error: the {backend} campaign on {tree} wrote no report:\n" + "\n".join(tail)
            )
        report: dict[str, Any] = json.loads(report_path.read_text())
        report["wall"] = wall
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            (keep / "report.json").write_text(json.dumps(report))
            if (work / "repros").exists():
                shutil.copytree(work / "repros", keep / "repros", dirs_exist_ok=True)
        return report


def findings(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The new findings, one per repro file: items of several families may meet one
    (one file), and one broad signature may be several bugs (a file each)."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for failure in report.get("failures", []):
        merged.setdefault((failure["signature"], failure.get("repro") or ""), failure)
    return sorted(merged.values(), key=lambda f: (f["kind"], f["signature"], f.get("repro") or ""))


def known_bugs(report: dict[str, Any]) -> Counter[str]:
    """Programs per known bug met again (an entry of no bug counts under its file)."""
    met: Counter[str] = Counter()
    for known in report.get("known", []):
        met[known.get("bug") or Path(known["repro"]).name] += known["hits"]
    return met


#: Triage verdicts that are no bug to count: a difference of ours, or what torch
#: refuses on purpose (a documented limitation).
NOT_BUGS = ("false-alarm", "limitation")


def is_bug(verdict: str | None) -> bool:
    """Whether a triage verdict is a genuine bug (a bug id, not ``known:ID``)."""
    return bool(verdict) and not str(verdict).startswith("known:") and verdict not in NOT_BUGS


def triaged(finding: dict[str, Any], triage: dict[str, str]) -> str | None:
    """What triage made of ``finding``: by its repro file's name, else its signature."""
    repro = finding.get("repro")
    if repro and Path(repro).name in triage:
        return triage[Path(repro).name]
    return triage.get(finding["signature"])


def describe(
    label: str, backend: str, report: dict[str, Any], triage: dict[str, str] | None
) -> tuple[list[str], dict[str, Any]]:
    """The lines printed for one campaign, and its figures for ``--json``."""
    found = findings(report)
    report.setdefault("wall", report.get("seconds", 0.0))  # a report kept before wall was
    hours = max(report["wall"], 1.0) / 3600
    met = known_bugs(report)
    figures: dict[str, Any] = {
        "tree": label,
        "backend": backend,
        "programs": report["programs"],
        "wall": round(report["wall"], 1),
        "new_findings": len(found),
        "new_per_hour": round(len(found) / hours, 2),
        "known_bugs_met": dict(met),
        "families": {},
        "findings": [
            {k: f.get(k) for k in ("signature", "kind", "family", "layer", "hits", "repro")}
            for f in found
        ],
    }
    bugs = ""
    if triage is not None:
        said = [triaged(f, triage) for f in found]
        genuine = {s for s in said if is_bug(s)}
        figures["bugs"] = sorted(genuine)
        figures["bugs_per_hour"] = round(len(genuine) / hours, 2)
        figures["untriaged"] = [
            f["signature"] for f, s in zip(found, said, strict=True) if s is None
        ]
        bugs = f" {len(genuine):>5} {len(genuine) / hours:>8.2f}"
    lines = [
        f"{label:<7} {backend:<11} {report['programs']:>8} {report['wall']:>7.0f}"
        f" {len(found):>5} {len(found) / hours:>8.2f} {len(met):>6}{bugs}"
    ]
    per_family: Counter[str] = Counter(f.get("family") or "?" for f in found)
    # A bug counts for each family that met it (two families may find one bug).
    bugs_by_family: dict[str, set[str]] = {}
    for finding in found:
        verdict = triaged(finding, triage) if triage is not None else None
        if is_bug(verdict):
            bugs_by_family.setdefault(finding.get("family") or "?", set()).add(verdict)
    for family, programs in sorted((report.get("families") or {}).items()):
        genuine = len(bugs_by_family.get(family, ()))
        figures["families"][family] = {"programs": programs, "new": per_family[family]}
        line = f"    {family:<12} {programs:>8} programs {per_family[family]:>4} new"
        if triage is not None:
            figures["families"][family]["bugs"] = genuine
            line += f" {genuine:>4} bugs"
        lines.append(line)
    for finding in found:
        said = triaged(finding, triage) if triage is not None else None
        where = Path(finding["repro"]).name if finding.get("repro") else "(no repro)"
        verdict = f" -> {said}" if said else (" -> untriaged" if triage is not None else "")
        lines.append(
            f"    new: {finding['kind']:<9} {finding.get('layer') or '-':<12}"
            f" x{finding['hits']:<3} {finding.get('family') or '?':<10} {where}{verdict}"
        )
    lines.append(
        "    known: "
        + (", ".join(f"{bug} x{hits}" for bug, hits in met.most_common()) or "none met")
    )
    return lines, figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="wall time per campaign")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--backends", default="aot_eager,cudagraphs,inductor")
    parser.add_argument(
        "--families", default=",".join(f for f in FAMILIES if f != "mixed"), help="which families"
    )
    parser.add_argument(
        "--no-baseline", action="store_true", help="count known bugs as findings too"
    )
    parser.add_argument(
        "--triage", type=Path, help="JSON: finding -> bug id, known:ID, false-alarm"
    )
    parser.add_argument("--before", type=Path, default=None, help="an older checkout")
    parser.add_argument("--after", type=Path, default=ROOT, help="default: this checkout")
    parser.add_argument(
        "--examples",
        type=int,
        default=None,
        help="programs per item instead of --minutes (findings independent of the load)",
    )
    parser.add_argument("--json", type=Path, default=None, help="write the figures here too")
    parser.add_argument("--keep", type=Path, default=None, help="keep repros and reports here")
    parser.add_argument(
        "--reports",
        type=Path,
        nargs="+",
        default=None,
        help="describe campaigns already run (their kept report.json) instead of running",
    )
    options = parser.parse_args(argv)
    families = [name for name in options.families.split(",") if name]
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown:
        parser.exit(2, f"error: unknown families {unknown}; known: {', '.join(FAMILIES)}\n")
    triage: dict[str, str] | None = None
    if options.triage is not None:
        try:
            triage = json.loads(options.triage.read_text())
        except (OSError, ValueError) as error:
            parser.exit(2, f"error: --triage {options.triage}: {error}\n")
    trees = [("before", options.before)] if options.before else []
    trees.append(("after", options.after))
    import torch

    baseline = "off" if options.no_baseline else "on"
    if options.reports:
        print(f"yield: {len(options.reports)} kept report(s), as they were run")
    else:
        print(
            f"yield: torch {torch.__version__}, {options.minutes:g} min per campaign, "
            f"-n {options.workers}, seed {options.seed}, baselines {baseline}"
        )
    header = ["tree", "backend", "programs", "wall s", "new", "new/h", "known"]
    header += ["bugs", "bugs/h"] if triage is not None else []
    print(" ".join(header))
    results = []
    for path in options.reports or ():
        try:
            kept: dict[str, Any] = json.loads(path.read_text())
        except (OSError, ValueError) as error:
            parser.exit(2, f"error: --reports {path}: {error}\n")
        lines, figures = describe("kept", str(kept.get("backend")), kept, triage)
        print("\n".join(lines), flush=True)
        results.append(figures)
    for backend in options.backends.split(",") if options.reports is None else ():
        for label, tree in trees:
            keep = options.keep / f"{label}-{backend}" if options.keep else None
            report = campaign(tree.resolve(), backend, families, options, keep)
            lines, figures = describe(label, backend, report, triage)
            print("\n".join(lines), flush=True)
            results.append(figures)
    if options.json:
        options.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
