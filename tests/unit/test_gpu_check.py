"""scripts/gpu_check.py: loading the plugin uninstalled, bounds, re-checked entries, summary."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cgraph_doubles.scripts import load_script

REPO = Path(__file__).resolve().parents[2]


gpu_check = load_script("gpu_check")


def test_the_staged_source_tree_imports_the_package_without_an_install(
    tmp_path: Path,
) -> None:
    staged = gpu_check.stage_source(REPO, tmp_path / "src")
    found = subprocess.run(
        [
            sys.executable,
            "-c",
            "import importlib.metadata as m, pytest_cgraph.strategies.families as f; "
            "print(f.__file__); "
            "print(m.distribution('pytest-cgraph').locate_file(''))",
        ],
        env=dict(os.environ, PYTHONPATH=str(staged)),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    # PYTHONPATH comes before any installed copy: these are the staged files,
    # and pytest finds the plugin by its entry point, as if installed.
    assert found[0] == str(staged / "pytest_cgraph" / "strategies" / "families.py")
    assert found[1] == str(staged)
    assert (
        staged / "pytest_cgraph" / "strategies"
    ).resolve() == REPO / "pytest_cgraph" / "strategies"


def test_without_an_installed_plugin_it_is_loaded_from_the_source_on_pythonpath(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gpu_check, "_has_entry_point", lambda: False)
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    env, how = gpu_check.plugin_setup(tmp_path)
    assert env["PYTHONPATH"] == os.pathsep.join([str(tmp_path / "src"), "/elsewhere"])
    assert "source tree" in how


def test_an_installed_plugin_is_used_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A second copy on PYTHONPATH would register the plugin twice.
    monkeypatch.setattr(gpu_check, "_has_entry_point", lambda: True)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    env, how = gpu_check.plugin_setup(tmp_path)
    assert "PYTHONPATH" not in env and "installed" in how
    assert not (tmp_path / "src").exists()


@pytest.mark.parametrize(
    ("requested", "available", "device", "note"),
    [
        ("auto", False, "cpu", gpu_check.NO_CUDA),
        ("cuda", False, "cpu", gpu_check.NO_CUDA),
        ("cpu", False, "cpu", gpu_check.NO_CUDA),
        ("auto", True, "cuda", None),
        ("cuda", True, "cuda", None),
        ("cpu", True, "cpu", "nothing captured"),
    ],
)
def test_the_device_is_cuda_where_there_is_one_and_cpu_says_so(
    requested: str, available: bool, device: str, note: str | None
) -> None:
    chosen, notes = gpu_check.choose_device(requested, {"cuda_available": available})
    assert chosen == device
    if note is None:
        assert notes == []
    else:
        assert len(notes) == 1 and note in notes[0]


def test_time_a_step_leaves_goes_to_the_steps_after_it() -> None:
    assert gpu_check.share(100.0, "campaign", ["campaign", "campaign"]) == 50.0
    first = gpu_check.share(400.0, "examples", ["examples", "examples", "campaign", "campaign"])
    assert first == pytest.approx(400 * 0.15 / 0.85)


@pytest.mark.parametrize("backend", ["cudagraphs", "reduce-overhead"])
@pytest.mark.parametrize(("wall", "workers"), [(127, 8), (300, 8), (400, 16), (250, 4), (300, 2)])
def test_a_campaign_ends_inside_its_bound(wall: float, workers: int, backend: str) -> None:
    plan = gpu_check.plan_campaign(wall, workers, backend)
    assert plan.shards * gpu_check.FAMILY_COUNT >= workers  # no worker idles
    used = gpu_check.campaign_overhead(backend) + gpu_check.grace(wall) + plan.shrink_s
    assert used + plan.duration_s <= wall + 0.5  # the box is the whole campaign's


def test_an_inductor_campaign_keeps_back_time_for_its_last_compile() -> None:
    plain = gpu_check.plan_campaign(300, 8, "cudagraphs")
    inductor = gpu_check.plan_campaign(300, 8, "reduce-overhead")
    assert plain.duration_s - inductor.duration_s == gpu_check.INDUCTOR_OVERHEAD_S


def test_a_short_bound_is_interrupted_a_fifth_before_its_end() -> None:
    assert [gpu_check.grace(b) for b in (5, 20, 50, 600)] == [2.0, 4.0, 10.0, 15.0]


def test_a_tiny_bound_still_hunts_a_little() -> None:
    plan = gpu_check.plan_campaign(30, 1)
    assert plan.duration_s == 5.0


def test_a_step_is_interrupted_then_killed_at_its_bound(tmp_path: Path) -> None:
    step = gpu_check.Step(
        "sleeper",
        "examples",
        [
            sys.executable,
            "-c",
            "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); time.sleep(60)",
        ],
        tmp_path,
        budget_s=3.0,
    )
    gpu_check.run_step(step, dict(os.environ))
    assert step.timed_out and step.exit_code == -9  # SIGINT ignored: killed
    assert step.wall_s < 10
    assert step.log.read_text().startswith("$ ")


def test_an_interrupted_pytest_like_step_ends_at_the_sigint(tmp_path: Path) -> None:
    step = gpu_check.Step(
        "interruptible",
        "examples",
        [
            sys.executable,
            "-c",
            # SIGINT raises KeyboardInterrupt, as in a shell, even where this
            # test's process ignores SIGINT and the child would inherit that.
            "import signal, time\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
            "try:\n time.sleep(60)\nexcept KeyboardInterrupt:\n"
            " print('reports written'); raise SystemExit(2)",
        ],
        tmp_path,
        # Long enough for the child to be inside its try on a loaded machine.
        budget_s=8.0,
    )
    gpu_check.run_step(step, dict(os.environ))
    assert step.timed_out and step.exit_code == 2
    assert "reports written" in step.log.read_text()


def _junit(path: Path, cases: dict[str, str]) -> None:
    body = "".join(
        f'<testcase classname="{name.rsplit("::", 1)[0].replace("::", ".")}" '
        f'name="{name.rsplit("::", 1)[1]}">{inner}</testcase>'
        for name, inner in cases.items()
    )
    path.write_text(f'<testsuites><testsuite name="pytest">{body}</testsuite></testsuites>')


def test_only_entries_that_reproduced_here_are_adopted(tmp_path: Path) -> None:
    baseline = tmp_path / "torch-2.13"
    baseline.mkdir()
    for name in ("a.toml", "b.toml", "c.toml", "d.py", "e.toml"):
        (baseline / name).write_text(name)
    junit = tmp_path / "junit.xml"
    _junit(
        junit,
        {
            "cgraph::known::torch-2.13/a": "",
            "cgraph::known::torch-2.13/b": '<failure message="FIXED"/>',  # no longer reproduces
            "cgraph::known::torch-2.13/c": '<skipped message="x"/>',
            "cgraph::known::torch-2.13/d": "",
            "cgraph::known::torch-2.13/gone": "",  # no such file
            "cgraph::known::other/e": "",  # another registry's
            "tests::torch-2.13/a": "",  # not a --cgraph-check-known item
        },
    )
    found = gpu_check.reproducing_entries(junit, baseline)
    assert found == [baseline / "a.toml", baseline / "d.py"]
    into = gpu_check.adopt(found, tmp_path / "known")
    assert sorted(p.name for p in into.iterdir()) == ["a.toml", "d.py"]
    # A re-check stopped before writing its results adopts nothing.
    assert gpu_check.reproducing_entries(tmp_path / "missing.xml", baseline) == []


REPORT = {
    "backend": "cudagraphs",
    "device": "cpu",
    "torch": "2.13.0+cpu",
    "complete": True,
    "cwd": "RUN",
    "programs": 50,
    "drawn": 48,
    "invalid": 2,
    "seconds": 20.0,
    "compiles": 70,
    "captured": 36,
    "hits": {"value-output": 2, "mutation-argument": 1},
    "known_hits": {"grad-grad": 3},
    "skipped": {"cpu device": 60, "mutated inputs": 10, "a": 1, "b": 1, "c": 1, "d": 1},
    "known": [{"signature": "grad-grad", "hits": 3}],
    "failures": [
        {
            "signature": "value-output",
            "full_signature": "value-output-cudagraphs",
            "repro": "repros/value-output-cudagraphs.py",
            "verified": True,
            "repro_result": {"status": "written"},
        },
        {"signature": "value-output", "full_signature": "value-output-cudagraphs"},
        {
            "signature": "mutation-argument",
            "repro": None,
            "verified": False,
            "repro_result": {"status": "not written inline"},
        },
    ],
}


def test_a_run_is_summarized_from_its_report(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "campaign-cudagraphs"
    report = json.loads(json.dumps(REPORT).replace('"RUN"', json.dumps(str(run))))
    line = gpu_check.summarize_report(report, run, "runs/campaign-cudagraphs")
    assert (line["programs"], line["programs_per_s"], line["captured"]) == (50, 2.5, 36)
    # 50 checked, 2 invalid, 3 new and 3 known failing: 42 passed, 36 of them captured
    assert (line["passed"], line["captured_share"]) == (42, 85.7)
    assert line["skipped"] == 74
    assert line["skip_reasons"][:2] == [["cpu device", 60], ["mutated inputs", 10]]
    assert len(line["skip_reasons"]) == 5
    assert line["known_seen"] == 1
    assert line["new_signatures"] == [
        {
            "signature": "value-output-cudagraphs",
            "programs": 2,
            "repro": "runs/campaign-cudagraphs/repros/value-output-cudagraphs.py",
            "verified": True,
            "note": "written",
        },
        {
            "signature": "mutation-argument",
            "programs": 1,
            "repro": None,
            "verified": False,
            "note": "not written inline",
        },
    ]


def test_the_summary_text_states_every_run_and_the_missing_gpu(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs" / "campaign-cudagraphs"
    run_dir.mkdir(parents=True)
    (run_dir / "report.json").write_text(
        json.dumps(REPORT).replace('"RUN"', json.dumps(str(run_dir)))
    )
    (run_dir / "pytest.log").write_text("...\n======= 1 failed, 7 passed in 20.01s =======\n")
    step = gpu_check.Step("campaign-cudagraphs", "campaign", ["pytest", "-m", "a b"], run_dir)
    step.report, step.html = run_dir / "report.json", run_dir / "report.html"
    step.exit_code, step.wall_s, step.budget_s = 1, 21.0, 30.0
    lost = gpu_check.Step("examples-cudagraphs", "examples", ["pytest"], tmp_path / "lost")
    lost.report, lost.exit_code, lost.timed_out = tmp_path / "lost" / "r.json", -9, True
    summary = {
        "budget_s": 120.0,
        "used_s": 118.0,
        "device": "cpu",
        "workers": 1,
        "seed": 1,
        "plugin": "installed package",
        "notes": [f"{gpu_check.NO_CUDA} (the steps ran on CPU)"],
        "environment": {"torch": "2.13.0+cpu", "python": "3.12.1", "cuda_available": False},
        "runs": [gpu_check.step_summary(step), gpu_check.step_summary(lost)],
    }
    text = gpu_check.render_summary(summary)
    assert f"NOTE: {gpu_check.NO_CUDA}" in text
    assert "campaign-cudagraphs: exit 1, wall 21.0 s" in text
    assert "pytest: 1 failed, 7 passed in 20.01s" in text
    assert "programs: 50 checked, 2 invalid, 2.5 programs/s over 20.0 s" in text
    assert (
        "CUDA graphs: 36 of 42 passing (85.7 %) programs captured, 74 graphs skipped "
        "(top reasons: cpu device x60" in text
    )
    assert "value-output-cudagraphs (2 programs, verified): " in text
    assert "runs/campaign-cudagraphs/repros/value-output-cudagraphs.py" in text
    assert "mutation-argument (1 programs): no repro (not written inline)" in text
    assert "examples-cudagraphs: exit -9, stopped at its bound" in text
    assert "no JSON report was written" in text
    assert summary["runs"][0]["command"] == "pytest -m 'a b'"


def test_long_logs_keep_their_head_and_tail(tmp_path: Path) -> None:
    log = tmp_path / "pytest.log"
    log.write_bytes(b"H" * 1000 + b"M" * 10_000 + b"T" * 3000)
    gpu_check.cut_log(log, limit=4000)
    data = log.read_bytes()
    assert data.startswith(b"H" * 1000) and data.endswith(b"T" * 3000)
    assert b"bytes cut" in data and len(data) < 4100


def test_the_archive_holds_the_runs_but_not_the_staged_source(tmp_path: Path) -> None:
    import tarfile

    work = tmp_path / "work"
    gpu_check.stage_source(REPO, work / "src")
    (work / "runs" / "x").mkdir(parents=True)
    (work / "runs" / "x" / "pytest.log").write_text("log")
    (work / "summary.json").write_text("{}")
    gpu_check.pack(work, tmp_path / "a.tar.gz")
    with tarfile.open(tmp_path / "a.tar.gz") as tar:
        names = tar.getnames()
    assert "runs/x/pytest.log" in names and "summary.json" in names
    assert not any(name.startswith("src") for name in names)


def test_a_dry_run_plans_every_step_inside_the_budget(tmp_path: Path) -> None:
    import torch

    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "gpu_check.py"),
            *("--out", str(tmp_path), "--minutes", "8", "--workers", "8", "--dry-run"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    lines = done.stdout.splitlines()
    names = [line.split("] ", 1)[1].split(":", 1)[0] for line in lines]
    assert names == [
        "examples-cudagraphs",
        "examples-reduce-overhead",
        "campaign-cudagraphs",
        "campaign-reduce-overhead",
    ]
    assert sum(float(line[1:].split(" s]")[0]) for line in lines) <= 8 * 60
    device = "cuda" if torch.cuda.is_available() else "cpu"
    assert all(f"--cgraph-device {device}" in line for line in lines)
    assert all("--cgraph-report " in line and "--cgraph-report-html " in line for line in lines)
    assert "--cgraph-duration" in lines[2] and "-n 8" in lines[2]
    environment = json.loads((tmp_path / "environment.json").read_text())
    assert environment["torch"] == torch.__version__
    assert environment["cuda_available"] == torch.cuda.is_available()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["environment.json"]


def test_a_plugin_that_warns_at_configure_is_kept_out_of_every_step(tmp_path: Path) -> None:
    # pytest-benchmark, on the GPU image, warns at configure time that xdist
    # disables it; under the project's ``filterwarnings = error`` that ended
    # the examples' runs with an internal error before any test ran.
    site = tmp_path / "site"
    info = site / "warner-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: warner\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pytest11]\nbenchmark = warner\n")
    (site / "warner.py").write_text(
        "import warnings\n"
        "def pytest_configure(config):\n"
        "    warnings.warn(UserWarning('benchmarks are disabled under xdist'))\n"
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\nfilterwarnings = error\n")
    env = dict(os.environ, PYTHONPATH=str(site))

    def exit_code(argv: list[str]) -> int:
        done = subprocess.run([*argv, "-q"], cwd=tmp_path, env=env, capture_output=True)
        return done.returncode

    plain = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
    assert exit_code(plain) == 3  # the warning is an internal error
    assert exit_code(gpu_check._pytest()) == 5  # no tests collected, nothing else


def test_a_short_lease_can_plan_the_examples_alone(tmp_path: Path) -> None:
    def planned(*steps: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                str(REPO / "scripts" / "gpu_check.py"),
                *("--out", str(tmp_path), "--minutes", "3", "--dry-run", *steps),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )

    done = planned("--steps", "examples")
    names = [line.split("] ", 1)[1].split(":", 1)[0] for line in done.stdout.splitlines()]
    assert names == ["examples-cudagraphs", "examples-reduce-overhead"]
    wrong = planned("--steps", "examples,benchmarks")
    assert wrong.returncode == 2
    assert "--steps takes some of recheck, examples, campaign" in wrong.stderr
