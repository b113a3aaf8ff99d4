"""How many entries of a registry are redundant: known without themselves.

    python scripts/registry_redundancy.py                      # the running torch's baseline
    python scripts/registry_redundancy.py pytest_cgraph/known/torch-2.13 --list

For every entry, the registry less that entry is asked whether it still
claims the entry's own failure (its signature, its layer, its program's
calls): if so, the entry is a redundant form of a bug the registry knows
anyway, and a campaign meeting that program would not have reported it as
new. Counted twice: by entry (each entry narrowed by its own minimal
program's calls, the rule before bugs files) and by bug (entries grouped by
the directory's bugs file narrow by their bug's essential calls). The
difference is what grouping by bug buys: mechanisms met through other
calls that no longer need an entry of their own. Torch-free.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from pytest_cgraph.failures import ends_process
from pytest_cgraph.registry.entries import (
    KnownBug,
    Registry,
    program_ops,
    recorded_settings,
    shipped_baselines,
)


@dataclasses.dataclass(frozen=True)
class RecordedFailure:
    """As much of a :class:`~pytest_cgraph.oracle.difference.Difference` as matching
    reads, for the failure an entry was recorded for (from its header alone)."""

    signature: str
    message: str | None
    ends_process: bool


def recorded_failure(entry: KnownBug) -> RecordedFailure:
    """The failure ``entry`` stands for: a crash's signature carries its message
    (what the registry needs to know is that it has one), a dead process its site."""
    crashed = entry.signature.startswith("crash-")
    return RecordedFailure(
        entry.signature, "recorded" if crashed else None, ends_process(entry.signature)
    )


def by_entry(entry: KnownBug) -> KnownBug:
    """``entry`` as if its directory had no bugs file: narrowed by its own calls."""
    if getattr(entry, "bug", None) is None:
        return entry
    return dataclasses.replace(entry, bug=None, essential=None)


def redundant(entries: list[KnownBug]) -> list[tuple[KnownBug, KnownBug]]:
    """Each entry the others claim, with the entry that claims it."""
    found = []
    for entry in entries:
        others = Registry([other for other in entries if other is not entry])
        ops = program_ops(str(recorded_settings(entry.path).get("program", "")))
        known = others.match(recorded_failure(entry), lambda entry=entry: entry.layer, ops)  # type: ignore[arg-type]
        if known is not None:
            found.append((entry, known))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", nargs="?", type=Path, help="a registry directory")
    parser.add_argument("--list", action="store_true", help="name each redundant entry")
    args = parser.parse_args(argv)
    directory = args.directory
    if directory is None:
        baselines = shipped_baselines()
        directory = baselines[max(baselines)]
    entries = Registry.load([directory]).entries()
    print(f"{directory}: {len(entries)} entries")
    for rule, chosen in (("by entry", [by_entry(e) for e in entries]), ("by bug", entries)):
        found = redundant(chosen)
        print(f"  {rule}: {len(found)} redundant (known without themselves)")
        if args.list:
            for entry, known in found:
                print(f"    {entry.path.name}  <-  {known.path.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
