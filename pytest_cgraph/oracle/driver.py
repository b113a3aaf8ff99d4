"""What a repro file does when run: replay its program, say in one line whether the bug is there.

``python FILE`` prints one line and exits 1 while eager and compiled still
differ, 0 once they agree (details go to stderr; torch's traceback of a
crash only with ``-v``, as the line says); ``--backend NAME`` replays it
against another backend; ``--issue`` prints a bug report in the form
PyTorch's compiler bug template asks for. Under pytest the file's test
fails while the bug is there.
"""

from __future__ import annotations

import argparse
import contextlib
import enum
import faulthandler
import importlib
import io
import platform
import sys
import warnings
from dataclasses import dataclass

import torch

from pytest_cgraph.oracle.compiling import COMPARABLE_INDUCTOR, Backend, collect_compile_evidence
from pytest_cgraph.oracle.difference import Difference
from pytest_cgraph.oracle.engine import check_source, intra_op_threads
from pytest_cgraph.oracle.errors import EquivalenceError, InvalidProgram
from pytest_cgraph.oracle.ladder import Rung, climb, locate, rungs_for
from pytest_cgraph.oracle.protocol import ProgramSpec, load_source


@dataclass(frozen=True)
class ReproCase:
    """A repro file's program and how it was found to fail.

    ``signature`` is the base signature of the failure the file was written
    for; ``modules`` are imported first (they register the backend).
    """

    source: str
    backend: str
    device: str = "cpu"
    modules: tuple[str, ...] = ()
    timeout: float | None = None
    signature: str = ""
    seed: int = 0
    #: torch's intra-op threads it was found with (``None``: the process's own).
    threads: int | None = None


class ReplayVerdict(str, enum.Enum):
    """Whether a replay showed the bug its file was written for: the first words of
    the line ``python FILE`` prints, and the one value every caller compares.

    Only ``REPRODUCED`` means the file's bug is there: ``REPRODUCED DIFFERENTLY``
    is another bug (another signature) met on the way, which neither verifies
    a file nor keeps a registry entry true.
    """

    REPRODUCED = "REPRODUCED"
    #: It still fails, with another signature: another bug than the file names.
    REPRODUCED_DIFFERENTLY = "REPRODUCED DIFFERENTLY"
    NOT_REPRODUCED = "NOT REPRODUCED"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def judge(cls, found: str | None, signature: str) -> ReplayVerdict:
        """The verdict on a replay that failed with signature ``found`` (``None``: it
        did not fail) for a file written for ``signature`` (empty: any failure is its)."""
        if found is None:
            return cls.NOT_REPRODUCED
        if not signature or found == signature:
            return cls.REPRODUCED
        return cls.REPRODUCED_DIFFERENTLY

    @classmethod
    def of_line(cls, line: str) -> ReplayVerdict | None:
        """The verdict a line ``python FILE`` printed states, or ``None`` if it is not
        one. Matched whole, up to the backend in parentheses, never by prefix:
        ``REPRODUCED DIFFERENTLY (...)`` opens with ``REPRODUCED`` too."""
        words, parenthesis, _ = line.partition(" (")
        if not parenthesis:
            return None
        return next((verdict for verdict in cls if verdict.value == words), None)


@dataclass(frozen=True)
class Replay:
    """What replaying a repro found with one backend."""

    backend: str
    difference: Difference | None = None
    invalid: str | None = None

    def same_as(self, signature: str) -> bool:
        """The replay failed the way the file was written for."""
        return self.difference is not None and self.difference.signature == signature

    def verdict(self, signature: str) -> ReplayVerdict:
        """Whether the replay showed the failure of ``signature`` (empty: any failure)."""
        found = self.difference.signature if self.difference is not None else None
        return ReplayVerdict.judge(found, signature)

    def line(self, signature: str) -> str:
        """The one line ``python FILE`` prints: its verdict, the backend, what it saw."""
        verdict = self.verdict(signature)
        if self.difference is None:
            why = (
                f"eager itself raised ({self.invalid})"
                if self.invalid
                else "eager and compiled agree"
            )
            return f"{verdict} ({self.backend}): {why}"
        line = f"{verdict} ({self.backend}): {self.difference.headline()}"
        if verdict is ReplayVerdict.REPRODUCED_DIFFERENTLY:
            line += f" [was {signature}, now {self.difference.signature}]"
        return line


def replay(case: ReproCase, backend: str | None = None) -> Replay:
    """Check the repro's program once, as the campaign checked it."""
    name = backend or case.backend
    for module in case.modules:
        importlib.import_module(module)
    device = torch.device(case.device) if case.device else None
    with (
        warnings.catch_warnings(),
        collect_compile_evidence(),  # torch's notices stay quiet
        intra_op_threads(case.threads),
    ):
        warnings.simplefilter("ignore")
        try:
            check_source(case.source, backend=Backend.named(name), device=device, seed=case.seed)
        except EquivalenceError as error:
            return Replay(name, difference=error.difference)
        except InvalidProgram as invalid:
            return Replay(name, invalid=invalid.reason)
    return Replay(name)


def assert_fixed(case: ReproCase) -> None:
    """The file's test: fails while eager and compiled differ."""
    found = replay(case)
    assert found.difference is None, found.line(case.signature)


