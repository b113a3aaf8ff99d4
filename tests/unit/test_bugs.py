"""The shipped baseline's bugs file: every entry a form of exactly one bug, and what that buys.

The registry is read by signature (one entry per program form); the bugs file
groups those entries by mechanism, so a known mechanism met through other
calls is known. These checks keep the file and the directory in step: an
entry recorded without a bug, a bug naming a retired entry, or an essential
call that one of the bug's own forms does not make would each make the
registry say something false.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_cgraph.oracle.difference import Difference, Kind, Place, Role
from pytest_cgraph.registry.entries import (
    BASELINE_ROOT,
    BUGS_FILE,
    Registry,
    program_ops,
    read_bugs,
    read_entry,
    registry_files,
)
from pytest_cgraph.registry.severity import severity_of_entry, worst
from pytest_cgraph.registry.standing import version_order
from pytest_cgraph.strategies.templates import TEMPLATES

BASELINES = sorted(path for path in BASELINE_ROOT.glob("torch-*") if (path / BUGS_FILE).exists())


@pytest.mark.parametrize("directory", BASELINES, ids=[path.name for path in BASELINES])
def test_every_entry_is_a_form_of_exactly_one_bug(directory: Path) -> None:
    bugs = read_bugs(directory)
    forms = [form for bug in bugs for form in bug.forms]
    assert sorted(forms) == [path.name for path in registry_files(directory)]
    ids = [bug.id for bug in bugs]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", bug_id) for bug_id in ids)
    for bug in bugs:
        assert bug.title and "\n" not in bug.title and bug.mechanism and bug.upstream, bug.id


#: A title is filed as a PyTorch issue's title: short, and in torch's words, not
#: the harness's (its detail belongs in the mechanism).
TITLE_LIMIT = 100
HARNESS_WORDS = re.compile(
    r"\b(?:iterations?|output\s*#|forms?|harness(?:es)?|signatures?|mechanisms?|programs?"
    r"|entry|entries)(?!\w)",
    re.IGNORECASE,
)


@pytest.mark.parametrize("directory", BASELINES, ids=[path.name for path in BASELINES])
def test_every_bug_title_is_one_a_torch_maintainer_would_take_as_an_issue_title(
    directory: Path,
) -> None:
    bad = [
        f"{bug.id}: {len(bug.title)} characters (at most {TITLE_LIMIT})"
        for bug in read_bugs(directory)
        if len(bug.title) > TITLE_LIMIT
    ]
    bad += [
        f"{bug.id}: harness word {found.group(0)!r} in its title"
        for bug in read_bugs(directory)
        if (found := HARNESS_WORDS.search(bug.title))
    ]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("directory", BASELINES, ids=[path.name for path in BASELINES])
def test_every_bug_says_how_it_was_found_and_one_bug_stands_alike_everywhere(
    directory: Path,
) -> None:
    # The page counts the campaigns' bugs apart from reports reproduced: a bug
    # recorded without saying how it was met would count as neither.
    newest_baseline = max(BASELINES, key=lambda path: version_order(path.name))
    newest = {bug.id: bug for bug in read_bugs(newest_baseline)}
    for bug in read_bugs(directory):
        assert bug.found is not None, f"{bug.id}: no found = {{ by = ... }}"
        other = newest.get(bug.id)
        if other is not None:  # one bug, one standing, whichever baseline holds it
            assert (bug.found, bug.contract) == (other.found, other.contract), bug.id


@pytest.mark.parametrize("directory", BASELINES, ids=[path.name for path in BASELINES])
def test_each_form_makes_its_bug_s_essential_calls(directory: Path) -> None:
    for entry in Registry.load([directory]).entries():
        assert entry.bug is not None and entry.essential is not None, entry.path.name
        # The bug claims its own forms: its essential calls are calls they make.
        assert entry.claims(entry.ops), (entry.path.name, entry.essential, sorted(entry.ops))


@pytest.mark.parametrize("directory", BASELINES, ids=[path.name for path in BASELINES])
def test_a_bug_s_severity_is_the_worst_of_its_forms(directory: Path) -> None:
    for bug in read_bugs(directory):
        if not bug.forms:
            continue  # written by hand before its first form: its severity as written
        assert bug.severity == worst(
            [severity_of_entry((directory / f).read_text()) for f in bug.forms]
        ), bug.id


TORCH_2_13 = BASELINE_ROOT / "torch-2.13"
COUNTER_PROGRAM = (
    "import torch\n"
    + TEMPLATES["Counter()"]
    + """

def program(a0, m2):
    v0 = m2(a0)
    v1 = torch.sin(v0)
    return (v1,)


def inputs(k):
    return (torch.tensor([-1.0, 0.0], requires_grad=True), Counter())
"""
)


@pytest.mark.skipif(not (TORCH_2_13 / BUGS_FILE).exists(), reason="no torch-2.13 bugs file")
def test_a_known_mechanism_reached_through_other_calls_is_known() -> None:
    grad = Difference(Kind.GRAD, 1, Place(Role.GRAD, name="a0"))
    assert grad.signature == "grad-grad"
    registry = Registry.load([TORCH_2_13])
    known = registry.match(grad, lambda: "aot_eager", program_ops(COUNTER_PROGRAM))
    assert known is not None and known.bug == "module-buffer-grad-ahead"
    # Neither form's every call: by entry alone, this program was new.
    forms = [read_entry(TORCH_2_13 / f"grad-grad-aot_eager-{n}.toml") for n in (4, 5)]
    assert not any(form.ops <= program_ops(COUNTER_PROGRAM) for form in forms if form)
    # The same signature and layer without the module: not this bug (nor another).
    plain = COUNTER_PROGRAM.replace("v0 = m2(a0)", "v0 = a0 * 2")
    assert registry.match(grad, lambda: "aot_eager", program_ops(plain)) is None
