"""The program-source protocol: the names a program's source defines, and how they are read.

A program is Python source, and that source is the only form ever executed:
by the campaign, by a marked test's repro, by a repro file. The source binds

- ``program(*args)``: the function under test (required);
- ``inputs(k)``: the arguments of iteration ``k`` (from 1), as a tuple (required);
- ``advance(k, args, outputs)``: the next call's arguments from this call's,
  per side (parameter updates, outputs fed back);
- ``FRESH_INPUTS``: call ``inputs(k)`` every iteration instead of reusing
  ``inputs(1)`` (new tensors, changing host scalars, changing shapes);
- ``ITERS``: iterations to run;
- ``COMPILED_AUTOGRAD``: the compiled side's backward runs under compiled autograd;
- ``RTOL`` and ``ATOL``: tolerances for floating values;
- ``COMPILE``: names of functions of the source that the compiled side
  compiles, each on its own, instead of ``program`` (which then runs as
  plain Python glue with those names bound to their compiled versions):
  several compiled functions chained, as CUDA-graph trees see them;
- ``GRAD_MODE``: ``"grad"``, ``"no_grad"`` or ``"inference_mode"`` around
  each call of ``program`` on both sides;
- ``AUTOCAST``: ``"bfloat16"`` or ``"float16"``: an autocast of that dtype,
  on the program's device, around each call of ``program`` on both sides (a
  mixed-precision forward); the backward the harness runs after a call is
  outside it, as a training step's is;
- ``COMPILE_CONFIG``: torch compile settings a model author sets, as a dict
  from a setting's full name to its value (``{"torch._functorch.config.
  activation_memory_budget": 0.5}``), in force while the compiled side
  compiles and runs: the partitioner, Dynamo and Inductor then take the paths
  those settings choose. Only settings of :data:`CONFIG_MODULES` are taken.

Producers (the generator, a marked test's writer) spell the names through
the constants here; consumers read them through :class:`ProgramSpec`.
"""

from __future__ import annotations

import hashlib
import importlib
import itertools
import linecache
import sys
import types
from dataclasses import dataclass
from typing import Any

from pytest_cgraph.oracle.errors import CgraphError

PROGRAM = "program"
INPUTS = "inputs"
ADVANCE = "advance"
FRESH_INPUTS = "FRESH_INPUTS"
ITERS = "ITERS"
COMPILED_AUTOGRAD = "COMPILED_AUTOGRAD"
RTOL = "RTOL"
ATOL = "ATOL"
COMPILE = "COMPILE"
GRAD_MODE = "GRAD_MODE"
AUTOCAST = "AUTOCAST"
COMPILE_CONFIG = "COMPILE_CONFIG"

#: Values ``GRAD_MODE`` may take.
GRAD_MODES = ("grad", "no_grad", "inference_mode")
#: Values ``AUTOCAST`` may take (absent, or ``None``: no autocast).
AUTOCAST_DTYPES = ("bfloat16", "float16")
#: The modules whose settings ``COMPILE_CONFIG`` may name: the ones that decide
#: how a program is compiled, and nothing of the process around it.
CONFIG_MODULES = ("torch._dynamo.config", "torch._functorch.config", "torch._inductor.config")

DEFAULT_ITERS = 5


class ProgramSourceError(CgraphError, ValueError):
    """The source does not follow the protocol; the message says which name is wrong."""


