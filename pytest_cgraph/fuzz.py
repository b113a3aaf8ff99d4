"""The campaign's program families as plain Hypothesis tests: ``test_mutation``, ``test_views``, ...

The campaign (``pytest --cgraph``) drives its own search loop inside one
pytest item per family, which no outside fuzzer can schedule. Here each
family is an ordinary ``@given`` test that checks one drawn program, so
HypoFuzz (``hypothesis fuzz``) can run them for days with its own
scheduling, database and dashboard, and ``pytest --pyargs
pytest_cgraph.fuzz`` runs them like any other property test.

A test fails (an ``AssertionError`` carrying the difference's report and
the program) only on a difference that no registry knows: the baseline
shipped for the running torch and the ``CGRAPH_KNOWN`` directories, matched
exactly as the campaign matches them (signature, first diverging layer,
the operations of the entry's program). A known difference passes, and so
does a program eager itself rejects (it is invalid: Hypothesis is told to
reject it); both are reported as Hypothesis events, which HypoFuzz's
dashboard and ``--hypothesis-show-statistics`` show.

Neither HypoFuzz nor ``pytest --pyargs`` passes plugin options to a test
module, so the settings are environment variables, read once at import:

- ``CGRAPH_BACKEND``: backend name, Inductor mode or ``package.module:attr``
  (default ``cudagraphs``);
- ``CGRAPH_DEVICE``: ``auto``, ``cpu``, ``cuda`` or ``cuda:N`` (default ``auto``);
- ``CGRAPH_ITERS``: iterations per program (default 5);
- ``CGRAPH_TIMEOUT``: seconds one program may run before it is a ``timeout``
  difference, 0 for no limit (default 120);
- ``CGRAPH_KNOWN``: registry directories of known bugs, separated by
  ``os.pathsep``;
- ``CGRAPH_NO_BASELINE``: ``1`` to count none of the shipped torch differences as known;
- ``CGRAPH_ISOLATE``: ``1`` to check each program in a child process,
  replaced every few hundred programs (bounded memory; a segfault is a
  difference, not a dead fuzzer); ``0`` to check in this process. Default:
  in a child under HypoFuzz (see :func:`under_hypofuzz`), here otherwise;
- ``CGRAPH_FUZZ_EXAMPLES``: programs per test in a plain pytest run
  (default: the active Hypothesis profile's ``max_examples``; HypoFuzz
  ignores it).

A bad value stops collection of this module with one line naming the
variable. This is a test module, not part of the plugin: it imports torch,
which the plugin's hook module never does.
"""

from __future__ import annotations

import atexit
import functools
import os
import sys
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import pytest
from hypothesis import HealthCheck, Phase, event, given, reject, settings

from pytest_cgraph.checking.validation import flag, known_dirs, non_negative_number, positive_int
from pytest_cgraph.failures import Case, Failure
from pytest_cgraph.oracle.errors import CgraphError, ConfigurationError
from pytest_cgraph.plugin.options import (
    DEFAULT_BACKEND,
    DEFAULT_DEVICE,
    DEFAULT_ITERS,
    DEFAULT_TIMEOUT,
    worker_device,
)
from pytest_cgraph.registry.entries import Registry, baseline_dir
from pytest_cgraph.registry.judge import Judge, Judgement, Ruling
from pytest_cgraph.strategies import programs

if TYPE_CHECKING:
    from pytest_cgraph.checking.checkers import Checker
    from pytest_cgraph.strategies.program import Program

TestFunction = TypeVar("TestFunction", bound=Callable[..., None])

#: Health checks that drawn programs trip by design, as in the campaign: a
#: check compiles (too slow by Hypothesis's measure), invalid programs are
#: rejected, and a program is many draws. The others, ``nested_given``
#: among them (HypoFuzz skips a test that suppresses it), stay on.
SLOW_PROGRAM_HEALTH_CHECKS = (
    HealthCheck.too_slow,
    HealthCheck.filter_too_much,
    HealthCheck.data_too_large,
    HealthCheck.large_base_example,
)

