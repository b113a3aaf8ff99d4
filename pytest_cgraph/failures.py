"""The values a failure travels as, from the oracle's verdict to the report.

- :class:`Case`: a program's source and how it is checked (backend, device,
  iterations, time limit, where it came from). It is also the in-flight
  record a process leaves while checking it.
- :class:`Outcome`: what checking a case gave — a :class:`Verdict`, and the
  oracle's :class:`~pytest_cgraph.oracle.difference.Difference` when it failed;
  a hang and a dead process get theirs here (:func:`hang`, :func:`death`),
  built from a time limit, an exit code and the dying process's stack dump
  (:func:`crash_site`), never from a message's words.
- :class:`Failure`: a case and its difference, the one record carried
  unchanged through the campaign, marker, crash and repro paths; its
  :class:`ReproResult` is attached once the repro is written.

Torch-free: the plugin reads these while collecting and reporting.
"""

from __future__ import annotations

import dataclasses
import enum
import re
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_cgraph.oracle.difference import (
    COMPILED_FRAME,
    EAGER_FRAME,
    Difference,
    Kind,
    Place,
    Role,
)

if TYPE_CHECKING:
    from pytest_cgraph.oracle.engine import CheckReport


class Verdict(str, enum.Enum):
    """How checking one program ended."""

    PASS = "pass"
    INVALID = "invalid"  # eager raised (or killed its process): no reference behaviour
    FAIL = "fail"  # eager and compiled differ
    TIMEOUT = "timeout"  # the program ran past its time limit
    DIED = "died"  # the process checking it died
    ERROR = "error"  # the harness itself failed: not the program's doing

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Case:
    """A program's source and how it is checked: all a repro or an in-flight record needs."""

    source: str
    backend: str
    device: str
    iters: int
    family: str = "marker"
    nodeid: str = ""
    seed: int | None = None
    size: int = 0
    statements: int | None = None
    timeout: float | None = None
    #: Modules to import before compiling: those that register the backend.
    setup_modules: tuple[str, ...] = ()
    #: How to replay the failure, when not a campaign's (seed, family).
    replay: str | None = None
    #: torch's intra-op threads the check runs with (``None``: the checking
    #: process's own). Inductor's CPU code differs with the count, so a failure
    #: is replayed with the count it was found with.
    threads: int | None = None

    def to_json(self) -> dict[str, Any]:
        """Builtins only (an in-flight record, a report)."""
        return {**dataclasses.asdict(self), "setup_modules": list(self.setup_modules)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Case:
        """The inverse of :meth:`to_json`."""
        return cls(**{**data, "setup_modules": tuple(data.get("setup_modules", ()))})


@dataclass(frozen=True)
class Outcome:
    """What checking one case gave.

    ``difference`` is set for ``FAIL``, ``TIMEOUT`` and ``DIED``; ``report``
    for ``PASS``; ``reason`` says what eager raised (``INVALID``) or how the
    harness failed (``ERROR``).
    """

    verdict: Verdict
    difference: Difference | None = None
    report: CheckReport | None = None
    reason: str = ""

    @classmethod
    def timed_out(cls, seconds: float | None) -> Outcome:
        """The program ran past the ``seconds`` limit."""
        return cls(Verdict.TIMEOUT, hang(seconds))

    @classmethod
    def exited(cls, exitcode: int | None, dump: str = "") -> Outcome:
        """The process checking it ended with ``exitcode`` (negative: killed by that
        signal); ``dump`` is what its faulthandler wrote as it died, if anything."""
        how, site = describe_exit(exitcode), crash_site(dump)
        if died_in_eager(dump):  # torch's eager itself: no reference, not a compile difference
            return cls(Verdict.INVALID, reason=f"eager itself was {how} {site}")
        return cls(Verdict.DIED, death(how, exit_signal(exitcode) or EXITED, site))


#: The cause of a death that exited rather than being killed by a signal.
EXITED = "exit"

#: The cause of a death nobody saw (only its in-flight record is left): the
#: repro's own run names the signal, where one kills it.
UNSEEN = "died"


def hang(seconds: float | None, detail: str | None = None) -> Difference:
    """A program that ran past its time limit of ``seconds``; ``detail`` says how it ended."""
    limit = f"the {seconds:g} s time limit" if seconds else "its time limit"
    return Difference(
        Kind.TIMEOUT, 0, Place(Role.PROGRAM), detail=detail or f"it ran longer than {limit}"
    )


def death(how: str, cause: str = UNSEEN, site: str | None = None) -> Difference:
    """A dead process; ``how`` in words, ``cause`` (a signal's name, ``exit``) and ``site``
    (:func:`crash_site`: where it died, when that was seen) for the signature.

    The site is in the signature so that two segfaults in different places of
    torch are two bugs: a new crash is never passed over as a known one.
    """
    detail = f"{how} {site}" if site else how
    return Difference(
        Kind.CRASH, 0, Place(Role.PROCESS), detail=detail, exception_type=cause, message=site
    )


# faulthandler's dump of a fatal error: "Fatal Python error: Segmentation fault",
# then the thread that died ("Current thread 0x... (most recent call first):", or
# "Stack (most recent call first):" when it dumps one thread), one frame a line.
_FATAL = "Fatal Python error"
_DYING_THREAD = re.compile(r"^(?:Current thread [^\n]*|Stack) \(most recent call first\):$", re.M)
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line \d+ in (?P<function>\S+)$', re.M)

#: torch's files that only pass a call on (an op's ``__call__``, a dispatch
#: mode, Dynamo's frame wrapper, a module's or an FX graph's ``__call__``): a
#: crash under them happened in whatever they called, so the frame that names
#: the bug is the next one in.
_TRAMPOLINES = frozenset(
    {
        "torch/_ops.py",
        "torch/overrides.py",
        "torch/utils/_python_dispatch.py",
        "torch/_dynamo/eval_frame.py",
        "torch/_compile.py",
        "torch/nn/modules/module.py",
        "torch/fx/graph_module.py",
        "torch/fx/_lazy_graph_module.py",
    }
)
_TRAMPOLINE_DIRS = ("torch/_dynamo/backends/",)
_TRAMPOLINE_FUNCTIONS = frozenset({"__torch_dispatch__", "__torch_function__"})

#: The site of a crash inside generated graph code (an FX graph's
#: ``<eval_with_key>``, Inductor's compiled module): the op that crashed is in
#: C++, out of the dump's sight, so the site says only that much.
IN_A_GRAPH = "in a compiled graph"


def crash_site(dump: str) -> str | None:
    """Where a process died, from faulthandler's dump: ``in FUNCTION (torch/FILE)``.

    The frame is the innermost of torch's own source files in the thread
    that died, past torch's trampolines; when generated graph code lies
    inside it, the site is :data:`IN_A_GRAPH`. Only torch's files name a
    site: another file's path differs between the run that found the crash
    and the repro that replays it (the oracle is pasted into the repro;
    Inductor's modules are named by hash), and line numbers move between
    torch builds. ``None`` when the dump shows no fatal error or no site.
    """
    for path, function in _dying_frames(dump):
        if _is_generated_graph(path):
            return IN_A_GRAPH
        if not path.endswith(".py"):
            continue  # other generated code ("<string>", "...py:codegen(...)")
        short = _torch_path(path)
        if short is None or _is_trampoline(short, function):
            continue
        return f"in {function} ({short})"
    return None


def siteless_signature(died: Difference) -> str:
    """The signature of a death without its site: how an entry recorded before sites
    were read names it, and what it still claims."""
    return dataclasses.replace(died, message=None).signature


def _is_generated_graph(path: str) -> bool:
    return path.startswith("<eval_with_key>") or "/torchinductor_" in path


def _is_trampoline(short_path: str, function: str) -> bool:
    return (
        short_path in _TRAMPOLINES
        or short_path.startswith(_TRAMPOLINE_DIRS)
        or function in _TRAMPOLINE_FUNCTIONS
    )


def died_in_eager(dump: str) -> bool:
    """The process died running the eager side of an iteration (the engine's
    ``EAGER_FRAME`` is the innermost side frame in the dying thread's stack)."""
    for _, function in _dying_frames(dump):
        if function in (EAGER_FRAME, COMPILED_FRAME):
            return function == EAGER_FRAME
    return False  # not seen (a stack deeper than the dump shows): the compiled side's, say


def _dying_frames(dump: str) -> list[tuple[str, str]]:
    """(file, function) of each frame of the thread that died, innermost first;
    empty when the dump shows no fatal error. Generated code's files are kept
    (``<string>``, ``...py:codegen(...)``): the callers filter them."""
    start = dump.rfind(_FATAL)
    if start < 0:
        return []
    thread = _DYING_THREAD.search(dump, start)
    if thread is None:
        return []
    block = dump[thread.end() :].lstrip("\n").split("\n\n", 1)[0]
    return [(match["file"], match["function"]) for match in _FRAME.finditer(block)]


def _torch_path(path: str) -> str | None:
    """``.../site-packages/torch/_ops.py`` -> ``torch/_ops.py``; ``None`` outside torch."""
    parts = path.replace("\\", "/").split("/")
    if "torch" not in parts:
        return None
    return "/".join(parts[len(parts) - 1 - parts[::-1].index("torch") :])


#: Signatures of failures that end their process: a repro file, which names
#: its failure by signature alone, is replayed in a subprocess when it has one.
_HANG_SIGNATURE = hang(None).signature
_DEATH_SIGNATURE = Difference(Kind.CRASH, 0, Place(Role.PROCESS)).signature


def is_hang(signature: str) -> bool:
    """The signature names a program that ran past its time limit."""
    return signature == _HANG_SIGNATURE or signature.startswith(f"{_HANG_SIGNATURE}-")


def ends_process(signature: str) -> bool:
    """The signature names a hang or a dead process (:attr:`Difference.ends_process`)."""
    return is_hang(signature) or signature.startswith(f"{_DEATH_SIGNATURE}-")


def exit_signal(exitcode: int | None) -> str | None:
    """The name of the signal that killed a process (``SIGSEGV``), or ``None``."""
    if exitcode is None or exitcode >= 0:
        return None
    try:
        return signal.Signals(-exitcode).name
    except ValueError:
        return f"signal {-exitcode}"


def describe_exit(exitcode: int | None) -> str:
    """``killed by SIGSEGV``, ``exited with status 3``: how a process ended."""
    if exitcode is None:
        return "did not exit"
    if exitcode < 0:
        return f"killed by {exit_signal(exitcode)}"
    return f"exited with status {exitcode}"


class ReproStatus(str, enum.Enum):
    """What became of a failure's repro file."""

    WRITTEN = "written"
    #: Verified where it was found (an xdist worker); the run's controller writes it.
    VERIFIED = "verified, to be written"
    KEPT_SMALLER = "kept smaller"  # an equal or smaller repro of the signature is there
    NOT_REPRODUCIBLE = "not reproducible"
    NOT_INLINABLE = "not written inline"
    WRITE_FAILED = "write failed"
    FLAKY = "flaky"  # the shrunk program passed (or failed otherwise) when replayed

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class ReproResult:
    """A failure's repro file, or why there is none.

    ``layer`` is the first rung of the ladder that diverges (``None``: only
    the backend under test does).
    """

    status: ReproStatus
    path: str | None = None
    detail: str = ""
    layer: str | None = None
    cudagraph_specific: bool = False
    #: The verified file's text, while it travels to the process that writes it.
    text: str | None = None
    #: The text is a registry entry (``.toml``), not a standalone file.
    entry: bool = False

    @property
    def verified(self) -> bool:
        """A repro file that reproduces the failure exists."""
        return self.status in (ReproStatus.WRITTEN, ReproStatus.KEPT_SMALLER)

    def line(self) -> str:
        """One line for a failure report: the file and what is known of it, or why none."""
        if self.status is ReproStatus.VERIFIED:
            return f"repro (verified; the run's controller writes it): {self.path} -- {self.detail}"
        if self.path is None:
            return f"no repro file ({self.status}): {self.detail}"
        return f"repro ({self.status}): {self.path} -- {self.detail}"


@dataclass(frozen=True)
class Failure:
    """A program that fails, the way it fails, and (once written) its repro."""

    case: Case
    difference: Difference
    repro: ReproResult | None = None
    #: Programs the item drew before the first failing one of this round.
    examples_to_failure: int | None = None
    seconds_to_repro: float | None = None
    #: False for a program reported as it was met: a bug set aside while
    #: another was shrunk, whose turn the end of a time box took.
    shrunk: bool = True

    @property
    def signature(self) -> str:
        """The base signature: kind, place, facet, exception and message (see
        :attr:`Difference.signature`); what the hunt de-duplicates on."""
        return self.difference.signature

    @property
    def full_signature(self) -> str:
        """The base signature and the first diverging layer: the repro file's name."""
        layer = self.repro.layer if self.repro is not None else None
        return f"{self.signature}-{layer}" if layer else self.signature

    def with_repro(self, repro: ReproResult, **found: Any) -> Failure:
        """This failure with its repro (and timing facts) attached."""
        return dataclasses.replace(self, repro=repro, **found)

    def report(self, verbose: bool = False) -> str:
        """The failure as the user reads it: the difference, the program, the repro."""
        parts = [self.difference.describe(verbose=verbose)]
        shrunk = "" if self.shrunk else ", not shrunk: the time box ended before its turn"
        parts.append(f"\nprogram ({self.case.family}{shrunk}):\n{self.case.source.rstrip()}")
        if self.repro is not None:
            parts.append(self.repro.line())
        return "\n".join(parts)

    def to_json(self) -> dict[str, Any]:
        """The report's record: the contract's keys first, the whole failure after."""
        repro = self.repro
        return {
            "signature": self.signature,
            "full_signature": self.full_signature,
            "kind": self.difference.kind.value,
            "family": self.case.family,
            "backend": self.case.backend,
            "iteration": self.difference.iteration,
            "place": str(self.difference.place),
            "repro": repro.path if repro is not None else None,
            "verified": bool(repro and repro.verified),
            "layer": repro.layer if repro is not None else None,
            "nodeid": self.case.nodeid,
            "statements": self.case.statements,
            "examples_to_failure": self.examples_to_failure,
            "seconds_to_repro": self.seconds_to_repro,
            "shrunk": self.shrunk,
            "case": self.case.to_json(),
            "difference": self.difference.to_json(),
            # Plain builtins only: xdist's channel refuses str-based enums.
            "repro_result": (
                {**dataclasses.asdict(repro), "status": repro.status.value}
                if repro is not None
                else None
            ),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Failure:
        """The inverse of :meth:`to_json`."""
        repro = data.get("repro_result")
        return cls(
            case=Case.from_json(data["case"]),
            difference=Difference.from_json(data["difference"]),
            repro=(
                ReproResult(**{**repro, "status": ReproStatus(repro["status"])})
                if repro is not None
                else None
            ),
            examples_to_failure=data.get("examples_to_failure"),
            seconds_to_repro=data.get("seconds_to_repro"),
            shrunk=data.get("shrunk", True),
        )


@dataclass(frozen=True)
class Shown:
    """One failure inside a failure's text: its whole report, or its repro line alone."""

    failure: Failure
    whole: bool = True
    verbose: bool = False

    def render(self) -> str:
        if self.whole:
            return self.failure.report(self.verbose)
        repro = self.failure.repro
        return repro.line() if repro is not None else ""


#: The attribute under which an exception carries its :class:`FailureText`.
FAILURE_TEXT = "cgraph_failure_text"


@dataclass(frozen=True)
class FailureText:
    """A failure's text as the record it is rendered from: words, and the failures shown.

    The repro files a failure names are written by the run's controller,
    after the process that found it made its report (under xdist, maybe on
    another host). So the text travels as this record and is rendered where
    it is shown, from the failures as stored there (:meth:`with_repros`):
    nothing rendered is ever patched.
    """

    parts: tuple[str | Shown, ...]

    def render(self) -> str:
        return "".join(part if isinstance(part, str) else part.render() for part in self.parts)

    @classmethod
    def ending_in_repro_line(cls, words: str, failure: Failure) -> FailureText:
        """``words``, then ``failure``'s repro line, as the failure stands where it is shown."""
        return cls((words, Shown(failure, whole=False)))

    def attach(self, error: BaseException) -> BaseException:
        """``error``, carrying this text: the failure it reports, as a record."""
        setattr(error, FAILURE_TEXT, self)
        return error

    @staticmethod
    def carried_by(error: BaseException | None) -> FailureText | None:
        """The text ``error`` carries (:meth:`attach`), if any."""
        text = getattr(error, FAILURE_TEXT, None)
        return text if isinstance(text, FailureText) else None

    @property
    def failures(self) -> list[Failure]:
        return [part.failure for part in self.parts if isinstance(part, Shown)]

    def with_repros(self, stored: Callable[[Failure], Failure]) -> FailureText:
        """This text with each failure as ``stored`` says it is now (its repro as written)."""
        return FailureText(
            tuple(
                part
                if isinstance(part, str)
                else dataclasses.replace(part, failure=stored(part.failure))
                for part in self.parts
            )
        )

    def to_json(self) -> list[Any]:
        return [
            part
            if isinstance(part, str)
            else {"failure": part.failure.to_json(), "whole": part.whole, "verbose": part.verbose}
            for part in self.parts
        ]

    @classmethod
    def from_json(cls, data: list[Any]) -> FailureText:
        """The inverse of :meth:`to_json`."""
        return cls(
            tuple(
                part
                if isinstance(part, str)
                else Shown(Failure.from_json(part["failure"]), part["whole"], part["verbose"])
                for part in data
            )
        )
