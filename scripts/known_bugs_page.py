"""Write ``docs/known-bugs.md`` from the shipped baselines' bugs files.

    python scripts/known_bugs_page.py            # regenerate (runs each plain script)
    python scripts/known_bugs_page.py --python 2.14=/path/to/venv/bin/python
    python scripts/known_bugs_page.py --check    # is the page in step with the bugs files?

One entry per bug (one mechanism), however many baselines hold it: bugs
grouped by severity, silent first; each with its id, title, upstream status,
the torch releases it was checked on and what each gave, the baselines that
hold it, its mechanism, and a verified plain torch script
(:mod:`pytest_cgraph.recording.plain`). The script is written against the newest torch
the bug still fails on, as a report to file would be: from the newest
baseline holding the bug whose torch can be run here, this interpreter's or
one given with ``--python RELEASE=PYTHON`` (a venv with that torch). Where no
form yields a script, the page shows the program of its first form and why
(a form recorded on CUDA cannot be run on a machine without a GPU: the page
says so). Generating runs every script, a few minutes; ``--check`` reads only
the bugs files and the page, so a test can tell a bugs file edited without
the page.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pytest_cgraph.recording.plain import make_plain
from pytest_cgraph.registry.entries import (
    BASELINE_ROOT,
    BUGS_FILE,
    Bug,
    read_bugs,
    recorded_settings,
    version_order,
)
from pytest_cgraph.registry.severity import ORDER, Severity

PAGE = Path(__file__).resolve().parents[1] / "docs" / "known-bugs.md"
#: Forms tried per bug before the page shows a program instead of a script.
FORMS_TRIED = 3
#: A plain script's run, limited: ``make_plain`` bounds each of its runs itself.
SCRIPT_LIMIT = 900.0
#: Headings of the severity groups.
GROUPS = {
    Severity.SILENT: "Silent wrong results",
    Severity.METADATA: "Wrong metadata or identity",
    Severity.CRASH: "Compiled raises where eager runs",
    Severity.UNSUPPORTED: "Documented limitations",
}


def _release(name: str) -> tuple[int, ...]:
    """``torch-2.14`` or ``2.14.1+cu130`` -> ``(2, 14)``."""
    return version_order(name)[:2]


def baselines() -> list[Path]:
    """The shipped baselines with a bugs file, newest torch first."""
    found = [path for path in BASELINE_ROOT.glob("torch-*") if (path / BUGS_FILE).is_file()]
    return sorted(found, key=lambda path: _release(path.name.removeprefix("torch-")), reverse=True)


@dataclass(frozen=True)
class PageBug:
    """One bug as the page shows it: the newest baseline's record of it, and every
    baseline holding it (newest first) with its record there."""

    bug: Bug
    held: tuple[tuple[Path, Bug], ...]

    @property
    def checked(self) -> dict[str, str]:
        """What its forms gave on each torch, from every baseline's record."""
        merged: dict[str, str] = {}
        for _, bug in reversed(self.held):
            merged.update(bug.checked)
        return merged


def page_bugs() -> list[PageBug]:
    """Every bug of every baseline, once, in the newest baseline's order."""
    held: dict[str, list[tuple[Path, Bug]]] = {}
    for directory in baselines():
        for bug in read_bugs(directory):
            held.setdefault(bug.id, []).append((directory, bug))
    return [PageBug(records[0][1], tuple(records)) for records in held.values()]


def bug_line(bug: Bug) -> str:
    """The line that names a bug on the page; ``--check`` looks for it verbatim."""
    return f"### `{bug.id}` ({bug.severity.value}): {bug.title}"


def baselines_line(directory: Path, count: int) -> str:
    """The summary line of one baseline; ``--check`` looks for it verbatim."""
    return f"- `{directory.name}`: {count} bugs"


def _device(path: Path) -> str:
    return str(recorded_settings(path).get("device") or "cpu")


@dataclass(frozen=True)
class Script:
    """A form's plain script, if one verified, and the verdict line."""

    text: str | None
    verdict: str

    @property
    def verified(self) -> bool:
        return self.text is not None and self.verdict.startswith("VERIFIED")


#: Scripts by (interpreter, entry text): a form shared by two baselines is run once.
_SCRIPTS: dict[tuple[str | None, str], Script] = {}


