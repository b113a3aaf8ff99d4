"""``python -m pytest_cgraph.record --fold``: a finding joins a bug of a registry as a new form."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_cgraph.recording.record import main
from pytest_cgraph.registry.entries import BASELINE_ROOT, Registry, read_bugs, read_entry

SOURCE = BASELINE_ROOT / "torch-2.13"
BUGS = '''[[bug]]
id = "as-strided-escapes-view"
title = "as_strided writes escape their view"
severity = "silent"
mechanism = """a write through as_strided lands elsewhere"""
essential = ["as_strided_|as_strided"]
forms = [
    "value-output-aot_eager-2.toml",
]
upstream = "unsearched"

[[bug]]
id = "dropout-eval-clone"
title = "dropout returns a copy"
severity = "silent"
mechanism = """dropout that returns its input returns a copy"""
essential = ["dropout"]
forms = [
    "aliasing-aliasing-is_argument_to_none-aot_eager.toml",
]
upstream = "pytorch/pytorch#115249"
'''


@pytest.fixture
def registry(tmp_path: Path) -> Path:
    known = tmp_path / "known"
    known.mkdir()
    for form in (
        "value-output-aot_eager-2.toml",
        "aliasing-aliasing-is_argument_to_none-aot_eager.toml",
    ):
        shutil.copyfile(SOURCE / form, known / form)
    (known / "bugs.toml").write_text("# the team's bugs, by hand\n" + BUGS)
    return known


@pytest.fixture
def repro_file(tmp_path: Path) -> Path:
    """A repro file as a run writes it: another form of the as_strided bug."""
    out = tmp_path / "value-output-aot_eager.py"
    assert main(["--export", str(SOURCE / "value-output-aot_eager-5.toml"), str(out)]) == 0
    return out


def test_a_repro_file_folds_into_its_bug_and_is_known_by_it(
    registry: Path, repro_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(
            ["--fold", str(repro_file), "--bug", "as-strided-escapes-view", "--into", str(registry)]
        )
        == 0
    )
    entry = registry / "value-output-aot_eager.toml"
    assert capsys.readouterr().out.strip() == f"{entry}: a form of as-strided-escapes-view"
    (bug, _) = read_bugs(registry)
    assert bug.forms == ("value-output-aot_eager.toml", "value-output-aot_eager-2.toml")
    read = read_entry(entry)
    assert read is not None and read.bug == "as-strided-escapes-view"
    assert len(Registry.load([registry])) == 3
    # The hand-written comment survives; the entry holds no oracle (data only).
    assert (registry / "bugs.toml").read_text().startswith("# the team's bugs, by hand\n")
    assert "def assert_fixed" not in entry.read_text()


def test_a_form_that_lacks_the_bug_s_essential_calls_is_refused_and_nothing_is_left(
    registry: Path, repro_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = (registry / "bugs.toml").read_text()
    code = main(["--fold", str(repro_file), "--bug", "dropout-eval-clone", "--into", str(registry)])
    assert code == 1
    error = capsys.readouterr().err.strip()
    assert error.startswith(
        "error: value-output-aot_eager.toml does not make dropout-eval-clone's essential calls"
    )
    assert len(error.splitlines()) == 1
    assert (registry / "bugs.toml").read_text() == before
    assert not (registry / "value-output-aot_eager.toml").exists()


def test_an_unknown_bug_is_refused_with_the_bugs_there_are(
    registry: Path, repro_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--fold", str(repro_file), "--bug", "as-strided", "--into", str(registry)]) == 1
    assert "(its bugs: as-strided-escapes-view, dropout-eval-clone)" in capsys.readouterr().err


@pytest.mark.parametrize("empty", ["forms = [\n]", "forms = []"])
def test_a_bug_written_by_hand_without_forms_takes_its_first_form(
    registry: Path, repro_file: Path, empty: str
) -> None:
    bugs = registry / "bugs.toml"
    bugs.write_text(
        bugs.read_text()
        + '\n[[bug]]\nid = "new-one"\ntitle = "t"\nseverity = "crash"\nmechanism = "m"\n'
        f'essential = ["as_strided"]\n{empty}\nupstream = "none found"\n'
    )
    assert main(["--fold", str(repro_file), "--bug", "new-one", "--into", str(registry)]) == 0
    (bug,) = [bug for bug in read_bugs(registry) if bug.id == "new-one"]
    assert len(bug.forms) == 1 and (registry / bug.forms[0]).is_file()
    assert bug.severity.value == "silent"  # the worst of its forms, once it has one


def test_forms_written_on_one_line_are_refused_in_one_line_and_nothing_is_left(
    registry: Path, repro_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bugs = registry / "bugs.toml"
    bugs.write_text(
        bugs.read_text().replace(
            'forms = [\n    "value-output-aot_eager-2.toml",\n]',
            'forms = ["value-output-aot_eager-2.toml"]',
        )
    )
    before = bugs.read_text()
    code = main(
        ["--fold", str(repro_file), "--bug", "as-strided-escapes-view", "--into", str(registry)]
    )
    assert code == 1
    error = capsys.readouterr().err.strip()
    assert "as-strided-escapes-view's forms in" in error and "one per line" in error
    assert len(error.splitlines()) == 1
    assert bugs.read_text() == before
    assert not (registry / "value-output-aot_eager.toml").exists()


def test_an_entry_of_the_registry_itself_is_listed_not_copied(registry: Path) -> None:
    # record --into writes the entry into the registry; folding it from there
    # lists that file instead of writing a second copy beside it.
    entry = registry / "value-output-aot_eager-7.toml"
    shutil.copyfile(SOURCE / "value-output-aot_eager-5.toml", entry)
    before = sorted(path.name for path in registry.iterdir())
    assert (
        main(["--fold", str(entry), "--bug", "as-strided-escapes-view", "--into", str(registry)])
        == 0
    )
    assert sorted(path.name for path in registry.iterdir()) == before
    (bug, _) = read_bugs(registry)
    assert "value-output-aot_eager-7.toml" in bug.forms


def test_an_empty_forms_list_right_before_the_next_bug_takes_its_form(
    registry: Path, repro_file: Path
) -> None:
    bugs = registry / "bugs.toml"
    bugs.write_text(
        '[[bug]]\nid = "new-one"\ntitle = "t"\nseverity = "crash"\nmechanism = "m"\n'
        'essential = ["as_strided"]\nupstream = "none found"\nforms = []\n' + bugs.read_text()
    )
    assert main(["--fold", str(repro_file), "--bug", "new-one", "--into", str(registry)]) == 0
    (bug,) = [bug for bug in read_bugs(registry) if bug.id == "new-one"]
    assert len(bug.forms) == 1