#: Judgements remembered by program source: Hypothesis and HypoFuzz draw the
#: same program again (shrinking, replaying a failure), and a check compiles.
MEMO_SIZE = 4096

#: Event of a program eager rejects: one name, so the statistics group them.
INVALID_EVENT = "invalid program (eager raised)"

#: How to make a new difference known, printed under its report.
RECORD_HINT = (
    "to count it as known: save the program above as a file, then "
    "`python -m pytest_cgraph.record FILE --backend {backend} --device {device}{imports} "
    "--into DIR` "
    "and add DIR to CGRAPH_KNOWN"
)


class FuzzConfigurationError(pytest.Collector.CollectError, ConfigurationError):
    """A bad ``CGRAPH_*`` value, raised while this module is imported.

    A ``CollectError``, so that pytest (and HypoFuzz, which collects through
    pytest) reports the module's collection error as this one line rather
    than a traceback through the import machinery; a ``ConfigurationError``,
    as every bad setting of this package is.
    """


@dataclass(frozen=True)
class FuzzSettings:
    """The checks' settings, validated from environment variables."""

    backend: str = DEFAULT_BACKEND
    device: str = "cpu"
    iters: int = DEFAULT_ITERS
    timeout: float = DEFAULT_TIMEOUT
    known_dirs: tuple[Path, ...] = ()
    baseline: bool = True
    isolate: bool = False
    examples: int | None = None

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> FuzzSettings:
        """Validate every ``CGRAPH_*`` variable; the first bad one raises
        :class:`FuzzConfigurationError` naming it.

        Uses the checks the plugin's options use, so a value means the same
        here as on the command line.
        """

        def read(name: str, default: str, parse: Callable[[str], Any]) -> Any:
            value = environ.get(name, default)
            try:
                return parse(value)
            except ConfigurationError as error:
                raise FuzzConfigurationError(f"pytest-cgraph: {name}: {error}") from None

        examples = environ.get("CGRAPH_FUZZ_EXAMPLES", "").strip()
        return cls(
            backend=read("CGRAPH_BACKEND", DEFAULT_BACKEND, _usable_backend),
            device=_process_device(read("CGRAPH_DEVICE", DEFAULT_DEVICE, _usable_device), environ),
            iters=read("CGRAPH_ITERS", str(DEFAULT_ITERS), lambda v: positive_int(v, "iterations")),
            timeout=read(
                "CGRAPH_TIMEOUT",
                f"{DEFAULT_TIMEOUT:g}",
                lambda value: non_negative_number(value, "the time limit"),
            ),
            known_dirs=read("CGRAPH_KNOWN", "", lambda value: known_dirs(value.split(os.pathsep))),
            baseline=not read("CGRAPH_NO_BASELINE", "", lambda v: flag(v, "the value")),
            isolate=read(
                "CGRAPH_ISOLATE",
                "",
                lambda value: flag(value, "the value") if value.strip() else under_hypofuzz(),
            ),
            examples=(
                read("CGRAPH_FUZZ_EXAMPLES", "", lambda value: positive_int(value, "examples"))
                if examples
                else None
            ),
        )

    def registry_dirs(self) -> list[Path]:
        """The registries of known bugs, baseline first (as the campaign orders them)."""
        import torch

        baseline = baseline_dir(torch.__version__) if self.baseline else None
        return [*([baseline] if baseline is not None else []), *self.known_dirs]


def under_hypofuzz() -> bool:
    """Whether HypoFuzz is fuzzing this process (``hypothesis fuzz``), without importing it.

    HypoFuzz traces every line the test runs for its coverage feedback
    (``sys.settrace`` before Python 3.12): a compile checked in its worker
    runs several times slower, and its hub stops a worker that has not run
    100 inputs within its first minute. Checked in a child process, which
    it does not trace, a program costs what it costs in a campaign.
    """
    detection = sys.modules.get("hypofuzz.detection")
    return detection is not None and bool(detection.in_hypofuzz_run())


