"""Editing a registry's bugs file as text, so that its comments and layout survive.

A bugs file (``bugs.toml``, read by :func:`pytest_cgraph.registry.entries.read_bugs`)
is written by hand: comments say why a bug is split or joined, where an
upstream lead came from. TOML writers drop comments, so the few edits tools
make (a form folded into a bug, forms a re-check dropped, a severity that
follows its forms) are made on the text, and the result is read back to
check it.
"""

from __future__ import annotations

import re
from pathlib import Path

from pytest_cgraph.errors import CgraphError
from pytest_cgraph.registry.entries import (
    BUGS_FILE,
    Bug,
    KnownBug,
    TOMLDecodeError,
    parse_toml,
    read_bugs,
    read_entry,
)
from pytest_cgraph.registry.severity import severity_of_entry, worst
from pytest_cgraph.registry.standing import version_order

BUG_HEADER = "[[bug]]\n"


class FoldError(CgraphError, ValueError):
    """A form cannot join the bug asked; the message is one line saying why and what to do."""


def kept_bugs_text(text: str, adopted: set[str]) -> str:
    """``text`` (a bugs file) with every form not in ``adopted`` dropped, and every
    bug left without forms dropped whole. The preamble before the first bug stays."""
    preamble, *blocks = text.split(BUG_HEADER)
    kept = []
    for block in blocks:
        out, in_forms, forms = [], False, 0
        for line in block.splitlines(keepends=True):
            stripped = line.strip()
            if stripped.startswith("forms = ["):
                in_forms = True
            elif in_forms and stripped == "]":
                in_forms = False
            elif in_forms and stripped.startswith('"'):
                if stripped.strip('",') not in adopted:
                    continue
                forms += 1
            out.append(line)
        if forms:
            kept.append("".join(out))
    return preamble + "".join(BUG_HEADER + block for block in kept)


def recompute_severities(directory: Path) -> list[str]:
    """Set each bug's severity to the worst of its forms in ``directory`` (a bug that
    kept only some forms may be less bad there, one that gained one worse); the ids
    of the bugs changed."""
    path = directory / BUGS_FILE
    text = path.read_text()
    changed = []
    for bug in read_bugs(directory):
        if not bug.forms:
            continue  # a bug written by hand before its first form is folded in
        now = worst([severity_of_entry((directory / form).read_text()) for form in bug.forms])
        if now is bug.severity:
            continue
        block = re.compile(rf'(id = "{re.escape(bug.id)}"\n(?:.*\n)*?severity = )"[a-z]+"')
        text, count = block.subn(rf'\1"{now.value}"', text, count=1)
        if count:
            changed.append(bug.id)
    path.write_text(text)
    return changed


