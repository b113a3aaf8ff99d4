"""Repro files: a shrunk failing program as a standalone script and regression test.

(No torch import at module level: the plugin reads ``MARKER_LINE`` from here
while collecting.)

A repro is the program's own source (the exact text that ran), a header
saying what failed where, and the torch-only driver of ``_repro_driver.py``.
It is verified in-process before it is written, written atomically under a
lock, and named by signature: the same bug always lands in the same file,
and a smaller program replaces a larger one, never the reverse. A file in
the repro dir that this plugin did not write is never overwritten.
"""

from __future__ import annotations

import dataclasses
import fcntl
import os
import re
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_cgraph.compare import Difference

#: First line of every repro file: how the plugin recognises its own files.
MARKER_LINE = "# pytest-cgraph repro"

#: The ladder of layers a failure is re-run on, lowest first.
LADDER = ("eager", "aot_eager", "cudagraphs")
CUDAGRAPH_RUNGS = frozenset({"cudagraphs", "reduce-overhead"})


@dataclass(frozen=True)
class Finding:
    """A shrunk failure and where it came from."""

    source: str
    difference: Difference
    backend: str
    device: str
    iters: int
    family: str
    size: int
    nodeid: str = ""
    seed: int | None = None
    #: Modules to import before compiling: those that register the backend
    #: (the ``-p`` plugins of the run that found it).
    setup_modules: tuple[str, ...] = ()
    #: How to replay the failure, when not a campaign's (seed, family).
    replay: str | None = None
    #: The time limit it ran under: a repro of a hang stops itself after it.
    timeout: float | None = None


@dataclass(frozen=True)
class ReproOutcome:
    """What became of a finding: the file, or why there is none."""

    path: Path | None
    status: str  # "written", "kept smaller", "not reproducible", "write failed"
    detail: str
    layer: str | None
    cudagraph_specific: bool
    #: The finding's difference as the file names it (a dead worker's
    #: cause is learnt from the verifying run: ``died`` -> ``SIGSEGV``).
    difference: Difference | None = None

    def line(self) -> str:
        """One line for a failure report: the file and what is known of it, or why none."""
        if self.path is None:
            return f"no repro file ({self.status}): {self.detail}"
        if self.difference is not None and self.difference.ends_process:
            return f"repro ({self.status}): {self.path} -- {self.detail}"
        return (
            f"repro ({self.status}): {self.path} -- first diverging layer: "
            f"{self.layer or 'only the backend under test'}"
        )


def locate_layer(finding: Finding) -> tuple[str | None, bool]:
    """The first rung of eager -> aot_eager -> cudagraphs (-> the failing backend) that diverges.

    Returns the rung (``None`` when only the failing backend itself differs)
    and whether the failure is specific to the CUDA-graph path (the layers
    below it agree with eager).
    """
    from pytest_cgraph.errors import EquivalenceError, InvalidProgram
    from pytest_cgraph.runner import check_source

    rungs = list(LADDER)
    if finding.backend in ("inductor", "reduce-overhead", "max-autotune"):
        rungs.append("inductor")
        if finding.device.startswith("cuda"):
            rungs.append("reduce-overhead")
    for rung in rungs:
        try:
            check_source(finding.source, backend=rung, device=finding.device, iters=finding.iters)
        except EquivalenceError:
            return rung, rung in CUDAGRAPH_RUNGS
        except InvalidProgram:
            return None, False
    return None, False


