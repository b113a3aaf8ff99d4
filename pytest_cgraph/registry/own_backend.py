"""A backend of one's own: its bugs told apart by what they are about, not by torch's hazards.

Torch's bugs of one signature are told apart by the hazard classes of the
program's calls (:mod:`pytest_cgraph.registry.hazards`): a wrong value after a
random draw and one after a lost write are two mechanisms of torch's layers.
A failure that no torch layer shows (every rung of the ladder below agrees
with eager, and only the backend under test differs) is the backend's own,
and torch's hazards say nothing of it: a backend that loses writes to its
inputs loses them whatever op wrote, and the same fault returns an input
itself as a copy, with another ``requires_grad``. Split by hazards, one such
fault floods its author with a repro file per op family and per signature;
a second run with those files as its registry still fails.

So a failure of a backend of one's own that only that backend shows is
filed by its *face*: what the difference is about, the backend's handling of
its inputs (their values after the call, their identity, aliasing and
metadata as outputs), its outputs' values, or its gradients. A crash keeps
its signature (its message names it). Two faults that show on different
faces stay two bugs; the ablation (the ladder) is what says the layer is
the backend's, not the calls the program happens to make.
"""

from __future__ import annotations

import functools

#: The prefix of a found key filed by face (no signature starts with it).
OWN = "own-backend:"


@functools.cache
def torch_backends() -> frozenset[str]:
    """The backends torch ships, and ``torch.compile``'s defaults: never one's own.
    (Read on first use: the registry loads at every pytest start.)"""
    from pytest_cgraph.checking.backends import BUILTIN_BACKENDS, INDUCTOR_MODES

    return frozenset({*BUILTIN_BACKENDS, *INDUCTOR_MODES, "default"})


def is_own_backend(backend: str | None) -> bool:
    """Whether ``backend`` is not one of torch's (a compiler engineer's, a test double)."""
    return bool(backend) and backend not in torch_backends()


def face(signature: str) -> str:
    """What a failure of ``signature`` is about: ``inputs``, ``outputs``, ``gradients``,
    or (a crash, a hang, a dead process) the signature itself."""
    kind, _, place = signature.partition("-")
    if kind in ("crash", "timeout"):
        return signature
    if kind == "grad":
        return "gradients"
    # An output aliasing (or being) an input, an input written, an output that is an
    # input: what the backend did with its inputs.
    if kind == "aliasing" or "argument" in place.split("-", 1)[0]:
        return "inputs"
    return "outputs"


def own_key(signature: str) -> str:
    """The signature a run's findings file a backend's own failure under: its face."""
    return OWN + face(signature)
