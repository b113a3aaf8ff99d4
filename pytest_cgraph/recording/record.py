"""Record a hand-written program as a known difference: ``python -m pytest_cgraph.record``.

A team's registry (``--cgraph-known DIR``) and the baseline shipped with
this package are directories of entries. This command turns a program
file (the protocol every drawn program follows: ``program``, ``inputs(k)``,
optionally ``ITERS``) into one: it checks the program, locates the first
diverging layer, verifies the standalone repro exactly as a campaign would
have, and writes its entry: ``NAME.toml``, a TOML data file holding the
repro's header (as comments) and its program and settings, without the
oracle: a registry of many bugs holds one oracle, the installed one. A
program that shows no difference is refused, so that a registry only ever
holds reproducing bugs.

    python -m pytest_cgraph.record PROGRAM.py --backend aot_eager --into known/
    python -m pytest_cgraph.record --refresh known/
    python -m pytest_cgraph.record --export known/ENTRY.toml OUT.py && python OUT.py
    python -m pytest_cgraph.record --fold REPRO.py --bug ID --into known/

``--refresh`` re-records every file of a registry from its own program and
backend, so that its headers say what this version finds (a repro file, or
an entry of the older ``.py`` kind, becomes a ``.toml`` entry of the same
name), keeping what was written into it by hand (where it was found, its
declared ``ops`` and the comment above them); one that no longer
reproduces is left as it is and named.
``--export`` writes an entry's standalone repro file, the oracle pasted in:
how an entry is run by hand, where pytest-cgraph is not installed too, or
attached to a bug report.
``--fold`` adds a finding to a bug of the registry's bugs file as a new form:
a repro file a run wrote (verified when it was written) becomes an entry of
the registry without being run again, an entry is copied, and the bug lists
it, refused in one line where the bug does not claim it (its essential
calls). The bug is then known through that form too.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_cgraph.failures import Case, Failure, Verdict
from pytest_cgraph.oracle.errors import ConfigurationError

if TYPE_CHECKING:
    from pytest_cgraph.checking.checkers import IsolatedChecker


def record(
    source: str,
    *,
    backend: str,
    device: str,
    iters: int | None,
    into: Path,
    origin: str,
    setup_modules: tuple[str, ...] = (),
    checker: IsolatedChecker | None = None,
    threads: int | None = None,
) -> Failure:
    """Check ``source`` and write its repro into ``into``; the failure, with its repro.

    The check runs in a child process (``checker``'s, or one of its own), so
    that a program that kills its process, a segfault in torch, is recorded
    like any other difference instead of killing the command; the child
    imports ``setup_modules`` first (those that register ``backend``). Raises
    :class:`ValueError` if the program shows no difference (or eager rejects
    it): there is nothing to record.
    """
    from pytest_cgraph.checking.checkers import IsolatedChecker
    from pytest_cgraph.oracle.protocol import ProgramSpec, load_source, source_filename
    from pytest_cgraph.recording.repro import make_repro

    spec = ProgramSpec.of(load_source(source, source_filename(source)))
    iterations = iters or spec.iters or 5
    case = Case(
        source=source,
        backend=backend,
        device=device,
        iters=iterations,
        family="recorded",
        nodeid=origin,
        setup_modules=setup_modules,
        replay=f"python -m pytest_cgraph.record {origin} --backend {backend}"
        + "".join(f" --import {module}" for module in setup_modules)
        + (f" --threads {threads}" if threads is not None else ""),
        threads=threads,
    )
    child = checker or IsolatedChecker(setup_modules, timeout=None)
    try:
        outcome = child.check(case)
    finally:
        if checker is None:
            child.close()
    if outcome.verdict is Verdict.INVALID:
        raise ValueError(f"eager rejects the program: {outcome.reason}")
    if outcome.verdict is Verdict.PASS:
        raise ValueError(f"no difference: eager and {backend} agree on {iterations} iterations")
    if outcome.verdict is Verdict.ERROR or outcome.difference is None:
        raise ValueError(f"the check itself failed: {outcome.reason}")
    return make_repro(Failure(case, outcome.difference), into, entry=True)


@dataclass(frozen=True)
class Refreshed:
    """What became of one registry file: re-recorded, or ``kept`` as it was (and why),
    as a flag the command's exit status is read from, and the line it prints."""

    kept: bool
    line: str


def refresh(directory: Path) -> list[Refreshed]:
    """Re-record every repro file of ``directory`` in place; what became of each file."""
    from pytest_cgraph.checking.checkers import IsolatedChecker
    from pytest_cgraph.registry.entries import is_repro_file, registry_files

    checker = IsolatedChecker((), timeout=None)  # one child for all: torch is imported once
    try:
        return [
            _refresh_one(path, checker) for path in registry_files(directory) if is_repro_file(path)
        ]
    finally:
        checker.close()


def _refresh_one(path: Path, checker: IsolatedChecker) -> Refreshed:
    """Re-record one registry file in place; what became of it."""
    import tempfile

    from pytest_cgraph.registry.entries import (
        recorded_modules,
        recorded_settings,
        recorded_threads,
    )
    from pytest_cgraph.registry.repro_files import ENTRY_SUFFIX

    target = path.with_suffix(ENTRY_SUFFIX)
    if target != path and target.exists():
        return _kept(path, f"{target.name} is there already")
    settings = recorded_settings(path)
    with tempfile.TemporaryDirectory(prefix="cgraph-refresh-") as scratch:
        try:
            failure = record(
                str(settings["program"]),
                backend=str(settings["backend"]),
                device=str(settings["device"]),
                iters=None,
                into=Path(scratch),
                origin=path.name,
                setup_modules=recorded_modules(settings),
                checker=checker,
                threads=recorded_threads(settings),
            )
        except (ValueError, ConfigurationError) as error:
            return _kept(path, str(error))
        written = sorted(Path(scratch).glob(f"*{ENTRY_SUFFIX}"))
        if failure.repro is None or not failure.repro.verified or len(written) != 1:
            return _kept(path, "the new file did not verify")
        _keep_hand_written(written[0], path.read_text(errors="replace"))
        # The file keeps its name (an entry's suffix): two entries may share
        # a signature (different programs of it), and neither may replace the other.
        written[0].replace(target)
    if target != path:
        path.unlink()  # a .py file, now its entry
    return Refreshed(kept=False, line=f"refreshed {target.name}")


def _kept(path: Path, why: str) -> Refreshed:
    """A registry file left as it was, and why."""
    return Refreshed(kept=True, line=f"KEPT AS IT WAS {path.name}: {why}")


#: An entry's provenance line, and its hand-declared ``ops`` with the comment
#: lines right above it (why those calls; see ``registry.read_entry``).
_FOUND_BY = re.compile(r"^# found by: .*$", re.MULTILINE)
#: What the machine must have to show it (``registry.requirements``), written by hand.
_REQUIRES = re.compile(r"^# requires: .*\n", re.MULTILINE)
_DECLARED_OPS = re.compile(r"(?:^#.*\n)*^ops = .*$", re.MULTILINE)


def _keep_hand_written(entry: Path, old: str) -> None:
    """Carry into an entry's re-recorded text what was written into the old one:
    where it was found (the recorder would name the entry itself), what the
    machine must have to show it (``# requires:``, above ``# found by:``) and
    its declared ``ops``, the comment that says why included, verbatim. The
    recorder writes none of them."""
    from pytest_cgraph.registry.repro_files import ENTRY_SUFFIX

    text = entry.read_text()
    found = _FOUND_BY.search(old)
    if found is not None:
        text = _FOUND_BY.sub(lambda _: found.group(0), text, count=1)
    requires = _REQUIRES.search(old)
    if requires is not None and _REQUIRES.search(text) is None:
        head, found_line, tail = text.partition("\n# found by: ")
        if not found_line:  # no provenance line: right below the file's first line
            head, found_line, tail = text.partition("\n")
        text = f"{head}\n{requires.group(0)}{found_line[1:]}{tail}"
    # Before the program: an entry's own keys, never a line of its program.
    declared = _DECLARED_OPS.search(old.partition("\nprogram = '''")[0])
    if declared is not None and entry.suffix == ENTRY_SUFFIX:
        head, device, rest = text.partition("\ndevice = ")
        line, newline, tail = rest.partition("\n")
        text = f"{head}{device}{line}{newline}{declared.group(0)}\n{tail}"
    entry.write_text(text)


def fold(finding: Path, bug_id: str, into: Path) -> Path:
    """Write ``finding`` (a repro file or an entry) into ``into`` as an entry and list it
    among the forms of ``bug_id``; the entry's path. Nothing is left behind on refusal."""
    from pytest_cgraph.recording.repro import entry_text, header_of, recorded_case
    from pytest_cgraph.registry.bugs_file import FoldError, add_form
    from pytest_cgraph.registry.repro_files import is_entry, is_own_text

    text = finding.read_text(errors="replace")
    if not is_own_text(text):
        raise FoldError(f"{finding} is no repro file or entry of pytest-cgraph")
    if not (into / "bugs.toml").is_file():
        raise FoldError(f"{into} has no bugs.toml: --fold adds a form to one of its bugs")
    if is_entry(text) and finding.resolve().parent == into.resolve():
        # An entry of this registry already (``record --into`` wrote it): listed, not copied.
        add_form(into, bug_id, finding.name)
        return finding
    stem = finding.stem
    target = into / f"{stem}.toml"
    number = 1
    while target.exists():
        number += 1
        target = into / f"{stem}-{number}.toml"
    target.write_text(
        text if is_entry(text) else entry_text(header_of(text), recorded_case(finding))
    )
    try:
        add_form(into, bug_id, target.name)
    except BaseException:  # refused, or anything else: nothing is left behind
        target.unlink()
        raise
    return target


def export_entry(entry: Path, out: Path) -> int:
    """``--export ENTRY OUT``: 0 once OUT is written, 2 if ENTRY is not a registry file."""
    from pytest_cgraph.recording.repro import export
    from pytest_cgraph.registry.entries import read_entry

    if read_entry(entry) is None:
        print(f"error: {entry} is not a pytest-cgraph entry or repro file", file=sys.stderr)
        return 2
    out.write_text(export(entry))
    print(f"wrote {out}: python {out} replays {entry.name} without pytest-cgraph")
    return 0


def _thread_count(text: str) -> int:
    """``--threads``: a positive whole number, or argparse's one-line error."""
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a thread count (a whole number >= 1)")
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_cgraph.record",
        description="Write a verified repro file of a program that differs under compile.",
    )
    parser.add_argument("program", type=Path, nargs="?", help="a program file: program, inputs(k)")
    parser.add_argument("--refresh", type=Path, help="re-record every repro of this directory")
    parser.add_argument("--backend", default="aot_eager", help="compile backend (aot_eager)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (cpu)")
    parser.add_argument(
        "--import",
        dest="modules",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE first: one that registers the backend (repeatable)",
    )
    parser.add_argument("--iters", type=int, default=None, help="iterations (the file's ITERS)")
    parser.add_argument(
        "--threads",
        type=_thread_count,
        default=None,
        help="torch's intra-op threads to check with, kept in the entry (torch's default)",
    )
    parser.add_argument("--into", type=Path, help="the registry directory")
    parser.add_argument(
        "--export",
        type=Path,
        nargs=2,
        metavar=("ENTRY", "OUT"),
        help="write ENTRY's standalone repro file (the oracle pasted in) to OUT",
    )
    parser.add_argument(
        "--fold", type=Path, metavar="FINDING", help="add FINDING to --bug ID of --into's bugs"
    )
    parser.add_argument("--bug", help="the bug --fold adds a form to")
    arguments = parser.parse_args(argv)
    if arguments.export is not None:
        return export_entry(*arguments.export)
    if arguments.fold is not None:
        if arguments.bug is None or arguments.into is None:
            parser.error("--fold FINDING needs --bug ID and --into DIR")
        from pytest_cgraph.registry.bugs_file import FoldError

        try:
            entry = fold(arguments.fold, arguments.bug, arguments.into)
        except (FoldError, OSError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        print(f"{entry}: a form of {arguments.bug}")
        return 0
    if arguments.refresh is not None:
        if not arguments.refresh.is_dir():
            parser.error(f"--refresh: {arguments.refresh} is not a directory")
        results = refresh(arguments.refresh)
        print("\n".join(result.line for result in results))
        return 1 if any(result.kept for result in results) else 0
    if arguments.program is None or arguments.into is None:
        parser.error("give a PROGRAM file and --into DIR (or --refresh DIR)")
    try:
        source = arguments.program.read_text()
    except OSError as error:
        print(f"error: cannot read {arguments.program}: {error.strerror}", file=sys.stderr)
        return 2
    try:
        failure = record(
            source,
            backend=arguments.backend,
            device=arguments.device,
            iters=arguments.iters,
            into=arguments.into,
            origin=arguments.program.name,
            setup_modules=tuple(arguments.modules),
            threads=arguments.threads,
        )
    except (ValueError, ConfigurationError) as error:
        print(f"error: {arguments.program}: {error}", file=sys.stderr)
        return 1
    assert failure.repro is not None
    print(f"{failure.signature}: {failure.repro.line()}")
    return 0 if failure.repro.verified else 1


if __name__ == "__main__":
    sys.exit(main())
