"""``@pytest.mark.cgraph_equivalent``: a user's test function is the program.

The test returns the tensors to compare; its tensor arguments (fixtures,
parametrize, Hypothesis ``@given``) are cloned per side and checked for
mutations and grads. With ``--cgraph`` the function is checked against its
compiled self; without, it runs once, eagerly, as a plain test. Either way
it must return at least one tensor.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from pytest_cgraph.options import CgraphOptions
from pytest_cgraph.stats import Failure, RunStats

if TYPE_CHECKING:
    from pytest_cgraph.errors import EquivalenceError

MARKER = "cgraph_equivalent"
MARKER_HELP = (
    "cgraph_equivalent(iters=5, backend=None, rtol=None, atol=None): the test returns "
    "tensors; with --cgraph they are checked against the compiled test"
)
_ALLOWED = ("iters", "backend", "rtol", "atol")


def marker_settings(item: pytest.Item) -> dict[str, Any] | None:
    """The marker's keywords, validated; ``None`` if the item is not marked.

    A bad marker fails the test at setup with one line.
    """
    marks = list(item.iter_markers(MARKER))
    if not marks:
        return None
    settings: dict[str, Any] = {}
    for mark in reversed(marks):  # the closest mark wins
        if mark.args:
            _reject(item, f"takes keywords only ({', '.join(_ALLOWED)}), got {mark.args!r}")
        for key, value in mark.kwargs.items():
            if key not in _ALLOWED:
                _reject(item, f"unknown argument {key!r}; allowed: {', '.join(_ALLOWED)}")
            settings[key] = value
    iters = settings.get("iters")
    if iters is not None and (isinstance(iters, bool) or not isinstance(iters, int) or iters < 1):
        _reject(item, f"iters must be a positive int, got {iters!r}")
    backend = settings.get("backend")
    if backend is not None and not (isinstance(backend, str) and backend) and not callable(backend):
        _reject(item, f"backend must be a backend name or a compiler, got {backend!r}")
    for key in ("rtol", "atol"):
        value = settings.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0
        ):
            _reject(item, f"{key} must be a non-negative number, got {value!r}")
    return settings


def _reject(item: pytest.Item, problem: str) -> None:
    pytest.fail(f"{item.nodeid}: @pytest.mark.{MARKER}: {problem}", pytrace=False)


@dataclass
class MarkedFailure:
    """A difference found in one call of a marked test: what a repro needs."""

    error: EquivalenceError
    function: Callable[..., Any]
    names: list[str]
    values: list[Any]
    backend: str | Callable[..., Any]
    iters: int


def run_marked(
    pyfuncitem: pytest.Function,
    settings: dict[str, Any],
    options: CgraphOptions,
    device: str,
    stats: RunStats,
) -> None:
    """Run a marked test: checked against compile with ``--cgraph``, else once, eagerly.

    A difference fails the test; its last failing call (under ``@given``,
    the shrunk example Hypothesis replays last) becomes a repro file.
    """
    testfunction = pyfuncitem.obj
    names = list(pyfuncitem._fixtureinfo.argnames)
    funcargs = {name: pyfuncitem.funcargs[name] for name in names}
    hypothesis = getattr(testfunction, "hypothesis", None)
    failures: list[MarkedFailure] = []
    try:
        if hypothesis is not None and hasattr(hypothesis, "inner_test"):
            _wrap_hypothesis_inner(
                hypothesis, pyfuncitem.nodeid, settings, options, device, stats, failures
            )
            testfunction(**funcargs)
        else:
            check_program(
                pyfuncitem.nodeid,
                testfunction,
                names,
                [funcargs[n] for n in names],
                settings,
                options,
                device,
                stats,
                failures,
            )
    except BaseException:
        if failures:
            _record_failure(pyfuncitem, failures[-1], settings, options, device, stats)
        raise


def _record_failure(
    item: pytest.Function,
    failure: MarkedFailure,
    settings: dict[str, Any],
    options: CgraphOptions,
    device: str,
    stats: RunStats,
) -> None:
    """Write the failing call's repro (when it can be written inline) and note it."""
    from pytest_cgraph.campaign import plugin_modules
    from pytest_cgraph.repro import Finding, make_repro
    from pytest_cgraph.standalone import NotInlinable, program_source

    difference = failure.error.difference
    path = layer = None
    try:
        backend = _backend_name(failure.backend)
        source, size = program_source(
            failure.function,
            failure.names,
            failure.values,
            failure.iters,
            rtol=settings.get("rtol"),
            atol=settings.get("atol"),
        )
    except NotInlinable as reason:
        line = f"no repro file (not written inline): {reason}"
    else:
        finding = Finding(
            source=source,
            difference=difference,
            backend=backend,
            device=device,
            iters=failure.iters,
            family="marker",
            size=size,
            nodeid=item.nodeid,
            setup_modules=plugin_modules(item.config),
            replay=f"pytest --cgraph '{item.nodeid}'",
        )
        outcome = make_repro(finding, options.repro_dir)
        path, layer, line = outcome.path, outcome.layer, outcome.line()
    failure.error.add_note(f"cgraph {line}")
    stats.failures.append(
        Failure.of(
            difference,
            "marker",
            item.nodeid,
            repro=str(path) if path is not None else None,
            layer=layer,
        )
    )


