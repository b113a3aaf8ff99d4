"""Reports for PyTorch's tracker: a finding as the maintainer who must fix it files it.

A report is built on the finding's verified plain script (:mod:`.plain`), and
everything it claims is a run of that script: the script is shown on
``torch.compile(fn)`` with torch's defaults wherever the bug shows there (the
first thing a maintainer runs), and its ablation is the same script with one
thing changed per row:

- the backend: ``eager`` (Dynamo alone), ``aot_eager`` (AOTAutograd),
  ``aot_eager_decomp_partition`` (Inductor's decompositions and partitioner),
  the defaults (Inductor) and the backend the finding was made on, which
  tells the layer that breaks;
- one torch setting at a time from :data:`SETTINGS`, the curated table of
  the settings that govern the hazards the generator draws, run on the
  lowest backend that fails: the setting that makes the difference vanish
  says which mechanism is at work;
- the torch version: the script replayed with each torch the user has side
  by side (``--torch PYTHON``, or ``CGRAPH_TORCH_PYTHONS``): "fails on
  2.12–2.14.1, passes on 2.11" is a regression window;
- for a difference in values, every floating tensor in float64: a
  difference that stays is no rounding effect.

Beside the report go the script, the ablation as JSON (the finding's
fingerprint), a ``TORCH_TRACE`` log of the failing run and, where ``tlparse``
is installed (``pip install tlparse``), its HTML page: what PyTorch's own
template asks of a compiler bug.

``python -m pytest_cgraph.issue FILE`` prints one report; ``python -m
pytest_cgraph.issue BASELINE_DIR --out DIR`` writes one per bug to file.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import zipfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_cgraph.errors import CgraphError
from pytest_cgraph.oracle.difference import Difference, Kind, Role
from pytest_cgraph.recording.plain import (
    DEFAULT,
    PlainResult,
    Run,
    Unsupported,
    fails_as_found,
    make_plain,
    render_for,
    run_script,
)

# ------------------------------------------------------------------ settings


#: A ``when`` that asks whether a script passes a Python float as an argument.
FLOAT_ARGUMENT = "<a Python float argument>"


def _has_float_argument(script: str) -> bool:
    """Whether an ``args`` tuple the script builds holds a Python float itself (``0.5``,
    ``-1.5``): a float inside a tensor's constructor (``torch.arange(6.0)``) is no
    argument Dynamo could specialize."""
    import ast

    try:
        tree = ast.parse(script)
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple)):
            continue
        if not any(isinstance(t, ast.Name) and t.id.endswith("args") for t in node.targets):
            continue
        for element in node.value.elts:
            if isinstance(element, ast.UnaryOp) and isinstance(element.op, ast.USub):
                element = element.operand
            if isinstance(element, ast.Constant) and isinstance(element.value, float):
                return True
    return False


@dataclass(frozen=True)
class Setting:
    """One torch setting that governs a hazard the generator draws."""

    #: Its full name, ``torch._inductor.config.fallback_random``.
    name: str
    #: The value to try: never the default, so the row changes one thing.
    value: object
    #: The first layer that reads it: ``eager`` (Dynamo), ``aot_eager``, ``inductor``.
    layer: str
    #: What it governs, for the reader of the table.
    governs: str
    #: What a script must contain for the setting to bear on it (a regular
    #: expression; ``None``: any script): a random stream is no question for a
    #: program that draws nothing, and a row that cannot change is noise.
    when: str | None = None

    def bears_on(self, script: str) -> bool:
        """Whether running ``script`` with this setting could change what it does."""
        if self.when == FLOAT_ARGUMENT:
            return _has_float_argument(script)
        return self.when is None or re.search(self.when, script) is not None

    @property
    def lines(self) -> list[str]:
        """The lines that set it, placed after the script's ``import torch``."""
        module = self.name.rpartition(".")[0]
        module = module.removesuffix(".triton")
        return [f"import {module}", f"{self.name} = {self.value!r}"]

    @property
    def assignment(self) -> str:
        return f"{self.name} = {self.value!r}"


