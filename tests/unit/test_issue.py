"""Reports for PyTorch's tracker (``pytest_cgraph.recording.issue``).

A report claims only what runs of its script showed: the ablation's logic is
held here with a double of the script runner (which run fails is set by the
test), and one report is written end to end from a baseline entry with real
runs, as a maintainer would receive it.
"""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from pytest_cgraph.recording import issue
from pytest_cgraph.recording.issue import FLOAT64, SETTINGS, Ablation, Row, ablate
from pytest_cgraph.recording.plain import DEFAULT, PlainResult, Run, make_plain

BASELINE = Path(__file__).resolve().parents[2] / "pytest_cgraph" / "known" / "torch-2.13"
#: A Dynamo bug found by a user's test: a hand-written SGD step keeps its gradient.
SGD = BASELINE / "grad-grad-presence-eager.toml"
HARNESS_WORDS = re.compile(r"\b(iteration|output #|forms?|harness|signature|entry|mechanism)\b")


def test_every_setting_of_the_table_is_one_torch_has_and_the_value_is_not_its_default() -> None:
    # A renamed setting would make its row pass for the wrong reason (an attribute
    # set on a module that never reads it): each must exist, and differ from now.
    for setting in SETTINGS:
        module_name, _, attribute = setting.name.rpartition(".")
        owner_name, _, inner = module_name.rpartition(".")
        if inner == "triton":
            module = importlib.import_module(owner_name).triton
        else:
            module = importlib.import_module(module_name)
        assert hasattr(module, attribute), setting.name
        assert getattr(module, attribute) != setting.value, f"{setting.name} is already that"


def test_a_setting_is_set_right_after_the_scripts_import_of_torch() -> None:
    script = "import copy\nimport torch\n\nx = torch.ones(2)\n"
    setting = next(s for s in SETTINGS if s.name.endswith("fallback_random"))
    placed = issue._with_lines(script, setting.lines)
    assert placed.splitlines()[:4] == [
        "import copy",
        "import torch",
        "import torch._inductor.config",
        "torch._inductor.config.fallback_random = True",
    ]


def _fake_runs(monkeypatch: pytest.MonkeyPatch, fails: object) -> list[str]:
    """Runs of scripts decided by ``fails(script, python)``: exit 1 with the finding's
    assertion, or 0. Returns the scripts run, for the test to read."""
    ran: list[str] = []

    def run(text: str, limit: float = 0, python: str | None = None, env: object = None) -> Run:
        ran.append(text)
        failing = fails(text, python)  # type: ignore[operator]
        return Run(1, "AssertionError: grad of a0") if failing else Run(0, "")

    monkeypatch.setattr(issue, "run_script", run)
    monkeypatch.setattr(issue, "torch_version_of", lambda python: python.rpartition("/")[2])
    return ran


@pytest.fixture(scope="module")
def sgd() -> PlainResult:
    result = make_plain(SGD)
    assert result.verified, result.verdict
    return result


