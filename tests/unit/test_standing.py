"""A bug's standing in a bugs file: its contract class and how it was found."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_cgraph.errors import ConfigurationError
from pytest_cgraph.registry.entries import BUGS_FILE, read_bugs
from pytest_cgraph.registry.standing import ContractClass, FoundBy, Provenance, fixed_in

BUG = """[[bug]]
id = "one"
title = "t"
severity = "silent"
mechanism = "m"
essential = []
forms = []
"""


def _bugs(tmp_path: Path, extra: str) -> Path:
    (tmp_path / BUGS_FILE).write_text(BUG + extra)
    return tmp_path


def test_a_bug_without_either_key_is_one_to_file_found_by_nobody_told(tmp_path: Path) -> None:
    (bug,) = read_bugs(_bugs(tmp_path, ""))
    assert bug.contract is None and bug.found is None


def test_both_keys_are_read_with_their_details(tmp_path: Path) -> None:
    extra = (
        'contract = { class = "documented-limitation", why = "compile does not  guard it" }\n'
        'found = { by = "campaign", backend = "inductor", family = "schedules", seed = 11, '
        'torch = "2.14.1" }\n'
    )
    (bug,) = read_bugs(_bugs(tmp_path, extra))
    assert bug.contract is not None and bug.contract.kind is ContractClass.DOCUMENTED_LIMITATION
    assert bug.contract.why == "compile does not guard it"
    assert bug.found == Provenance(
        FoundBy.CAMPAIGN, backend="inductor", family="schedules", seed=11, torch="2.14.1"
    )
    assert bug.found.words() == "a campaign (inductor, schedules, seed 11, torch 2.14.1)"


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ('contract = { class = "private", why = "w" }\n', "class = 'private' is none of"),
        ('contract = { class = "private-api" }\n', "why must be a non-empty string"),
        ('contract = "private-api"\n', "contract must be a table"),
        ('found = { by = "report" }\n', "names it: issue = NUMBER"),
        ('found = { by = "report", issue = "197893" }\n', "issue must be a whole number"),
        ('found = { by = "campaign", seed = 1 }\n', "names its backend"),
        ('found = { by = "probe", when = "today" }\n', "unknown key(s) when"),
    ],
)
def test_a_misspelt_standing_fails_the_read_in_one_line(
    tmp_path: Path, extra: str, said: str
) -> None:
    # Read as absent, a misspelt class would count a case outside the contract
    # among the bugs to file: the file is refused instead, naming the bug.
    with pytest.raises(ConfigurationError) as raised:
        read_bugs(_bugs(tmp_path, extra))
    message = str(raised.value)
    assert "\n" not in message and said in message and "bug 'one'" in message, message


def test_a_report_and_a_probe_say_how_they_were_found() -> None:
    reported = Provenance(FoundBy.REPORT, issue=91468)
    assert reported.words() == "reproduced from pytorch/pytorch#91468"
    assert Provenance(FoundBy.PROBE, note="while reading the partitioner").words() == (
        "a probe written by hand; while reading the partitioner"
    )
    assert Provenance(FoundBy.USER_TEST).words() == "a user's test"
    assert Provenance(FoundBy.CAMPAIGN, backend="aot_eager").words() == (
        "a campaign (aot_eager, family not recorded)"
    )


OLD, NEW = "2.13.0+cpu", "2.14.1+cu130"


@pytest.mark.parametrize(
    ("checked", "fixed"),
    [
        ({}, None),
        ({OLD: "2 of 2 forms reproduce"}, None),
        ({OLD: "4 of 4 forms reproduce", NEW: "fixed: none of its 4 forms fails"}, NEW),
        ({OLD: "1 of 1 forms reproduce", NEW: "0 of 1 forms reproduce"}, NEW),
        # a regression: passing on the older torch, failing on the newer one
        ({OLD: "no difference: a fresh tensor", NEW: "5 of 5 forms reproduce"}, None),
        ({"2.9.0": "fixed: its form no longer fails", OLD: "its form reproduces"}, None),
    ],
)
def test_a_bug_is_fixed_on_the_newest_torch_it_was_checked_on_only(
    checked: dict[str, str], fixed: str | None
) -> None:
    assert fixed_in(checked) == fixed