#: The settings tried one at a time, by the layer that reads them. Those of a layer
#: are tried where the bug first shows at that layer or a later one: a Dynamo bug is
#: not removed by an Inductor pass, and running the Inductor rows would cost a
#: compile each for nothing.
SETTINGS: tuple[Setting, ...] = (
    Setting(
        "torch._dynamo.config.specialize_float",
        True,
        "eager",
        "Python float arguments traced as tensors rather than constants",
        FLOAT_ARGUMENT,
    ),
    Setting(
        "torch._dynamo.config.skip_nnmodule_hook_guards",
        False,
        "eager",
        "hooks added after compiling are not guarded",
        r"hook",
    ),
    Setting(
        "torch._dynamo.config.capture_scalar_outputs",
        True,
        "eager",
        "`.item()` and host scalars traced into the graph",
        r"\.item\(\)|\.tolist\(\)",
    ),
    Setting(
        "torch._dynamo.config.automatic_dynamic_shapes",
        False,
        "eager",
        "a recompile for a new shape makes it dynamic",
        r"\bfor \w+ in range",
    ),
    Setting(
        "torch._functorch.config.view_replay_for_aliased_outputs",
        False,
        "aot_eager",
        "outputs that alias inputs are rebuilt by replaying their views",
    ),
    Setting(
        "torch._functorch.config.donated_buffer",
        False,
        "aot_eager",
        "saved tensors the backward frees early",
        r"backward|\.grad\b",
    ),
    Setting(
        "torch._inductor.config.fallback_random",
        True,
        "inductor",
        "random ops drawn by eager's kernels",
        r"rand|dropout|bernoulli|normal|multinomial",
    ),
    Setting(
        "torch._inductor.config.joint_graph_constant_folding",
        False,
        "inductor",
        "constant folding of the joint graph, which also drops no-op arithmetic (x * 1)",
    ),
    Setting(
        "torch._inductor.config.pattern_matcher",
        False,
        "inductor",
        "the pattern-matcher passes (reinplacing among them)",
    ),
    Setting(
        "torch._inductor.config.reorder_for_peak_memory",
        False,
        "inductor",
        "kernels reordered to lower peak memory",
    ),
    Setting(
        "torch._inductor.config.inplace_buffers",
        False,
        "inductor",
        "kernels writing in place into their inputs' buffers",
    ),
    Setting(
        "torch._inductor.config.allow_buffer_reuse",
        False,
        "inductor",
        "buffers reused for later results",
    ),
    Setting(
        "torch._inductor.config.triton.cudagraph_trees",
        False,
        "reduce-overhead",
        "CUDA-graph trees (CUDA only)",
    ),
)

#: The backends of an ablation, lowest layer first, and the layer each adds.
BACKENDS: tuple[tuple[str, str], ...] = (
    ("eager", "Dynamo"),
    ("aot_eager", "AOTAutograd"),
    ("aot_eager_decomp_partition", "Inductor's decompositions"),
    (DEFAULT, "Inductor"),
)
_LAYER_RANK = {"eager": 0, "aot_eager": 1, "aot_eager_decomp_partition": 2, DEFAULT: 3}
_SETTING_RANK = {"eager": 0, "aot_eager": 1, "inductor": 3, "reduce-overhead": 4}

#: The setting under which every floating tensor is float64: a difference that stays
#: is not rounding.
FLOAT64 = "torch.set_default_dtype(torch.float64)"

#: Where a user names the other torch installations to replay a script on.
PYTHONS_VARIABLE = "CGRAPH_TORCH_PYTHONS"


def _with_lines(script: str, lines: Sequence[str]) -> str:
    """``script`` with ``lines`` placed right after its ``import torch``."""
    head, found, tail = script.partition("import torch\n")
    if not found:
        raise Unsupported("the script does not import torch on a line of its own")
    return head + found + "".join(f"{line}\n" for line in lines) + tail


def _compiler_words(compiler: str) -> str:
    """How the script compiles, as the report's table names it."""
    if compiler == DEFAULT:
        return "`torch.compile(fn)`"
    if ":" in compiler:  # a backend of one's own, imported by the script
        return f"`backend={compiler.partition(':')[2]}`"
    return f'`backend="{compiler}"`'


# ------------------------------------------------------------------- ablation


@dataclass
class Row:
    """One run of the ablation: what changed, and what the script did."""

    change: str
    fails: bool
    result: str
    returncode: int = 0
    #: What a backend row adds to the one below it (``Dynamo``, ``AOTAutograd``, ...).
    layer: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "change": self.change,
            "fails": self.fails,
            "result": self.result,
            "returncode": self.returncode,
        }


