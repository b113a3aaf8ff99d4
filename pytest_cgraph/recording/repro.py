"""Repro files: a failing program as a standalone script and regression test.

A repro is the program's own source (the exact text that ran), a header
saying what failed where, and the oracle itself: the modules of
:mod:`pytest_cgraph.oracle`, pasted verbatim, so the file replays the
program with exactly the code the campaign used and needs nothing but
torch. It is verified before it is written (in-process, or, for a program
that hangs or kills its process, by running the file in a subprocess),
written atomically under a lock, and named by signature: the same bug
always lands in the same file, and a smaller program replaces a larger one,
never the reverse. A file in the repro dir that this plugin did not write is
never overwritten.

An entry (:func:`entry_text`, for a registry) is the same header and
settings without the oracle, as TOML data (``NAME.toml``): the installed
oracle reads and replays it, and :func:`export` turns it back into the
repro file it was verified as.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import os
import re
import subprocess
import sys
import tempfile
import types
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_cgraph.failures import (
    UNSEEN,
    Case,
    Failure,
    ReproResult,
    ReproStatus,
    crash_site,
    death,
    describe_exit,
    died_in_eager,
    ends_process,
    exit_signal,
    is_hang,
    siteless_signature,
)
from pytest_cgraph.oracle import MODULES
from pytest_cgraph.oracle.difference import Difference, Kind, Role
from pytest_cgraph.registry.entries import (
    Registry,
    program_ops,
    read_entry,
    recorded_modules,
    recorded_settings,
    recorded_threads,
)
from pytest_cgraph.registry.repro_files import (
    BASE_SIGNATURE,
    ENTRY_LINE,
    ENTRY_SUFFIX,
    FAILURE,
    LAYER,
    MARKER_LINE,
    REPRO_SUFFIX,
    SIZE,
    Kinship,
    header_value,
    is_entry,
    write_repro,
)

if TYPE_CHECKING:
    from pytest_cgraph.oracle.driver import ReplayVerdict, ReproCase
    from pytest_cgraph.oracle.ladder import Location


@functools.cache
def oracle_source() -> str:
    """The oracle's modules as one script: each module's text, in dependency order,
    with ``from __future__`` and the modules' imports of each other taken out."""
    parts = []
    for name in MODULES:
        text = resources.files("pytest_cgraph.oracle").joinpath(f"{name}.py").read_text()
        parts.append(f"# ---- pytest_cgraph/oracle/{name}.py ----\n{_without_own_imports(text)}")
    return "\n\n".join(parts)