def plain_script(path: Path, python: str | None) -> Script:
    """``path``'s plain script, made here (``python`` None) or by another interpreter."""
    key = (python, path.read_text())
    if key in _SCRIPTS:
        return _SCRIPTS[key]
    if python is None:
        result = make_plain(path)
        script = Script(result.script if result.verified else None, result.verdict)
    else:
        with tempfile.TemporaryDirectory(prefix="cgraph-page-") as directory:
            out = Path(directory) / "plain.py"
            try:
                run = subprocess.run(
                    [python, "-m", "pytest_cgraph.plain", str(path), "--out", str(out)],
                    capture_output=True,
                    text=True,
                    timeout=SCRIPT_LIMIT,
                )
            except subprocess.TimeoutExpired:
                script = Script(None, f"NOT VERIFIED: no verdict in {SCRIPT_LIMIT:.0f} s")
            else:
                lines = [line for line in run.stdout.splitlines() if line.strip()]
                verdict = lines[-1] if lines else f"no verdict (exit {run.returncode})"
                text = out.read_text() if run.returncode == 0 and out.exists() else None
                script = Script(text, verdict)
    _SCRIPTS[key] = script
    return script


def example(entry: PageBug, pythons: dict[tuple[int, ...], str]) -> str:
    """A bug's plain script, verified on the newest torch that can run one of its
    baselines here, or its first form's program and why none is shown."""
    here = _torch_release()
    tried: list[str] = []
    # Newest torch first; a baseline of a torch not installed here last, run here
    # (its forms may reproduce on this torch too: the script's first line says which).
    runnable = [(d, b, _release(d.name.removeprefix("torch-"))) for d, b in entry.held]
    order = [held for held in runnable if held[2] == here or held[2] in pythons]
    order += [held for held in runnable if held not in order]
    for directory, bug, release in order:
        python = pythons.get(release) if release != here else None
        for form in _shortest_first(directory, bug.forms)[:FORMS_TRIED]:
            path = directory / form
            if _device(path).startswith("cuda"):
                tried.append(f"{form}: recorded on CUDA, not run here")
                continue
            script = plain_script(path, python)
            if script.verified and script.text:
                return (
                    f"Plain script ({script.verdict.removeprefix('VERIFIED: ')}; from "
                    f"`{directory.name}/{form}`):\n\n```python\n{script.text.rstrip()}\n```\n"
                )
            tried.append(f"{form}: {script.verdict}")
    directory, bug = next(((d, b) for d, b in entry.held if b.forms), entry.held[0])
    if not bug.forms:
        # Written by hand from a finding no repro file holds yet (its mechanism says how).
        return "No form recorded yet: no program to replay (the mechanism says how it shows).\n"
    program = str(recorded_settings(directory / bug.forms[0]).get("program", "")).rstrip()
    why = "; ".join(tried)
    return (
        f"No plain script verified here ({why}). The program of "
        f"`{directory.name}/{bug.forms[0]}` (`python -m pytest_cgraph.record --export "
        f"{directory.name}/{bug.forms[0]} OUT.py && python OUT.py` replays it):\n\n"
        f"```python\n{program}\n```\n"
    )


def _shortest_first(directory: Path, forms: tuple[str, ...]) -> list[str]:
    """A bug's forms, the shortest program first: its plain script is likely the
    shortest too, and a reader files the shortest."""

    def length(form: str) -> int:
        program = str(recorded_settings(directory / form).get("program", ""))
        return len([line for line in program.splitlines() if line.strip()])

    return sorted(forms, key=length)


def _torch_release() -> tuple[int, ...]:
    import torch

    return _release(torch.__version__)


def _entry(entry: PageBug, pythons: dict[tuple[int, ...], str], with_examples: bool) -> str:
    bug = entry.bug
    parts = [f"\n{bug_line(bug)}\n\n", f"- upstream: {bug.upstream}\n"]
    if entry.checked:
        results = "; ".join(
            f"{version}: {result}"
            for version, result in sorted(entry.checked.items(), key=lambda i: version_order(i[0]))
        )
        parts.append(f"- checked on torch {results}\n")
    parts.append(
        "- baselines: "
        + ", ".join(f"`{d.name}` ({len(b.forms)} forms)" for d, b in entry.held)
        + "\n"
    )
    parts.append(f"- essential calls: {', '.join(f'`{c}`' for c in bug.essential) or 'none'}\n")
    newest, _ = entry.held[0]
    forms = ", ".join(f"`{form}`" for form in bug.forms) or "none yet"
    parts.append(
        f"- forms in `{newest.name}`: {forms}\n\n" + " ".join(bug.mechanism.split()) + "\n\n"
    )
    if with_examples:
        parts.append(example(entry, pythons))
    return "".join(parts)


