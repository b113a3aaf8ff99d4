"""``@pytest.mark.cgraph_equivalent``: a user's test function is the program.

The test returns the tensors to compare; its arguments (fixtures,
parametrize, Hypothesis ``@given``) — tensors, modules, optimizers — are
copied per side and checked for mutations and grads. With ``--cgraph`` the
function is checked against its compiled self; without, it runs once,
eagerly, as a plain test. Either way it must return at least one tensor.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_cgraph.checking.validation import non_negative_number, positive_int
from pytest_cgraph.failures import (
    Case,
    Failure,
    FailureText,
    Outcome,
    ReproResult,
    ReproStatus,
    Verdict,
)
from pytest_cgraph.oracle.errors import ConfigurationError, EquivalenceError
from pytest_cgraph.plugin import session
from pytest_cgraph.plugin.options import OPTIONS_KEY, CgraphOptions

if TYPE_CHECKING:
    from pytest_cgraph.registry.entries import KnownBug

MARKER = "cgraph_equivalent"
MARKER_HELP = (
    "cgraph_equivalent(iters=5, backend=None, rtol=None, atol=None): the test returns "
    "tensors; with --cgraph they are checked against the compiled test"
)


@dataclass(frozen=True)
class MarkerSettings:
    """The marker's keywords, validated; ``None`` means the session's option."""

    iters: int | None = None
    backend: str | Callable[..., Any] | None = None
    rtol: float | None = None
    atol: float | None = None

    @classmethod
    def of(cls, item: pytest.Item) -> MarkerSettings | None:
        """The settings of a marked item (the closest mark wins); ``None`` if unmarked.

        A bad marker fails the test at setup with one line.
        """
        marks = list(item.iter_markers(MARKER))
        if not marks:
            return None
        allowed = [f.name for f in dataclasses.fields(cls)]
        given: dict[str, Any] = {}
        for mark in reversed(marks):
            if mark.args:
                raise _reject(
                    item, f"takes keywords only ({', '.join(allowed)}), got {mark.args!r}"
                )
            for key, value in mark.kwargs.items():
                if key not in allowed:
                    raise _reject(item, f"unknown argument {key!r}; allowed: {', '.join(allowed)}")
                given[key] = value
        backend = given.get("backend")
        if (
            backend is not None
            and not (isinstance(backend, str) and backend)
            and not callable(backend)
        ):
            raise _reject(item, f"backend must be a backend name or a compiler, got {backend!r}")
        try:
            return cls(
                iters=None if given.get("iters") is None else positive_int(given["iters"], "iters"),
                backend=backend,
                rtol=None
                if given.get("rtol") is None
                else non_negative_number(given["rtol"], "rtol"),
                atol=None
                if given.get("atol") is None
                else non_negative_number(given["atol"], "atol"),
            )
        except ConfigurationError as error:
            raise _reject(item, str(error)) from None


def _reject(item: pytest.Item, problem: str) -> BaseException:
    """A bad marker as one line: no traceback, no chained exception."""
    return _failed(f"{item.nodeid}: @pytest.mark.{MARKER}: {problem}")


def _failed(message: str) -> BaseException:
    """``pytest.fail``'s exception, to be raised ``from None`` inside an ``except``
    block: pytest would otherwise print the caught exception as well."""
    return pytest.fail.Exception(message, pytrace=False)


@dataclass(frozen=True)
class FailedCall:
    """A call of the test function that differed: what a repro is written from.

    ``values`` are the caller's arguments, untouched: the check copied them.
    """

    error: EquivalenceError
    function: Callable[..., Any]
    names: list[str]
    values: list[Any]


@dataclass
class MarkedRun:
    """One marked test's run: its settings, and the last failing call (for the repro)."""

    item: pytest.Function
    settings: MarkerSettings
    options: CgraphOptions
    failed_call: FailedCall | None = None

    @property
    def iters(self) -> int:
        """Iterations per check: the marker's, else the session's."""
        return self.settings.iters or self.options.iters

    @property
    def backend(self) -> str | Callable[..., Any]:
        """The backend: the marker's, else the session's."""
        return self.settings.backend or self.options.backend

    def check(self, function: Callable[..., Any], names: list[str], values: list[Any]) -> None:
        """One check of the test function on one set of arguments."""
        import torch
        import torch.utils._pytree as pytree

        def program(*arguments: Any) -> Any:
            return function(**dict(zip(names, arguments, strict=True)))

        program.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names]
        )
        if not self.options.enabled:
            result = program(*values)
            if not any(isinstance(leaf, torch.Tensor) for leaf in pytree.tree_leaves(result)):
                self._no_tensors("None" if result is None else type(result).__name__)
            return

        from pytest_cgraph.checking.guard import ProgramTimeout, time_limit
        from pytest_cgraph.checking.runner import check_equivalent
        from pytest_cgraph.errors import InvalidProgram

        stats = session.stats_of(self.item)
        stats.count_program("marker", set(), iters=self.iters)
        try:
            with time_limit(self.options.timeout):
                report = check_equivalent(
                    program,
                    *values,
                    iters=self.iters,
                    backend=self.backend,
                    device=session.device(self.item.config),
                    rtol=self.settings.rtol,
                    atol=self.settings.atol,
                )
        except ProgramTimeout as timeout:
            raise _failed(f"{self.item.nodeid}: timeout: {timeout} (--cgraph-timeout)") from None
        except InvalidProgram as invalid:
            # The user's own test raised eagerly: that is its failure, as is.
            raise invalid.cause from None
        except ConfigurationError as error:
            raise _failed(f"{self.item.nodeid}: {error}") from None
        except EquivalenceError as error:
            self.failed_call = FailedCall(error, function, names, values)
            raise
        stats.count_report(report)
        if report.tensor_outputs == 0:
            self._no_tensors(report.returned)

    def _no_tensors(self, returned: str) -> None:
        """Fail in one line naming what the test returned (the type's name)."""
        pytest.fail(
            f"{self.item.nodeid}: a @pytest.mark.{MARKER} test must return the tensors to "
            f"compare (got {returned})",
            pytrace=False,
        )

    def record_failure(self) -> Failure:
        """The last failing call as a failure, its repro written where it can be inlined."""
        call = self.failed_call
        assert call is not None
        return record_call(
            self.item,
            "marker",
            call,
            self.backend,
            self.iters,
            self.settings.rtol,
            self.settings.atol,
            self.options.repro_dir,
        )