def issue_report(case: ReproCase, backend: str | None = None) -> str:
    """A Markdown bug report following PyTorch's compiler bug template."""
    name = backend or case.backend
    for module in case.modules:
        importlib.import_module(module)
    found = replay(case, name)
    spec = ProgramSpec.of(load_source(case.source))
    device = torch.device(case.device) if case.device else None
    like = found.difference
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # Every rung, for the reader: those above one that fails differently too.
        rungs = climb(case.source, name, device, None, stop_at_first=False, like=like)
    if not any(rung.name == name for rung in rungs):
        rungs.append(Rung(name, difference=like, invalid=found.invalid))
    located = locate(rungs, like).describe(rungs_for(name, case.device))
    headline = found.difference.headline() if found.difference else "no difference (fixed?)"
    cuda = (
        f"CUDA {torch.version.cuda}, {torch.cuda.get_device_name()}"
        if case.device.startswith("cuda")
        else "none used (CPU run)"
    )
    rows = "\n".join(f"| `{rung.name}` | {rung.verdict(like)} |" for rung in rungs)
    observed = found.difference.describe(verbose=True) if found.difference else found.line("")
    return f"""### 🐛 Describe the bug

`torch.compile` (backend `{name}`) differs from eager on this program: {headline}

The program runs {spec.iters} iterations eagerly and compiled, side by side, from
identical inputs and RNG seeds (seed {case.seed} + iteration), comparing outputs,
input mutations, gradients, aliasing and outputs retained across iterations.

```python
{case.source.rstrip()}
```

What each layer of the compile stack does with it (lowest first):

| layer | result |
|---|---|
{rows}

First diverging layer: {located}.

Observed:

```
{observed}
```

Settings of the check: Inductor config {COMPARABLE_INDUCTOR} (random ops use eager's
kernels; low-precision rounding as eager), iterations {spec.iters}, compiled autograd
{spec.compiled_autograd}, grad mode {spec.grad_mode}, autocast {spec.autocast or "off"},
compile settings {dict(spec.compile_config) or "torch's defaults"}, device {case.device}.

Repro: save this report's program with the driver as a file (pytest-cgraph writes it as
a repro file) and run `python FILE` (exit 1 while the bug is there) or
`python FILE --backend aot_eager` to compare another backend.

### Versions

- torch {torch.__version__}
- Python {platform.python_version()} on {platform.platform()}
- GPU: {cuda}
"""


def _ready_to_file(case: ReproCase, backend: str) -> str | None:
    """The report with a plain torch script, where pytest-cgraph is installed beside
    this file (its plain-script writer is no part of the pasted oracle); ``None``
    otherwise, or for another backend than the file's, or where no script verifies."""
    script = getattr(sys.modules.get("__main__"), "__file__", None)
    if backend != case.backend or script is None:
        return None
    try:
        # By name: the oracle is pasted into repro files that must run without
        # pytest-cgraph, so it never imports the package; the writer is optional.
        # The command's name, which files written by earlier versions name too.
        plain = importlib.import_module("pytest_cgraph.plain")
    except ImportError:
        return None
    from pathlib import Path

    with contextlib.redirect_stdout(sys.stderr):
        result = plain.make_plain(Path(script))
        return plain.ready_to_file(Path(script), result) if result.verified else None


#: What the verdict line of a failure with a traceback ends with, without ``-v``.
TRACEBACK_HINT = "(-v for the traceback)"


def main(case: ReproCase, argv: list[str] | None = None) -> None:
    """``python FILE [--backend NAME] [--issue] [-v]``.

    A crash's traceback (torch's, tens of lines) is printed only with
    ``-v``: by default the run says what it found in one line, which then
    says how to see the traceback. What torch itself writes to stderr while
    the program fails (FX prints the failing line of a graph's code and a
    traceback of its own) is held back with it.
    """
    parser = argparse.ArgumentParser(description="Replay a pytest-cgraph repro.")
    parser.add_argument("--backend", default=case.backend, help="backend to replay against")
    parser.add_argument("--issue", action="store_true", help="print a Markdown bug report")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="print a crash's traceback (to stderr)"
    )
    options = parser.parse_args(argv)
    faulthandler.enable()  # a crash of the process shows where it happened
    if options.issue:
        print(_ready_to_file(case, options.backend) or issue_report(case, options.backend))
        sys.exit(0)
    if case.timeout:
        # A hang reproduces as faulthandler's dump and exit 1 after TIMEOUT.
        faulthandler.dump_traceback_later(case.timeout, exit=True)
    # faulthandler writes to the file descriptor it was given above, never
    # through sys.stderr: a hang's or a dead process's dump is not held back.
    held = io.StringIO()
    with contextlib.nullcontext() if options.verbose else contextlib.redirect_stderr(held):
        found = replay(case, options.backend)
    faulthandler.cancel_dump_traceback_later()
    line = found.line(case.signature)
    difference = found.difference
    if difference is None:
        print(line, flush=True)
        sys.exit(0)
    details = difference.describe(verbose=options.verbose)
    hidden = details != difference.describe(verbose=True) or bool(held.getvalue().strip())
    print(f"{line} {TRACEBACK_HINT}" if hidden else line, flush=True)
    if details != difference.headline():  # more than the line says already
        print(details, file=sys.stderr)
    sys.exit(1)
