"""One bounded acceptance run of pytest-cgraph on a machine with a GPU.

    python scripts/gpu_check.py --out DIR [--minutes 8] [--device auto|cpu|cuda]

A machine with a GPU is often lent for minutes, without network: this
spends them measuring. It installs nothing. If pytest-cgraph is installed
(its ``pytest11`` entry point exists) that copy runs; otherwise the plugin
runs from this source tree, staged under the work directory as the layout
``pip install`` would make (``strategies/`` as ``pytest_cgraph.strategies``,
and a ``.dist-info`` whose entry point loads the plugin) and put on
``PYTHONPATH``, which xdist workers and checking children inherit.

Steps, each a pytest subprocess with a wall-clock bound of its own (the
bounds share the budget; time a step leaves unused goes to the next):

1. the environment: Python, torch, CUDA, cuDNN, the GPU, the baseline;
2. on a torch with no shipped baseline (or with ``--recheck always``): the
   nearest baseline's entries replayed here (``--cgraph-check-known``);
   those that reproduce become a ``--cgraph-known`` registry for the rest,
   so torch's recorded differences do not eat the budget as new ones;
3. ``examples/`` on ``cudagraphs`` and on ``reduce-overhead``;
4. a time-boxed campaign of every family on each of the two backends.

``DIR`` receives three files: ``environment.json``, ``summary.txt`` (per
run: exit code, programs checked and per second, CUDA graphs captured vs
skipped with torch's top skip reasons, new signatures with repro paths) and
``gpu-check.tar.gz`` (every run's JSON report, HTML page, repro dir and
pytest output, with ``summary.json``). On a machine without CUDA the same
steps run on CPU and the summary says that nothing was captured, so the
check can be rehearsed anywhere.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
ARCHIVE = "gpu-check.tar.gz"
SUMMARY = "summary.txt"
ENVIRONMENT = "environment.json"
NO_CUDA = "no CUDA device: nothing captured"
BACKENDS = ("cudagraphs", "reduce-overhead")
#: Share of the budget each kind of step is planned with (renormalised over
#: the steps left, so a step that ends early gives its time to the next).
WEIGHTS = {"recheck": 0.15, "examples": 0.15, "campaign": 0.275}
#: Kept back from the budget for packing and the summary.
RESERVE_S = 15.0
#: What a campaign spends outside its items' hunting: workers importing
#: torch and initialising CUDA, the report, teardown. H100 runs 5 and 6
#: (8 workers): 42 s and more than 38 s for cudagraphs.
CAMPAIGN_OVERHEAD_S = 45.0
#: Added for a backend that compiles with Inductor: the programs drawing when
#: the box ends still compile, and a shrink step compiles too (H100 run 5:
#: reduce-overhead ran 70 s past its 72 s box; 30 s kept back was too few).
INDUCTOR_OVERHEAD_S = 45.0
INDUCTOR_BACKENDS = ("reduce-overhead", "inductor", "max-autotune")
#: A step is sent SIGINT this long before its bound (less for a short
#: bound), so that pytest writes its reports; it is killed at the bound.
GRACE_S = 15.0
#: Each pytest output is cut to this many bytes in the archive (head and tail
#: kept): results come back as files of at most 16 MiB.
LOG_LIMIT = 2 * 1024 * 1024
FAMILY_COUNT = 8

#: Run in a child: what this machine is. Printed as one JSON line.
PROBE = r"""
import json, os, platform, sys
found = {"python": sys.version.split()[0], "platform": platform.platform(),
         "cpus": os.cpu_count()}
try:
    import torch
    found["torch"] = torch.__version__
    found["torch_cuda"] = torch.version.cuda
    found["cuda_available"] = torch.cuda.is_available()
    found["device_count"] = torch.cuda.device_count() if found["cuda_available"] else 0
    found["gpus"] = [torch.cuda.get_device_name(i) for i in range(found["device_count"])]
    found["capability"] = [
        ".".join(map(str, torch.cuda.get_device_capability(i)))
        for i in range(found["device_count"])
    ]
    cudnn = torch.backends.cudnn
    found["cudnn"] = cudnn.version() if cudnn.is_available() else None
    found["cudnn_enabled"] = bool(cudnn.enabled)
except Exception as error:
    found["torch_error"] = f"{type(error).__name__}: {error}"
