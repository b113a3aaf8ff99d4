"""The public check: ``check_equivalent(fn, *args)`` and ``check_source(source)``.

Both validate what the user gave (backend, device, iteration count) into
the oracle's settings and run :mod:`pytest_cgraph.oracle.engine`, the one
implementation of the comparison, which every repro file carries too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from pytest_cgraph.checking.backends import resolve_backend, resolve_device
from pytest_cgraph.checking.validation import non_negative_number, positive_int
from pytest_cgraph.oracle import engine
from pytest_cgraph.oracle.compare import Tolerance
from pytest_cgraph.oracle.compiling import Backend
from pytest_cgraph.oracle.engine import (
    BackwardPolicy,
    CheckReport,
    CheckSettings,
    FreshArgs,
    run_check,
)
from pytest_cgraph.oracle.errors import ConfigurationError
from pytest_cgraph.oracle.protocol import load_source

__all__ = [
    "CheckReport",
    "CheckSettings",
    "check_equivalent",
    "check_source",
    "load_source",
    "run_check",
]


def check_equivalent(
    fn: Callable[..., Any],
    /,
    *args: Any,
    iters: int = 5,
    backend: str | Callable[..., Any] | Backend = "cudagraphs",
    device: str | torch.device | None = None,
    fresh_args: FreshArgs | None = None,
    backward: BackwardPolicy = "auto",
    rtol: float | None = None,
    atol: float | None = None,
    seed: int = 0,
    compiled_autograd: bool = False,
) -> CheckReport:
    """Run ``fn`` eagerly and compiled ``iters`` times; raise at the first difference.

    Args:
        fn: the program. Its arguments are copied for each side, so the
            caller's tensors, modules and optimizers are never touched.
        *args: arguments reused across iterations (mutations accumulate, as
            in a training loop), unless ``fresh_args`` is given. Tensors,
            ``nn.Module`` and ``torch.optim.Optimizer`` objects (also inside
            tuples, lists and dicts) are copied per side; a module's
            parameters, buffers and grads are compared by path
            (``net.lin.weight``), an optimizer's numeric group settings
            too (``opt.param_groups[0].lr``). A ``random.Random`` is copied
            with its state, and an object whose class declares
            ``__cgraph_state__`` (attribute names) with those attributes,
            compared after each call. Each side's copies are one object
            graph: any other argument that refers to what is copied (a
            scheduler, a ``GradScaler``, an object holding a module, a
            closure or ``functools.partial`` over one) is copied with it,
            and observed by the tensors it holds; one that refers to
            nothing copied is passed to both sides as it is, and so is one
            that cannot be copied but whose state is its own (a constant
            tensor beside a lock, nothing another argument holds).
        iters: calls per side; 4 or more let CUDA-graph trees replay twice
            (call 1 warms up, call 2 records, 3.. replay).
        backend: a ``torch.compile`` backend name, ``reduce-overhead`` or
            ``max-autotune``, ``package.module:attr``, or a compiler callable.
        device: move tensor arguments to this device (``auto``, ``cpu``,
            ``cuda``, ``cuda:N``); ``None`` leaves them where they are.
        fresh_args: ``fresh_args(k)`` returns iteration ``k``'s arguments
            (k from 1): fresh tensors, changing host scalars, changing shapes.
        backward: ``"auto"`` backpropagates the sum of outputs whenever a
            floating output requires grad; ``True`` insists; ``False`` never.
        rtol, atol: tolerances for floating values; default per dtype as in
            ``torch.testing.assert_close``.
        seed: base of the per-iteration RNG seeds (iteration k uses seed + k).
        compiled_autograd: run the compiled side's backward under compiled
            autograd (traced by the autograd engine, compiled with ``backend``).

    Returns:
        A :class:`CheckReport` of what ran.

    Raises:
        EquivalenceError: the first observable difference.
        InvalidProgram: eager itself raised; there is nothing to compare.
        ConfigurationError: a bad backend, device or argument (one that
            must be copied per side but cannot be), in one line.
    """
    if args and fresh_args is not None:
        raise ConfigurationError("pass the arguments or fresh_args, not both")
    if backward not in ("auto", True, False):
        raise ConfigurationError(f"backward must be 'auto', True or False, got {backward!r}")
    settings = CheckSettings(
        backend=resolve_backend(backend),
        iters=positive_int(iters, "iters"),
        device=resolve_device(device),
        backward=backward,
        tolerance=_tolerance(rtol, atol),
        seed=seed,
        compiled_autograd=compiled_autograd,
    )
    try:
        return run_check(fn, args, fresh_args, settings)
    except ValueError as error:  # an argument that cannot be copied per side
        if isinstance(error, ConfigurationError):
            raise
        raise ConfigurationError(str(error)) from None


def check_source(
    source: str,
    *,
    backend: str | Callable[..., Any] | Backend = "cudagraphs",
    device: str | torch.device | None = None,
    iters: int | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    seed: int = 0,
) -> CheckReport:
    """Check a program's source (the protocol of :mod:`pytest_cgraph.oracle.protocol`).

    What is checked is exactly what a repro file holds and runs.
    """
    return engine.check_source(
        source,
        backend=resolve_backend(backend),
        device=resolve_device(device),
        iters=positive_int(iters, "iters") if iters is not None else None,
        rtol=rtol,
        atol=atol,
        seed=seed,
    )


def _tolerance(rtol: float | None, atol: float | None) -> Tolerance:
    return Tolerance(
        None if rtol is None else non_negative_number(rtol, "rtol"),
        None if atol is None else non_negative_number(atol, "atol"),
    )
