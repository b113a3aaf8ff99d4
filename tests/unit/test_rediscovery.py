"""The rediscovery corpus's verifier: every script gives its recorded status, or it says so."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import rediscovery

from pytest_cgraph.failures import Case, Failure
from pytest_cgraph.oracle.difference import Difference, Kind, Place, Role
from pytest_cgraph.registry.entries import (
    BASELINE_ROOT,
    baseline_dir,
    read_entry,
    recorded_settings,
)

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


#: A shipped entry whose crash message names its bug: a finding of it is known
#: without a layer, by its signature and program alone.
SHIPPED_ENTRY = (
    BASELINE_ROOT
    / "torch-2.13"
    / (
        "crash-compiled_backward-AssertionError-aot_autograd_does_not_yet_handle_non_dif_213564"
        "-aot_eager.toml"
    )
)


def finding(source: str, difference: Difference) -> dict[str, object]:
    """A report's record of a new finding: its program and difference."""
    case = Case(source=source, backend="aot_eager", device="cpu", iters=5, family="autograd")
    return Failure(case, difference).to_json()


def test_reach_counts_a_corpus_bug_met_through_its_known_bug(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    root = corpus(tmp_path, (5, "reproduces", 1), (6, "reproduces", 1), (7, "reproduces", 1))
    toml = root / "area.toml"
    entry = read_entry(SHIPPED_ENTRY)
    assert entry is not None and entry.bug is not None
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
            f'script = "scripts/gh6.py"\nstatus = "reproduces"\nknown_as = ["{entry.bug}"]\n',
        )
    )
    # The run's baseline did not know the crash: it reported it as new; today's does.
    header = SHIPPED_ENTRY.read_text().split("compiled backward: ", 1)[1].splitlines()[0]
    exception_type, message = header.split(": ", 1)
    crash = Difference(
        Kind.CRASH,
        1,
        Place(Role.COMPILED, name="backward"),
        exception_type=exception_type,
        message=message,
    )
    assert crash.signature == entry.signature
    program = str(recorded_settings(SHIPPED_ENTRY)["program"])
    unknown = Difference(Kind.VALUE, 2, Place(Role.OUTPUT, index=0), detail="1 of 3 elements")
    report = tmp_path / "r.json"
    report.write_text(
        json.dumps(
            {
                "backend": "aot_eager",
                "torch": "2.13.0+cpu",
                "timeline": [
                    {"seconds": 12.5, "signature": "mutation-argument", "new": False},
                    {"seconds": 40.2, "signature": crash.signature, "new": True},
                ],
                "known": [
                    {"signature": "mutation-argument", "bug": "expand-write-summed", "hits": 3}
                ],
                "failures": [finding(program, crash), finding(program, unknown)],
            }
        )
    )
    assert rediscovery.main(["reach", str(report), "--corpus", str(root)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["#5", "expand-write-summed", "aot_eager", "12", "s"]
    assert " ".join(out[1].split()[2:]) == (
        "not met as run; by a new finding known now: aot_eager 40 s"
    )
    assert out[2].startswith("met 1 of 2 corpus bugs mapped to a known bug, by 1 report(s)")
    assert "1 of the 3 distinct reproducing bugs have no known bug to be counted by" in out[2]
    assert out[3] == "met 2 of 2 counting the reports' new findings that today's baseline knows"
    assert out[4] == (
        "reach, of the 3 distinct reproducing corpus bugs: 1 (33.3 %) as run, "
        "2 (66.7 %) counting those findings"
    )
    assert out[5] == (
        f"new findings in the reports: 2; today's baseline knows 1 of them ({entry.bug}); "
        "1 left for triage"
    )
    assert out[6] == "why the unmapped cannot be counted: generator 1"
    assert out[7].split() == ["#7", "generator:", "no", "module", "hooks"]


def test_a_finding_a_lower_rung_masks_is_recognised_by_the_rungs_above_it(
    tmp_path: Path,
) -> None:
    """Its layer untold (Dynamo alone gets its .grad read wrong), a factory's lost
    requires_grad is still the known AOTAutograd bug: the judge climbs for it."""
    import torch

    from pytest_cgraph import EquivalenceError, check_source

    program = (
        "import torch\n\n\n"
        "def program(a0):\n"
        "    v0 = a0.new_ones((3,), requires_grad=True)\n"
        "    v1 = v0 * 2\n"
        "    return (v1 * (2 if v1.grad is None else 3),)\n\n\n"
        "def inputs(k):\n"
        "    return (torch.ones(3),)\n"
    )
    with pytest.raises(EquivalenceError) as raised:
        check_source(program, backend="aot_eager")
    record = finding(program, raised.value.difference)
    assert record["signature"] == "metadata-output-requires_grad"
    data = {"backend": "aot_eager", "torch": torch.__version__, "failures": [record]}
    if baseline_dir(torch.__version__) is None:
        pytest.skip(f"no shipped baseline for torch {torch.__version__}")
    found = rediscovery.recognised([(tmp_path / "r.json", data)])
    assert [recognition.bug for recognition in found] == ["tensor-new-factory-requires-grad"]


def test_reach_matches_against_the_baseline_it_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty baseline knows nothing: every finding is left for triage."""
    import json

    root = corpus(tmp_path, (8, "reproduces", 1))
    program = str(recorded_settings(SHIPPED_ENTRY)["program"])
    crash = Difference(
        Kind.CRASH, 1, Place(Role.COMPILED, name="call"), exception_type="RuntimeError", message="x"
    )
    report = tmp_path / "r.json"
    report.write_text(json.dumps({"backend": "eager", "failures": [finding(program, crash)]}))
    (tmp_path / "empty").mkdir()
    args = ["reach", str(report), "--corpus", str(root), "--baseline", str(tmp_path / "empty")]
    assert rediscovery.main(args) == 0
    assert "today's baseline knows 0 of them (none); 1 left for triage" in capsys.readouterr().out
    assert rediscovery.main([*args[:-1], str(tmp_path / "gone")]) == 2
    assert capsys.readouterr().err.startswith("error: --baseline ")


def test_a_report_whose_finding_is_not_a_record_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    root = corpus(tmp_path, (9, "reproduces", 1))
    report = tmp_path / "r.json"
    report.write_text(json.dumps({"torch": "2.13.0", "failures": [{"signature": "value-output"}]}))
    assert rediscovery.main(["reach", str(report), "--corpus", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: a report cannot be read: ") and err.count("\n") == 1
    assert "failure 1 is not a failure record" in err


def test_a_bug_met_through_a_shared_signature_is_timed_by_its_own_entry(tmp_path: Path) -> None:
    """Two known bugs share `value-output`: each corpus bug's meeting is its own
    entry's first time, not the signature's."""
    bug = rediscovery.CorpusBug(
        9, "t", "views", "aot_eager", "s", None, "reproduces", "", tmp_path, known_as=("late",)
    )
    report = {
        "backend": "aot_eager",
        "timeline": [
            {"seconds": 5.0, "signature": "value-output", "new": False, "repro": "k/early.py"},
            {"seconds": 90.0, "signature": "value-output", "new": False, "repro": "k/late.py"},
        ],
        "known": [
            {"signature": "value-output", "repro": "k/early.py", "bug": "early", "hits": 4},
            {"signature": "value-output", "repro": "k/late.py", "bug": "late", "hits": 1},
        ],
    }
    (meeting,) = rediscovery.meetings(bug, [(tmp_path / "r.json", report)])
    assert (meeting.seconds, meeting.signature) == (90.0, "value-output")


def test_a_bug_met_by_two_backends_of_one_campaign_is_met_by_each_at_its_time(
    tmp_path: Path,
) -> None:
    bug = rediscovery.CorpusBug(
        9, "t", "views", "aot_eager", "s", None, "reproduces", "", tmp_path, known_as=("late",)
    )
    known = {"signature": "value-output", "new": False, "repro": "k/late.py"}
    report = {
        "backend": "cudagraphs,inductor",
        "timeline": [
            {**known, "seconds": 30.0, "backend": "inductor"},
            {**known, "seconds": 75.0, "backend": "cudagraphs"},
        ],
        "known": [
            {
                "signature": "value-output",
                "repro": "k/late.py",
                "bug": "late",
                "hits": 5,
                "backends": {"cudagraphs": 1, "inductor": 4},
            }
        ],
    }
    met = rediscovery.meetings(bug, [(tmp_path / "r.json", report)])
    assert sorted((m.backend, m.seconds) for m in met) == [("cudagraphs", 75.0), ("inductor", 30.0)]
    # A report written before backends were told apart: one meeting, on the run's backend.
    del report["known"][0]["backends"]
    for event in report["timeline"]:
        del event["backend"]
    (meeting,) = rediscovery.meetings(bug, [(tmp_path / "r.json", report)])
    assert (meeting.backend, meeting.seconds) == ("cudagraphs,inductor", 30.0)
