"""The ladder of compile layers: which is the first that diverges from eager.

A failure found with one backend is re-checked with each layer of the
compile stack, lowest first: ``eager`` (Dynamo's capture alone), then
``aot_eager`` (AOTAutograd's functionalization), then ``cudagraphs`` (the
CUDA-graph backend; on CPU its front half), then ``inductor`` for
Inductor-based backends and ``reduce-overhead`` on CUDA. The first rung
that shows the failure's symptom (:attr:`Difference.symptom`: the same kind
of difference at the same place) says where the bug lives, and whether it
is specific to the CUDA-graph path. A lower rung that differs otherwise (a
grad lost where the failure is a crash) shows another bug: it does not
locate this one.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from pytest_cgraph.oracle.compiling import INDUCTOR_BACKENDS, Backend
from pytest_cgraph.oracle.difference import Difference
from pytest_cgraph.oracle.engine import check_source
from pytest_cgraph.oracle.errors import EquivalenceError, InvalidProgram

#: The rungs every failure is re-checked on, lowest first.
LADDER = ("eager", "aot_eager", "cudagraphs")

#: Rungs that are the CUDA-graph path itself.
CUDAGRAPH_RUNGS = frozenset({"cudagraphs", "reduce-overhead"})


@dataclass(frozen=True)
class Rung:
    """What one rung of the ladder did with the program."""

    name: str
    difference: Difference | None = None
    invalid: str | None = None

    @property
    def diverges(self) -> bool:
        """The rung differs from eager."""
        return self.difference is not None

    def verdict(self) -> str:
        """One line: agrees, differs (how), or eager raised."""
        if self.invalid is not None:
            return f"eager raised ({self.invalid})"
        if self.difference is None:
            return "agrees with eager"
        return self.difference.headline()


def rungs_for(backend: str, device: str) -> list[str]:
    """The ladder for a failure found with ``backend`` on ``device``."""
    rungs = list(LADDER)
    if backend in INDUCTOR_BACKENDS:
        rungs.append("inductor")
        if device.startswith("cuda"):
            rungs.append("reduce-overhead")
    return rungs


def climb(
    source: str,
    backend: str,
    device: torch.device | None,
    iters: int | None,
    *,
    stop_at_first: bool = True,
    like: Difference | None = None,
) -> list[Rung]:
    """Check ``source`` on each rung, lowest first; stop at the first that diverges
    (``like`` a failure: the first with its symptom, past rungs that differ otherwise).

    ``like`` is what checking ``source`` with ``backend`` gave: where ``backend``
    is itself a rung, that rung is this very check, so it is not run again
    (it shows the failure by definition). That saves a compile and a check
    on every climb that reaches the top, as one that locates a bug in the
    backend under test, or tells a new bug from a known one of a lower
    layer, does.
    """
    climbed = []
    for name in rungs_for(backend, str(device or "cpu")):
        if like is not None and name == backend:
            climbed.append(Rung(name, difference=like))
            if stop_at_first:
                break
            continue
        try:
            check_source(source, backend=Backend.named(name), device=device, iters=iters)
        except EquivalenceError as error:
            climbed.append(Rung(name, difference=error.difference))
            if stop_at_first and _shows(error.difference, like):
                break
        except InvalidProgram as invalid:
            # Eager's side became invalid at some iteration before this rung
            # diverged; a higher rung may still diverge earlier (the failure
            # being located may be at iteration 1, eager's error at 2), so
            # the climb goes on.
            climbed.append(Rung(name, invalid=invalid.reason))
        else:
            climbed.append(Rung(name))
    return climbed


def first_diverging(rungs: list[Rung], like: Difference | None = None) -> tuple[str | None, bool]:
    """The first rung that diverges (``like`` a failure: with its symptom; ``None``: only
    the backend under test does), and whether the failure is specific to the CUDA-graph path."""
    for rung in rungs:
        if rung.difference is not None and _shows(rung.difference, like):
            return rung.name, rung.name in CUDAGRAPH_RUNGS
    return None, False


def _shows(difference: Difference, like: Difference | None) -> bool:
    """A rung's difference is the failure being located (any, when none is given)."""
    return like is None or difference.symptom == like.symptom