def _usable_backend(value: str) -> str:
    """The backend's name, once torch knows it (``module:attr`` is imported to see)."""
    from pytest_cgraph.checking.backends import resolve_backend

    name = value.strip()
    if not name:
        raise ConfigurationError("empty name; give a torch.compile backend")
    resolve_backend(name)
    return name


def _usable_device(value: str) -> str:
    """The device as given, once this torch can use it (no CUDA device asked of a CPU build)."""
    from pytest_cgraph.checking.backends import resolve_device

    spec = value.strip()
    resolve_device(spec)
    return spec


def _process_device(spec: str, environ: Mapping[str, str]) -> str:
    """The device this process checks on: under pytest-xdist, worker ``i`` takes
    ``cuda:i % count`` with ``auto``/``cuda``, as in a campaign."""
    import torch

    worker = environ.get("PYTEST_XDIST_WORKER", "").lstrip("gw")
    return worker_device(spec, int(worker) if worker.isdigit() else None, torch.cuda.device_count())


def event_of(judgement: Judgement) -> str | None:
    """The Hypothesis event a program is counted under, if any: invalid, or its known entry."""
    if judgement.ruling is Ruling.INVALID:
        return INVALID_EVENT
    if judgement.known is not None:
        return f"known: {judgement.known.path.name}"
    return None


class NewDifference(CgraphError, AssertionError):
    """A drawn program differs from eager in a way no registry knows."""

    def __init__(self, failure: Failure) -> None:
        case = failure.case
        imports = "".join(f" --import {module}" for module in case.setup_modules)
        hint = RECORD_HINT.format(backend=case.backend, device=case.device, imports=imports)
        super().__init__(f"new difference {failure.signature}\n{failure.report()}\n\n{hint}")
        self.failure = failure


class Fuzzer:
    """Checks programs under one :class:`FuzzSettings` and judges each against the registries.

    The registry and the checker are made on the first check, so importing
    this module (collection, HypoFuzz's start-up) stays cheap.
    """

    def __init__(self, fuzz_settings: FuzzSettings) -> None:
        self.settings = fuzz_settings
        self._memo: OrderedDict[str, Judgement] = OrderedDict()

    @functools.cached_property
    def registry(self) -> Registry:
        """The known bugs: the baseline for the running torch and ``CGRAPH_KNOWN``."""
        return Registry.load(self.settings.registry_dirs())

    @functools.cached_property
    def checker(self) -> Checker:
        """In this process under the time limit, or in a recycled child with ``CGRAPH_ISOLATE``."""
        from pytest_cgraph.checking.checkers import InProcessChecker, IsolatedChecker

        if not self.settings.isolate:
            return InProcessChecker(None, self.settings.timeout)
        isolated = IsolatedChecker((), self.settings.timeout)
        atexit.register(isolated.close)
        return isolated

    def close(self) -> None:
        """End the checker's child process, if one was started (``CGRAPH_ISOLATE``)."""
        checker = self.__dict__.get("checker")
        if checker is not None:
            checker.close()

    def case(self, source: str, family: str, size: int = 0, statements: int | None = None) -> Case:
        """The case of a program's source, as the campaign would check it."""
        return Case(
            source=source,
            backend=self.settings.backend,
            device=self.settings.device,
            iters=self.settings.iters,
            family=family,
            nodeid=f"{__name__}::test_{family}",
            size=size,
            statements=statements,
            timeout=self.settings.timeout or None,
            replay=f"pytest --pyargs {__name__} -k test_{family}",
        )

    def judge(self, case: Case) -> Judgement:
        """Check ``case`` (once per source) and say whether its test passes."""
        judgement = self._memo.get(case.source)
        if judgement is None:
            judgement = self._judge(case)
            self._memo[case.source] = judgement
            if len(self._memo) > MEMO_SIZE:
                self._memo.popitem(last=False)
        else:
            self._memo.move_to_end(case.source)
        return judgement

    @functools.cached_property
    def registry_judge(self) -> Judge:
        """The one judge of checked programs (:mod:`pytest_cgraph.registry.judge`)."""
        from pytest_cgraph.recording.repro import first_diverging_layer, masked_rungs

        return Judge(self.registry, first_diverging_layer, masked_at=masked_rungs)

    def _judge(self, case: Case) -> Judgement:
        return self.registry_judge(case, self.checker.check(case))


