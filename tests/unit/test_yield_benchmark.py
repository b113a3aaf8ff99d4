"""``benchmarks/yield.py``: new findings and known bugs per campaign, and bugs after triage."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _load() -> ModuleType:
    # ``yield`` is a keyword: the script is loaded by path, not imported by name.
    spec = importlib.util.spec_from_file_location("yield_benchmark", BENCHMARKS / "yield.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["yield_benchmark"] = module
    spec.loader.exec_module(module)
    return module


bench = _load()


def _failure(signature: str, family: str, repro: str) -> dict[str, object]:
    return {
        "signature": signature,
        "kind": "value",
        "family": family,
        "layer": "aot_eager",
        "hits": 2,
        "repro": repro,
    }


REPORT = {
    "programs": 3600,
    "wall": 1800.0,
    "families": {"training": 2000, "mutation": 1600},
    "failures": [
        _failure("value-output", "training", "repros/value-output.py"),
        _failure("value-output", "mutation", "repros/value-output.py"),  # met twice: one finding
        _failure("grad-grad", "training", "repros/grad-grad.py"),
        _failure("mutation-argument", "mutation", "repros/mutation-argument.py"),
        _failure("aliasing-x", "mutation", "repros/aliasing-x.py"),
    ],
    "known": [
        {"signature": "s", "repro": "k/a.toml", "hits": 5, "bug": "sgd-grad-none"},
        {"signature": "t", "repro": "k/b.toml", "hits": 1, "bug": "sgd-grad-none"},
        {"signature": "u", "repro": "mine/c.py", "hits": 3, "bug": None},
    ],
}


def test_a_campaign_s_findings_count_once_per_signature_and_known_bugs_by_id() -> None:
    lines, figures = bench.describe("after", "aot_eager", REPORT, None)
    assert figures["new_findings"] == 4
    assert figures["new_per_hour"] == 8.0
    assert figures["known_bugs_met"] == {"sgd-grad-none": 6, "c.py": 3}
    assert figures["families"] == {
        "training": {"programs": 2000, "new": 2},
        "mutation": {"programs": 1600, "new": 2},
    }
    assert "bugs" not in figures
    assert any("known: sgd-grad-none x6, c.py x3" in line for line in lines)


def test_triage_turns_findings_into_bugs_counted_once_and_says_what_it_has_not_seen() -> None:
    triage = {
        "value-output.py": "sgd-momentum-buffer-stale",
        "grad-grad": "sgd-momentum-buffer-stale",  # by signature: the same bug again
        "mutation-argument.py": "known:one-node-unused-outputs",
    }
    lines, figures = bench.describe("after", "aot_eager", REPORT, triage)
    assert figures["bugs"] == ["sgd-momentum-buffer-stale"]
    assert figures["bugs_per_hour"] == 2.0
    assert figures["untriaged"] == ["aliasing-x"]
    assert any("aliasing-x.py -> untriaged" in line for line in lines)
    triage["aliasing-x"] = "false-alarm"
    _, figures = bench.describe("after", "aot_eager", REPORT, triage)
    assert figures["bugs"] == ["sgd-momentum-buffer-stale"] and figures["untriaged"] == []
    # What torch refuses on purpose is no bug to count either.
    triage["aliasing-x"] = "limitation"
    _, figures = bench.describe("after", "aot_eager", REPORT, triage)
    assert figures["bugs"] == ["sgd-momentum-buffer-stale"]
    triage["aliasing-x"] = "inductor-something-new"
    _, figures = bench.describe("after", "aot_eager", REPORT, triage)
    assert figures["bugs"] == ["inductor-something-new", "sgd-momentum-buffer-stale"]


def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        bench.main(["--families", "training,serving-typo"])
    assert exited.value.code == 2
    assert "unknown families ['serving-typo']" in capsys.readouterr().err
    broken = tmp_path / "triage.json"
    broken.write_text("{not json")
    with pytest.raises(SystemExit) as exited:
        bench.main(["--triage", str(broken)])
    assert exited.value.code == 2
    assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.deep
def test_a_short_campaign_runs_with_the_baselines_on_and_reports_its_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "figures.json"
    code = bench.main(
        [
            "--minutes", "0.2", "--workers", "1", "--backends", "aot_eager",
            "--families", "training", "--json", str(out), "--keep", str(tmp_path / "kept"),
        ]
    )  # fmt: skip
    assert code == 0
    (figures,) = json.loads(out.read_text())
    assert figures["backend"] == "aot_eager" and figures["programs"] > 0
    assert set(figures["families"]) == {"training"}
    assert figures["families"]["training"]["programs"] == figures["programs"]
    assert (tmp_path / "kept" / "after-aot_eager" / "report.json").is_file()
    printed = capsys.readouterr().out
    assert "baselines on" in printed and "training" in printed


def test_a_campaign_s_box_is_its_whole_wall_time(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``--cgraph-duration`` boxes the whole campaign; the benchmark once passed each
    item's share as the box, and a "30-minute" campaign of ten families ran 3 minutes."""
    seen: list[list[str]] = []

    def run(command: list[str], cwd: Path, **_: object) -> object:
        seen.append(command)
        (Path(cwd) / "report.json").write_text(json.dumps(REPORT))
        return None

    monkeypatch.setattr(bench.subprocess, "run", run)
    options = bench.argparse.Namespace(
        minutes=30.0, workers=1, seed=1, examples=None, no_baseline=False
    )
    bench.campaign(BENCHMARKS.parent, "aot_eager", ["training", "serving", "views"], options, None)
    (command,) = seen
    assert "--cgraph-duration=1800s" in command, command


def test_kept_reports_are_described_again_with_a_later_triage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Triage takes longer than a campaign: ``--reports`` counts bugs in campaigns
    already run, per backend and per family, without running them again."""
    kept = tmp_path / "report.json"
    kept.write_text(json.dumps({**REPORT, "backend": "aot_eager", "seconds": 1800.0}))
    triage = tmp_path / "triage.json"
    first = REPORT["failures"][0]  # type: ignore[index]
    triage.write_text(json.dumps({first["signature"]: "some-new-bug"}))
    assert bench.main(["--reports", str(kept), "--triage", str(triage)]) == 0
    out = capsys.readouterr().out
    assert "kept report(s)" in out and "aot_eager" in out
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("    ")}
    assert rows["training"].rstrip().endswith("1 bugs"), out
    assert rows["mutation"].rstrip().endswith("0 bugs"), out


def test_one_broad_signature_with_two_repro_files_is_two_findings() -> None:
    """A cudagraphs campaign met ``grad-grad`` as two programs of two mechanisms (a
    mark_dirty Function, an in-place foreach op): one per file, not per signature."""
    report = {
        **REPORT,
        "failures": [
            _failure("grad-grad", "mutation", "repros/grad-grad-aot_eager.py"),
            _failure("grad-grad", "spellings", "repros/grad-grad-aot_eager-2.py"),
        ],
    }
    triage = {"grad-grad-aot_eager.py": "known:mark-dirty", "grad-grad-aot_eager-2.py": "foreach"}
    _, figures = bench.describe("after", "cudagraphs", report, triage)
    assert figures["new_findings"] == 2 and figures["bugs"] == ["foreach"]
    assert figures["families"]["mutation"] == {"programs": 1600, "new": 1, "bugs": 0}