@dataclass
class Ablation:
    """The finding's fingerprint: which backends, settings and torch versions show it."""

    backends: list[Row] = field(default_factory=list)
    settings: list[Row] = field(default_factory=list)
    versions: list[Row] = field(default_factory=list)
    #: The backend the settings ran on (the lowest one that fails).
    settings_on: str | None = None

    @property
    def first_layer(self) -> str | None:
        """The lowest backend that fails, by its compile layer's name."""
        failing = [row for row in self.backends if row.fails]
        return failing[0].change if failing else None

    @property
    def removed_by(self) -> list[str]:
        """The settings that each, alone, make the difference vanish."""
        return [row.change for row in self.settings if not row.fails]

    def as_dict(self) -> dict[str, Any]:
        return {
            "first_layer": self.first_layer,
            "removed_by": self.removed_by,
            "settings_on": self.settings_on,
            "backends": [row.as_dict() for row in self.backends],
            "settings": [row.as_dict() for row in self.settings],
            "versions": [row.as_dict() for row in self.versions],
        }

    def table(self) -> str:
        """The ablation as a Markdown table, a row a run."""
        rows = ["| change to the script | result |", "|---|---|"]
        for row in self.backends:
            rows.append(f"| compiled with {row.change} | {row.result} |")
        on = f" (on {self.settings_on})" if self.settings_on else ""
        # Settings of one result share a row: the one that removes it stands out.
        for result in dict.fromkeys(row.result for row in self.settings):
            changes = [row.change for row in self.settings if row.result == result]
            named = "; ".join(f"`{change}`" for change in changes)
            each = "each of " if len(changes) > 1 else ""
            rows.append(f"| {each}{named}{on} | {result} |")
        if self.versions and len({row.result for row in self.versions}) == 1:
            named = ", ".join(row.change.removeprefix("torch ") for row in self.versions)
            rows.append(f"| torch {named} | {self.versions[0].result} |")
        else:
            for row in self.versions:
                rows.append(f"| {row.change} | {row.result} |")
        return "\n".join(rows) + "\n"

    def summary(self) -> str:
        """The table in one sentence: layer, setting, regression window."""
        parts = []
        first = next((row for row in self.backends if row.fails), None)
        if first is not None:
            lower = self.backends[: self.backends.index(first)]
            below = [row.change for row in lower if row.result == "passes"]
            other = [row.change for row in lower if row.result != "passes"]
            words = f"it first shows with {first.change} ({first.layer})"
            if below:
                words += f", while {', '.join(below)} {'passes' if len(below) == 1 else 'pass'}"
            if other:
                verb = "fails" if len(other) == 1 else "fail"
                words += f"{' and' if below else ', while'} {', '.join(other)} {verb} otherwise"
            above = [
                row.change
                for row in self.backends[self.backends.index(first) + 1 :]
                if not row.fails
            ]
            if above:
                verb = "passes" if len(above) == 1 else "pass"
                words += f"; yet {', '.join(above)}, higher up the stack, {verb}"
            parts.append(words)
        elif self.backends:
            parts.append("no backend of the table shows it")
        if self.settings:
            removed = self.removed_by
            parts.append(
                "no single setting tried removes it"
                if not removed
                else "it goes away with " + " or ".join(f"`{name}`" for name in removed)
            )
        failing = [row.change.removeprefix("torch ") for row in self.versions if row.fails]
        # Only a run that exited cleanly passes: one that timed out or raised something
        # else tells nothing of the bug there, and is said apart.
        passing = [
            row.change.removeprefix("torch ")
            for row in self.versions
            if not row.fails and row.result == "passes"
        ]
        untold = [
            row.change.removeprefix("torch ")
            for row in self.versions
            if not row.fails and row.result != "passes"
        ]
        if failing:
            window = f"it fails on torch {', '.join(failing)}"
            window += f" and passes on {', '.join(passing)}" if passing else ""
            window += f" (on {', '.join(untold)} the script fails otherwise)" if untold else ""
            parts.append(window)
        return ("In short: " + "; ".join(parts) + ".") if parts else ""


def _result(result: PlainResult, run: Run) -> tuple[bool, str]:
    """Whether ``run`` fails as the finding does, and that in the table's words."""
    if fails_as_found(result, run):
        return True, "**fails**"
    if run.returncode == 0:
        return False, "passes"
    tail = run.tail.replace("|", "\\|")
    return False, f"fails otherwise: `{tail[:90]}`"


def _run_all(jobs: Sequence[tuple[str, str | None]], limit: float) -> list[Run]:
    """Run each (script, interpreter), as many at once as the machine has cores: a
    compile is CPU-bound, and more at once only makes each slower."""
    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        return list(pool.map(lambda job: run_script(job[0], limit, job[1]), jobs))


