"""scripts/derive_baseline.py: a baseline for another torch, from what reproduced there."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from cgraph_doubles.scripts import load_script
from pytest_cgraph.registry.entries import BASELINE_ROOT, BUGS_FILE, read_bugs, registry_files
from pytest_cgraph.registry.severity import Severity, severity_of_entry, worst

derive_baseline = load_script("derive_baseline")
SOURCE = BASELINE_ROOT / "torch-2.13"


def test_only_reproducing_forms_are_kept_and_each_bug_is_as_bad_as_what_is_left(
    tmp_path: Path,
) -> None:
    bugs = {bug.id: bug for bug in read_bugs(SOURCE)}
    # noop-identity-leaf: a crash form and a metadata form, filed under the worse
    # (metadata: a quiet difference); only the crash reproduced.
    leaf = bugs["noop-identity-leaf"]
    assert leaf.severity is Severity.METADATA
    kept = [f for f in leaf.forms if f.startswith("crash-")]
    dropped_bug = bugs["module-buffer-grad-ahead"]  # none of its forms reproduced
    rechecked = tmp_path / "rechecked"
    rechecked.mkdir()
    for form in kept:
        shutil.copyfile(SOURCE / form, rechecked / form)

    entries, count = derive_baseline.derive(SOURCE, rechecked, tmp_path / "out", "2.11.0")

    out = tmp_path / "out"
    assert (entries, count) == (len(kept), 1)
    (derived,) = read_bugs(out)
    assert derived.id == leaf.id and list(derived.forms) == kept
    assert derived.severity is Severity.CRASH
    assert derived.severity == worst([severity_of_entry((out / f).read_text()) for f in kept])
    assert dropped_bug.id not in (out / BUGS_FILE).read_text()
    assert [path.name for path in registry_files(out)] == sorted(kept)
    # The hand-written preamble is kept, under a line saying where it came from.
    text = (out / BUGS_FILE).read_text()
    assert text.startswith("# Derived from torch-2.13: its entries that reproduced on torch 2.11.0")
    assert "A bug is one mechanism" in text


def test_checked_results_say_how_many_forms_reproduce_and_name_a_bug_fixed() -> None:
    from pytest_cgraph.oracle.driver import ReplayVerdict
    from pytest_cgraph.registry.entries import Bug

    same, other, gone = (v.value for v in ReplayVerdict)
    bug = Bug("b", "t", Severity.SILENT, "m", (), ("f1.toml", "f2.toml", "f3.toml"))
    verdicts = {"f1.toml": same, "f2.toml": other, "f3.toml": gone}
    assert derive_baseline.checked_result(bug, verdicts) == (
        "1 of 3 forms reproduce, 1 fails another way"
    )
    assert derive_baseline.checked_result(bug, dict.fromkeys(verdicts, gone)) == (
        "fixed: none of its 3 forms fails"
    )
    assert derive_baseline.checked_result(bug, {"f1.toml": same}) == (
        "1 of 3 forms reproduce, 2 not replayed"
    )
    single = dataclasses.replace(bug, forms=("f1.toml",))
    assert derive_baseline.checked_result(single, {"f1.toml": same}) == "its form reproduces"
    assert derive_baseline.checked_result(single, {"f1.toml": gone}) == (
        "fixed: its form no longer fails"
    )


def test_a_replay_here_records_each_bug_s_result_and_keeps_what_reproduced(
    tmp_path: Path,
) -> None:
    """Two bugs of the shipped baseline, one form of each broken on purpose (its
    program no longer differs): the derived baseline keeps the form that still
    fails, and both bugs files say, for this torch, what each bug's forms gave."""
    import torch

    bugs = {bug.id: bug for bug in read_bugs(SOURCE)}
    leaf, identity = bugs["noop-identity-leaf"], bugs["noop-identity-alias"]
    source = tmp_path / "torch-2.13"
    source.mkdir()
    kept = leaf.forms[0]
    broken = identity.forms[0]
    shutil.copyfile(SOURCE / kept, source / kept)
    # The program returns a fresh tensor instead of its input: nothing differs.
    text = (SOURCE / broken).read_text()
    fixed = text.replace("def program(", "def _original(", 1)
    fixed = fixed.replace(
        "\ndef inputs(", "\ndef program(*args):\n    return (args[0] + 1,)\n\n\ndef inputs(", 1
    )
    (source / broken).write_text(fixed)
    (source / BUGS_FILE).write_text(
        "# hand-written preamble\n"
        + "".join(
            f'[[bug]]\nid = "{bug.id}"\ntitle = "{bug.id}"\nseverity = "{bug.severity.value}"\n'
            f'mechanism = "m"\nessential = []\nforms = [\n    "{form}",\n]\n'
            f'upstream = "none found"\n\n'
            for bug, form in ((leaf, kept), (identity, broken))
        )
    )

    line = derive_baseline.replay_and_record(source, tmp_path / "torch-2.99", workers=1)

    version = torch.__version__
    assert f"torch {version}: 2 entries of torch-2.13 replayed" in line
    assert "2 bugs, 1 fixed here" in line
    checked = {bug.id: bug.checked for bug in read_bugs(source)}
    assert checked == {
        leaf.id: {version: "its form reproduces"},
        identity.id: {version: "fixed: its form no longer fails"},
    }
    (derived,) = read_bugs(tmp_path / "torch-2.99")
    assert derived.id == leaf.id and derived.forms == (kept,)
    assert derived.checked == {version: "its form reproduces"}
    assert (source / BUGS_FILE).read_text().startswith("# hand-written preamble\n")


