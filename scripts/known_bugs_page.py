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
import functools
import re
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from pytest_cgraph.recording.plain import make_plain
from pytest_cgraph.registry.entries import (
    BASELINE_ROOT,
    BUGS_FILE,
    Bug,
    Registry,
    read_bugs,
    recorded_settings,
)
from pytest_cgraph.registry.severity import ORDER, Severity, severity_of_entry
from pytest_cgraph.registry.standing import fixed_in, version_order

PAGE = Path(__file__).resolve().parents[1] / "docs" / "known-bugs.md"
#: Forms tried per bug before the page shows a program instead of a script.
FORMS_TRIED = 3
#: A plain script's run, limited: ``make_plain`` bounds each of its runs itself.
SCRIPT_LIMIT = 900.0
#: Headings of the severity groups.
#: The heading and preface of the bugs outside torch.compile's contract.
OUTSIDE = "Outside torch.compile's contract"
OUTSIDE_WHY = (
    "Differences whose programs step outside what torch.compile documents: an API torch "
    "says compile does not support or guard, a non-default setting, a private API, object "
    "identity alone, or eager's own undefined behaviour. Real, and worth knowing when a "
    "model meets one; not counted among the bugs to file."
)
#: The heading and preface of the bugs the newest torch no longer shows.
FIXED = "Fixed on the newest torch"
FIXED_WHY = (
    "Bugs an older baseline holds that the newest torch they were checked on no longer "
    "shows: history to the people who would fix them, kept so a run on the older torch "
    "names what it meets."
)
#: How the counts say each way a bug was found, in this order.
FOUND_WORDS = {
    "campaign": "campaigns",
    "user-test": "users' tests",
    "report": "tracker reports reproduced",
    "probe": "probes written by hand",
    "not told": "not told",
}
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

    @property
    def fixed(self) -> str | None:
        """The torch it was found fixed on, where that is the newest torch it was
        checked on and the newest baseline no longer holds it."""
        newest = baselines()[0]
        if any(directory == newest for directory, _ in self.held):
            return None
        return fixed_in(self.checked)

    @property
    def to_file(self) -> bool:
        """A bug to file: inside torch.compile's contract and failing on the newest torch."""
        return self.bug.contract is None and self.fixed is None


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


def standing_lines(entry: PageBug) -> list[str]:
    """How a bug stands, as its section says it (``--check`` looks for each verbatim):
    how it was found, and why it is not one to file where it is not."""
    bug = entry.bug
    lines = [f"- found by: {bug.found.words() if bug.found else 'not told'}"]
    if bug.contract is not None:
        lines.append(
            f"- outside torch.compile's contract ({bug.contract.kind.words}): {bug.contract.why}"
        )
    if entry.fixed is not None:
        lines.append(f"- fixed on torch {entry.fixed}: not failing there, not to file")
    return lines


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
        for form in _best_first(directory, bug)[:FORMS_TRIED]:
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


def _best_first(directory: Path, bug: Bug) -> list[str]:
    """A bug's forms, those that show its own severity first (a silent bug is shown by
    a silent script, not by its crash form), the shortest program first among them:
    its plain script is likely the shortest too, and a reader files the shortest."""

    def rank(form: str) -> tuple[bool, int]:
        program = str(recorded_settings(directory / form).get("program", ""))
        return not _shows_severity(directory / form, bug), len(
            [line for line in program.splitlines() if line.strip()]
        )

    return sorted(bug.forms, key=rank)


def _shows_severity(path: Path, bug: Bug) -> bool:
    """Whether the form at ``path`` shows ``bug``'s own severity."""
    return path.is_file() and severity_of_entry(path.read_text()) is bug.severity


def _example_shows_severity(example_text: str, entry: PageBug) -> bool:
    """Whether a page's example is made from a form of its bug's severity, or no form
    of the bug has that severity (then the example cannot do better)."""
    made_from = re.search(r"from `(torch-[^/`]+)/([^`]+)`", example_text)
    if made_from is None:
        return True
    for directory, bug in entry.held:
        if directory.name == made_from.group(1):
            if _shows_severity(directory / made_from.group(2), bug):
                return True
            return not any(_shows_severity(directory / form, bug) for form in bug.forms)
    return True