@dataclass(frozen=True)
class ProgramSpec:
    """A loaded program: the protocol's names, read and checked once.

    ``namespace`` is the executed source; ``compiled_names`` are the
    functions the compiled side compiles (``("program",)`` by default).
    """

    namespace: dict[str, Any]
    iters: int
    fresh_inputs: bool
    compiled_autograd: bool
    rtol: float | None
    atol: float | None
    compiled_names: tuple[str, ...]
    grad_mode: str
    #: The dtype of the autocast around each call (``AUTOCAST``), or ``None``.
    autocast: str | None = None
    #: Compile settings in force on the compiled side (``COMPILE_CONFIG``), as
    #: (full name, value) pairs in the source's order.
    compile_config: tuple[tuple[str, Any], ...] = ()

    @property
    def program(self) -> Any:
        """The function under test."""
        return self.namespace[PROGRAM]

    @property
    def inputs(self) -> Any:
        """``inputs(k)``: iteration ``k``'s arguments."""
        return self.namespace[INPUTS]

    @property
    def advance(self) -> Any:
        """``advance(k, args, outputs)``, or ``None``."""
        return self.namespace.get(ADVANCE)

    @classmethod
    def of(cls, namespace: dict[str, Any]) -> ProgramSpec:
        """Read the protocol's names from an executed source."""
        for required in (PROGRAM, INPUTS):
            if not callable(namespace.get(required)):
                raise ProgramSourceError(f"the program's source must define {required}()")
        compiled = tuple(namespace.get(COMPILE, (PROGRAM,)))
        for name in compiled:
            if not callable(namespace.get(name)):
                raise ProgramSourceError(f"{COMPILE} names {name!r}, which is not a function")
        grad_mode = namespace.get(GRAD_MODE, "grad")
        if grad_mode not in GRAD_MODES:
            raise ProgramSourceError(f"{GRAD_MODE} must be one of {GRAD_MODES}, got {grad_mode!r}")
        autocast = namespace.get(AUTOCAST)
        if autocast is not None and autocast not in AUTOCAST_DTYPES:
            raise ProgramSourceError(
                f"{AUTOCAST} must be one of {AUTOCAST_DTYPES} or None, got {autocast!r}"
            )
        compile_config = _compile_config(namespace.get(COMPILE_CONFIG))
        return cls(
            namespace=namespace,
            iters=int(namespace.get(ITERS, DEFAULT_ITERS)),
            fresh_inputs=bool(namespace.get(FRESH_INPUTS, False)),
            compiled_autograd=bool(namespace.get(COMPILED_AUTOGRAD, False)),
            rtol=namespace.get(RTOL),
            atol=namespace.get(ATOL),
            compiled_names=compiled,
            grad_mode=grad_mode,
            autocast=autocast,
            compile_config=compile_config,
        )


def _compile_config(value: Any) -> tuple[tuple[str, Any], ...]:
    """``COMPILE_CONFIG``'s settings, each checked to be a setting torch has."""
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise ProgramSourceError(
            f"{COMPILE_CONFIG} must be a dict from a setting's full name to its value, "
            f"got {type(value).__name__}"
        )
    settings = []
    for name, setting in value.items():
        module_name = str(name).rpartition(".")[0]
        if module_name not in CONFIG_MODULES:
            raise ProgramSourceError(
                f"{COMPILE_CONFIG} names {name!r}: a setting of one of {CONFIG_MODULES} "
                "is expected, e.g. 'torch._functorch.config.activation_memory_budget'"
            )
        if not has_compile_setting(str(name)):
            raise ProgramSourceError(
                f"{COMPILE_CONFIG} names {name!r}, which this torch's {module_name} does not have"
            )
        settings.append((str(name), setting))
    return tuple(settings)


def has_compile_setting(name: str) -> bool:
    """Whether this torch has the compile setting ``name`` (a full dotted name):
    settings come and go between releases, and a program naming one this torch
    lacks cannot be run (nor should the generator draw it)."""
    module_name, _, key = name.rpartition(".")
    return hasattr(importlib.import_module(module_name), key)


#: Modules :func:`load_source` registered in ``sys.modules``, per file name.
_modules: dict[str, list[str]] = {}
#: Numbers each load: two loads of one text (each side's copy) are two modules.
_loads = itertools.count()


def source_filename(source: str) -> str:
    """The file name a program's code is compiled under: its own, derived from its text.

    Each program gets its own code identity, so that nothing torch keys on
    a code's file and name (recompilation and dynamic-shape state, caches)
    can carry over from one program to a different one checked before it
    in the same process. The same text always gets the same name.
    """
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    return f"<cgraph program {digest}>"


def forget_source(source: str, filename: str | None = None) -> None:
    """Drop what :func:`load_source` registered (lines, modules), once nothing needs it."""
    filename = filename or source_filename(source)
    linecache.cache.pop(filename, None)
    for name in _modules.pop(filename, ()):
        sys.modules.pop(name, None)


def load_source(source: str, filename: str | None = None) -> dict[str, Any]:
    """Execute a program's source in a fresh module; register it so tracebacks show it.

    The module is importable by its name while the program is checked, as a
    model's own module is: Dynamo imports the module of a function it
    inlines from other globals (a hook called in backward), by that name.
    """
    filename = filename or source_filename(source)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    module = types.ModuleType(f"cgraph_program_{next(_loads)}")
    module.__file__ = filename
    sys.modules[module.__name__] = module
    _modules.setdefault(filename, []).append(module.__name__)
    exec(compile(source, filename, "exec"), module.__dict__)
    return module.__dict__