def test_a_second_torch_s_result_joins_the_first_and_a_rerun_replaces_its_own(
    tmp_path: Path,
) -> None:
    from pytest_cgraph.registry.bugs_file import set_checked

    (tmp_path / BUGS_FILE).write_text(
        '# why this bug is split\n[[bug]]\nid = "b"\ntitle = "t"\nseverity = "crash"\n'
        'mechanism = "m"\nessential = []\nforms = []\nupstream = "none found"\n'
        '# a note after the bug\n\n[[bug]]\nid = "c"\ntitle = "t"\nseverity = "crash"\n'
        'mechanism = "m"\nessential = []\nforms = []\n'
    )
    set_checked(tmp_path, "2.14.1", {"b": "its form reproduces", "c": 'says "fixed"'})
    set_checked(tmp_path, "2.13.0+cpu", {"b": "its form reproduces"})
    set_checked(tmp_path, "2.14.1", {"b": "fixed: its form no longer fails"})

    bugs = {bug.id: bug.checked for bug in read_bugs(tmp_path)}
    assert bugs == {
        "b": {"2.13.0+cpu": "its form reproduces", "2.14.1": "fixed: its form no longer fails"},
        "c": {"2.14.1": 'says "fixed"'},
    }
    text = (tmp_path / BUGS_FILE).read_text()
    # Oldest torch first, right after upstream; comments stay where they were.
    assert (
        'upstream = "none found"\nchecked = { "2.13.0+cpu" = "its form reproduces", '
        '"2.14.1" = "fixed: its form no longer fails" }\n# a note after the bug\n'
    ) in text
    assert text.startswith("# why this bug is split\n")


def test_deriving_into_a_baseline_that_has_a_bugs_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    into = tmp_path / "torch-2.99"
    into.mkdir()
    (into / BUGS_FILE).write_text("# bugs added by hand\n")
    code = derive_baseline.main(["--source", str(SOURCE), "--replay", "--into", str(into)])
    assert code == 2
    assert "has a bugs.toml already" in capsys.readouterr().err
    assert (into / BUGS_FILE).read_text() == "# bugs added by hand\n"


def test_a_hand_written_checked_line_is_replaced_not_doubled(tmp_path: Path) -> None:
    from pytest_cgraph.registry.bugs_file import set_checked

    (tmp_path / BUGS_FILE).write_text(
        '[[bug]]\nid = "b"\ntitle = "t"\nseverity = "crash"\nmechanism = "m"\n'
        'essential = []\nforms = []\nupstream = "none found"\nchecked={"2.13.0"="old"}\n'
    )
    set_checked(tmp_path, "2.13.0", {"b": "its form reproduces"})
    (bug,) = read_bugs(tmp_path)
    assert bug.checked == {"2.13.0": "its form reproduces"}
    assert (tmp_path / BUGS_FILE).read_text().count("checked") == 1