def torch_version_of(python: str) -> str | None:
    """The torch version ``python`` imports, or ``None`` where it has none."""
    try:
        done = subprocess.run(
            [python, "-c", "import torch; print(torch.__version__)"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip().splitlines()[-1] if done.returncode == 0 and done.stdout else None


def ablate(
    result: PlainResult,
    shown: str,
    pythons: Sequence[str] = (),
    limit: float = 300.0,
    shown_run: Run | None = None,
) -> Ablation:
    """Run the ablation of a verified ``result`` whose shown script uses ``shown``
    (``shown_run``: its run in this interpreter, where one was made already)."""
    finding = result.finding
    ablation = Ablation()
    backends = [name for name, _ in BACKENDS]
    if finding.backend not in (*backends, "inductor"):  # inductor: the defaults' row
        backends.append(finding.backend)
    scripts = {name: render_for(result, name) for name in backends}
    runs = _run_all([(scripts[name], None) for name in backends], limit)
    for name, run in zip(backends, runs, strict=True):
        fails, words = _result(result, run)
        layer = dict(BACKENDS).get(name) or COMPONENTS.get(name, "the backend under test")
        ablation.backends.append(Row(_compiler_words(name), fails, words, run.returncode, layer))
    failing = [name for name, row in zip(backends, ablation.backends, strict=True) if row.fails]
    # The settings run on the lowest layer that fails: it is the cheapest, and a
    # setting read later than where the bug starts cannot be what removes it.
    ranked = [name for name in failing if name in _LAYER_RANK]
    lowest = min(ranked, key=_LAYER_RANK.__getitem__) if ranked else None
    if lowest is not None:
        base = scripts[lowest]
        rank = _LAYER_RANK[lowest]
        tried = [
            setting
            for setting in SETTINGS
            if _SETTING_RANK[setting.layer] <= max(rank, 0)
            and setting.assignment not in base
            and setting.bears_on(base)
            and (setting.layer != "reduce-overhead" or not finding.device.startswith("cpu"))
        ]
        texts = [_with_lines(base, setting.lines) for setting in tried]
        changes = [setting.assignment for setting in tried]
        if _could_be_rounding(result.difference) and "assert_close" in base:
            texts.append(_with_lines(base, [FLOAT64]))
            changes.append(FLOAT64)
        for change, run in zip(changes, _run_all([(t, None) for t in texts], limit), strict=True):
            fails, words = _result(result, run)
            ablation.settings.append(Row(change, fails, words, run.returncode))
        ablation.settings_on = _compiler_words(lowest)
    if pythons:
        script = scripts[shown]
        found = [(python, torch_version_of(python)) for python in pythons]
        known = [(python, version) for python, version in found if version]
        again = [p for p, _ in known if shown_run is None or p != sys.executable]
        fresh = dict(zip(again, _run_all([(script, p) for p in again], limit), strict=True))
        replays: list[Run | None] = [fresh.get(p, shown_run) for p, _ in known]
        rows = []
        for (_, version), replay in zip(known, replays, strict=True):
            assert replay is not None  # every interpreter but this one ran afresh
            fails, words = _result(result, replay)
            rows.append((version, Row(f"torch {version}", fails, words, replay.returncode)))
        ablation.versions = [row for _, row in sorted(rows, key=lambda item: _order(item[0]))]
    return ablation


def _order(version: str) -> tuple[int, ...]:
    from pytest_cgraph.registry.standing import version_order

    return version_order(version)


def _is_value_difference(difference: Difference | None) -> bool:
    return difference is not None and difference.kind in (Kind.VALUE, Kind.MUTATION, Kind.GRAD)


#: The largest relative difference float64 is asked about: values apart by more are
#: not rounding, and a float64 row would only lengthen the table.
ROUNDING_SCALE = 0.05


def _could_be_rounding(difference: Difference | None) -> bool:
    """Whether a value difference is small enough that float64 may remove it (its size
    unknown: it may)."""
    if difference is None or not _is_value_difference(difference):
        return False
    if difference.facet == "presence":  # a grad on one side only: no value to round
        return False
    return difference.max_rel is None or difference.max_rel <= ROUNDING_SCALE


# --------------------------------------------------------------- the report


#: The component a first diverging backend names, as PyTorch's tracker files it.
COMPONENTS = {
    "eager": "Dynamo",
    "aot_eager": "AOTAutograd",
    "aot_eager_decomp_partition": "Inductor",
    DEFAULT: "Inductor",
    "inductor": "Inductor",
    "cudagraphs": "cudagraphs backend",
    "reduce-overhead": "CUDA graph trees",
}
TITLE_LIMIT = 100
#: Where a written report's trace and tlparse page lie (their folder is named then).
TRACE_LINE = (
    "A `TORCH_TRACE` log of the failing run and its tlparse page are attached "
    "(`trace.zip`: `trace/` and `tlparse/index.html`)."
)
#: A line of torch's logging (glog layout: level, date, time, thread, file).
_LOG = re.compile(r"^[DIWEF]\d{4} \d\d:\d\d:\d\d")


def _symptom(difference: Difference | None, calls: int) -> str:
    """What differs, in a maintainer's words: no harness places or numbering."""
    when = f" on call {calls}" if calls > 1 else ""
    if difference is None:
        return f"the compiled call kills the process{when}"
    place, facet = difference.place, difference.facet
    if difference.kind is Kind.CRASH:
        innermost = (difference.exception_type or "an exception").split(".")[-1]
        return f"the compiled {place.name or 'call'} raises {innermost}{when}, eager does not"
    if difference.kind is Kind.STALE_OUTPUT:
        return "an output of an earlier call changes when the compiled function runs again"
    if place.role is Role.GRAD:
        if facet == "presence":
            return f"`{place.name}.grad` is None on one side only{when}"
        return f"`{place.name}.grad` differs from eager's{when}"
    if place.role is Role.ARGUMENT:
        if difference.kind is Kind.METADATA:
            return f"the input `{place.name}` ends with another {facet} than in eager{when}"
        return f"the input `{place.name}` holds other values than in eager after the call{when}"
    if place.role is Role.ALIASING:
        return f"an output aliases the inputs differently than in eager{when}"
    if difference.kind is Kind.METADATA:
        return f"an output has another {facet} than in eager{when}"
    return f"an output differs from eager's{when}"


def _title(result: PlainResult, bug: Any, component: str) -> str:
    """A title of at most :data:`TITLE_LIMIT` characters (GitHub's own limit is 256,
    a reader's far less): the known bug's, or the component and the symptom."""
    if bug is not None:
        text = str(bug.title)
    else:
        calls = result.plan.calls if result.plan else 1
        text = f"{component}: under torch.compile, {_symptom(result.difference, calls)}"
    return textwrap.shorten(text.replace("`", ""), TITLE_LIMIT, placeholder="...")


#: A bugs file's "none found (DATE; searched: TERMS) ..." upstream note.
_NONE_FOUND = re.compile(
    r"none found \((?:searched )?(?P<date>\d{4}-\d\d-\d\d)(?P<inner>[^)]*)\)(?P<rest>.*)"
)


def _upstream_words(upstream: str) -> str:
    """A bug's upstream lead as a maintainer reads it: the issues it relates to, or
    that none was found, when and for what (to spare the next search)."""
    found = _NONE_FOUND.match(upstream.strip())
    if found is None:
        return f"Related issues: {upstream}"
    inner = found["inner"].strip(" ;,")
    searched = inner.removeprefix("searched:").strip() if inner.startswith("searched") else ""
    words = f"No existing issue found (searched on {found['date']}"
    words += f" for: {searched})" if searched else ")"
    rest = "; ".join(
        part for part in ("" if searched else inner, found["rest"].strip(" ;,")) if part
    )
    return words + (f"; {rest}." if rest else ".")


def _found_words(bug: Any) -> str:
    found = getattr(bug, "found", None)
    if found is None:
        return (
            "Found by differential testing: random tensor programs run eagerly and "
            "compiled, compared on values, metadata, aliasing and gradients; the "
            "program was reduced automatically."
        )
    by = str(getattr(found, "by", ""))
    if by == "campaign":
        return (
            "Found by differential testing (random tensor programs, eager against "
            "compiled), reduced automatically."
        )
    if by == "user-test":
        return "Found by a model author's test comparing a compiled step against eager."
    if by == "report":
        issue = getattr(found, "issue", None)
        return f"Reproduced from pytorch/pytorch#{issue}." if issue else "Reproduced from a report."
    return "Found while studying a compiler mechanism by hand."


def _observed(output: str, shift: int = 0, crash: bool = False) -> str:
    """What a script printed, less torch's own log records (the machine's, not the
    bug's): its head (the values printed and the assertion) or, for a crash, its tail
    (where torch's traceback ends in the error), the script named as the report names
    it rather than by the temporary file it ran as, and its line numbers less the
    ``shift`` lines the report's copy leaves out."""
    printed = [line for line in output.strip().splitlines() if not _LOG.match(line)]
    if crash:
        # From the traceback's first line: its head (the script's own frames) and its
        # tail (where torch raises, and the error), not a window from its middle.
        starts = [i for i, line in enumerate(printed) if line.startswith("Traceback")]
        printed = printed[starts[-1] :] if starts else printed
        if len(printed) > OBSERVED_LINES:
            printed = [*printed[:6], "  ...", *printed[-(OBSERVED_LINES - 7) :]]
    kept = printed[: OBSERVED_LINES + 1]
    text = "\n".join(kept)
    return re.sub(
        r'File "[^"]*cgraph-plain-[^"]*\.py", line (\d+)',
        lambda match: f'File "repro.py", line {int(match.group(1)) - shift}',
        text,
    )


#: Lines of a script's output quoted in a report.
OBSERVED_LINES = 30
#: The longest value quoted in the report's first sentence.
SHORT_VALUE = 60


def _error_said(difference: Difference | None) -> str:
    """``: "message"``, the first line of the compiled call's error, where it has one."""
    message = (difference.message or "") if difference is not None else ""
    first = next((line.strip() for line in message.splitlines() if line.strip()), "")
    return f': "{textwrap.shorten(first, 160, placeholder="...")}"' if first else ""


def _values_said(output: str) -> str:
    """``: eager gives X, compiled gives Y`` where the script printed both briefly."""
    said = {}
    lines = output.splitlines()
    for number, line in enumerate(lines):
        side, colon, value = line.partition(":")
        if not colon or side.strip() not in ("eager", "compiled"):
            continue
        following = lines[number + 1] if number + 1 < len(lines) else ""
        if following.startswith(" "):  # a value printed over several lines
            return ""
        if side.strip() not in said:
            # "eager:    a0.grad: None" -> "None"; "eager:    tensor(...)" -> "tensor(...)"
            value = value.strip()
            said[side.strip()] = value.rpartition(": ")[2] if ": " in value else value
    eager, compiled = said.get("eager"), said.get("compiled")
    if not eager or not compiled or max(len(eager), len(compiled)) > SHORT_VALUE:
        return ""
    return f": eager gives `{eager}`, compiled gives `{compiled}`"


def _bug_of(path: Path) -> Any:
    """The bug of its directory's bugs file that ``path`` is a form of, if any."""
    from pytest_cgraph.registry.entries import read_bugs

    try:
        return next((bug for bug in read_bugs(path.parent) if path.name in bug.forms), None)
    except (ValueError, CgraphError):  # a bugs file that does not parse names no bug
        return None


def _device_words() -> str:
    """A line saying every run was on the CPU, where it was: a CUDA build's
    ``collect_env`` reads as if a GPU ran the script."""
    import torch

    if torch.cuda.is_available():
        return ""
    return "Every run above was on the CPU (no CUDA device on this machine).\n\n"


def versions() -> str:
    """``python -m torch.utils.collect_env``'s text, what PyTorch's template asks for."""
    try:
        from torch.utils.collect_env import get_pretty_env_info

        # Less the CPU's flags and vulnerability list: long, and no compiler bug's.
        lines = str(get_pretty_env_info()).splitlines()
        return "\n".join(
            line for line in lines if not line.startswith(("Vulnerability ", "Flags:"))
        )
    except Exception as error:  # collect_env shells out; keep the report whole without it
        import platform

        import torch

        return (
            f"(collect_env failed: {type(error).__name__})\nPyTorch version: {torch.__version__}\n"
            f"Python version: {platform.python_version()}\nOS: {platform.platform()}"
        )


@dataclass
class Report:
    """A report and what goes beside it."""

    title: str
    markdown: str
    script: str
    ablation: Ablation
    #: The shown script's run in this interpreter (its output is the "actual").
    run: Run
    shown: str

    @property
    def lines(self) -> int:
        return len(self.script.splitlines())


def without_headline(script: str) -> str:
    """``script`` less the comment it opens with (the torch version, the backend, the
    difference in the harness's words): the report says all that in its own words,
    and a maintainer counts the lines that run."""
    lines = script.splitlines(keepends=True)
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    return "".join(lines)


def choose_script(result: PlainResult, limit: float = 300.0) -> tuple[str, str, Run]:
    """The script a report shows: on ``torch.compile(fn)`` with the defaults where the
    bug shows there, else on the finding's own backend. Returns its compiler, its
    text and its run here."""
    if result.finding.backend != DEFAULT:
        script = render_for(result, DEFAULT)
        run = run_script(script, limit)
        if fails_as_found(result, run):
            return DEFAULT, script, run
    assert result.script is not None
    return result.finding.backend, result.script, Run(1, result.observed)


def build_report(
    path: Path,
    result: PlainResult | None = None,
    pythons: Sequence[str] = (),
    limit: float = 300.0,
) -> Report:
    """The report of the finding in ``path`` (an entry or a repro file); raises
    :class:`Unsupported` where no plain script verifies."""
    result = result or make_plain(path)
    if not result.verified or result.script is None:
        raise Unsupported(result.verdict)
    bug = _bug_of(path)
    shown, script, run = choose_script(result, limit)
    ablation = ablate(result, shown, pythons, limit, run)
    shift = len(script.splitlines()) - len(without_headline(script).splitlines())
    script = without_headline(script)
    first = ablation.first_layer or _compiler_words(shown)
    first_name = next((n for n, _ in BACKENDS if _compiler_words(n) == first), shown)
    component = COMPONENTS.get(first_name, "torch.compile")
    title = _title(result, bug, component)
    calls = result.plan.calls if result.plan else 1
    crash = result.difference is None or result.difference.kind is Kind.CRASH
    lead = f"Under {_compiler_words(shown)}, {_symptom(result.difference, calls)}"
    lead += (_error_said(result.difference) if crash else _values_said(run.output)) + "."
    notes = []
    if "fallback_random = True" in script:
        notes.append(
            "The script sets `torch._inductor.config.fallback_random = True` and seeds "
            "both sides alike, so random ops draw the same numbers compiled as eagerly."
        )
    if "assert_close" in script:
        notes.append(
            "Values are compared with `torch.testing.assert_close` at its default tolerances."
        )
    if any(row.change == FLOAT64 and row.fails for row in ablation.settings):
        notes.append("With every floating tensor in float64 it still fails: it is not rounding.")
    mechanism = f"What seems to happen: {' '.join(bug.mechanism.split())}\n\n" if bug else ""
    upstream = f"{_upstream_words(str(bug.upstream))}\n\n" if bug is not None else ""
    observed = _observed(run.output, shift, crash)
    logs = f"### Error logs\n\n```\n{observed}\n```\n\n" if crash else ""
    expected = (
        ""
        if crash
        else f"Expected (eager) against actual (compiled), as the script prints them:\n\n"
        f"```\n{observed}\n```\n\n"
    )
    summary = ablation.summary()
    markdown = f"""### Title

{title}

### 🐛 Describe the bug

{lead} {_found_words(bug)}

```python
{script.rstrip()}
```

{expected}{mechanism}Each row below runs the script above with one change:

{ablation.table()}
{summary}

{" ".join(notes) + chr(10) + chr(10) if notes else ""}{upstream}{TRACE_LINE}

{logs}### Versions

{_device_words()}```
{versions().rstrip()}
```
"""
    markdown = re.sub(r"\n{3,}", "\n\n", markdown)
    return Report(title, markdown, script, ablation, run, shown)


def write_report(report: Report, directory: Path, name: str, limit: float = 300.0) -> Path:
    """Write ``report`` as ``directory/name.md``, with ``name/repro.py``, its ablation
    (``name/ablation.json``), a ``TORCH_TRACE`` log and its tlparse page beside it."""
    directory.mkdir(parents=True, exist_ok=True)
    beside = directory / name
    beside.mkdir(exist_ok=True)
    (beside / "repro.py").write_text(report.script)
    (beside / "ablation.json").write_text(json.dumps(report.ablation.as_dict(), indent=2) + "\n")
    traced = trace_log(beside, limit)
    markdown = report.markdown
    if (beside / "trace").is_dir():
        # One file to attach to the issue: GitHub takes a zip, not a folder.
        folders = ["trace", "tlparse"] if traced else ["trace"]
        with zipfile.ZipFile(beside / "trace.zip", "w", zipfile.ZIP_DEFLATED) as archive:
            for folder in folders:
                for path in sorted((beside / folder).rglob("*")):
                    if path.is_file():
                        archive.write(path, path.relative_to(beside))
        markdown = markdown.replace("(`trace.zip`:", f"(`{name}-trace.zip`:")
        (beside / "trace.zip").replace(directory / f"{name}-trace.zip")
    else:
        markdown = markdown.replace(TRACE_LINE, "")
    target = directory / f"{name}.md"
    with tempfile.NamedTemporaryFile("w", dir=directory, delete=False, suffix=".tmp") as handle:
        handle.write(markdown)
    Path(handle.name).replace(target)  # never a half-written report
    return target


def trace_log(directory: Path, limit: float = 300.0) -> bool:
    """Run ``directory/repro.py`` where it lies under ``TORCH_TRACE=directory/trace``
    (so the log names the file the report attaches, line for line) and, where
    ``tlparse`` is installed, render the log as ``directory/tlparse``; whether the
    page was made."""
    trace = directory / "trace"
    shutil.rmtree(trace, ignore_errors=True)
    trace.mkdir(parents=True)
    with contextlib.suppress(subprocess.TimeoutExpired):
        subprocess.run(
            [sys.executable, "repro.py"],
            cwd=directory,
            capture_output=True,
            timeout=limit,
            env={**os.environ, "PYTHONWARNINGS": "ignore", "TORCH_TRACE": str(trace.resolve())},
        )
    tlparse = shutil.which("tlparse") or str(Path(sys.executable).parent / "tlparse")
    logs = sorted(trace.glob("*.log"), key=lambda log: log.stat().st_mtime)
    if not Path(tlparse).exists() or not logs:
        return False
    # The newest log: the script's one process writes one.
    page = directory / "tlparse"
    command = [tlparse, str(logs[-1]), "-o", str(page), "--overwrite", "--no-browser"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=limit)
    return done.returncode == 0


def ready_to_file(path: Path, result: PlainResult | None = None) -> str:
    """The report of ``path`` as Markdown (``--issue`` of a repro file and of
    ``python -m pytest_cgraph.plain``), replayed on the interpreters of
    ``CGRAPH_TORCH_PYTHONS``; where no script verifies, why, and the program as the
    harness ran it."""
    result = result or make_plain(path)
    try:
        return build_report(path, result, pythons_named(())).markdown
    except Unsupported as why:
        return (
            f"No plain script verified ({why}); the program as the harness ran it "
            f"(`program(*inputs(k))` for k = 1, 2, ...):\n\n```python\n"
            f"{result.finding.source.rstrip()}\n```\n"
        )


# ------------------------------------------------------------------ baselines


def best_form(bug: Any, directory: Path) -> tuple[Path, PlainResult] | tuple[None, str]:
    """The form of ``bug`` whose verified script shows the bug's own severity (a silent
    bug is filed with a silent script, not its crash form), else the first that
    verifies at all; or why none does."""
    from pytest_cgraph.registry.severity import severity_of_entry

    forms = [directory / name for name in bug.forms if (directory / name).is_file()]
    same = [f for f in forms if severity_of_entry(f.read_text()) == bug.severity]
    fallback: tuple[Path, PlainResult] | None = None
    why = "no form on disk"
    for form in [*same, *[f for f in forms if f not in same]][:MAX_FORMS]:
        with contextlib.redirect_stdout(sys.stderr):
            result = make_plain(form)
        if not result.verified:
            why = result.verdict
            continue
        if form in same:
            return form, result
        fallback = fallback or (form, result)
    return fallback if fallback is not None else (None, why)


#: Forms tried per bug: each is a plain-script search of its own.
MAX_FORMS = 4


def pythons_named(named: Sequence[str]) -> list[str]:
    """The interpreters to replay on: this one, those named, those of
    ``CGRAPH_TORCH_PYTHONS`` (a path list), each once."""
    listed = [sys.executable, *named]
    listed += [p for p in os.environ.get(PYTHONS_VARIABLE, "").split(os.pathsep) if p]
    return list(dict.fromkeys(listed))


def _exit_codes(report: Report) -> str:
    if not report.ablation.versions:
        return f"exit {report.run.returncode}"
    return ", ".join(f"{row.change}: exit {row.returncode}" for row in report.ablation.versions)


def main(argv: list[str] | None = None) -> int:
    """``python -m pytest_cgraph.issue FILE|BASELINE [--out DIR] [--torch PYTHON]``."""
    parser = argparse.ArgumentParser(
        prog="python -m pytest_cgraph.issue",
        description="Write a finding (an entry or repro file), or every bug of a "
        "baseline directory, as a report ready for PyTorch's tracker: a verified script "
        "on torch.compile(fn), expected against actual, an ablation over backends, "
        "settings and torch versions, a TORCH_TRACE log and collect_env.",
    )
    parser.add_argument("path", type=Path, help="an entry (.toml), a repro file, or a baseline")
    parser.add_argument("--out", type=Path, help="write reports here (needed for a baseline)")
    parser.add_argument(
        "--torch",
        action="append",
        default=[],
        metavar="PYTHON",
        help=f"another interpreter whose torch replays the script (repeatable; also "
        f"{PYTHONS_VARIABLE}, a path list)",
    )
    parser.add_argument("--bug", action="append", default=[], help="only this bug id (repeatable)")
    parser.add_argument(
        "--all", action="store_true", help="also bugs outside torch.compile's contract"
    )
    options = parser.parse_args(argv)
    path: Path = options.path
    if not path.exists():
        parser.exit(2, f"error: {path} does not exist; give an entry, a repro file or a baseline\n")
    pythons = pythons_named(options.torch)
    if path.is_file():
        try:
            with contextlib.redirect_stdout(sys.stderr):
                report = build_report(path, pythons=pythons)
        except Unsupported as why:
            print(f"{path.name}: no report: {why}", file=sys.stderr)
            return 1
        if options.out is None:
            sys.stdout.write(report.markdown)
            return 0
        written = write_report(report, options.out, path.stem)
        print(f"{written}: {report.lines} lines; {_exit_codes(report)}")
        return 0
    if options.out is None:
        parser.exit(2, f"error: {path} is a directory: give --out DIR for its reports\n")
    from pytest_cgraph.registry.entries import read_bugs

    try:
        bugs = read_bugs(path)
    except (ValueError, CgraphError) as error:
        parser.exit(2, f"error: {path}: {error}\n")
    if not bugs:
        parser.exit(2, f"error: {path} has no bugs file (bugs.toml); give a baseline\n")
    chosen = [
        bug
        for bug in bugs
        if (not options.bug or bug.id in options.bug) and (options.all or bug.contract is None)
    ]
    missing = set(options.bug) - {bug.id for bug in bugs}
    if missing:
        parser.exit(2, f"error: no bug {', '.join(sorted(missing))} in {path}\n")
    failed = 0
    for bug in chosen:
        form, found = best_form(bug, path)
        if form is None:
            print(f"{bug.id}: no report: {found}")
            failed += 1
            continue
        assert isinstance(found, PlainResult)
        try:
            with contextlib.redirect_stdout(sys.stderr):
                report = build_report(form, found, pythons)
        except Unsupported as why:
            print(f"{bug.id}: no report: {why}")
            failed += 1
            continue
        written = write_report(report, options.out, bug.id)
        print(f"{bug.id}: {written} ({report.lines} lines; {_exit_codes(report)})", flush=True)
    return 1 if failed else 0


__all__ = [
    "SETTINGS",
    "Ablation",
    "Report",
    "Setting",
    "ablate",
    "build_report",
    "main",
    "ready_to_file",
]

if __name__ == "__main__":
    raise SystemExit(main())
