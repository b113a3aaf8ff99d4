"""The bare loop: a program's compiled side alone, as the protocol defines it, without the harness.

    python benchmarks/bare_loop.py BACKEND SOURCES.jsonl [lean|frozen|default]

The benchmarks weigh the harness against this loop over the same program
sources. To be the same work, it honours every name of the program
protocol the compiled side honours (``pytest_cgraph.oracle.protocol``):

- ``COMPILE``: the named functions compiled each on its own, ``program``
  run as Python glue around them;
- ``ITERS`` and ``FRESH_INPUTS``; ``advance(k, args, outputs)`` between calls;
- ``GRAD_MODE`` around each call; ``COMPILED_AUTOGRAD`` around each call
  and its backward;
- a backward of every floating output that requires grad;
- Inductor's comparable settings (``fallback_random``,
  ``emulate_precision_casts``), which change what Inductor compiles.

What it leaves out is what only the oracle needs: the eager side, argument
copies, snapshots, comparisons, re-reading retained outputs. "lean" also
skips the two telemetry costs the harness skips (guard-latency profiling,
the idle structured-trace handler) and keeps CUDA-graph skip notices off
stderr, as the harness does, so a ratio over the lean loop is the
harness's own cost. "frozen" is lean with the heap alive before the loop
frozen (``gc.freeze``), as a campaign item freezes it
(``pytest_cgraph.checking.heap``): the leanest loop there is.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

#: Inductor's on-disk graph caches off for every process, so that whichever of
#: the campaign and the bare loop runs second does not get the first one's
#: compiles. Compiled kernels are cached on disk apart from these, by source:
#: :func:`cold_kernel_cache` gives each process a directory of its own.
NO_DISK_CACHES = {"TORCHINDUCTOR_FX_GRAPH_CACHE": "0", "TORCHINDUCTOR_AUTOGRAD_CACHE": "0"}


def primed_kernel_cache(directory: Path) -> Path:
    """An Inductor cache directory that has run the toolchain's one-off checks
    (the vector-ISA build and probe) and no program's kernels.

    Each timed process gets a copy (:func:`cold_kernel_cache`): its kernels
    are compiled as on a first run, without paying those checks, which a
    fresh directory would charge to whichever process met them first.
    """
    primed = directory / "primed"
    subprocess.run(
        [sys.executable, "-c", _PRIMING],
        check=True, capture_output=True, text=True,
        env=dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(primed)),
    )  # fmt: skip
    return primed


#: Compiles one kernel no drawn program has (a 7x5 float64 cosh).
_PRIMING = (
    "import torch\n"
    "torch.compile(torch.cosh, backend='inductor')(torch.ones(7, 5, dtype=torch.float64))\n"
)


def cold_kernel_cache(primed: Path, directory: Path) -> dict[str, str]:
    """Environment for one timed process: a fresh copy of ``primed`` as its cache."""
    fresh = Path(tempfile.mkdtemp(prefix="kernels-", dir=directory))
    shutil.copytree(primed, fresh, dirs_exist_ok=True)
    return {"TORCHINDUCTOR_CACHE_DIR": str(fresh), **NO_DISK_CACHES}


def bare_runner(backend_name: str, lean: bool = True) -> Callable[[str], str]:
    """A function that runs one source's compiled side and says ``"pass"`` or ``"error"``."""
    import torch
    import torch._dynamo.guards
    import torch.utils._pytree as pytree

    from pytest_cgraph.oracle.compiling import (
        Backend,
        comparable_inductor,
        compiled_autograd_engine,
        device_ops_for,
        drop_idle_trace_handler,
        grad_mode,
        mark_step,
        reset_compiler_state,
    )
    from pytest_cgraph.oracle.protocol import PROGRAM, ProgramSpec, forget_source, load_source

    if lean:
        from torch._inductor.cudagraph_utils import cudagraphs_log

        drop_idle_trace_handler()
        torch._dynamo.guards.profile_guard_manager = lambda *args, **kwargs: 0.0
        # CPU skip notices: the harness keeps them off stderr (a handler, so
        # that logging's last-resort handler does not print them instead).
        cudagraphs_log.addHandler(logging.NullHandler())
        cudagraphs_log.propagate = False
    backend = Backend.named(backend_name)
    seed = device_ops_for(None).manual_seed  # seeded as the harness seeds a CPU check

    def call(spec: ProgramSpec, compiled: Callable, args: tuple, k: int) -> tuple:
        seed(k)
        if backend.uses_cudagraphs:
            mark_step()
        with compiled_autograd_engine(backend, spec.compiled_autograd):
            with grad_mode(spec.grad_mode):
                outputs = compiled(*args)
            leaves = pytree.tree_leaves(outputs)
            roots = [
                out
                for out in leaves
                if isinstance(out, torch.Tensor)
                and out.requires_grad
                and out.dtype.is_floating_point
            ]
            if roots:
                torch.autograd.backward(torch.stack([o.sum().double() for o in roots]).sum())
        return tuple(leaves)

    def run(source: str) -> str:
        with warnings.catch_warnings():  # as the harness, torch's notices are dropped
            warnings.simplefilter("ignore")
            return run_quietly(source)

    def run_quietly(source: str) -> str:
        reset_compiler_state()
        try:
            spec = ProgramSpec.of(load_source(source))
            if spec.compiled_names == (PROGRAM,):
                compiled = backend.compile(spec.program)
            else:
                glue = load_source(source)
                for name in spec.compiled_names:
                    glue[name] = backend.compile(glue[name])
                compiled = glue[PROGRAM]
            args = tuple(spec.inputs(1))
            with comparable_inductor():
                for k in range(1, spec.iters + 1):
                    if spec.fresh_inputs:
                        args = tuple(spec.inputs(k))
                    outputs = call(spec, compiled, args, k)
                    if spec.advance is not None and k < spec.iters:
                        args = tuple(spec.advance(k, args, outputs))
            return "pass"
        except Exception:
            return "error"
        finally:
            reset_compiler_state()
            forget_source(source)

    return run


def main() -> None:
    """Time the bare loop over a file of JSON-encoded sources; print one JSON line."""
    backend, path, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(path) as stream:
        sources = [json.loads(line) for line in stream]
    run = bare_runner(backend, lean=mode in ("lean", "frozen"))
    if mode == "frozen":
        gc.freeze()
    started = time.perf_counter()
    errors = sum(run(source) == "error" for source in sources)
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "programs": len(sources), "errors": errors}))


if __name__ == "__main__":
    main()
