"""What an Inductor campaign costs per program on CPU, and what an Inductor setting changes.

    python benchmarks/inductor_cost.py campaign [--examples 6] [--seed 1] [--rounds 2]
                                                [--config '{"cpp.simdlen": 0}']
    python benchmarks/inductor_cost.py compiler [--kernels 5] [--examples 2] [--seed 1]

``campaign`` runs one-process campaigns (``pytest --cgraph --cgraph-backend
inductor``, all families, no xdist), each in a fresh process, rounds
alternating between torch's settings (the oracle's patch as it is) and, with
``--config``, the same patch with extra Inductor settings merged in. Each is
run cold (a fresh ``TORCHINDUCTOR_CACHE_DIR``: every graph and kernel is
compiled; torch's precompiled headers live under the temp dir, not in the
cache dir, and are shared) and then warm (the same directory again: the FX
graph, AOTAutograd and kernel caches hit). It prints programs per second
(minimum seconds over the rounds) and compares the verdicts of each run with
the first baseline run: programs checked, invalid programs, failure
signatures, and hits per known signature; any field that differs counts as
a changed verdict. A setting changes Inductor's cache keys, so its cold run
compiles everything again, as the baseline's does.

``compiler`` weighs the C++ compiler, which most of a cold campaign waits on:
it runs a short campaign with a fresh cache dir and compile threads off,
records each compile command Inductor runs and its seconds, then re-times
``--kernels`` of the kernel commands as they are, at each other ``-O`` level
with a precompiled header built for it (Inductor keys its headers by
command line, so any level it used would get one), without the header, and
an empty translation unit against the header: what every kernel pays before
its own code. Everything it writes is under a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

#: Run in a fresh process: one campaign, the extra settings merged into the oracle's
#: patch first; with a log path, every compile command Inductor runs is recorded.
CAMPAIGN = r"""
import json, os, sys, time
report, seed, examples, extra, log = sys.argv[1:6]
if log:
    import torch._inductor.cpp_builder as cpp_builder
    run_compile_cmd = cpp_builder._run_compile_cmd
    def logged(cmd_line, cwd):
        started = time.perf_counter()
        run_compile_cmd(cmd_line, cwd)
        with open(log, "a") as stream:
            seconds = time.perf_counter() - started
            stream.write(json.dumps({"seconds": seconds, "command": cmd_line}) + "\n")
    cpp_builder._run_compile_cmd = logged
import pytest_cgraph.oracle.compiling as compiling
compiling.COMPARABLE_INDUCTOR.update(json.loads(extra))
import pytest
scratch = os.path.dirname(report)
os.chdir(scratch)
pytest.main(["--cgraph", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly",
             "--cgraph-backend=inductor", f"--cgraph-examples={examples}", f"--cgraph-seed={seed}",
             f"--cgraph-report={report}", f"--cgraph-repro-dir={scratch}/repros",
             f"--rootdir={scratch}", "-o", "addopts="])
"""


def run_campaign(
    cache: Path, seed: int, examples: int, extra: dict, log: Path | None = None
) -> dict:
    """One campaign in a fresh process and directory, with ``cache`` as Inductor's cache dir."""
    with tempfile.TemporaryDirectory(prefix="cgraph-inductor-") as scratch:
        report = Path(scratch) / "report.json"
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache))
        if log is not None:
            env["TORCHINDUCTOR_COMPILE_THREADS"] = "1"  # compiles in this process, logged
        argv = [str(report), str(seed), str(examples), json.dumps(extra), str(log or "")]
        subprocess.run(
            [sys.executable, "-c", CAMPAIGN, *argv],
            env=env,
            check=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return json.loads(report.read_text())


def verdicts(report: dict) -> dict:
    """What a campaign concluded, without its timings."""
    return {
        "programs": report["programs"],
        "invalid": report["invalid"],
        "failures": Counter(failure["signature"] for failure in report["failures"]),
        "known": Counter(report.get("known_hits", {})),
    }


def changed(before: dict, after: dict) -> int:
    """Fields of ``verdicts`` that differ: counts, then each signature's count."""
    count = sum(before[key] != after[key] for key in ("programs", "invalid"))
    for key in ("failures", "known"):
        signatures = set(before[key]) | set(after[key])
        count += sum(before[key][s] != after[key][s] for s in signatures)
    return count


def campaign_main(args: argparse.Namespace) -> None:
    settings = {"torch": {}}
    if args.config:
        settings["with --config"] = json.loads(args.config)
    seconds: dict[tuple[str, str], list[float]] = {}
    programs: dict[tuple[str, str], int] = {}
    reference: dict | None = None
    differences: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="cgraph-inductor-cache-") as caches:
        for round_ in range(args.rounds):
            for index, (name, extra) in enumerate(settings.items()):
                cache = Path(caches) / f"round{round_}-settings{index}"
                for state in ("cold", "warm"):
                    report = run_campaign(cache, args.seed, args.examples, extra)
                    seconds.setdefault((name, state), []).append(report["seconds"])
                    programs[name, state] = report["programs"]
                    found = verdicts(report)
                    reference = reference or found
                    differences[name] += changed(reference, found)
                    print(
                        f"round {round_ + 1} {name:<14} {state}: {report['programs']} programs "
                        f"in {report['seconds']:.1f} s, {changed(reference, found)} changed",
                        flush=True,
                    )
    print(f"\n{'settings':<16}{'state':<6}{'programs':>9}{'min s':>8}{'median s':>9}{'prog/s':>8}")
    for (name, state), values in seconds.items():
        best = min(values)
        print(
            f"{name:<16}{state:<6}{programs[name, state]:>9}{best:>8.1f}"
            f"{statistics.median(values):>9.1f}{programs[name, state] / best:>8.2f}"
        )
    for name in settings:
        print(f"{name}: {differences[name]} verdict field(s) differ from the first baseline run")