for name in ("triton", "pytest", "hypothesis", "xdist", "filelock", "lazy_loader", "numpy"):
    try:
        module = __import__(name)
        found[name] = getattr(module, "__version__", "present")
    except Exception as error:
        found[name] = None
try:
    import pytest_cgraph, pytest_cgraph.strategies.families
    from pytest_cgraph.registry import entries as registry
    found["plugin_file"] = pytest_cgraph.__file__
    version = found.get("torch", "")
    own = registry.baseline_dir(version)
    nearest = registry.nearest_baseline_dir(version)
    found["baseline"] = str(own) if own else None
    found["nearest_baseline"] = str(nearest) if nearest else None
    found["baseline_note"] = registry.baseline_note(version)
except Exception as error:
    found["plugin_error"] = f"{type(error).__name__}: {error}"
print("PROBE " + json.dumps(found))
"""


@dataclass
class Step:
    """One pytest subprocess of the check."""

    name: str
    kind: str  # "recheck", "examples", "campaign"
    argv: list[str]
    cwd: Path
    budget_s: float = 0.0
    report: Path | None = None
    html: Path | None = None
    repro_dir: Path | None = None
    exit_code: int | None = None
    timed_out: bool = False
    wall_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def log(self) -> Path:
        """Where the step's pytest output goes."""
        return self.cwd / "pytest.log"


def _has_entry_point() -> bool:
    """Whether an installed pytest-cgraph registers itself with pytest.

    pytest would then load the plugin from the entry point, and a ``-p``
    of the same module fails ("already registered under a different name").
    """
    try:
        found = metadata.entry_points(group="pytest11")
    except Exception:
        return False
    return any(point.value.startswith("pytest_cgraph.plugin.hooks") for point in found)


def stage_source(repo: Path, into: Path) -> Path:
    """Lay this source tree out as the installed package: a symbolic link to it.

    The plugin is registered by a ``.dist-info`` entry point, as an install
    registers it, not by ``-p pytest_cgraph.plugin.hooks``: a ``-p`` module
    counts as one that registers a backend, and every repro file would
    import it. Returns the directory to put on ``PYTHONPATH``.
    """
    into.mkdir(parents=True, exist_ok=True)
    (into / "pytest_cgraph").symlink_to((repo / "pytest_cgraph").resolve())
    found = re.search(r'^version = "([^"]+)"', (repo / "pyproject.toml").read_text(), re.M)
    version = found.group(1) if found else "0"
    info = into / f"pytest_cgraph-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: pytest-cgraph\nVersion: {version}\n"
    )
    (info / "entry_points.txt").write_text("[pytest11]\ncgraph = pytest_cgraph.plugin.hooks\n")
    return into


def plugin_setup(work: Path, repo: Path = REPO) -> tuple[dict[str, str], str]:
    """The environment the pytest subprocesses load the plugin in, and how, in words."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    if _has_entry_point():
        return env, "installed package (its pytest11 entry point)"
    staged = stage_source(repo, work / "src")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(staged), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    return env, f"source tree {repo}, staged on PYTHONPATH (nothing installed)"


def probe(env: dict[str, str], cwd: Path, timeout: float = 120.0) -> dict[str, Any]:
    """What the subprocesses will see: versions, CUDA, the GPU, the baseline."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", PROBE],
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"probe_error": f"the probe did not finish in {timeout:.0f} s"}
    for line in done.stdout.splitlines():
        if line.startswith("PROBE "):
            return json.loads(line.removeprefix("PROBE "))
    return {"probe_error": (done.stderr or done.stdout)[-2000:]}


def choose_device(requested: str, environment: dict[str, Any]) -> tuple[str, list[str]]:
    """The device the steps run on, and notes for the summary.

    Without CUDA the same steps run on CPU: a rehearsal, said as such.
    """
    available = bool(environment.get("cuda_available"))
    if requested == "cpu" and available:
        return "cpu", ["CUDA is available, but --device cpu was asked: nothing captured"]
    if available and requested != "cpu":
        return "cuda", []
    note = f"{NO_CUDA} (the steps ran on CPU)"
    if requested == "cuda":
        note += "; --device cuda was asked"
    return "cpu", [note]