def record_call(
    item: pytest.Item,
    family: str,
    call: FailedCall,
    backend: str | Callable[..., Any],
    iters: int,
    rtol: float | None,
    atol: float | None,
    repro_dir: Path,
) -> Failure:
    """A test's failing call (a marked test's, a ``cgraph`` fixture check's) as a
    failure, its repro written where the call can be inlined as a program.

    An xdist worker only verifies: the controller, which alone writes the
    repro dir, writes it when the report arrives.
    """
    from pytest_cgraph.recording.repro import make_repro, verify_repro
    from pytest_cgraph.recording.standalone import NotInlinable, backend_name, program_source

    device = session.device(item.config)
    try:
        name = backend_name(backend)
        source, size = program_source(call.function, call.names, call.values, iters, rtol, atol)
    except NotInlinable as reason:
        unwritten = Case("", str(backend), device, iters, family=family, nodeid=item.nodeid)
        repro = ReproResult(ReproStatus.NOT_INLINABLE, detail=str(reason))
        return Failure(unwritten, call.error.difference, repro)
    case = Case(
        source=source,
        backend=name,
        device=device,
        iters=iters,
        family=family,
        nodeid=item.nodeid,
        size=size,
        setup_modules=session.plugin_modules(item.config),
        replay=f"pytest --cgraph '{item.nodeid}'",
    )
    failure = Failure(case, call.error.difference)
    if hasattr(item.config, "workerinput"):
        return verify_repro(failure, repro_dir)
    return make_repro(failure, repro_dir)


def run_marked(item: pytest.Function, settings: MarkerSettings) -> None:
    """Run a marked test: checked against compile with ``--cgraph``, else once, eagerly.

    A difference fails the test in a screenful (no frames of this plugin);
    its last failing call (under ``@given``, the shrunk example Hypothesis
    replays last) becomes a repro file.
    """
    options = item.config.stash[OPTIONS_KEY]
    run = MarkedRun(item, settings, options)
    names = list(item._fixtureinfo.argnames)
    funcargs = {name: item.funcargs[name] for name in names}
    testfunction = item.obj
    hypothesis = getattr(testfunction, "hypothesis", None)
    try:
        if hypothesis is not None and hasattr(hypothesis, "inner_test"):
            _wrap_hypothesis_inner(hypothesis, run)
            testfunction(**funcargs)
        else:
            run.check(testfunction, names, [funcargs[n] for n in names])
    except EquivalenceError as error:
        if run.failed_call is None:
            raise
        failure = run.record_failure()
        stats = session.stats_of(item)
        known = _known_torch_bug(item.config, failure)
        # A known bug fails the test all the same, but the summary counts no new bug.
        where = str(known.path) if known is not None else None
        stats.count_outcome(Outcome(Verdict.FAIL, failure.difference), where)
        if known is None:
            stats.failures.append(failure)
        verbose = item.config.get_verbosity() > 0
        notes = "".join(f"\n{note}" for note in getattr(error, "__notes__", []))
        context = f"\n{error.context}" if error.context else ""
        named = f"{known.named()}\n" if known is not None else ""
        assert failure.repro is not None
        text = FailureText.ending_in_repro_line(
            f"{error.difference.describe(verbose)}{context}{notes}\n{named}cgraph ", failure
        )
        raise text.attach(_failed(text.render())) from None


def _known_torch_bug(config: pytest.Config, failure: Failure) -> KnownBug | None:
    """The known torch bug this failure is (the session's one judge says so, by the
    registries' bugs files), or ``None``: the test fails either way, and its reader
    learns whether the bug is torch's and already on file.

    A test whose program could not be written inline is judged by its signature
    alone: one whose message names its bug (the overwritten-output error of a
    training step's kept optimizer state, say) is known; one that needs the
    program's calls or layer to tell is not.
    """
    return session.known_torch_bug(config, failure.case, failure.difference)


def _wrap_hypothesis_inner(hypothesis: Any, run: MarkedRun) -> None:
    """Make each example Hypothesis draws the program (``inner_test`` is its plugin hook)."""
    inner = getattr(hypothesis.inner_test, "_cgraph_original", hypothesis.inner_test)

    def checked(*args: Any, **kwargs: Any) -> None:
        names = list(kwargs)
        run.check(functools.partial(inner, *args), names, [kwargs[n] for n in names])

    functools.update_wrapper(checked, inner)  # Hypothesis names the test after it
    checked._cgraph_original = inner  # type: ignore[attr-defined]
    hypothesis.inner_test = checked