def timed(command: str, repeats: int) -> float | None:
    """The fastest of ``repeats`` runs of a compile command, or None if it fails."""
    best = None
    for _ in range(repeats):
        started = time.perf_counter()
        done = subprocess.run(shlex.split(command), capture_output=True, check=False)
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            return None
        best = elapsed if best is None else min(best, elapsed)
    return best


def compiler_main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="cgraph-inductor-gxx-") as scratch_dir:
        scratch = Path(scratch_dir)
        log = scratch / "commands.jsonl"
        started = time.perf_counter()
        report = run_campaign(scratch / "cache", args.seed, args.examples, {}, log)
        wall = time.perf_counter() - started
        commands = [json.loads(line) for line in log.read_text().splitlines()]
        kernels = [c for c in commands if "-include " in c["command"]]
        compiler = sum(c["seconds"] for c in commands)
        print(
            f"{report['programs']} programs, campaign {report['seconds']:.1f} s "
            f"({wall:.1f} s with startup): {len(commands)} compiler runs, {compiler:.1f} s; "
            f"{len(kernels)} kernels, {statistics.median(c['seconds'] for c in kernels):.2f} s "
            "median each"
        )
        rows: dict[str, list[float]] = {}
        empty = scratch / "empty.cpp"
        empty.write_text("#include <torch/csrc/inductor/cpp_prefix.h>\n")
        headers: dict[str, str] = {}
        for entry in kernels[: args.kernels]:
            command = entry["command"]
            words = command.split()
            source, header = words[1], command.split("-include ")[1].split()[0]
            output = command.split(" -o ")[1].split()[0]
            level = next(w for w in words if w in ("-O0", "-O1", "-O2", "-O3"))
            as_is = command.replace(output, str(scratch / "kernel.so"))
            variants = {f"as Inductor runs it ({level})": as_is}
            for other in ("-O0", "-O1", "-O2", "-O3"):
                if other == level:
                    continue
                own = headers.get(other) or build_header(as_is, header, level, other, scratch)
                headers[other] = own
                variants[f"{other}, header built at {other}"] = as_is.replace(level, other).replace(
                    header, own
                )
            variants["no precompiled header"] = as_is.replace(f"-include {header}", "")
            floor = as_is.replace(source, str(empty)).replace(" -shared", " -c")
            variants["empty source against the header"] = floor.split(" -ltorch")[0]
            for name, variant in variants.items():
                seconds = timed(variant, args.repeats)
                if seconds is not None:
                    rows.setdefault(name, []).append(seconds)
        print(f"\nseconds per compile, median over {min(args.kernels, len(kernels))} kernel(s):")
        for name, values in rows.items():
            print(f"  {name:<40} {statistics.median(values):6.2f}")


def build_header(command: str, header: str, level: str, other: str, scratch: Path) -> str:
    """A precompiled header like Inductor's, built with ``other`` instead of ``level``."""
    own = scratch / f"header{other}.h"
    own.write_text(Path(header).read_text())
    flags = command.split(" -o ")[0].split(" ", 2)[2].replace(f"-include {header}", "")
    flags = flags.replace(" -shared", "").replace(level, other)
    subprocess.run(
        shlex.split(f"g++ {own} {flags} -x c++-header -o {own}.gch"),
        capture_output=True,
        check=True,
    )
    return str(own)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    campaign = commands.add_parser("campaign", help="programs/s and verdicts, cold and warm")
    campaign.add_argument("--examples", type=int, default=6, help="programs per family item")
    campaign.add_argument("--seed", type=int, default=1)
    campaign.add_argument("--rounds", type=int, default=2)
    campaign.add_argument("--config", default="", help="extra Inductor settings, as JSON")
    compiler = commands.add_parser("compiler", help="g++ seconds per kernel, by variant")
    compiler.add_argument("--kernels", type=int, default=5, help="kernels re-timed")
    compiler.add_argument("--examples", type=int, default=2, help="programs per family item")
    compiler.add_argument("--seed", type=int, default=1)
    compiler.add_argument("--repeats", type=int, default=3, help="runs per variant (fastest)")
    args = parser.parse_args()
    import torch

    print(
        f"{time.strftime('%Y-%m-%d')} · {platform.node()} · {os.cpu_count()} cores · "
        f"Python {platform.python_version()} · torch {torch.__version__}"
    )
    if args.command == "campaign":
        campaign_main(args)
    else:
        compiler_main(args)


if __name__ == "__main__":
    main()
