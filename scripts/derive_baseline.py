"""Derive a baseline for another torch release from entries re-checked there.

    python scripts/derive_baseline.py --source pytest_cgraph/known/torch-2.13 \\
        --rechecked GPU_CHECK/known-rechecked --torch 2.11.0+cu130 \\
        --into pytest_cgraph/known/torch-2.11

``scripts/gpu_check.py`` replays the nearest baseline's entries on a torch
that has none, and keeps those that reproduced there (``known-rechecked/``
in its archive). This copies them into ``--into`` and writes its bugs file:
the source's bugs, each with only the forms that reproduced, and none whose
forms all stopped reproducing; comments and layout are kept, so the file
stays the hand-edited record it is. Bugs found on that torch alone are added
to the written file by hand afterwards.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from pytest_cgraph.bugs_file import BUG_HEADER, kept_bugs_text, recompute_severities
from pytest_cgraph.registry import BUGS_FILE


def derive(source: Path, rechecked: Path, into: Path, torch_version: str) -> tuple[int, int]:
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
        f"# (replayed there by scripts/gpu_check.py), under the bugs they are forms of.\n"
    )
    (into / BUGS_FILE).write_text(note + text)
    recompute_severities(into)
    return len(adopted), text.count(BUG_HEADER)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, required=True, help="the baseline re-checked")
    parser.add_argument("--rechecked", type=Path, required=True, help="its reproducing entries")
    parser.add_argument("--torch", required=True, help="the torch they reproduced on")
    parser.add_argument("--into", type=Path, required=True, help="the baseline to write")
    args = parser.parse_args(argv)
    if not (args.source / BUGS_FILE).is_file():
        print(f"error: {args.source} has no {BUGS_FILE}", file=sys.stderr)
        return 2
    entries, bugs = derive(args.source, args.rechecked, args.into, args.torch)
    print(f"{entries} entries, {bugs} bugs written to {args.into}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
