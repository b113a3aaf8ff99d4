"""The ladder of compile layers: which is the first that diverges from eager.

A failure found with one backend is re-checked with each layer of the
compile stack, lowest first: ``eager`` (Dynamo's capture alone), then
``aot_eager`` (AOTAutograd's functionalization, with the min-cut
partitioner), then the pieces of the stack the backend adds, one per rung.
For the CUDA-graph backend and any other that is not Inductor's:
``aot_eager_default_partitioner`` (AOTAutograd with the default
partitioner, the one ``cudagraphs`` uses), then ``cudagraphs`` (the
CUDA-graph step; on CPU its front half). For Inductor-based backends:
``aot_eager_decomp_partition`` (Inductor's decompositions and partitioner,
without its code generation), then ``inductor``, and ``reduce-overhead``
(Inductor's CUDA graphs) on CUDA. So the first rung that shows the failure
names the piece to blame, and whether it is the CUDA-graph path.

A rung shows the failure when it fails with the failure's signature (the
same kind of difference at the same place, and for a crash the same
exception and message; see :attr:`Difference.signature`). The layer is
told only when every rung below that one agrees with eager: a lower rung
that fails differently (a grad lost where the failure is a crash, another
message) shows another bug, which may hide this one on that rung, so
whether the failure is there cannot be told, and neither can the layer.
A rung whose first difference comes at a later iteration than the
failure's agreed with eager through the failure's iteration: it agrees.
Walking past such a rung as if it agreed would blame a higher layer (and
call a bug "CUDA-graph path specific") on no evidence.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch

from pytest_cgraph.oracle.compiling import INDUCTOR_BACKENDS, Backend
from pytest_cgraph.oracle.difference import Difference
from pytest_cgraph.oracle.engine import check_source
from pytest_cgraph.oracle.errors import EquivalenceError, InvalidProgram

#: The rungs every failure is re-checked on first, lowest first.
LADDER = ("eager", "aot_eager")

#: The rungs above those for backends other than Inductor's. The default
#: partitioner's rung sits between ``aot_eager`` (min-cut partitioner) and
#: ``cudagraphs`` (default partitioner, then CUDA graphs), so a bug of that
#: partitioner is not blamed on the CUDA-graph step.
CUDAGRAPH_LADDER = ("aot_eager_default_partitioner", "cudagraphs")

#: The rungs above those for Inductor-based backends: Inductor's own
#: decompositions and partitioner with a no-op compiler, then Inductor. The
#: ``cudagraphs`` backend is not on Inductor's path (another partitioner,
#: no code generation), so a bug of its own must not stand in the way.
INDUCTOR_LADDER = ("aot_eager_decomp_partition", "inductor")

#: Rungs that are the CUDA-graph path itself.
CUDAGRAPH_RUNGS = frozenset({"cudagraphs", "reduce-overhead"})


class Standing(str, enum.Enum):
    """How one rung stands to the failure being located."""

    #: No difference from eager (up to the failure's iteration at least).
    AGREES = "agrees"
    #: The failure itself: its signature.
    SHOWS = "shows"
    #: Another failure, or no check as far as the failure's iteration:
    #: whether this rung has the failure cannot be told.
    OTHER = "other"


@dataclass(frozen=True)
class Rung:
    """What one rung of the ladder did with the program.

    ``invalid`` is what eager raised on this rung's run, at
    ``invalid_iteration``: the rung was compared up to the iteration before.
    """

    name: str
    difference: Difference | None = None
    invalid: str | None = None
    invalid_iteration: int | None = None

    @property
    def diverges(self) -> bool:
        """The rung differs from eager."""
        return self.difference is not None

    def standing(self, like: Difference | None = None) -> Standing:
        """How this rung stands to the failure ``like`` (``None``: to any difference).

        A rung whose eager side turned invalid agrees if it was compared past
        the failure's iteration; one stopped at or before that iteration
        never reached it, so it says nothing either way. So does a rung whose
        first difference is another one at a later iteration: every iteration
        up to the failure's agreed with eager there (a hook registered
        between calls that Dynamo's capture misses from call 2 on, under a
        failure of call 1).
        """
        if self.difference is not None:
            if like is None or self.difference.signature == like.signature:
                return Standing.SHOWS
            if self._differs_after(like):
                return Standing.AGREES
            return Standing.OTHER
        if self.invalid is not None and like is not None and self._stopped_before(like):
            return Standing.OTHER
        return Standing.AGREES

    def verdict(self, like: Difference | None = None) -> str:
        """One line: agrees, differs (how), or eager raised; with ``like``, whether the
        difference is that failure or another one."""
        if self.invalid is not None:
            said = f"eager raised ({self.invalid})"
            if like is not None and self._stopped_before(like):
                said += (
                    f" at iteration {self.invalid_iteration}, so it never compared "
                    f"iteration {like.iteration}, the failure's"
                )
            return said
        if self.difference is None:
            return "agrees with eager"
        if like is not None and self._differs_after(like):
            return (
                f"agrees with eager up to iteration {like.iteration}, the failure's; "
                f"then fails differently ({self.difference.signature}): "
                f"{self.difference.headline()}"
            )
        if self.standing(like) is Standing.OTHER:
            return f"fails differently ({self.difference.signature}): {self.difference.headline()}"
        return self.difference.headline()

    def _differs_after(self, like: Difference) -> bool:
        """This rung's first difference is another one, at an iteration after ``like``'s
        (a hang or a dead process has no iteration: it may hide any)."""
        return (
            self.difference is not None
            and self.difference.signature != like.signature
            and like.iteration > 0
            and self.difference.iteration > like.iteration
        )

    def _stopped_before(self, like: Difference) -> bool:
        """Eager's run on this rung turned invalid before it reached ``like``'s iteration."""
        return self.invalid_iteration is not None and self.invalid_iteration <= like.iteration


class Location(NamedTuple):
    """Where the ladder puts a failure.

    Its first two items are the ``(layer, CUDA-graph specific)`` pair callers
    index (``[0]``: the layer). ``layer`` is ``None`` both when no rung below
    the backend itself shows the failure and when a lower rung keeps the
    layer from being told (``untold_by``): neither names a layer to blame.
    """

    layer: str | None
    cudagraph_specific: bool = False
    untold_by: Rung | None = None

    def summary(self) -> str:
        """The layer in a few words: what a report line says of it."""
        if self.layer is not None:
            return self.layer
        if self.untold_by is not None:
            return f"not located ({self._untold()})"
        return "only the backend under test"

    def describe(self, ladder: Sequence[str]) -> str:
        """The header's sentence: the layer (or why there is none), the ``ladder`` it
        was looked for on, and whether the failure is specific to the CUDA-graph path."""
        rungs = " -> ".join(ladder)
        if self.untold_by is not None:
            return (
                f"not located: {self._untold()} (ladder {rungs}); CUDA-graph path specific: unknown"
            )
        specific = "yes" if self.cudagraph_specific else "no"
        where = self.layer or "none below the backend itself"
        return f"{where} (ladder {rungs}); CUDA-graph path specific: {specific}"

    def _untold(self) -> str:
        """Why the layer cannot be told: the lower rung and what it did."""
        rung = self.untold_by
        assert rung is not None
        if rung.difference is not None:
            how = f"fails differently ({rung.difference.signature})"
        else:
            how = f"eager raised at iteration {rung.invalid_iteration} ({rung.invalid})"
        return f"{rung.name}: {how}: the layer cannot be told"


def rungs_for(backend: str, device: str) -> list[str]:
    """The ladder for a failure found with ``backend`` on ``device``."""
    if backend not in INDUCTOR_BACKENDS:
        return [*LADDER, *CUDAGRAPH_LADDER]
    rungs = [*LADDER, *INDUCTOR_LADDER]
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
    """Check ``source`` on each rung, lowest first; stop at the first that does not agree
    (``like`` a failure: that shows it, or that fails differently, after which the
    layer cannot be told however high the climb goes).

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
            rung = Rung(name, difference=like)
        else:
            rung = _check_rung(source, name, device, iters)
        climbed.append(rung)
        # Eager's side turning invalid on a rung does not stop the climb by
        # itself: a higher rung may still diverge at an earlier iteration
        # (the failure being located may be at iteration 1, eager's error at 2).
        if stop_at_first and rung.standing(like) is not Standing.AGREES:
            break
    return climbed


def _check_rung(source: str, name: str, device: torch.device | None, iters: int | None) -> Rung:
    """What one rung does with ``source``."""
    try:
        check_source(source, backend=Backend.named(name), device=device, iters=iters)
    except EquivalenceError as error:
        return Rung(name, difference=error.difference)
    except InvalidProgram as invalid:
        return Rung(name, invalid=invalid.reason, invalid_iteration=invalid.iteration)
    return Rung(name)


def locate(rungs: Sequence[Rung], like: Difference | None = None) -> Location:
    """Where climbed ``rungs`` put the failure ``like`` (``None``: any difference).

    The layer is the first rung that shows it, provided every rung below
    agrees with eager; the first lower rung that does not leaves the layer
    untold. No rung showing it (a backend that is not a rung, a climb cut
    short) names no layer either.
    """
    for rung in rungs:
        standing = rung.standing(like)
        if standing is Standing.SHOWS:
            return Location(rung.name, rung.name in CUDAGRAPH_RUNGS)
        if standing is Standing.OTHER:
            return Location(None, False, untold_by=rung)
    return Location(None, False)