def _backend_name(backend: str | Callable[..., Any]) -> str:
    """A backend as a repro names it: its name, or ``module:attr`` for a compiler."""
    from pytest_cgraph.standalone import NotInlinable

    if isinstance(backend, str):
        return backend
    module = getattr(backend, "__module__", None)
    qualname = getattr(backend, "__qualname__", "")
    if module and qualname and "." not in qualname and "<" not in qualname:
        return f"{module}:{qualname}"
    raise NotInlinable(f"the backend {backend!r} has no importable name (use module:attr)")


def _wrap_hypothesis_inner(
    hypothesis: Any,
    nodeid: str,
    settings: dict[str, Any],
    options: CgraphOptions,
    device: str,
    stats: RunStats,
    failures: list[MarkedFailure],
) -> None:
    """Make each example Hypothesis draws the program (``inner_test`` is its plugin hook)."""
    inner = getattr(hypothesis.inner_test, "_cgraph_original", hypothesis.inner_test)

    def checked(*args: Any, **kwargs: Any) -> None:
        names = list(kwargs)
        check_program(
            nodeid,
            functools.partial(inner, *args),
            names,
            [kwargs[n] for n in names],
            settings,
            options,
            device,
            stats,
            failures,
        )

    functools.update_wrapper(checked, inner)  # Hypothesis names the test after it
    checked._cgraph_original = inner  # type: ignore[attr-defined]
    hypothesis.inner_test = checked


def check_program(
    nodeid: str,
    function: Callable[..., Any],
    names: list[str],
    values: list[Any],
    settings: dict[str, Any],
    options: CgraphOptions,
    device: str,
    stats: RunStats,
    failures: list[MarkedFailure],
) -> None:
    """One check of a marked test's function on one set of arguments."""
    import torch
    import torch.utils._pytree as pytree

    def program(*arguments: Any) -> Any:
        return function(**dict(zip(names, arguments, strict=True)))

    program.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names]
    )
    if not options.enabled:
        result = program(*values)
        if not any(isinstance(leaf, torch.Tensor) for leaf in pytree.tree_leaves(result)):
            _no_tensors(nodeid, result)
        return

    from pytest_cgraph.errors import EquivalenceError, InvalidProgram
    from pytest_cgraph.guard import ProgramTimeout, time_limit
    from pytest_cgraph.runner import check_equivalent

    stats.count_program("marker", set())
    iters = settings.get("iters") or options.iters
    backend = settings.get("backend") or options.backend
    try:
        with time_limit(options.timeout):
            report = check_equivalent(
                program,
                *values,
                iters=iters,
                backend=backend,
                device=device,
                rtol=settings.get("rtol"),
                atol=settings.get("atol"),
            )
    except ProgramTimeout as timeout:
        pytest.fail(f"{nodeid}: timeout: {timeout} (--cgraph-timeout)", pytrace=False)
    except InvalidProgram as invalid:
        # The user's own test raised eagerly: that is its failure, as is.
        raise invalid.cause from None
    except EquivalenceError as error:
        # The arguments are the caller's, untouched: the check cloned them.
        failures.append(MarkedFailure(error, function, names, values, backend, iters))
        raise
    stats.count_report(report.compiles, report.graphs_captured, report.skip_reasons)
    if report.tensor_outputs == 0:
        _no_tensors(nodeid, None)


def _no_tensors(nodeid: str, result: Any) -> None:
    pytest.fail(
        f"{nodeid}: a @pytest.mark.{MARKER} test must return the tensors to compare "
        f"(got {type(result).__name__ if result is not None else 'None'})",
        pytrace=False,
    )