def test_the_ablation_names_the_lowest_failing_backend_the_setting_that_removes_it_and_the_window(
    monkeypatch: pytest.MonkeyPatch, sgd: PlainResult
) -> None:
    def fails(script: str, python: str | None) -> bool:
        if python is not None:  # the versions: a regression in 2.12
            return not python.endswith("2.11.0")
        return "donated_buffer" not in script and 'backend="eager"' not in script

    ran = _fake_runs(monkeypatch, fails)
    ablation = ablate(sgd, DEFAULT, ["/v/2.13.0", "/v/2.11.0", "/v/2.12.0"])
    assert [row.fails for row in ablation.backends] == [False, True, True, True]
    assert ablation.first_layer == '`backend="aot_eager"`'
    # Settings ran on aot_eager, Dynamo's and AOTAutograd's only (not Inductor's).
    assert ablation.settings_on == '`backend="aot_eager"`'
    names = [row.change for row in ablation.settings]
    assert not any("_inductor" in name for name in names)
    assert any("_functorch.config.donated_buffer" in name for name in names)
    # A setting that cannot bear on the script is not run: it draws nothing random,
    # reads no scalar and takes no float argument.
    assert not any("capture_scalar_outputs" in name for name in names)
    assert not any("specialize_float" in name for name in names)
    assert ablation.removed_by == ["torch._functorch.config.donated_buffer = False"]
    # Versions oldest first, and the window said in one sentence.
    assert [row.change for row in ablation.versions] == [
        "torch 2.11.0",
        "torch 2.12.0",
        "torch 2.13.0",
    ]
    summary = ablation.summary()
    assert 'it first shows with `backend="aot_eager"` (AOTAutograd), while' in summary
    assert 'while `backend="eager"` passes;' in summary
    assert "goes away with `torch._functorch.config.donated_buffer = False`" in summary
    assert "fails on torch 2.12.0, 2.13.0 and passes on 2.11.0" in summary
    assert sum("donated_buffer = False" in text for text in ran) == 1


def test_an_ablation_where_nothing_fails_says_so_rather_than_naming_a_layer(
    monkeypatch: pytest.MonkeyPatch, sgd: PlainResult
) -> None:
    _fake_runs(monkeypatch, lambda script, python: False)
    ablation = ablate(sgd, DEFAULT)
    assert ablation.first_layer is None and not ablation.settings
    assert ablation.summary() == "In short: no backend of the table shows it."


def test_the_float64_row_runs_only_where_values_are_compared() -> None:
    # A grad that is set on one side only is no rounding effect to rule out.
    assert FLOAT64 not in Ablation().table()
    rows = Ablation(settings=[Row(FLOAT64, True, "**fails**")])
    assert FLOAT64 in rows.table()


def test_a_report_is_written_with_its_script_ablation_and_trace_from_a_baseline_entry(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_cgraph.issue", str(SGD), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    name = SGD.stem
    report = (tmp_path / f"{name}.md").read_text()
    title = report.split("### Title\n\n", 1)[1].splitlines()[0]
    assert len(title) <= 100 and not HARNESS_WORDS.search(title.lower()), title
    body = report.split("### Versions")[0]
    assert "pytest_cgraph" not in body and "def program(" not in body
    script = (tmp_path / name / "repro.py").read_text()
    assert f"```python\n{script.rstrip()}\n```" in report
    # The bug shows with torch's defaults, so the script is on torch.compile(fn).
    assert "compiled_fn = torch.compile(fn)\n" in script and len(script.splitlines()) <= 25
    assert "eager gives `None`, compiled gives `tensor([0., 1., 2.])`" in report
    fingerprint = json.loads((tmp_path / name / "ablation.json").read_text())
    assert fingerprint["first_layer"] == '`backend="eager"`'
    assert fingerprint["removed_by"] == []
    assert '| compiled with `backend="eager"` | **fails** |' in report
    assert 'File "repro.py"' in report and "cgraph-plain-" not in report
    assert list((tmp_path / name / "trace").glob("*.log")), "a TORCH_TRACE log"
    # tlparse comes with the test extra, as with the issue extra; both go into one
    # zip to attach to the issue.
    assert (tmp_path / name / "tlparse" / "index.html").is_file()
    with zipfile.ZipFile(tmp_path / f"{name}-trace.zip") as archive:
        names = archive.namelist()
    assert "tlparse/index.html" in names and any(n.startswith("trace/") for n in names)
    assert f"`{name}-trace.zip`" in report
    import torch

    lines = len(script.splitlines())
    assert done.stdout.strip().endswith(f"{lines} lines; torch {torch.__version__}: exit 1")


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["nowhere.toml"], "nowhere.toml does not exist"),
        ([str(BASELINE)], "is a directory: give --out DIR"),
        ([str(BASELINE), "--out", "x", "--bug", "no-such-bug"], "no bug no-such-bug"),
    ],
)
def test_a_wrong_argument_gets_one_line_and_exit_2(arguments: list[str], said: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_cgraph.issue", *arguments],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert said in lines[-1] and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("upstream", "said"),
    [
        (
            "none found (2026-12-07; searched: grad = None dropped); nearest pytorch/pytorch#1",
            "No existing issue found (searched on 2026-12-07 for: grad = None dropped); "
            "nearest pytorch/pytorch#1.",
        ),
        ("none found (searched 2026-11-27)", "No existing issue found (searched on 2026-11-27)."),
        ("pytorch/pytorch#94773", "Related issues: pytorch/pytorch#94773"),
    ],
)
def test_the_upstream_lead_reads_as_a_maintainer_would_write_it(upstream: str, said: str) -> None:
    assert issue._upstream_words(upstream) == said


