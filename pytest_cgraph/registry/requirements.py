"""What a known bug needs of the machine that replays it: a CPU feature, a device, a build.

Some torch differences show on one kind of machine only. Inductor's CPU
kernels take other code paths by the vector instruction set it picks: a
read and a write that it wrongly fuses into one loop give wrong values in
the scalar kernel and the AVX-512 one, while an AVX2 kernel of the same
tiny tensor loads the row whole before it stores and comes out right. A
CUDA entry needs a GPU and a torch built for it. Replayed where the
machine lacks what it needs, such an entry "no longer reproduces" though
torch did not change, and would be called fixed and retired.

So an entry says what it needs in its header (``# requires: avx512``, the
names space-separated), or its bug does for every form (``requires`` in
``bugs.toml``), and a CUDA device implies ``cuda``. Where the machine lacks
it, the entry's replay is skipped with :func:`unmet`'s reason and never
judged. The names are a
closed list, checked when a registry is read: a misspelt one would make
an entry skip everywhere, silently.

Torch-free at import (the registry is read while collecting); :func:`unmet`
imports torch, as the replay it guards does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

#: Every requirement a registry may name, and what it asks of the machine.
REQUIREMENTS: dict[str, str] = {
    "avx512": "a CPU whose Inductor kernels are vectorised with AVX-512 (AVX2 kernels hide it)",
    "cuda": "a CUDA device and a CUDA build of torch",
}


def check_requirements(names: Iterable[object]) -> tuple[str, ...]:
    """``names`` as requirements, in order; a name outside :data:`REQUIREMENTS` (or not
    a string) raises ``ValueError`` with the names that are valid."""
    checked = []
    for name in names:
        if not isinstance(name, str) or name not in REQUIREMENTS:
            valid = ", ".join(repr(known) for known in REQUIREMENTS)
            raise ValueError(f"unknown requirement {name!r} (known: {valid})")
        checked.append(name)
    return tuple(checked)


def device_requirements(device: str | None) -> tuple[str, ...]:
    """What replaying on ``device`` needs by itself: ``cuda`` for a CUDA device."""
    return ("cuda",) if device is not None and device.startswith("cuda") else ()


def unmet(names: Iterable[str]) -> str | None:
    """Why this machine cannot show a bug that needs ``names``, in one line (what it
    needs and what this machine has); ``None`` when it has all of them."""
    for name in names:
        lacking = _LACKS[name]()
        if lacking is not None:
            return f"needs {REQUIREMENTS[name]}; {lacking}"
    return None


def _lacks_avx512() -> str | None:
    isa = inductor_vector_isa()
    return None if isa == "avx512" else f"Inductor vectorises this CPU's kernels with {isa}"


def inductor_vector_isa() -> str:
    """The vector instruction set Inductor picks for this CPU's kernels (``avx512``,
    ``avx2``, ``neon``...), or ``none`` where it writes scalar kernels.

    Inductor's own choice, not ATen's ``get_cpu_capability()``: Inductor reads
    the CPU's flags itself and ignores ``ATEN_CPU_CAPABILITY``.
    """
    try:
        from torch._inductor.cpu_vec_isa import pick_vec_isa
    except ImportError:  # torch before 2.5 kept it in codecache
        from torch._inductor.codecache import pick_vec_isa  # type: ignore[attr-defined]

    isa = pick_vec_isa()
    return str(isa) if isa else "none"


def _lacks_cuda() -> str | None:
    import torch

    if torch.version.cuda is None:
        return f"torch {torch.__version__} is not a CUDA build"
    if not torch.cuda.is_available():
        return "this machine has no CUDA device"
    return None


_LACKS: dict[str, Callable[[], str | None]] = {"avx512": _lacks_avx512, "cuda": _lacks_cuda}