def add_form(directory: Path, bug_id: str, form: str) -> Bug:
    """Append ``form`` (an entry file of ``directory``) to the forms of ``bug_id``.

    Refused with a :class:`FoldError` where the bug does not exist, already
    holds the form, or does not claim it: a bug's essential calls are the
    calls every one of its forms makes, so a form without one would make the
    bugs file say something false. The bug's severity follows its forms.
    """
    bugs = {bug.id: bug for bug in read_bugs(directory)}
    bug = bugs.get(bug_id)
    if bug is None:
        known = ", ".join(sorted(bugs)) or "none"
        raise FoldError(f"no bug {bug_id!r} in {directory / BUGS_FILE} (its bugs: {known})")
    if form in bug.forms:
        raise FoldError(f"{form} is a form of {bug_id} already")
    holder = next((other.id for other in bugs.values() if form in other.forms), None)
    if holder is not None:
        raise FoldError(f"{form} is a form of {holder}: a form belongs to one bug")
    entry = read_entry(directory / form)
    if entry is None:
        raise FoldError(f"{directory / form} is no entry or repro file of pytest-cgraph")
    claimed = KnownBug(entry.signature, entry.layer, entry.path, entry.ops, bug.id, bug.essential)
    if not claimed.claims(entry.ops):
        wanted = " and ".join(bug.essential)
        raise FoldError(
            f"{form} does not make {bug_id}'s essential calls ({wanted}); it calls "
            f"{', '.join(sorted(entry.ops)) or 'nothing'}: widen the bug's essential calls "
            "or fold it into another bug"
        )
    path = directory / BUGS_FILE
    text = path.read_text()
    start = re.search(rf'^id = "{re.escape(bug_id)}"$', text, re.MULTILINE)
    assert start is not None  # read_bugs found it
    # Its forms one per line, or none yet (a bug written by hand before its first form).
    following = text.find("\n[[bug]]", start.end())  # its block ends at the next bug's
    forms = _FORMS.search(text, start.end(), following + 1 if following != -1 else len(text))
    if forms is None:
        raise FoldError(
            f"{bug_id}'s forms in {path} are not written one per line (forms = [ on a line of "
            'its own, then one "name.toml", per line): rewrite them so, then fold again'
        )
    listed = f'forms = [\n    "{form}",\n' + ("]\n" if forms.group(1) else "")
    path.write_text(text[: forms.start()] + listed + text[forms.end() :])
    try:
        recompute_severities(directory)
        return next(bug for bug in read_bugs(directory) if bug.id == bug_id)
    except BaseException:
        path.write_text(text)  # the bugs file as it was: no form listed without its entry
        raise


#: The start of a bug's forms list as this module writes it, or an empty one.
_FORMS = re.compile(r"^forms = \[(\])?\n", re.MULTILINE)

#: A bug's ``checked`` line, however it was written by hand.
_CHECKED = re.compile(r"^checked\s*=")


def _checked_line(checked: dict[str, str]) -> str:
    """A bug's ``checked`` table as one TOML line, oldest torch first."""
    pairs = ", ".join(
        f"{_toml_string(version)} = {_toml_string(result)}"
        for version, result in sorted(checked.items(), key=lambda item: version_order(item[0]))
    )
    return f"checked = {{ {pairs} }}\n"


def _toml_string(text: str) -> str:
    """``text`` as a TOML basic string (what it can hold here: no newlines)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def set_checked(directory: Path, torch_version: str, results: dict[str, str]) -> None:
    """Record, for each bug id of ``results``, what replaying its forms gave on
    ``torch_version`` (its ``checked`` table; a result for that version already
    there is replaced, those of other versions stay). Written on the text, after
    the bug's ``upstream`` line, so the file's comments survive."""
    path = directory / BUGS_FILE
    bugs = {bug.id: bug for bug in read_bugs(directory)}
    preamble, *blocks = path.read_text().split(BUG_HEADER)
    written = []
    for block in blocks:
        found = re.search(r'^id\s*=\s*"([^"]*)"\s*$', block, re.MULTILINE)
        bug = bugs.get(found.group(1)) if found else None
        if bug is None or bug.id not in results:
            written.append(block)
            continue
        checked = {**bug.checked, torch_version: results[bug.id]}
        lines = [line for line in block.splitlines(keepends=True) if not _CHECKED.match(line)]
        at = next(
            (i + 1 for i, line in enumerate(lines) if re.match(r"upstream\s*=", line)),
            len(lines) - len(_trailing_blank(lines)),
        )
        lines.insert(at, _checked_line(checked))
        written.append("".join(lines))
    text = preamble + "".join(BUG_HEADER + block for block in written)
    try:
        parse_toml(text)
    except TOMLDecodeError as error:  # never write a file that does not read back
        raise ValueError(f"{path}: the checked tables would not parse: {error}") from error
    path.write_text(text)


def _trailing_blank(lines: list[str]) -> list[str]:
    """The blank lines that end ``lines`` (a block's separation from the next)."""
    blank = []
    for line in reversed(lines):
        if line.strip():
            break
        blank.append(line)
    return blank