def _torch_release() -> tuple[int, ...]:
    import torch

    return _release(torch.__version__)


def _entry(
    entry: PageBug,
    pythons: dict[tuple[int, ...], str],
    with_examples: bool,
    reused: dict[str, tuple[str, str]] | None = None,
) -> str:
    bug = entry.bug
    parts = [f"\n{bug_line(bug)}\n\n", *(f"{line}\n" for line in standing_lines(entry))]
    parts.append(f"- upstream: {bug.upstream}\n")
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
    parts.append(f"{mechanism_line(entry)}\n")
    forms = forms_line(entry)
    parts.append(f"{forms}\n\n" + " ".join(bug.mechanism.split()) + "\n\n")
    if with_examples:
        kept = (reused or {}).get(bug.id)
        if kept is not None and kept[0] == forms and _example_shows_severity(kept[1], entry):
            parts.append(kept[1])
        else:
            parts.append(example(entry, pythons))
    return "".join(parts)


@functools.cache
def _registry_of(directory: Path) -> Registry:
    return Registry.load([directory])


def mechanism_line(entry: PageBug) -> str:
    """The calls of a meaning the bug is known to make, by its forms in its newest
    baseline and its essential calls: a program making a call of another meaning is
    reported as new, not as this bug (``Registry.explains``). A bug of no essential
    calls is claimed by its forms' signatures and layers, whatever the calls."""
    newest, bug = entry.held[0]
    if not bug.essential:
        return "- mechanism calls: any (its forms' signatures and layers name it)"
    calls = sorted(_registry_of(newest).mechanism_calls(bug.id))
    return "- mechanism calls: " + (", ".join(f"`{c}`" for c in calls) or "none")


def forms_line(entry: PageBug) -> str:
    """The line naming a bug's forms in its newest baseline: what its example is made from."""
    newest, bug = entry.held[0]
    forms = ", ".join(f"`{form}`" for form in bug.forms) or "none yet"
    return f"- forms in `{newest.name}`: {forms}"


def sections_of(page: str) -> dict[str, str]:
    """A written page's sections by bug id: from a bug's heading to the next bug's,
    or to the heading of the next group."""
    return {
        section.split("`", 1)[0]: section.split("\n## ", 1)[0]
        for section in page.split("\n### `")[1:]
    }


def examples_of(page: str) -> dict[str, tuple[str, str]]:
    """The examples of a page already written, by bug id, each with the forms line it
    was made from: regenerating the page for a changed title or standing need not run
    every script again, only those of bugs whose forms changed."""
    found: dict[str, tuple[str, str]] = {}
    for bug_id, section in sections_of(page).items():
        lines = section.split("\n")
        at = next((i for i, line in enumerate(lines) if line.startswith("- forms in `")), None)
        if at is None or len(lines) < at + 4:
            continue
        # the forms line, a blank line, the mechanism, a blank line, then the example
        example_text = "\n".join(lines[at + 4 :]).rstrip("\n") + "\n"
        found[bug_id] = (lines[at], example_text)
    return found