def test_specialize_float_bears_only_on_a_python_float_handed_as_an_argument() -> None:
    from pytest_cgraph.recording.issue import _has_float_argument

    (specialize,) = [s for s in SETTINGS if s.name.endswith("specialize_float")]
    # A blind read of the *range report asked why a float setting was tried: its only
    # float is inside a tensor's constructor.
    assert not specialize.bears_on("args = (torch.arange(6.0).reshape(2, 3),)\n")
    assert specialize.bears_on("eager_args = (torch.ones(2), 0.5)\n")
    assert _has_float_argument("compiled_args = (torch.ones(2), -1.5)\n")
    assert not _has_float_argument("args = (torch.full((2,), 0.5), 3)\n")


def test_float64_is_asked_only_of_a_difference_small_enough_to_be_rounding() -> None:
    from pytest_cgraph.oracle.difference import Difference, Kind, Place, Role
    from pytest_cgraph.recording.issue import _could_be_rounding

    def value(max_rel: float | None) -> Difference:
        return Difference(Kind.VALUE, 1, Place(Role.OUTPUT, index=0), max_rel=max_rel)

    assert _could_be_rounding(value(1e-3)) and _could_be_rounding(value(None))
    assert not _could_be_rounding(value(0.5))  # 3 against 2: not rounding
    presence = Difference(Kind.GRAD, 1, Place(Role.GRAD, name="a0"), facet="presence")
    assert not _could_be_rounding(presence)


def test_a_torch_whose_run_timed_out_is_not_said_to_pass() -> None:
    """A report written on a busy machine said a bug "passes on 2.11.0, 2.12.0" where
    those runs had timed out: only a clean exit passes."""
    ablation = Ablation(
        versions=[
            Row("torch 2.11.0", False, "fails otherwise: `timed out after 300 s`", -1000),
            Row("torch 2.12.0", False, "passes"),
            Row("torch 2.13.0", True, "**fails**", 1),
        ]
    )
    summary = ablation.summary()
    assert "it fails on torch 2.13.0 and passes on 2.12.0" in summary
    assert "(on 2.11.0 the script fails otherwise)" in summary
    assert "passes on 2.11.0" not in summary


def test_a_lower_backend_that_fails_otherwise_is_not_said_to_pass() -> None:
    """Inductor's `aten.set_` report said `aot_eager_decomp_partition` passes where it
    raised AOTAutograd's own refusal: a row that fails otherwise is said so."""
    ablation = Ablation(
        backends=[
            Row('`backend="eager"`', False, "passes", layer="Dynamo"),
            Row('`backend="aot_eager_decomp_partition"`', False, "fails otherwise: `x`", 1),
            Row("`torch.compile(fn)`", True, "**fails**", 1, layer="Inductor"),
        ]
    )
    summary = ablation.summary()
    assert 'while `backend="eager"` passes' in summary
    assert 'and `backend="aot_eager_decomp_partition"` fails otherwise' in summary
    assert 'decomp_partition"` pass' not in summary
