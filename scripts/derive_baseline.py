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
import re
import shutil
import sys
from pathlib import Path

from pytest_cgraph.registry import read_bugs
from pytest_cgraph.severity import severity_of_entry, worst

BUGS_FILE = "bugs.toml"
BUG_HEADER = "[[bug]]\n"


def kept_bugs_text(text: str, adopted: set[str]) -> str:
    """``text`` (a bugs file) with every form not in ``adopted`` dropped, and every
    bug left without forms dropped whole. The preamble before the first bug stays."""
    preamble, *blocks = text.split(BUG_HEADER)
    kept = []
    for block in blocks:
        lines = block.splitlines(keepends=True)
        out, in_forms, forms = [], False, 0
        for line in lines:
            stripped = line.strip()
            if stripped.startswith("forms = ["):
                in_forms = True
            elif in_forms and stripped == "]":
                in_forms = False
            elif in_forms and stripped.startswith('"'):
                name = stripped.strip('",')
                if name not in adopted:
                    continue
                forms += 1
            out.append(line)
        if forms:
            kept.append("".join(out))
    return preamble + "".join(BUG_HEADER + block for block in kept)


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


def recompute_severities(directory: Path) -> list[str]:
    """Set each bug's severity to the worst of its forms in ``directory`` (a bug that
    kept only some forms may be less bad there); the ids of the bugs changed."""
    path = directory / BUGS_FILE
    text = path.read_text()
    changed = []
    for bug in read_bugs(directory):
        now = worst([severity_of_entry((directory / form).read_text()) for form in bug.forms])
        if now is bug.severity:
            continue
        block = re.compile(rf'(id = "{re.escape(bug.id)}"\n(?:.*\n)*?severity = )"[a-z]+"')
        text, count = block.subn(rf'\1"{now.value}"', text, count=1)
        if count:
            changed.append(bug.id)
    path.write_text(text)
    return changed


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