def _without_own_imports(text: str) -> str:
    """``text`` without its ``__future__`` import and its imports of other oracle modules.

    Top-level ones are deleted; one inside a block (``if TYPE_CHECKING:``)
    becomes ``pass``. An oracle module must import the others at top level
    only: a function-level import would fail in a repro.
    """
    tree = ast.parse(text)
    lines = text.splitlines()
    doomed: dict[int, tuple[int, str]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        own = (node.module or "").startswith("pytest_cgraph")
        if node.module != "__future__" and not own:
            continue
        top = node in tree.body
        if own and not top and not _under_type_checking(tree, node):
            raise ValueError(f"oracle module imports {node.module} inside a function")
        indent = " " * node.col_offset
        doomed[node.lineno - 1] = (node.end_lineno or node.lineno, "" if top else f"{indent}pass")
    kept: list[str] = []
    index = 0
    while index < len(lines):
        if index in doomed:
            end, replacement = doomed[index]
            if replacement:
                kept.append(replacement)
            index = end
            continue
        kept.append(lines[index])
        index += 1
    return "\n".join(kept).strip() + "\n"


def _under_type_checking(tree: ast.Module, target: ast.AST) -> bool:
    for node in tree.body:
        if (
            isinstance(node, ast.If)
            and isinstance(node.test, ast.Name)
            and node.test.id == "TYPE_CHECKING"
        ) and any(child is target for child in ast.walk(node)):
            return True
    return False


#: The last header line of a standalone repro file: how to run it.
STANDALONE_RUN = (
    "# run: python THIS_FILE [--backend NAME] [--issue] [-v]  (exit 1 while the bug is there), "
    "or pytest THIS_FILE"
)
#: The last header line of an entry: data, replayed through its standalone repro file.
ENTRY_RUN = (
    "# run: python -m pytest_cgraph.record --export THIS_FILE OUT.py && "
    "python OUT.py [--backend NAME] [--issue]  (exit 1 while the bug is there)"
)
FULL_SIGNATURE = "# signature: "


def facts(failure: Failure, location: Location) -> list[str]:
    """The header lines saying what failed where: shared by repro files and entries."""
    import torch

    from pytest_cgraph.oracle.ladder import rungs_for

    case, difference = failure.case, failure.difference
    cuda = (
        f"CUDA {torch.version.cuda}, {torch.cuda.get_device_name()}"
        if case.device.startswith("cuda")
        else "no GPU used"
    )
    plugins = "".join(f"-p {module} " for module in case.setup_modules)
    replay = case.replay or (
        f"pytest --cgraph {plugins}--cgraph-seed {case.seed} --cgraph-backend "
        f"{case.backend} -k {case.family}"
        if case.seed is not None
        else "(not from a campaign)"
    )
    layer = location.layer
    ladder = (
        "not located (the program ends its process; so would each rung of the ladder)"
        if difference.ends_process
        else location.describe(rungs_for(case.backend, case.device))
    )
    return [
        f"{FULL_SIGNATURE}{_full_signature(difference.signature, layer)}",
        f"{BASE_SIGNATURE}{difference.signature}",
        f"{LAYER}{layer or 'none'}",
        f"{FAILURE}{difference.headline()}",
        f"# first diverging layer: {ladder}",
        f"# backend: {case.backend}; device: {case.device}; iterations: {case.iters}"
        + (f"; torch threads: {case.threads}" if case.threads is not None else ""),
        f"# torch {torch.__version__}; {cuda}",
        f"{SIZE}{case.size}",
        f"# found by: {case.nodeid or 'a check'}; replay: {replay}",
    ]


def _full_signature(signature: str, layer: str | None) -> str:
    """The signature with its layer: what a file is named after."""
    return f"{signature}-{layer}" if layer else signature


def repro_case(failure: Failure) -> ReproCase:
    """What a file of ``failure`` replays: its program and how it was found to fail."""
    from pytest_cgraph.oracle.driver import ReproCase

    case, difference = failure.case, failure.difference
    return ReproCase(
        source=case.source,
        backend=case.backend,
        device=case.device,
        modules=tuple(dict.fromkeys([*case.setup_modules, *_backend_module(case.backend)])),
        timeout=case.timeout if difference.kind is Kind.TIMEOUT else None,
        signature=difference.signature,
        threads=case.threads,
    )


def _settings(case: ReproCase) -> str:
    """The literals both kinds of file assign: the program and how it was found to fail."""
    return f"""# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = {_literal(case.source)}

BACKEND = {case.backend!r}
BACKEND_MODULES = {list(case.modules)!r}  # imported first: they register the backend
DEVICE = {case.device!r}
TIMEOUT = {case.timeout!r}  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = {case.signature!r}  # the failure this file reproduces
THREADS = {case.threads!r}  # torch's intra-op threads it was found with, or None: as they are
"""


def standalone_text(header: list[str], case: ReproCase) -> str:
    """A repro file: ``header`` (:func:`facts`), the settings and the oracle, verbatim."""
    # The header opens with the full signature (:func:`facts`): the test's name.
    first = header[0] if header else ""
    full = first.removeprefix(FULL_SIGNATURE) if first.startswith(FULL_SIGNATURE) else ""
    full = full or case.signature
    test_name = "test_" + re.sub(r"\W", "_", full).lower()
    return f"""{chr(10).join([MARKER_LINE, *header, STANDALONE_RUN])}
from __future__ import annotations

{_settings(case)}

# ---- the pytest-cgraph oracle: the code the campaign ran, verbatim; needs torch only ----
{oracle_source()}

REPRO = ReproCase(
    source=PROGRAM_SOURCE,
    backend=BACKEND,
    device=DEVICE,
    modules=tuple(BACKEND_MODULES),
    timeout=TIMEOUT,
    signature=SIGNATURE,
    threads=THREADS,
)


def {test_name}():
    assert_fixed(REPRO)


if __name__ == "__main__":
    main(REPRO)
"""


def entry_text(header: list[str], case: ReproCase) -> str:
    """An entry: ``header`` as TOML comments, the settings as TOML keys.

    Data, never run: the installed oracle reads it (``tomllib``) and
    replays it. A ``timeout`` or ``threads`` of None is left out (TOML has no null).
    """
    modules = ", ".join(_toml_string(module) for module in case.modules)
    optional = ""
    if case.timeout is not None:
        optional += (
            f"timeout = {float(case.timeout)!r}  # seconds before a hang counts as reproduced\n"
        )
    if case.threads is not None:
        optional += f"threads = {int(case.threads)}  # torch's intra-op threads it was found with\n"
    return f"""{chr(10).join([ENTRY_LINE, *header, ENTRY_RUN])}

signature = {_toml_string(case.signature)}  # the failure this entry reproduces
backend = {_toml_string(case.backend)}
backend_modules = [{modules}]  # imported first: they register the backend
device = {_toml_string(case.device)}
{optional}
# The program, exactly as it ran (the oracle executes this text).
program = {_toml_program(case.source)}
"""


def _toml_string(text: str) -> str:
    """``text`` as a TOML basic string: one line; quotes, backslashes and control
    characters escaped."""
    escaped = []
    for char in text:
        if char in '"\\':
            escaped.append("\\" + char)
        elif _is_control(char):
            escaped.append(f"\\u{ord(char):04X}")
        else:
            escaped.append(char)
    return '"' + "".join(escaped) + '"'


def _toml_program(source: str) -> str:
    """``source`` as a TOML string: a multi-line literal string where it can be.

    The literal opens on a line of its own, which TOML drops, and holds the
    text unescaped, so the value is byte for byte what ran. A text holding
    three single quotes, ending in one, or holding a control character other
    than a tab or a newline (a carriage return too: TOML reads a line end as
    a newline) is a basic string instead, escaped.
    """
    if "'''" in source or source.endswith("'") or any(map(_is_control, source.replace("\n", ""))):
        return _toml_string(source)
    return f"'''\n{source}'''"


def _is_control(char: str) -> bool:
    """Whether ``char`` is a control character a TOML string must escape (a tab need not)."""
    return (char < " " and char != "\t") or char == "\x7f"


def render(failure: Failure, location: Location) -> str:
    """The repro file's text."""
    return standalone_text(facts(failure, location), repro_case(failure))


def header_of(text: str) -> list[str]:
    """A file's :func:`facts` lines: its header without the first and the run line."""
    lines = []
    for line in text.splitlines()[1:]:
        if not line.startswith("#") or line.startswith("# run: "):
            break
        lines.append(line)
    return lines


def recorded_case(path: Path) -> ReproCase:
    """The case a repro file or entry replays, read from its literals or keys (never run)."""
    from pytest_cgraph.oracle.driver import ReproCase

    settings = recorded_settings(path)
    timeout = settings.get("timeout")
    return ReproCase(
        source=str(settings["program"]),
        backend=str(settings["backend"]),
        device=str(settings["device"]),
        modules=recorded_modules(settings),
        timeout=float(timeout) if isinstance(timeout, (int, float)) else None,
        signature=str(settings["signature"]),
        threads=recorded_threads(settings),
    )


def export(path: Path) -> str:
    """The standalone repro file of an entry (or of a repro file, with this oracle)."""
    return standalone_text(header_of(path.read_text()), recorded_case(path))


def _literal(source: str) -> str:
    """``source`` as a readable string literal: raw and triple-quoted where it can be.

    The literal opens on a line of its own and drops that first newline
    (``[1:]``), so the text is byte for byte what ran.
    """
    for quote in ("'''", '"""'):
        if quote not in source and not source.endswith("\\") and quote[0] != source[-1:]:
            return f"r{quote}\n{source}{quote}[1:]"
    return repr(source)


def replay_in_process(text: str, backend: str | None = None) -> Any:
    """Run a rendered repro's check in this process; its ``Replay`` (the file's own class)."""
    # A real (temporary) module: dataclasses look their class's module up.
    module = types.ModuleType("cgraph_repro_check")
    sys.modules[module.__name__] = module
    try:
        exec(compile(text, "<cgraph repro>", "exec"), module.__dict__)
        return module.replay(module.REPRO, backend)
    finally:
        sys.modules.pop(module.__name__, None)


def run_script(script: Path, limit: float) -> subprocess.CompletedProcess[str] | None:
    """``python SCRIPT`` with this process's import path; ``None`` if it outlived ``limit``."""
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, sys.path))}
    try:
        return subprocess.run(
            [sys.executable, str(script)],
            capture_output=True,
            text=True,
            timeout=limit,
            env=environment,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None


@dataclass(frozen=True)
class ScriptRun:
    """How ``python FILE`` ended.

    ``verdict`` is what the run showed: the verdict of the line it printed
    (``printed``: ``said`` is that line), or what its end showed (a hang past
    its ``TIMEOUT``, an exit without a verdict line; ``said`` says it in
    words). A run killed by a signal has ``death`` instead, and no verdict
    until a signature is given (:meth:`verdict_for`): whether it died the
    death of a failure depends on the failure.
    """

    verdict: ReplayVerdict | None
    said: str
    death: Difference | None = None
    printed: bool = False

    def verdict_for(self, signature: str) -> ReplayVerdict:
        """Whether the run reproduced ``signature``.

        A run killed by a signal reproduces a death of the same signal at the
        same site (:func:`~pytest_cgraph.failures.crash_site`); a death recorded
        without a site (a file written before sites were read) matches its
        signal at any site; any other death is another failure.
        """
        from pytest_cgraph.oracle.driver import ReplayVerdict

        if self.death is None:
            assert self.verdict is not None, "a run that was not killed has its verdict"
            return self.verdict
        died = self.death
        same = signature in (died.signature, siteless_signature(died))
        return ReplayVerdict.REPRODUCED if same else ReplayVerdict.REPRODUCED_DIFFERENTLY

    def line(self, signature: str) -> str:
        """The run as one verdict line: the line it printed, or its verdict and what it did."""
        return self.said if self.printed else f"{self.verdict_for(signature)}: {self.said}"


def reproduces_in_subprocess(text: str, failure: Failure) -> ScriptRun:
    """Run the rendered file as ``python FILE``."""
    limit = (failure.case.timeout or 60.0) + 120.0  # its own limit, plus import and compile
    with tempfile.TemporaryDirectory(prefix="cgraph-verify-") as directory:
        script = Path(directory) / "repro.py"
        script.write_text(text)
        run = run_script(script, limit)
    hang = failure.difference.kind is Kind.TIMEOUT
    return _subprocess_verdict(run, limit, _timeout_words(failure.case.timeout) if hang else None)


def _timeout_words(timeout: float | None) -> str:
    """A repro file's ``TIMEOUT`` as the verdict line says it."""
    return f"TIMEOUT = {timeout:g} s" if timeout else "its TIMEOUT"


def _subprocess_verdict(
    run: subprocess.CompletedProcess[str] | None, limit: float, hang_timeout: str | None
) -> ScriptRun:
    """How ``python FILE`` ended; ``hang_timeout`` names the limit of a hang's repro
    (None for a crash), whose faulthandler dump is its reproduction.

    The one place a child's output is read back into a verdict: its verdict
    line (:meth:`ReplayVerdict.of_line`), else how it ended.
    """
    from pytest_cgraph.oracle.driver import ReplayVerdict

    if run is None:  # a hang's file hung past its own limit too; a crash's did not crash
        verdict = ReplayVerdict.REPRODUCED if hang_timeout else ReplayVerdict.NOT_REPRODUCED
        return ScriptRun(verdict, f"python FILE still ran after {limit:g} s")
    lines = [
        (seen, line)
        for line in run.stdout.splitlines()
        if (seen := ReplayVerdict.of_line(line)) is not None
    ]
    if lines:
        verdict, line = lines[-1]
        return ScriptRun(verdict, line, printed=True)
    if hang_timeout is not None and "Timeout (" in run.stderr:
        # faulthandler's watchdog fired: the program hung. Its dump of every
        # thread is not safe against threads in flux (torch's, mid-compile on
        # a loaded machine) and may crash the process: that death is the
        # dump's, after the hang was shown.
        return ScriptRun(ReplayVerdict.REPRODUCED, f"python FILE hung past {hang_timeout}")
    if run.returncode < 0:  # killed by a signal: the crash itself, if it is the same crash
        how, cause = describe_exit(run.returncode), exit_signal(run.returncode) or UNSEEN
        died = death(how, cause, crash_site(run.stderr))
        if died_in_eager(run.stderr):  # not the compiled side's doing: no difference
            return ScriptRun(
                ReplayVerdict.NOT_REPRODUCED, f"python FILE: eager itself was {died.detail}"
            )
        return ScriptRun(None, f"python FILE {died.detail}", died)
    last = (run.stderr.strip() or run.stdout.strip() or "(no output)").splitlines()[-1]
    return ScriptRun(
        ReplayVerdict.NOT_REPRODUCED, f"python FILE {describe_exit(run.returncode)}: {last}"
    )


@dataclass(frozen=True)
class FileReplay:
    """What replaying a repro file or entry showed: its verdict, and the line that says so."""

    verdict: ReplayVerdict
    line: str


def replay_file(path: Path) -> str:
    """Replay a repro file or entry as it would run alone; the line ``python FILE`` prints
    (:func:`replay_verdict` for the verdict itself)."""
    return replay_verdict(path).line


def replay_verdict(path: Path) -> FileReplay:
    """Replay a repro file or entry as it would run alone: whether it reproduced its own
    signature, and the line that says so.

    A program that ends its process (a crash of the process, a hang) runs
    in a subprocess (an entry, which is data, as its exported repro file);
    any other in this process, which costs no import: a repro file with the
    oracle it carries, an entry with the installed one.
    """
    from pytest_cgraph.oracle.driver import ReplayVerdict

    text = path.read_text()
    signature = header_value(text, BASE_SIGNATURE) or ""
    if ends_process(signature):
        limit = 300.0
        hang = _timeout_words(recorded_case(path).timeout) if is_hang(signature) else None
        with tempfile.TemporaryDirectory(prefix="cgraph-replay-") as directory:
            script = path
            if is_entry(text):
                script = Path(directory) / f"{path.stem}{REPRO_SUFFIX}"
                script.write_text(export(path))
            run = _subprocess_verdict(run_script(script, limit), limit, hang)
        return FileReplay(run.verdict_for(signature), run.line(signature))
    if is_entry(text):
        from pytest_cgraph.oracle.driver import replay

        replayed = replay(recorded_case(path))
        return FileReplay(replayed.verdict(signature), replayed.line(signature))
    # The file's own oracle, which may predate verdicts: judged by its signature.
    found = replay_in_process(text)
    difference = found.difference
    verdict = ReplayVerdict.judge(difference.signature if difference else None, signature)
    return FileReplay(verdict, str(found.line(signature)))


def first_diverging_layer(case: Case, difference: Difference) -> str | None:
    """The first layer of the ladder that shows ``difference`` (replays ``case`` up it):
    what a judge asks only when the layer tells a known difference from a new one."""
    return _climbed(case, difference).layer


def masked_rungs(case: Case, difference: Difference) -> tuple[str, ...]:
    """The rungs ``difference`` may lie at when a lower rung fails differently and so
    leaves its layer untold: that rung and each above it up to the backend's own
    (to the ladder's top for a backend that is not a rung, less the CUDA-graph
    rungs where the backend captures none); none when no rung masks it. A
    judge's second question, asked only when the layer is untold and no bug
    of the signature is registered untold.

    Every rung below the masking one agrees with eager, so the failure is at
    it or above; its own failure may hide this one there, so the ladder
    cannot say where. A registered bug of this signature at one of them,
    whose calls the program makes, is this one: a program that writes an
    input with a value needing grad meets AOTAutograd's write-back crash at
    ``aot_eager`` and still shows a known gradient bug whole; a program whose
    ``.grad`` read fails under Dynamo alone still shows a known AOTAutograd
    bug of a factory's ``requires_grad`` above it.
    """
    from pytest_cgraph.oracle.compiling import CUDAGRAPH_BACKENDS
    from pytest_cgraph.oracle.ladder import CUDAGRAPH_RUNGS, rungs_for

    untold = _climbed(case, difference).untold_by
    if untold is None:
        return ()
    rungs = rungs_for(case.backend, case.device or "cpu")
    start = rungs.index(untold.name)
    end = rungs.index(case.backend) + 1 if case.backend in rungs else len(rungs)
    # A backend that captures no CUDA graphs cannot show a CUDA-graph rung's bug.
    captures = case.backend in CUDAGRAPH_BACKENDS
    return tuple(rung for rung in rungs[start:end] if captures or rung not in CUDAGRAPH_RUNGS)


#: The last climb a judge made: its key (the difference itself among it) and
#: where it put the failure. A judge asks the masking rung right after the
#: layer, of the same difference: one climb answers both.
_last_climb: list[tuple[tuple[object, ...], Location]] = []


def _climbed(case: Case, difference: Difference) -> Location:
    key = (id(difference), difference.signature, case.source, case.backend, case.device)
    if _last_climb and _last_climb[0][0] == key:
        return _last_climb[0][1]
    location = locate_layer(case, difference)
    _last_climb[:] = [(key, location)]
    return location


def locate_layer(case: Case, like: Difference | None = None) -> Location:
    """The first rung of the ladder that shows the failure ``like`` (its signature;
    without one: that diverges at all) while every rung below it agrees with eager,
    and whether it is the CUDA-graph path.

    ``like`` is what checking ``case`` gave: the rung of ``case.backend`` is
    taken from it, not checked again. A lower rung that fails differently
    leaves the layer ``None`` and says so (:attr:`Location.untold_by`): the
    bug it shows may hide this one there, so no layer above it is to blame
    on the ladder's evidence. ``[0]`` is the layer (what a hunt's ``layer_of`` reads).
    """
    import warnings

    from pytest_cgraph.checking.backends import resolve_device
    from pytest_cgraph.oracle.compiling import collect_compile_evidence
    from pytest_cgraph.oracle.ladder import climb, locate

    for module in case.setup_modules:  # they register the backend the ladder compiles with
        importlib.import_module(module)
    with warnings.catch_warnings(), collect_compile_evidence():
        warnings.simplefilter("ignore")
        device = resolve_device(case.device)
        rungs = climb(case.source, case.backend, device, case.iters, like=like)
    return locate(rungs, like)


def make_repro(failure: Failure, directory: Path, *, entry: bool = False) -> Failure:
    """Locate the layer, render, verify and write (or keep the smaller) repro.

    :func:`verify_repro` then :func:`store_repro`, in one process: what a
    run without xdist workers, and the record command, do.
    """
    return store_repro(verify_repro(failure, directory, entry=entry), directory)


def verify_repro(failure: Failure, directory: Path, *, entry: bool = False) -> Failure:
    """Locate the layer, render and verify a failure's repro, writing nothing.

    Returns the failure with a :class:`ReproResult` that is ``VERIFIED``
    (carrying the text to write and the path it is meant for in
    ``directory``) or ``NOT_REPRODUCIBLE``. Verifying needs the machine
    that found the failure (its torch, its GPU); writing needs only the
    text, so under xdist a worker verifies and the controller writes.

    With ``entry``, the text is the verified file's entry (its header and
    program without the oracle), for a registry: the standalone file is
    still what is verified, and :func:`export` gives it back. A program
    that hangs or kills its process is neither located on the ladder nor
    verified here (either would hang or kill this process): its file is
    verified by running it in a subprocess, and a death the record could
    only call ``died`` is named by the signal the file's run died of.
    """
    from pytest_cgraph.oracle.driver import ReplayVerdict
    from pytest_cgraph.oracle.engine import intra_op_threads
    from pytest_cgraph.oracle.ladder import Location

    if failure.difference.ends_process:
        location = Location(None)
        failure, text, verdict, detail = _verify_in_subprocess(failure)
        stored = _stored_text(failure, location, text, entry)
    else:
        with intra_op_threads(failure.case.threads):  # as it was found (the file sets it too)
            location = locate_layer(failure.case, failure.difference)
        text = render(failure, location)
        # Both texts exist before the replay: what follows it only writes.
        stored = _stored_text(failure, location, text, entry)
        verdict, detail = _verify_in_process(text, failure, location)
    layer, specific = location.layer, location.cudagraph_specific
    if verdict is not ReplayVerdict.REPRODUCED:
        result = ReproResult(ReproStatus.NOT_REPRODUCIBLE, None, detail, layer, specific)
        return failure.with_repro(result)
    suffix = ENTRY_SUFFIX if entry else REPRO_SUFFIX
    meant_for = directory / f"{_full_signature(failure.signature, layer)}{suffix}"
    result = ReproResult(
        ReproStatus.VERIFIED, str(meant_for), detail, layer, specific, text=stored, entry=entry
    )
    return failure.with_repro(result)


def store_repro(failure: Failure, directory: Path) -> Failure:
    """Write a ``VERIFIED`` repro into ``directory`` (keeping an equal or smaller one
    already there); any other failure comes back unchanged.

    Needs no torch: it runs wherever the repro dir is, the xdist controller.
    """
    repro = failure.repro
    if repro is None or repro.status is not ReproStatus.VERIFIED or repro.text is None:
        return failure
    suffix = ENTRY_SUFFIX if repro.entry else REPRO_SUFFIX
    name = _full_signature(failure.signature, repro.layer)
    kinship = _kinship_in(directory, failure)
    try:
        path, written = write_repro(directory, name, repro.text, failure.case.size, suffix, kinship)
    except OSError as error:
        status, where, detail = ReproStatus.WRITE_FAILED, None, f"{directory}: {error}"
    else:
        status = ReproStatus.WRITTEN if written else ReproStatus.KEPT_SMALLER
        where, detail = str(path), repro.detail
    stored = ReproResult(status, where, detail, repro.layer, repro.cudagraph_specific)
    return failure.with_repro(stored)


def _kinship_in(directory: Path, failure: Failure) -> Callable[[Path], Kinship]:
    """How a file of the failure's name in ``directory`` stands to it, by the
    registry's own rule: where the directory's entries tell this signature's
    bugs apart by their calls (or their calls' hazards), a file whose program
    makes calls (hazards) this one does not is another bug, one that makes
    fewer is a broader repro of it, and one of the same hazards is the same
    bug (the smaller program is kept)."""
    ops = program_ops(failure.case.source)
    if not Registry.load([directory]).narrows(failure.difference):
        return lambda path: Kinship.SAME

    def kinship(path: Path) -> Kinship:
        entry = read_entry(path)
        if entry is None or entry.ops == ops or entry.same_claim(ops):
            return Kinship.SAME
        return Kinship.BROADER if entry.claims(ops) else Kinship.OTHER

    return kinship


def _stored_text(failure: Failure, location: Location, text: str, entry: bool) -> str:
    """What is written once ``text`` is verified: the file itself, or its entry."""
    return entry_text(facts(failure, location), repro_case(failure)) if entry else text


def _verify_in_subprocess(failure: Failure) -> tuple[Failure, str, ReplayVerdict, str]:
    """Render a program that ends its process and run its file as ``python FILE``.

    Returns the failure (a death whose record could not say how or where it
    died, a dead in-process check, is named after the signal and the site the
    file's run died of; only the header changes), the file's text, whether
    the run reproduced it, and the detail for the report.
    """
    from pytest_cgraph.oracle.driver import ReplayVerdict
    from pytest_cgraph.oracle.ladder import Location

    text = render(failure, Location(None))
    run = reproduces_in_subprocess(text, failure)
    difference = failure.difference
    unnamed = difference.exception_type == UNSEEN or (
        run.death is not None
        and difference.exception_type == run.death.exception_type
        and difference.message is None
    )
    if run.death is not None and difference.place.role is Role.PROCESS and unnamed:
        named = run.death
        if difference.exception_type == UNSEEN:  # keep who saw it die
            named = dataclasses.replace(
                named, detail=f"{difference.detail}; its repro was {run.death.detail}"
            )
        failure = dataclasses.replace(failure, difference=named)
        text = render(failure, Location(None))
    verdict = run.verdict_for(failure.signature)
    detail = run.said
    if verdict is not ReplayVerdict.REPRODUCED and run.death is not None:
        detail = f"{run.said}, not as it did when found ({failure.difference.detail})"
    return failure, text, verdict, detail


def _verify_in_process(
    text: str, failure: Failure, location: Location
) -> tuple[ReplayVerdict, str]:
    """Replay the rendered file in this process: whether it fails as ``failure`` did,
    and the detail for the report."""
    from pytest_cgraph.oracle.driver import ReplayVerdict

    signature = failure.signature
    try:
        replayed = replay_in_process(text, failure.case.backend)
    except Exception as error:
        return (
            ReplayVerdict.NOT_REPRODUCED,
            f"the repro file raised {type(error).__name__}: {error}",
        )
    # The rendered file's classes are its own: its verdict is judged by signature here.
    difference = replayed.difference
    verdict = ReplayVerdict.judge(difference.signature if difference else None, signature)
    if verdict is ReplayVerdict.REPRODUCED:
        return verdict, f"first diverging layer: {location.summary()}"
    return verdict, f"the standalone file said: {replayed.line(signature)}"


def _backend_module(backend: str) -> list[str]:
    """The module a repro must import for ``backend`` to exist, if torch lacks it."""
    if ":" in backend:
        return [backend.partition(":")[0]]
    from torch._dynamo.backends import registry

    registry._lazy_import()
    compiler = registry._COMPILER_FNS.get(backend)
    module = getattr(compiler, "__module__", "") or ""
    return [] if not module or module.startswith("torch") else [module]