def render(
    with_examples: bool = True,
    pythons: dict[tuple[int, ...], str] | None = None,
    reused: dict[str, tuple[str, str]] | None = None,
) -> str:
    """The whole page; ``reused``: examples of a page already written, by bug id
    (:func:`examples_of`), kept for a bug whose forms have not changed."""
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
        "Python's `operator` module names it; a binary operator is the torch function it "
        "calls (`a * b`: `mul`); `*range` a range star-unpacked into a call's arguments.\n\n",
        "Mechanism calls: the calls of a meaning the bug is known to make, by its forms "
        "and its essential calls. A failing program that makes a call of another meaning "
        "is reported as new, not as the bug: a shrunk program keeps only what its "
        "failure needs. In-place writes, random draws and transfers count by their class "
        "(`inplace`, `rng`, `transfer`), index writes as `index-write`; arithmetic, "
        "views, `backward`, reads of `.grad` and cuts between graphs are not listed, and "
        "never count.\n\n",
        *(f"{line}\n" for line in counts_lines(entries)),
        "\nThe baselines:\n\n",
        *(f"{baselines_line(d, len(read_bugs(d)))}\n" for d in baselines()),
    ]
    reused = reused or {}
    to_file = [e for e in entries if e.to_file]
    for severity in ORDER:
        group = [e for e in to_file if e.bug.severity is severity]
        if group:
            parts.append(f"\n## {GROUPS[severity]} ({len(group)})\n")
            parts += [_entry(e, pythons or {}, with_examples, reused) for e in group]
    outside = [e for e in entries if e.bug.contract is not None]
    if outside:
        parts.append(f"\n## {OUTSIDE} ({len(outside)})\n\n{OUTSIDE_WHY}\n")
        parts += [_entry(e, pythons or {}, with_examples, reused) for e in outside]
    fixed = [e for e in entries if e.bug.contract is None and e.fixed is not None]
    if fixed:
        parts.append(f"\n## {FIXED} ({len(fixed)})\n\n{FIXED_WHY}\n")
        parts += [_entry(e, pythons or {}, with_examples, reused) for e in fixed]
    return "".join(parts)


def tracked(upstream: str) -> str:
    """Whether a bug's upstream line names its report (``reported``), a report only
    related to it (``related``), or none (``none found``, also where nobody looked)."""
    if upstream.startswith(("none found", "unsearched")):
        return "none found"
    if re.match(r"pytorch/pytorch#\d+ \(related", upstream):
        return "related"
    return "reported"


def counts_lines(entries: list[PageBug]) -> list[str]:
    """The page's counts: bugs to file by severity, the rest apart, and how each
    was found (the campaigns' count apart from reports reproduced and probes)."""
    to_file = [e for e in entries if e.to_file]
    severities = ", ".join(
        f"{sum(e.bug.severity is s for e in to_file)} {s.value}"
        for s in ORDER
        if any(e.bug.severity is s for e in to_file)
    )
    outside = sum(e.bug.contract is not None for e in entries)
    fixed = sum(e.bug.contract is None and e.fixed is not None for e in entries)
    lines = [
        f"{len(entries)} bugs: {len(to_file)} to file ({severities}); {outside} outside "
        f"torch.compile's contract; {fixed} fixed on the newest torch they were checked on."
    ]
    tracker = Counter(tracked(e.bug.upstream) for e in to_file)
    lines.append(
        f"\nOf the bugs to file, on PyTorch's tracker: {tracker['reported']} reported already, "
        f"{tracker['related']} with a related report only, {tracker['none found']} with none "
        "found (searched as each bug's upstream line says)."
    )
    for title, group in (("Of the bugs to file", to_file), ("Of all", entries)):
        found = Counter(e.bug.found.by.value if e.bug.found else "not told" for e in group)
        lines.append(
            f"\n{title}, found by: "
            + ", ".join(f"{FOUND_WORDS[by]} {found[by]}" for by in FOUND_WORDS if found[by])
            + "."
        )
    return lines


def stale(page: str) -> list[str]:
    """What the page lacks of the bugs files: a bug line per bug, each baseline's line."""
    missing = [
        baselines_line(d, len(read_bugs(d)))
        for d in baselines()
        if baselines_line(d, len(read_bugs(d))) not in page
    ]
    sections = sections_of(page)
    for entry in page_bugs():
        if bug_line(entry.bug) not in page:
            missing.append(bug_line(entry.bug))
            continue
        # Its standing, in its own section: many bugs share a provenance line.
        section = sections.get(entry.bug.id, "")
        missing += [line for line in standing_lines(entry) if line not in section]
    return missing


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
        "--fresh",
        action="store_true",
        help="run every bug's script again (by default a bug whose forms are unchanged "
        "keeps the script the page shows)",
    )
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
    reused = {} if args.fresh or not args.out.exists() else examples_of(args.out.read_text())
    args.out.write_text(render(pythons=dict(args.python), reused=reused))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