def check(program: Program, family: str) -> None:
    """The body of every family's test: check ``program``, fail on a new difference."""
    __tracebackhide__ = True  # the report is the difference, not this harness
    judgement = FUZZER.judge(
        FUZZER.case(program.render(), family, program.size(), len(program.statements))
    )
    counted_as = event_of(judgement)
    if counted_as is not None:
        event(counted_as)
    if judgement.ruling is Ruling.INVALID:
        reject()
    if judgement.failure is not None:
        raise NewDifference(judgement.failure)


def fuzzes(family: str) -> Callable[[TestFunction], TestFunction]:
    """``@given`` programs of ``family``, with only the settings a compiling check needs.

    Everything else (``max_examples`` unless ``CGRAPH_FUZZ_EXAMPLES`` is set,
    phases, database, verbosity) comes from the active Hypothesis profile,
    and HypoFuzz, which requires the default database, schedules the rest.
    """
    profile = settings()
    suppressed = dict.fromkeys([*profile.suppress_health_check, *SLOW_PROGRAM_HEALTH_CHECKS])
    # No "explain" phase: the lines it finds only failing cases run are this
    # harness's own (the difference's report), not the program's.
    phases = [phase for phase in profile.phases if phase is not Phase.explain]

    def decorate(test: TestFunction) -> TestFunction:
        drawn = given(
            program=programs(families=(family,), iters=SETTINGS.iters, device=SETTINGS.device)
        )(test)
        chosen = settings(deadline=None, suppress_health_check=list(suppressed), phases=phases)
        if SETTINGS.examples is not None:
            chosen = settings(chosen, max_examples=SETTINGS.examples)
        # @given hides the test's parameters; what it returns still stands for the test.
        return cast(TestFunction, chosen(drawn))

    return decorate


SETTINGS = FuzzSettings.from_environment(os.environ)
FUZZER = Fuzzer(SETTINGS)


@fuzzes("mutation")
def test_mutation(program: Program) -> None:
    """In-place writes and metadata changes of inputs and their views: the write-back path."""
    check(program, "mutation")


@fuzzes("views")
def test_views(program: Program) -> None:
    """Views of inputs and intermediates (slices, ``as_strided``, ``unbind``, complex views),
    read, written and returned."""
    check(program, "views")


@fuzzes("transfer")
def test_transfer(program: Program) -> None:
    """``.to()`` across devices and dtypes."""
    check(program, "transfer")


@fuzzes("autograd")
def test_autograd(program: Program) -> None:
    """Backward, ``autograd.grad``, hooks, ``detach``, custom autograd functions, modules."""
    check(program, "autograd")


@fuzzes("rng")
def test_rng(program: Program) -> None:
    """Random ops (``rand_like``, ``dropout``, ``bernoulli``): values must match call by call."""
    check(program, "rng")


@fuzzes("scalars")
def test_scalars(program: Program) -> None:
    """Host scalars (0-dim CPU tensors) and Python numbers that change between calls."""
    check(program, "scalars")


@fuzzes("schedules")
def test_schedules(program: Program) -> None:
    """In-place writes under inputs that vary across calls: fresh tensors, aliasing, optimizers."""
    check(program, "schedules")


@fuzzes("training")
def test_training(program: Program) -> None:
    """A training step: a loss's backward, then its parameters updated and grads cleared."""
    check(program, "training")


@fuzzes("serving")
def test_serving(program: Program) -> None:
    """A serving step: caches grown, written and read at the step's position, call after call."""
    check(program, "serving")


@fuzzes("spellings")
def test_spellings(program: Program) -> None:
    """In-place and metadata ops spelled as ATen ops, and torch.cond, over views."""
    check(program, "spellings")


@fuzzes("mixed")
def test_mixed(program: Program) -> None:
    """Every family's ops together (less the training, serving and spellings families' own)."""
    check(program, "mixed")