def default_workers(cpus: int | None, have_xdist: bool) -> int:
    """xdist workers per step: half the cores (compiling is CPU-bound), at most 8."""
    if not have_xdist:
        return 1
    return max(1, min(8, (cpus or 1) // 2))


def share(remaining_s: float, kind: str, kinds_left: Sequence[str]) -> float:
    """This step's part of the time left, by the weights of the steps left."""
    total = sum(WEIGHTS[k] for k in kinds_left)
    return remaining_s * WEIGHTS[kind] / total if total else remaining_s


@dataclass(frozen=True)
class CampaignPlan:
    """How a campaign fills a wall-clock bound."""

    shards: int
    duration_s: float  # --cgraph-duration: the whole campaign's time box
    shrink_s: float  # --cgraph-shrink-seconds


def campaign_overhead(backend: str) -> float:
    """Seconds a campaign on ``backend`` spends outside its time box."""
    extra = INDUCTOR_OVERHEAD_S if backend in INDUCTOR_BACKENDS else 0.0
    return CAMPAIGN_OVERHEAD_S + extra


def plan_campaign(wall_s: float, workers: int, backend: str = "cudagraphs") -> CampaignPlan:
    """Time box and shards so that the campaign ends inside ``wall_s``.

    ``--cgraph-duration`` boxes the whole run (every item on every worker
    shares it, and none draws or shrinks past its end); 8 families make 8
    items, and with more workers each family is split into shards so that
    no worker idles. The box leaves room for start-up, one shrink's worth of
    recording and the interrupt's grace.
    """
    shards = max(1, math.ceil(workers / FAMILY_COUNT))
    shrink = 20.0 if wall_s >= 240 else 8.0
    hunting = wall_s - grace(wall_s) - campaign_overhead(backend) - shrink
    return CampaignPlan(shards, round(max(5.0, hunting), 1), shrink)


#: Plugins a GPU image may bring that a check must not load: pytest-benchmark
#: warns that xdist disables it, and the project's ``filterwarnings = error``
#: (the examples' ini) turns that warning into an internal error of the run.
UNWANTED_PLUGINS = ("cacheprovider", "benchmark")


def _pytest() -> list[str]:
    blocked = [word for name in UNWANTED_PLUGINS for word in ("-p", f"no:{name}")]
    return [sys.executable, "-m", "pytest", *blocked]


def _run_dir(work: Path, name: str, own_ini: bool) -> Path:
    run = work / "runs" / name
    run.mkdir(parents=True, exist_ok=True)
    if own_ini:
        # A campaign collects no files: an ini of its own keeps pytest from
        # taking a project's ini (and its addopts) from a directory above.
        (run / "pytest.ini").write_text("[pytest]\n")
    return run


def _xdist(workers: int) -> list[str]:
    return ["-n", str(workers), "--dist", "worksteal"] if workers > 1 else []


def recheck_step(work: Path, baseline: Path, workers: int) -> Step:
    """Replay every entry of ``baseline`` here; the passing items are its reproducing ones."""
    run = _run_dir(work, "recheck-baseline", own_ini=True)
    argv = [
        *_pytest(),
        "--cgraph-check-known",
        "--cgraph-no-baseline",
        "--cgraph-known",
        str(baseline),
        "--cgraph-repro-dir",
        str(run / "repros"),
        "--junitxml",
        str(run / "junit.xml"),
        "-q",
        *_xdist(workers),
    ]
    return Step("recheck-baseline", "recheck", argv, run, extra={"baseline": str(baseline)})


def _reporting_step(work: Path, name: str, kind: str, *, own_ini: bool) -> Step:
    """A step whose run writes a JSON report, an HTML page and a repro dir in its folder."""
    run = _run_dir(work, name, own_ini=own_ini)
    step = Step(name, kind, [], run)
    step.report, step.html, step.repro_dir = (
        run / "report.json",
        run / "report.html",
        run / "repros",
    )
    return step


def examples_step(work: Path, backend: str, device: str, workers: int, seed: int) -> Step:
    """``examples/`` checked against ``backend``: the scenarios of PyTorch's own tests."""
    step = _reporting_step(work, f"examples-{backend}", "examples", own_ini=False)
    step.argv = [
        *_pytest(),
        str(REPO / "examples"),
        "--cgraph",
        "-m",
        "not cgraph and not deep",  # the examples only, not the campaign items
        *_run_options(backend, device, seed),
        *_common(step),
        "-v",
        *_xdist(workers),
    ]
    return step


def campaign_step(
    work: Path,
    backend: str,
    device: str,
    workers: int,
    seed: int,
    known: Path | None,
) -> Step:
    """A time-boxed campaign of every family (its duration is set when it starts)."""
    step = _reporting_step(work, f"campaign-{backend}", "campaign", own_ini=True)
    step.argv = [
        *_pytest(),
        "--cgraph",
        *_run_options(backend, device, seed),
        "--cgraph-timeout",
        "60",
        *(["--cgraph-known", str(known)] if known is not None else []),
        *_common(step),
        "-v",
        *_xdist(workers),
    ]
    step.extra["workers"] = workers
    step.extra["backend"] = backend
    return step


def _run_options(backend: str, device: str, seed: int) -> list[str]:
    """What every checking step is told: the backend, the device and the seed."""
    return ["--cgraph-backend", backend, "--cgraph-device", device, "--cgraph-seed", str(seed)]


def _common(step: Step) -> list[str]:
    assert step.report and step.html and step.repro_dir
    return [
        "--cgraph-report",
        str(step.report),
        "--cgraph-report-html",
        str(step.html),
        "--cgraph-repro-dir",
        str(step.repro_dir),
    ]


def grace(budget_s: float) -> float:
    """Seconds between a step's SIGINT and its kill: a fifth of a short bound."""
    return min(GRACE_S, max(2.0, 0.2 * budget_s))


def run_step(step: Step, env: dict[str, str]) -> None:
    """Run ``step`` within its budget: SIGINT near the end (pytest then writes its
    reports), then the whole process group (xdist workers, checking children) is killed."""
    started = time.monotonic()
    soft = max(1.0, step.budget_s - grace(step.budget_s))
    with open(step.log, "wb") as log:
        log.write(f"$ {shlex.join(step.argv)}\n".encode())
        log.flush()
        process = subprocess.Popen(
            step.argv,
            cwd=step.cwd,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            process.wait(timeout=soft)
        except subprocess.TimeoutExpired:
            step.timed_out = True
            _signal_group(process, signal.SIGINT)
            try:
                process.wait(timeout=max(1.0, step.budget_s - soft))
            except subprocess.TimeoutExpired:
                _signal_group(process, signal.SIGKILL)
                process.wait()
    step.exit_code = process.returncode
    step.wall_s = round(time.monotonic() - started, 1)


def _signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # it ended on its own meanwhile
        os.killpg(process.pid, signum)


def reproducing_entries(junit: Path, baseline: Path) -> list[Path]:
    """The entries of ``baseline`` whose ``--cgraph-check-known`` item passed.

    An entry that failed (no longer reproduces), erred, was skipped or never
    ran (the step was stopped) is left out: it is known only once it has
    reproduced on this torch.
    """
    try:
        root = ElementTree.parse(junit).getroot()
    except (OSError, ElementTree.ParseError):
        return []
    # Items are cgraph::known::<registry>/<stem>: junit's classname
    # "cgraph.known", name "<registry>/<stem>".
    prefix = f"{baseline.name}/"
    found = []
    for case in root.iter("testcase"):
        name = case.get("name", "")
        if case.get("classname") != "cgraph.known" or not name.startswith(prefix) or len(case):
            continue  # another item, or a child: failure, error, skipped
        stem = name.removeprefix(prefix)
        entry = next(
            (
                baseline / f"{stem}{suffix}"
                for suffix in (".toml", ".py")
                if (baseline / f"{stem}{suffix}").is_file()
            ),
            None,
        )
        if entry is not None:
            found.append(entry)
    return sorted(found)


def adopt(entries: Iterable[Path], into: Path) -> Path:
    """Copy re-checked entries into a registry directory for ``--cgraph-known``."""
    into.mkdir(parents=True, exist_ok=True)
    for entry in entries:
        shutil.copy2(entry, into / entry.name)
    return into


def _last_line(log: Path) -> str:
    """pytest's closing line ("2 failed, 40 passed in 30.17s"), if it got that far."""
    try:
        with open(log, "rb") as stream:
            stream.seek(max(0, log.stat().st_size - 65536))
            tail = stream.read().decode(errors="replace").splitlines()
    except OSError:
        return ""
    for line in reversed(tail):
        stripped = line.strip().strip("=").strip()
        if " in " in stripped and any(
            word in stripped for word in ("passed", "failed", "error", "deselected", "no tests")
        ):
            return stripped
    return ""


def summarize_report(report: dict[str, Any], run_root: Path, archive_root: str) -> dict[str, Any]:
    """One run's figures from its ``--cgraph-report``: the summary's unit."""
    seconds = float(report.get("seconds") or 0.0)
    programs = int(report.get("programs") or 0)
    skipped = report.get("skipped") or {}
    reasons = sorted(skipped.items(), key=lambda item: (-item[1], item[0]))
    # Only a passing program's check says whether it captured: the share is of those.
    failing = sum((report.get("hits") or {}).values()) + sum(
        (report.get("known_hits") or {}).values()
    )
    passed = max(0, programs - int(report.get("invalid") or 0) - failing)
    by_signature: dict[str, dict[str, Any]] = {}
    for failure in report.get("failures") or []:
        signature = failure.get("full_signature") or failure.get("signature") or "?"
        seen = by_signature.setdefault(
            signature,
            {"signature": signature, "programs": 0, "repro": None, "verified": False, "note": ""},
        )
        seen["programs"] += 1
        repro = failure.get("repro")
        if repro and seen["repro"] is None:
            path = Path(repro)
            path = path if path.is_absolute() else Path(report.get("cwd") or run_root) / path
            try:
                seen["repro"] = f"{archive_root}/{path.resolve().relative_to(run_root.resolve())}"
            except ValueError:
                seen["repro"] = str(path)
        seen["verified"] = seen["verified"] or bool(failure.get("verified"))
        status = (failure.get("repro_result") or {}).get("status")
        if status and not seen["note"]:
            seen["note"] = status
    return {
        "complete": bool(report.get("complete")),
        "backend": report.get("backend"),
        "device": report.get("device"),
        "torch": report.get("torch"),
        "programs": programs,
        "drawn": report.get("drawn"),
        "invalid": report.get("invalid"),
        "seconds": seconds,
        "programs_per_s": round(programs / seconds, 2) if seconds else 0.0,
        "compiles": report.get("compiles"),
        "captured": int(report.get("captured") or 0),
        "passed": passed,
        # Books kept apart (a dead worker's hits, a marked test's timeout) can
        # make passed undercount: the share never says more than all.
        "captured_share": min(100.0, round(100 * int(report.get("captured") or 0) / passed, 1))
        if passed
        else None,
        "skipped": int(sum(skipped.values())),
        "skip_reasons": [[reason, count] for reason, count in reasons[:5]],
        "new_signatures": list(by_signature.values()),
        "known_seen": len(report.get("known") or []),
        "families": report.get("families") or {},
    }


def step_summary(step: Step) -> dict[str, Any]:
    """What the summary says of one step, whether or not it left a report."""
    archive_root = f"runs/{step.name}"
    line: dict[str, Any] = {
        "name": step.name,
        "command": shlex.join(step.argv),
        "exit_code": step.exit_code,
        "timed_out": step.timed_out,
        "wall_s": step.wall_s,
        "budget_s": round(step.budget_s, 1),
        "outcome": _last_line(step.log),
        "log": f"{archive_root}/pytest.log",
        **step.extra,
    }
    if step.report is not None:
        try:
            report = json.loads(step.report.read_text())
        except (OSError, ValueError):
            line["report"] = None
        else:
            line["report"] = f"{archive_root}/{step.report.name}"
            line["html"] = f"{archive_root}/{step.html.name}" if step.html else None
            line.update(summarize_report(report, step.cwd, archive_root))
    return line


def render_summary(summary: dict[str, Any]) -> str:
    """The summary as text: a screen per run, the notes first."""
    env = summary["environment"]
    gpus = ", ".join(env.get("gpus") or []) or "none"
    lines = [
        f"pytest-cgraph GPU check: budget {summary['budget_s']:.0f} s, "
        f"used {summary['used_s']:.0f} s, device {summary['device']}, "
        f"{summary['workers']} worker(s) per step, seed {summary['seed']}",
        f"torch {env.get('torch')} (CUDA {env.get('torch_cuda')}, cuDNN {env.get('cudnn')}), "
        f"Python {env.get('python')}, GPU: {gpus}, CUDA available: {env.get('cuda_available')}",
        f"plugin: {summary['plugin']}",
    ]
    lines += [f"NOTE: {note}" for note in summary["notes"]]
    lines.append(
        f"archive: {ARCHIVE} (runs/<name>/: pytest.log, report.json, report.html, repros/)"
    )
    for run in summary["runs"]:
        stopped = f", stopped at its bound of {run['budget_s']:.0f} s" if run["timed_out"] else ""
        lines += ["", f"{run['name']}: exit {run['exit_code']}{stopped}, wall {run['wall_s']} s"]
        if run.get("outcome"):
            lines.append(f"  pytest: {run['outcome']}")
        if "rechecked" in run:
            lines.append(
                f"  {run['rechecked']} of {run['entries']} entries of {Path(run['baseline']).name}"
                " reproduce here and are known to the campaigns"
            )
        if "programs" not in run:
            if run.get("report", "") is None:
                lines.append("  no JSON report was written (see the log)")
            continue
        complete = "" if run["complete"] else " (report incomplete: the run was stopped)"
        lines.append(
            f"  programs: {run['programs']} checked, {run['invalid']} invalid, "
            f"{run['programs_per_s']} programs/s over {run['seconds']:.1f} s{complete}"
        )
        reasons = ", ".join(f"{reason} x{count}" for reason, count in run["skip_reasons"])
        share = run.get("captured_share")
        of_passing = f" of {run['passed']} passing ({share} %)" if share is not None else ""
        lines.append(
            f"  CUDA graphs: {run['captured']}{of_passing} programs captured, "
            f"{run['skipped']} graphs skipped" + (f" (top reasons: {reasons})" if reasons else "")
        )
        lines.append(
            f"  new signatures: {len(run['new_signatures'])}; known seen again: {run['known_seen']}"
        )
        for found in run["new_signatures"]:
            where = found["repro"] or f"no repro ({found['note'] or 'none written'})"
            verified = ", verified" if found["verified"] else ""
            lines.append(
                f"    {found['signature']} ({found['programs']} programs{verified}): {where}"
            )
    return "\n".join(lines) + "\n"


def cut_log(path: Path, limit: int = LOG_LIMIT) -> None:
    """Keep a log's head and tail only, so the archive comes back whole."""
    size = path.stat().st_size
    if size <= limit:
        return
    with open(path, "rb") as stream:
        head = stream.read(limit // 4)
        stream.seek(size - (limit - limit // 4))
        tail = stream.read()
    marker = f"\n[... {size - len(head) - len(tail)} bytes cut ...]\n".encode()
    path.write_bytes(head + marker + tail)


def pack(work: Path, archive: Path) -> None:
    """Everything the runs wrote, less the staged source, as one tar.gz."""
    for log in work.glob("runs/*/pytest.log"):
        cut_log(log)
    with tarfile.open(archive, "w:gz") as tar:
        for entry in sorted(work.iterdir()):
            if entry.name != "src":
                tar.add(entry, arcname=entry.name)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="where the 3 result files go")
    parser.add_argument("--minutes", type=float, default=8.0, help="the whole check's budget")
    parser.add_argument(
        "--device",
        choices=("auto", "cuda", "cpu"),
        default="auto",
        help="auto: cuda if available, else cpu (a rehearsal)",
    )
    parser.add_argument("--workers", type=int, default=None, help="xdist workers per step")
    parser.add_argument("--seed", type=int, default=1, help="--cgraph-seed of every step")
    parser.add_argument(
        "--recheck",
        choices=("auto", "always", "never"),
        default="auto",
        help="replay a baseline here first and use what reproduces as known (auto: only on "
        "a torch with no shipped baseline, where the nearest one is replayed)",
    )
    parser.add_argument(
        "--steps",
        default="recheck,examples,campaign",
        help="the kinds of step to run, comma-separated (a short lease: examples alone)",
    )
    parser.add_argument("--work", type=Path, default=None, help="work directory (kept)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan, run nothing")
    args = parser.parse_args(argv)
    kinds = {kind.strip() for kind in args.steps.split(",") if kind.strip()}
    if not kinds or not kinds <= set(WEIGHTS):
        parser.error(f"--steps takes some of {', '.join(WEIGHTS)}, got {args.steps!r}")

    started = time.monotonic()
    budget = args.minutes * 60.0
    deadline = started + budget - RESERVE_S
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    work = (args.work or Path(tempfile.mkdtemp(prefix="cgraph-gpu-check-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    if work == out or out in work.parents:
        parser.error("--work must not be inside --out: only 3 files go there")

    env, plugin = plugin_setup(work)
    environment = probe(env, work)
    environment["plugin"] = plugin
    (out / ENVIRONMENT).write_text(json.dumps(environment, indent=2) + "\n")
    shutil.copy2(out / ENVIRONMENT, work / ENVIRONMENT)
    device, notes = choose_device(args.device, environment)
    for problem in ("probe_error", "torch_error", "plugin_error"):
        if problem in environment:
            notes.append(f"{problem.replace('_', ' ')}: {environment[problem]}")
    if environment.get("baseline_note"):
        notes.append(environment["baseline_note"])
    workers = args.workers or default_workers(
        environment.get("cpus"), bool(environment.get("xdist"))
    )

    to_recheck: Path | None = None
    if args.recheck != "never":
        own, nearest = environment.get("baseline"), environment.get("nearest_baseline")
        if nearest and not own:
            to_recheck = Path(nearest)
        elif args.recheck == "always" and own:
            to_recheck = Path(own)
    known = work / "known-rechecked" if to_recheck is not None else None
    if known is not None:
        known.mkdir(exist_ok=True)  # empty unless the re-check runs and entries reproduce

    steps: list[Step] = []
    if to_recheck is not None and "recheck" in kinds:
        steps.append(recheck_step(work, to_recheck, workers))
    if "examples" in kinds:
        steps += [examples_step(work, b, device, workers, args.seed) for b in BACKENDS]
    if "campaign" in kinds:
        steps += [campaign_step(work, b, device, workers, args.seed, known) for b in BACKENDS]

    planned = 0.0  # a dry run's clock: each step as if it used its whole bound
    for index, step in enumerate(steps):
        remaining = deadline - time.monotonic() - planned
        step.budget_s = max(10.0, share(remaining, step.kind, [s.kind for s in steps[index:]]))
        if step.kind == "campaign":
            plan = plan_campaign(step.budget_s, workers, step.extra["backend"])
            step.argv += [
                "--cgraph-duration",
                f"{plan.duration_s:g}s",
                "--cgraph-shrink-seconds",
                f"{plan.shrink_s:g}",
                *(["--cgraph-shards", str(plan.shards)] if plan.shards > 1 else []),
            ]
            step.extra["plan"] = vars(plan)
        if args.dry_run:
            planned += step.budget_s
            print(f"[{step.budget_s:5.0f} s] {step.name}: {shlex.join(step.argv)}")
            continue
        print(f"gpu_check: {step.name} (bound {step.budget_s:.0f} s)", flush=True)
        if remaining <= 10.0:
            step.extra["not_run"] = "the budget was spent"
            continue
        run_step(step, env)
        if step.kind == "recheck" and to_recheck is not None and known is not None:
            reproducing = reproducing_entries(step.cwd / "junit.xml", to_recheck)
            adopt(reproducing, known)
            step.extra["rechecked"] = len(reproducing)
            step.extra["entries"] = sum(
                1 for p in to_recheck.iterdir() if p.suffix in (".toml", ".py")
            )
            if environment.get("nearest_baseline"):
                notes[:] = [n for n in notes if n != environment.get("baseline_note")]
                notes.append(_rechecked_note(env, work, environment, len(reproducing)))
    if args.dry_run:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
        return 0

    summary = {
        "budget_s": budget,
        "used_s": round(time.monotonic() - started, 1),
        "device": device,
        "workers": workers,
        "seed": args.seed,
        "plugin": plugin,
        "notes": notes,
        "environment": environment,
        "runs": [step_summary(step) for step in steps],
    }
    if device == "cuda":
        for run in summary["runs"]:
            if "captured" in run and run["programs"] and not run["captured"]:
                notes.append(f"{run['name']} ran on CUDA but captured no graph: see its skips")
    (work / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    text = render_summary(summary)
    (work / SUMMARY).write_text(text)
    pack(work, out / ARCHIVE)
    (out / SUMMARY).write_text(text)
    print(text, end="")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _rechecked_note(
    env: dict[str, str], work: Path, environment: dict[str, Any], count: int
) -> str:
    """The baseline note, now that it is known how many entries reproduce here."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from pytest_cgraph.registry.entries import baseline_note; "
            "print(baseline_note(sys.argv[1], int(sys.argv[2])))",
            str(environment.get("torch", "")),
            str(count),
        ],
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() or f"{count} re-checked entries are known"


if __name__ == "__main__":
    sys.exit(main())
