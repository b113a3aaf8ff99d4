"""Derive a baseline for another torch release from entries re-checked there.

Re-checked here, on the torch of this interpreter (a torch that installs on
these machines, e.g. ``torch==2.14.1`` in a venv of its own)::

    python scripts/derive_baseline.py --source pytest_cgraph/known/torch-2.13 \\
        --replay --into pytest_cgraph/known/torch-2.14

Re-checked elsewhere: ``scripts/gpu_check.py`` replays the nearest
baseline's entries on a torch that has none, and keeps those that reproduced
there (``known-rechecked/`` in its archive)::

    python scripts/derive_baseline.py --source pytest_cgraph/known/torch-2.13 \\
        --rechecked GPU_CHECK/known-rechecked --torch 2.11.0+cu130 \\
        --into pytest_cgraph/known/torch-2.11

Either copies the entries that reproduced into ``--into`` and writes its bugs
file: the source's bugs, each with only the forms that reproduced, and none
whose forms all stopped reproducing; comments and layout are kept, so the
file stays the hand-edited record it is. Bugs found on that torch alone are
added to the written file by hand afterwards.

``--replay`` also records, in each bug's ``checked`` table of the source
(and of the derived file), what its forms gave on this torch: how many
reproduce, how many now fail another way, or that it is fixed there. A bug
is reported against the newest torch it still fails on; without ``--into``
only that record is written (the way to re-check a baseline on its own torch).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from pytest_cgraph.registry.bugs_file import (
    BUG_HEADER,
    kept_bugs_text,
    recompute_severities,
    set_checked,
)
from pytest_cgraph.registry.entries import BUGS_FILE, Bug, read_bugs, registry_files


def derive(
    source: Path,
    rechecked: Path,
    into: Path,
    torch_version: str,
    replayed_by: str = "scripts/gpu_check.py",
) -> tuple[int, int]:
    """Copy the re-checked entries and write the kept bugs; (entries, bugs) written."""
    into.mkdir(parents=True, exist_ok=True)
    adopted = set()
    for entry in sorted(rechecked.glob("*.toml")):
        if entry.name == BUGS_FILE:
            continue
        shutil.copyfile(entry, into / entry.name)
        adopted.add(entry.name)
    text = kept_bugs_text((source / BUGS_FILE).read_text(), adopted)
    note = (
        f"# Derived from {source.name}: its entries that reproduced on torch {torch_version}\n"
        f"# (replayed there by {replayed_by}), under the bugs they are forms of.\n"
    )
    (into / BUGS_FILE).write_text(note + text)
    recompute_severities(into)
    return len(adopted), text.count(BUG_HEADER)


def replay_all(source: Path, workers: int) -> dict[str, str]:
    """Every entry of ``source`` replayed on this torch: file name to verdict."""
    from pytest_cgraph.recording.repro import replay_verdict

    entries = list(registry_files(source))
    # Spawned, not forked: a verdict must not depend on what the process that
    # asks for it did before (a test run's earlier tests, under pytest).
    spawned = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=spawned) as pool:
        replays = pool.map(replay_verdict, entries)
        return {
            entry.name: replay.verdict.value for entry, replay in zip(entries, replays, strict=True)
        }


def checked_result(bug: Bug, verdicts: dict[str, str]) -> str:
    """What a bug's forms gave: ``7 of 8 forms reproduce, 1 fails another way``;
    ``fixed: ...`` where none fails any more."""
    from pytest_cgraph.oracle.driver import ReplayVerdict

    counts = Counter(verdicts.get(form, "not replayed") for form in bug.forms)
    same = counts[ReplayVerdict.REPRODUCED.value]
    other = counts[ReplayVerdict.REPRODUCED_DIFFERENTLY.value]
    unreplayed = counts["not replayed"]
    if not same and not other and not unreplayed:
        return "fixed: " + (
            "its form no longer fails"
            if len(bug.forms) == 1
            else f"none of its {len(bug.forms)} forms fails"
        )
    if len(bug.forms) == 1:
        return "its form " + (
            "reproduces" if same else "fails another way" if other else "was not replayed"
        )
    parts = [f"{same} of {len(bug.forms)} forms reproduce"]
    if other:
        parts.append(f"{other} fail{'s' if other == 1 else ''} another way")
    if unreplayed:
        parts.append(f"{unreplayed} not replayed")
    return ", ".join(parts)


def replay_and_record(source: Path, into: Path | None, workers: int) -> str:
    """``--replay``: the whole re-check on this torch; the line to print."""
    import torch

    version = torch.__version__
    verdicts = replay_all(source, workers)
    results = {bug.id: checked_result(bug, verdicts) for bug in read_bugs(source)}
    set_checked(source, version, results)
    fixed = sum(result.startswith("fixed") for result in results.values())
    summary = Counter(verdicts.values())
    line = (
        f"torch {version}: {len(verdicts)} entries of {source.name} replayed: "
        + ", ".join(f"{count} {verdict}" for verdict, count in sorted(summary.items()))
        + f"; {len(results)} bugs, {fixed} fixed here"
    )
    if into is None:
        return line
    reproducing = into.parent / f".{into.name}-reproducing"
    shutil.rmtree(reproducing, ignore_errors=True)
    reproducing.mkdir(parents=True)
    try:
        for name, verdict in verdicts.items():
            if verdict == "REPRODUCED":
                shutil.copyfile(source / name, reproducing / name)
        entries, bugs = derive(source, reproducing, into, version, "scripts/derive_baseline.py")
    finally:
        shutil.rmtree(reproducing, ignore_errors=True)
    set_checked(into, version, {b.id: results[b.id] for b in read_bugs(into)})
    return f"{line}\n{entries} entries, {bugs} bugs written to {into}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, required=True, help="the baseline re-checked")
    how = parser.add_mutually_exclusive_group(required=True)
    how.add_argument("--replay", action="store_true", help="re-check it here, on this torch")
    how.add_argument("--rechecked", type=Path, help="its entries that reproduced elsewhere")
    parser.add_argument("--torch", help="with --rechecked: the torch they reproduced on")
    parser.add_argument("--into", type=Path, help="the baseline to write")
    parser.add_argument(
        "--workers", type=int, default=os.cpu_count() or 1, help="replays run at once"
    )
    args = parser.parse_args(argv)
    if not (args.source / BUGS_FILE).is_file():
        print(f"error: {args.source} has no {BUGS_FILE}", file=sys.stderr)
        return 2
    if args.into is not None and (args.into / BUGS_FILE).exists():
        # Deriving rewrites its bugs file from the source's: the bugs and forms added
        # there by hand (found on that torch alone, re-recorded there) would be lost.
        print(
            f"error: {args.into} has a {BUGS_FILE} already: re-check it in place "
            f"(--source {args.into} --replay, without --into), or remove it first",
            file=sys.stderr,
        )
        return 2
    if args.replay:
        print(replay_and_record(args.source, args.into, args.workers))
        return 0
    if args.torch is None or args.into is None:
        print("error: --rechecked needs --torch and --into", file=sys.stderr)
        return 2
    entries, bugs = derive(args.source, args.rechecked, args.into, args.torch)
    print(f"{entries} entries, {bugs} bugs written to {args.into}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