def render(with_examples: bool = True, pythons: dict[tuple[int, ...], str] | None = None) -> str:
    """The whole page."""
    entries = page_bugs()
    parts = [
        "# Known torch differences\n\n",
        "Generated by `scripts/known_bugs_page.py` from the bugs files of the shipped "
        "baselines (`pytest_cgraph/known/torch-*/bugs.toml`); do not edit by hand. A bug "
        "is one mechanism; its forms are the registry entries (programs) by which "
        "campaigns met it. A failure matching a form's signature and layer, or a bug's "
        "essential calls, is reported as that bug, seen again. Each bug is listed once, "
        "with the torch releases it was checked on; its plain script is written against "
        "the newest of them it still fails on.\n\n",
        "Essential calls: a program makes every item listed; `a|b` is one of them, "
        "`a+b` both, and `+` binds tighter (`a|b+c` is a, or b with c). Names in "
        "capitals say how the program is run rather than a call: "
        "`INPUTS_BY_CALL` (its arguments differ by call), `ADVANCE` (the next call's "
        "arguments come from this call's), `ALIASED_INPUTS` (two arguments are views "
        "of one tensor), `COMPILE` (compiled in stages), `AUTOCAST` (an autocast around "
        "each call), `CONFIG.X` (compiled under the setting X). Indexing is an op too: "
        "`[:]` a slice, `[i]` an integer index, `[t]` a tensor index, `[]=` an "
        "assignment; `.data=` assigns `.data`, `.grad` reads it and `.grad=` assigns it; "
        "`isub` (`iadd`, `imul`...) an augmented assignment to a name (`w -= v`), as "
        "Python's `operator` module names it.\n\n",
        f"{len(entries)} bugs: "
        + ", ".join(
            f"{sum(e.bug.severity is s for e in entries)} {s.value}"
            for s in ORDER
            if any(e.bug.severity is s for e in entries)
        )
        + ". The baselines:\n\n",
        *(f"{baselines_line(d, len(read_bugs(d)))}\n" for d in baselines()),
    ]
    for severity in ORDER:
        group = [e for e in entries if e.bug.severity is severity]
        if group:
            parts.append(f"\n## {GROUPS[severity]} ({len(group)})\n")
            parts += [_entry(e, pythons or {}, with_examples) for e in group]
    return "".join(parts)


def stale(page: str) -> list[str]:
    """What the page lacks of the bugs files: a bug line per bug, each baseline's line."""
    missing = [
        baselines_line(d, len(read_bugs(d)))
        for d in baselines()
        if baselines_line(d, len(read_bugs(d))) not in page
    ]
    return missing + [bug_line(e.bug) for e in page_bugs() if bug_line(e.bug) not in page]


def _python_option(text: str) -> tuple[tuple[int, ...], str]:
    release, _, python = text.partition("=")
    if not python or not _release(release):
        raise argparse.ArgumentTypeError(
            f"{text!r}: give RELEASE=PYTHON, e.g. 2.14=venv/bin/python"
        )
    return _release(release), python


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only say whether the page is stale")
    parser.add_argument("--out", type=Path, default=PAGE, help=f"the page ({PAGE.name})")
    parser.add_argument(
        "--python",
        type=_python_option,
        action="append",
        default=[],
        metavar="RELEASE=PYTHON",
        help="an interpreter with that torch release, for the baselines of that release",
    )
    args = parser.parse_args(argv)
    if args.check:
        missing = stale(args.out.read_text() if args.out.exists() else "")
        for line in missing:
            print(f"missing: {line}")
        if missing:
            print(f"{args.out} is stale: run python scripts/known_bugs_page.py", file=sys.stderr)
        return 1 if missing else 0
    args.out.write_text(render(pythons=dict(args.python)))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
