"""The rediscovery corpus's verifier: every script gives its recorded status, or it says so."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import rediscovery

BUG = """
[[bug]]
issue = {issue}
title = "a bug"
area = "input-mutation"
backend = "aot_eager"
symptom = "silent"
script = "scripts/gh{issue}.py"
status = "{status}"
note = ""
"""


def corpus(tmp_path: Path, *bugs: tuple[int, str, int]) -> Path:
    """A corpus of ``(issue, status, exit code of its script)``."""
    (tmp_path / "scripts").mkdir()
    text = ""
    for issue, status, code in bugs:
        (tmp_path / "scripts" / f"gh{issue}.py").write_text(f"import sys\nsys.exit({code})\n")
        text += BUG.format(issue=issue, status=status)
    (tmp_path / "area.toml").write_text(text)
    return tmp_path


def test_every_script_giving_its_status_verifies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = corpus(tmp_path, (2, "reproduces", 1), (1, "fixed", 0))
    assert [bug.issue for bug in rediscovery.load(root)] == [1, 2]
    assert rediscovery.main(["verify", "--corpus", str(root), "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "2 as recorded, 0 differ, 0 without a script" in out
    assert "reproducing: 1 (1 distinct), by area: input-mutation 1" in out


def test_a_script_that_no_longer_gives_its_status_fails_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = corpus(tmp_path, (3, "reproduces", 0))
    assert rediscovery.main(["verify", "--corpus", str(root)]) == 1
    assert "#3       input-mutation    aot_eager silent   reproduces     DIFFERS (exit 0)" in (
        capsys.readouterr().out
    )


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda text: text.replace('area = "input-mutation"', 'area = "elsewhere"'), "area"),
        (lambda text: text.replace('note = ""', 'note = ""\nseverity = "high"'), "unknown key"),
        (lambda text: text + text, "#4 is already in"),
        (lambda text: text.replace("gh4.py", "gone.py"), "no script"),
        (lambda text: text.replace('"scripts/gh4.py"', '""'), "needs its script"),
        (lambda text: text + "duplicate_of = 'x'\n", "duplicate_of must be an issue number"),
        (lambda text: text + "gap = 'too hard'\n", "gap must start with one of"),
    ],
)
def test_a_bad_corpus_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: object, said: str
) -> None:
    root = corpus(tmp_path, (4, "reproduces", 1))
    toml = root / "area.toml"
    toml.write_text(edit(toml.read_text()))  # type: ignore[operator]
    assert rediscovery.main(["verify", "--corpus", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {toml}: bug ") and said in err and err.count("\n") == 1


def test_reach_counts_a_corpus_bug_met_through_its_known_bug(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    root = corpus(tmp_path, (5, "reproduces", 1), (6, "reproduces", 1), (7, "reproduces", 1))
    toml = root / "area.toml"
    text = toml.read_text().replace(
        'script = "scripts/gh5.py"\nstatus = "reproduces"\n',
        'script = "scripts/gh5.py"\nstatus = "reproduces"\nknown_as = ["expand-write-summed"]\n',
    )
    text = text.replace(
        'script = "scripts/gh7.py"\nstatus = "reproduces"\n',
        'script = "scripts/gh7.py"\nstatus = "reproduces"\ngap = "generator: no module hooks"\n',
    )
    toml.write_text(
        text.replace(
            'script = "scripts/gh6.py"\nstatus = "reproduces"\n',
            'script = "scripts/gh6.py"\nstatus = "reproduces"\nknown_as = ["resize-view"]\n',
        )
    )
    report = tmp_path / "r.json"
    report.write_text(
        json.dumps(
            {
                "backend": "aot_eager",
                "timeline": [{"seconds": 12.5, "signature": "mutation-argument", "new": False}],
                "known": [
                    {"signature": "mutation-argument", "bug": "expand-write-summed", "hits": 3}
                ],
                "failures": [{"signature": "value-output"}],
            }
        )
    )
    assert rediscovery.main(["reach", str(report), "--corpus", str(root)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["#5", "expand-write-summed", "aot_eager", "12", "s"]
    assert out[1].split()[-2:] == ["not", "met"]
    assert out[2].startswith("met 1 of 2 corpus bugs mapped to a known bug, by 1 report(s)")
    assert "1 of the 3 distinct reproducing bugs have no known bug to be counted by" in out[2]
    assert out[3] == "new findings in the reports, for that triage: 1"
    assert out[4] == "why the unmapped cannot be counted: generator 1"
    assert out[5].split() == ["#7", "generator:", "no", "module", "hooks"]