def render(finding: Finding, layer: str | None, cudagraph_specific: bool) -> str:
    """The repro file's text."""
    import torch

    difference = finding.difference
    cuda = (
        f"CUDA {torch.version.cuda}, {torch.cuda.get_device_name()}"
        if finding.device.startswith("cuda")
        else "no GPU used"
    )
    plugins = "".join(f"-p {module} " for module in finding.setup_modules)
    replay = finding.replay or (
        f"pytest --cgraph {plugins}--cgraph-seed {finding.seed} --cgraph-backend "
        f"{finding.backend} -k {finding.family}"
        if finding.seed is not None
        else "(not from a campaign)"
    )
    header = [
        MARKER_LINE,
        f"# signature: {signature_of(difference, layer)}",
        f"# base signature: {difference.signature}",
        f"# failure: {difference.kind} at iteration {difference.iteration}, {difference.place}",
        (
            "# first diverging layer: not located (the program ends its process; "
            "so would each rung of the ladder)"
            if difference.ends_process
            else f"# first diverging layer: {layer or 'none below the backend itself'}"
            f" (ladder {' -> '.join(LADDER)}); CUDA-graph path specific: "
            f"{'yes' if cudagraph_specific else 'no'}"
        ),
        f"# backend: {finding.backend}; device: {finding.device}; iterations: {finding.iters}",
        f"# torch {torch.__version__}; {cuda}",
        f"# size: {finding.size}",
        f"# found by: {finding.nodeid or 'a check'}; replay: {replay}",
        "# run: python THIS_FILE [--backend NAME]  (exit 1 while the bug is there), "
        "or pytest THIS_FILE",
    ]
    program = _strip_header(finding.source)
    modules = list(dict.fromkeys([*finding.setup_modules, *_backend_module(finding.backend)]))
    driver = resources.files("pytest_cgraph").joinpath("_repro_driver.py").read_text()
    timeout = finding.timeout if difference.kind == "timeout" else None
    test_name = "test_" + re.sub(r"\W", "_", signature_of(difference, layer)).lower()
    footer = f'''

# ---- this repro ----
BACKEND = {finding.backend!r}
BACKEND_MODULES = {modules!r}  # imported first: they register the backend
DEVICE = {finding.device!r}
TIMEOUT = {timeout!r}  # seconds before a hang counts as reproduced (exit 1), or None


def _on_device(k):
    arguments = inputs(k)
    if DEVICE == "cpu":
        return arguments
    return _pytree.tree_map(
        lambda t: t.to(DEVICE) if isinstance(t, torch.Tensor) and t.dim() else t, arguments
    )


def check(backend=BACKEND):
    """The first difference between eager and compiled, or None."""
    for module in BACKEND_MODULES:
        __import__(module)
    if TIMEOUT:
        faulthandler.dump_traceback_later(TIMEOUT, exit=True)
    try:
        return reproduce(
            program, _on_device, globals().get("advance"), FRESH_INPUTS, ITERS, backend,
            globals().get("COMPILED_AUTOGRAD", False), globals().get("RTOL"), globals().get("ATOL"),
        )
    finally:
        faulthandler.cancel_dump_traceback_later()


def {test_name}():
    found = check()
    assert found is None, found


if __name__ == "__main__":
    main(BACKEND, check)
'''
    return "\n".join(header) + "\n\n" + program.rstrip() + "\n\n\n" + driver.rstrip() + footer


def known_signatures(directory: Path) -> dict[str, str]:
    """The registry of known bugs: base signature -> repro file, from the repro dir.

    Unreadable or foreign files are skipped: they never break a run.
    """
    known: dict[str, str] = {}
    if not directory.is_dir():
        return known
    for path in sorted(directory.glob("*.py")):
        try:
            head = path.read_text(errors="replace")[:4000]
        except OSError:
            continue
        match = re.search(r"^# base signature: (\S+)$", head, re.MULTILINE)
        if head.startswith(MARKER_LINE) and match:
            known.setdefault(match.group(1), str(path))
    return known


def signature_of(difference: Difference, layer: str | None) -> str:
    """Kind + place + exception type, + the first diverging layer when known."""
    return f"{difference.signature}-{layer}" if layer else difference.signature


def reproduces(text: str, backend: str) -> str | None:
    """Run the rendered file's check in-process; its one-line finding, or None."""
    from pytest_cgraph.backends import collect_compile_evidence

    namespace: dict[str, object] = {"__name__": "cgraph_repro_check"}
    exec(compile(text, "<cgraph repro>", "exec"), namespace)
    check = namespace["check"]
    assert callable(check)
    with collect_compile_evidence(), warnings.catch_warnings():  # keep torch's logs quiet
        warnings.simplefilter("ignore")
        result = check(backend)
    return None if result is None else str(result)


def reproduces_in_subprocess(text: str, finding: Finding) -> tuple[str | None, str]:
    """Run the rendered file as ``python FILE``: (how it failed, or None; why not)."""
    import subprocess
    import sys

    from pytest_cgraph.checkers import describe_exit

    limit = (finding.timeout or 60.0) + 120.0  # its own limit, plus torch's import and compile
    with tempfile.TemporaryDirectory(prefix="cgraph-verify-") as directory:
        script = Path(directory) / "repro.py"
        script.write_text(text)
        environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, sys.path))}
        try:
            run = subprocess.run(
                [sys.executable, str(script)],
                capture_output=True,
                text=True,
                timeout=limit,
                env=environment,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return f"python FILE still ran after {limit:g} s", ""
    reproduced = [line for line in run.stdout.splitlines() if line.startswith("REPRODUCED")]
    if reproduced:
        return reproduced[-1], ""
    if run.returncode < 0:  # killed by a signal: the crash itself
        return f"python FILE {describe_exit(run.returncode)}", ""
    if finding.difference.kind == "timeout" and "Timeout (" in run.stderr:
        return f"python FILE hung past TIMEOUT = {finding.timeout:g} s", ""
    last = (run.stderr.strip() or run.stdout.strip() or "(no output)").splitlines()[-1]
    return None, f"python FILE {describe_exit(run.returncode)}: {last}"


def make_repro(finding: Finding, directory: Path) -> ReproOutcome:
    """Locate the layer, render, verify, and write (or keep the smaller) repro.

    A program that hangs or kills its process is neither located on the
    ladder nor verified here (either would hang or kill this process): its
    file is verified by running it in a subprocess.
    """
    if finding.difference.ends_process:
        layer, specific = None, False
        text = render(finding, layer, specific)
        found, reason = reproduces_in_subprocess(text, finding)
        signal_name = re.search(r"killed by (SIG\w+)", found or "")
        if signal_name and finding.difference.exception_type == "died":
            # Only the header changes: the program and driver that ran are the same.
            finding = dataclasses.replace(
                finding,
                difference=dataclasses.replace(
                    finding.difference, exception_type=signal_name.group(1)
                ),
            )
            text = render(finding, layer, specific)
    else:
        layer, specific = locate_layer(finding)
        text = render(finding, layer, specific)
        try:
            found = reproduces(text, finding.backend)
        except Exception as error:
            found = None
            reason = f"the standalone check raised {type(error).__name__}: {error}"
        else:
            reason = "the standalone driver saw eager and compiled agree"
    difference = finding.difference
    if found is None:
        return ReproOutcome(None, "not reproducible", reason, layer, specific, difference)
    name = signature_of(difference, layer)
    try:
        path, status = write_repro(directory, name, text, finding.size)
    except OSError as error:
        return ReproOutcome(
            None, "write failed", f"{directory}: {error}", layer, specific, difference
        )
    return ReproOutcome(path, status, found, layer, specific, difference)


def write_repro(directory: Path, name: str, text: str, size: int) -> tuple[Path, str]:
    """Write ``<directory>/<name>.py`` atomically unless an equal or smaller repro is there.

    A lock file serialises xdist workers that find the same bug at once.
    """
    directory.mkdir(parents=True, exist_ok=True)
    with _locked(directory / ".cgraph-repro.lock"):
        target = directory / f"{name}.py"
        suffix = 2
        while target.exists():
            existing = target.read_text(errors="replace")
            old_size = _size_of(existing) if existing.startswith(MARKER_LINE) else None
            if old_size is not None:
                if old_size <= size:
                    return target, "kept smaller"
                break
            # Not ours, or ours but unreadable (no size): never overwritten;
            # ours goes beside it.
            target = directory / f"{name}-{suffix}.py"
            suffix += 1
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
        with os.fdopen(handle, "w") as stream:
            stream.write(text)
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes it private; a repro is shared
        os.replace(temporary, target)
    return target, "written"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _size_of(text: str) -> int | None:
    match = re.search(r"^# size: (\d+)$", text, re.MULTILINE)
    return int(match.group(1)) if match else None


def _strip_header(source: str) -> str:
    """The program's source without its own leading comment (the repro has a header)."""
    lines = source.splitlines()
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    return "\n".join(lines).strip() + "\n"


def _backend_module(backend: str) -> list[str]:
    """The module a repro must import for ``backend`` to exist, if torch lacks it."""
    if ":" in backend:
        return [backend.partition(":")[0]]
    from torch._dynamo.backends import registry

    registry._lazy_import()
    compiler = registry._COMPILER_FNS.get(backend)
    module = getattr(compiler, "__module__", "") or ""
    return [] if not module or module.startswith("torch") else [module]
