"""The Program value: inputs, statements, outputs and an iteration schedule.

A Program renders itself to Python source, and that source is the only form
ever executed: by the generator while drawing (to let torch say which
statements are legal), by the runner on both sides, and by a repro file.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from pytest_cgraph.oracle import protocol
from pytest_cgraph.strategies.templates import HOLDER, MODULE, TEMPLATES

#: How arguments evolve across iterations.
#: ``persistent``: the same tensors every call, mutations accumulate;
#: ``fresh``: new tensors (new addresses, new values, new host scalars) each call;
#: ``param_update``: persistent, with an SGD step on parameters under no_grad between calls;
#: ``feedback``: an output becomes the next call's first argument;
#: ``dynamic``: fresh tensors whose first dimension grows with the iteration;
#: ``marked_dynamic``: as ``dynamic``, each growing dimension marked dynamic
#: (``torch._dynamo.mark_dynamic``) before the call, as servers mark a batch;
#: ``optimizer``: persistent, with a real ``torch.optim`` step and ``zero_grad``
#: between calls (parameters and grads changed in place, optimizer state kept);
#: ``module_hooks``: persistent, with a hook registered on each module argument
#: after the first call (a compiled function must notice what was added since
#: it was traced).
SCHEDULES = (
    "persistent",
    "fresh",
    "param_update",
    "feedback",
    "dynamic",
    "optimizer",
    "module_hooks",
    "marked_dynamic",
)
#: Schedules that build new inputs for every call, and those of them whose
#: inputs' first dimension grows with the call.
FRESH_SCHEDULES = ("fresh", "dynamic", "marked_dynamic")
GROWING_SCHEDULES = ("dynamic", "marked_dynamic")

#: Optimizers the ``optimizer`` schedule steps, as constructed over ``params``.
OPTIMIZERS = (
    "torch.optim.SGD(params, lr=0.1, momentum=0.9)",
    "torch.optim.Adam(params, lr=0.1)",
    "torch.optim.SGD(params, lr=0.1)",
)

#: Hooks the ``module_hooks`` schedule registers, each doubling what it sees,
#: as ``module.<hook>`` source: forward, forward-pre, and the two full
#: backward hooks (on the grads of the module's inputs and of its output).
MODULE_HOOKS = (
    "register_forward_hook(lambda module, args, output: output * 2)",
    "register_forward_pre_hook(lambda module, args: tuple(a * 2 for a in args))",
    "register_full_backward_pre_hook(lambda module, grads: tuple(g * 2 for g in grads))",
    "register_full_backward_hook("
    "lambda module, grads, _: tuple(None if g is None else g * 2 for g in grads))",
)

#: Roles of an input: what it stands for in a model's step function.
#: ``random``: a Python ``random.Random`` object the program draws numbers from;
#: ``holder``: a plain Python object holding state (``templates.HOLDER``).
ROLES = ("argument", "parameter", "buffer", "scalar", "number", "module", "random", "holder")

#: Memory layouts an input can arrive in.
#: ``alias``: a view of an earlier input's memory from its start;
#: ``alias_offset``: from element 1, overlapping it partly;
#: ``alias_sometimes``: aliased on odd calls, a fresh tensor on even ones
#: (fresh schedules), so a compiled function sees both;
#: ``nonleaf``: requires grad through an op of its own, as an activation
#: handed from one stage of a model to the next (AOTAutograd gives it a
#: tangent, and its mutation is replayed under autograd).
LAYOUTS = (
    "contiguous",
    "transposed",
    "sliced",
    "expanded",
    "alias",
    "alias_offset",
    "alias_sometimes",
    "nonleaf",
)


@dataclass(frozen=True)
class InputSpec:
    """One argument of the program and how ``inputs(k)`` builds it.

    ``shape`` is the shape the program sees. ``alias_of`` names the input
    whose base this one shares (layout ``alias``).
    """

    name: str
    role: str = "argument"
    shape: tuple[int, ...] = (2,)
    dtype: str = "float32"
    requires_grad: bool = False
    layout: str = "contiguous"
    alias_of: str | None = None

    @property
    def is_host_scalar(self) -> bool:
        """0-dim CPU tensors and Python numbers: host values, not device tensors."""
        return self.role in ("scalar", "number")

    def features(self) -> set[str]:
        """Coverage keys this input contributes."""
        if self.role in ("module", "random", "holder"):
            return {f"role:{self.role}"}
        found = {f"role:{self.role}", f"dtype:{self.dtype}"}
        if not self.is_host_scalar:
            found.add(f"layout:{self.layout}")
        if self.requires_grad:
            found.add("requires_grad")
        return found


@dataclass(frozen=True)
class Statement:
    """One or more source lines of the program body, and the op that drew them.

    ``features`` are the coverage keys it exercises: the op's name as written
    in the source (``add_``, ``t_``, ``backward``), plus facts such as
    ``on_input`` or ``through_view``.
    """

    op: str
    lines: tuple[str, ...]
    defines: tuple[str, ...] = ()
    features: frozenset[str] = frozenset()
    #: Module-level definitions the lines call (autograd Functions, custom ops).
    prelude: tuple[str, ...] = ()


@dataclass(frozen=True)
class Program:
    """A small tensor program with its inputs and iteration schedule."""

    family: str
    inputs: tuple[InputSpec, ...]
    statements: tuple[Statement, ...]
    outputs: tuple[str, ...]
    schedule: str = "persistent"
    iters: int = 5
    feedback: tuple[int, int] | None = None  # (output index, argument index)
    compiled_autograd: bool = False  # the compiled side's backward runs under compiled autograd
    optimizer: str = OPTIMIZERS[0]  # schedule ``optimizer``: what steps between calls
    set_to_none: bool = True  # schedule ``optimizer``: zero_grad(set_to_none=...)
    module_hook: str = MODULE_HOOKS[0]  # schedule ``module_hooks``: what is registered
    #: Index of the statement where a second, separately compiled function
    #: takes over (0: one compiled function). Its inputs are the first one's
    #: outputs, as CUDA-graph trees see one graph's outputs feed the next's.
    chain_at: int = 0
    grad_mode: str = "grad"  # the ambient mode each call runs under (protocol's GRAD_MODE)
    autocast: str | None = None  # an autocast's dtype around each call (protocol's AUTOCAST)
    #: Compile settings of the compiled side, (full name, value) pairs (protocol's
    #: COMPILE_CONFIG): the partitioner's memory budget, as training scripts set it,
    #: and the setting under which Dynamo traces a class statement (local_class).
    compile_config: tuple[tuple[str, object], ...] = ()
    features: frozenset[str] = field(default_factory=frozenset)

    def __repr__(self) -> str:
        # Hypothesis prints this for a failing example; the source, which is
        # what ran, is printed beside it in full.
        return (
            f"<{self.family} program: {len(self.statements)} statements, "
            f"{len(self.inputs)} inputs, schedule {self.schedule}>"
        )

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))

    @property
    def argument_names(self) -> tuple[str, ...]:
        """The program's parameters, in order."""
        return tuple(spec.name for spec in self.inputs)

    def all_features(self) -> set[str]:
        """Every coverage key: ops, input facts, schedule, output facts."""
        found = set(self.features)
        found.add(f"schedule:{self.schedule}")
        if self.compiled_autograd:
            found.add("compiled_autograd")
        if self.chained:
            found.add("chained_compiles")
        if self.grad_mode != "grad":
            found.add(f"grad_mode:{self.grad_mode}")
        if self.autocast is not None:
            found.add(f"autocast:{self.autocast}")
        for name, _ in self.compile_config:
            found.add("compile_config:" + name.rpartition(".")[2])
        if self.schedule == "module_hooks":
            found.add("module_hook:" + self.module_hook.split("(")[0].removeprefix("register_"))
        for spec in self.inputs:
            found |= spec.features()
        for statement in self.statements:
            found |= statement.features
        return found

    @property
    def chained(self) -> bool:
        """Whether two separately compiled functions run the statements, one after the other."""
        return 0 < self.chain_at < len(self.statements)

    def render_body(self) -> str:
        """``def program(...)``: the function under test (glue over two stages when chained)."""
        arguments = ", ".join(self.argument_names)
        if not self.chained:
            return _function(PROGRAM, arguments, self.statements, ", ".join(self.outputs))
        first, second = self.statements[: self.chain_at], self.statements[self.chain_at :]
        later_text = "\n".join([*(line for s in second for line in s.lines), *self.outputs])
        carried = [
            name
            for statement in first
            for name in statement.defines
            if re.search(rf"\b{name}\b", later_text)
        ]
        handed = ", ".join([*self.argument_names, *carried])
        unpack = f"({', '.join(carried)},) = " if carried else ""
        return "\n".join(
            [
                _function(STAGES[0], arguments, first, ", ".join(carried)),
                "",
                "",
                _function(STAGES[1], handed, second, ", ".join(self.outputs)),
                "",
                "",
                f"def {PROGRAM}({arguments}):",
                f"    {unpack}{STAGES[0]}({arguments})",
                f"    return {STAGES[1]}({handed})",
            ]
        )

    def render_inputs(self) -> str:
        """``def inputs(k)``: iteration k's arguments, built the same way for both sides."""
        fresh = self.schedule in FRESH_SCHEDULES
        lines = [
            "def inputs(k):",
            f"    g = torch.Generator().manual_seed({'1000 + k' if fresh else '1000'})",
        ]
        for spec in self.inputs:
            lines.extend(f"    {line}" for line in _build_input(spec, self.schedule))
        lines.append(f"    return ({', '.join(self.argument_names)},)")
        return "\n".join(lines)

    def render_advance(self) -> str | None:
        """``def advance(k, args, outputs)``: the next call's arguments, for some schedules."""
        if self.schedule == "param_update":
            params = [i for i, s in enumerate(self.inputs) if s.role == "parameter"]
            lines = ["def advance(k, args, outputs):", "    with torch.no_grad():"]
            for index in params:
                lines.append(f"        if args[{index}].grad is not None:")
                lines.append(f"            args[{index}].sub_(0.1 * args[{index}].grad)")
                lines.append(f"            args[{index}].grad = None")
            for index in self.module_indices:
                # A buffer reassigned between calls: a new tensor object, not a write.
                lines.append(f"        args[{index}].calls = args[{index}].calls * 0")
            if not params and not self.module_indices:
                lines.append("        pass")
            lines.append("    return args")
            return "\n".join(lines)
        if self.schedule == "optimizer":
            params = [i for i, s in enumerate(self.inputs) if s.role == "parameter"]
            # One optimizer per side, found again by its parameters' identity
            # (it keeps them alive, so an id is never reused while it lives).
            return "\n".join(
                [
                    "_OPTIMIZERS = {}",
                    "",
                    "",
                    "def advance(k, args, outputs):",
                    f"    params = [args[i] for i in {tuple(params)!r}] + [",
                    f"        p for i in {self.module_indices!r} for p in args[i].parameters()",
                    "    ]",
                    "    key = tuple(map(id, params))",
                    "    if key not in _OPTIMIZERS:",
                    f"        _OPTIMIZERS[key] = {self.optimizer}",
                    "    _OPTIMIZERS[key].step()",
                    f"    _OPTIMIZERS[key].zero_grad(set_to_none={self.set_to_none})",
                    "    return args",
                ]
            )
        if self.schedule == "module_hooks":
            lines = ["def advance(k, args, outputs):", "    if k == 1:"]
            lines += [f"        args[{i}].{self.module_hook}" for i in self.module_indices]
            if not self.module_indices:
                lines.append("        pass")
            lines.append("    return args")
            return "\n".join(lines)
        if self.schedule == "feedback" and self.feedback is not None:
            out, arg = self.feedback
            return "\n".join(
                [
                    "def advance(k, args, outputs):",
                    f"    return (*args[:{arg}], outputs[{out}], *args[{arg + 1}:])",
                ]
            )
        return None

    def preludes(self) -> tuple[str, ...]:
        """The module-level definitions the statements call, each once, in order."""
        modules = [TEMPLATES[MODULE].strip("\n")] if self.module_indices else []
        if any(spec.role == "holder" for spec in self.inputs):
            modules.append(TEMPLATES[HOLDER].strip("\n"))
        return tuple(dict.fromkeys([*modules, *(d for s in self.statements for d in s.prelude)]))

    @property
    def module_indices(self) -> tuple[int, ...]:
        """Positions of the ``nn.Module`` arguments."""
        return tuple(i for i, spec in enumerate(self.inputs) if spec.role == "module")

    @property
    def draws_python_random(self) -> bool:
        """Whether an argument is a ``random.Random`` (the source then imports ``random``)."""
        return any(spec.role == "random" for spec in self.inputs)

    def render(self) -> str:
        """The whole module: program, inputs, advance, and how the runner drives them."""
        parts = [
            f"# family: {self.family} · schedule: {self.schedule} · iterations: {self.iters}",
            *(["import random"] if self.draws_python_random else []),
            "import torch",
            "",
            "",
        ]
        for definition in self.preludes():
            parts += [definition, "", ""]
        parts += [
            self.render_body(),
            "",
            "",
            self.render_inputs(),
        ]
        advance = self.render_advance()
        if advance is not None:
            parts += ["", "", advance]
        parts += [
            "",
            "",
            f"{protocol.FRESH_INPUTS} = {self.schedule in FRESH_SCHEDULES}",
            f"{protocol.ITERS} = {self.iters}",
            *([f"{protocol.COMPILED_AUTOGRAD} = True"] if self.compiled_autograd else []),
            *([f"{protocol.COMPILE} = {STAGES!r}"] if self.chained else []),
            *([f"{protocol.GRAD_MODE} = {self.grad_mode!r}"] if self.grad_mode != "grad" else []),
            *([f"{protocol.AUTOCAST} = {self.autocast!r}"] if self.autocast is not None else []),
            *(
                [f"{protocol.COMPILE_CONFIG} = {dict(self.compile_config)!r}"]
                if self.compile_config
                else []
            ),
            "",
        ]
        return "\n".join(parts)

    def size(self) -> int:
        """What "smaller" means for repro files: statements, then inputs."""
        return len(self.statements) * 100 + len(self.inputs)


PROGRAM = protocol.PROGRAM
#: The two functions a chained program's statements are split between.
STAGES = ("stage0", "stage1")


def _function(name: str, arguments: str, statements: tuple[Statement, ...], returned: str) -> str:
    lines = [f"def {name}({arguments}):"]
    for statement in statements:
        lines.extend(f"    {line}" for line in statement.lines)
    lines.append(f"    return ({returned}{',' if returned else ''})")
    return "\n".join(lines)


_DTYPE_FACTORY = {
    "float32": "torch.randn({shape}, generator=g)",
    "float64": "torch.randn({shape}, generator=g, dtype=torch.float64)",
    "int64": "torch.randint(-3, 4, {shape}, generator=g)",
    "bool": "torch.randint(0, 2, {shape}, generator=g).bool()",
    "float16": "torch.randn({shape}, generator=g).half()",
    "bfloat16": "torch.randn({shape}, generator=g).bfloat16()",
    "complex64": "torch.randn({shape}, generator=g, dtype=torch.complex64)",
}


def _shape_text(shape: tuple[int, ...], grow: bool) -> str:
    if not shape:
        return "()"
    dims = [f"{shape[0]} + k - 1" if grow else str(shape[0]), *map(str, shape[1:])]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def _build_input(spec: InputSpec, schedule: str) -> list[str]:
    """Source lines that bind ``spec.name`` inside ``inputs(k)``."""
    name = spec.name
    if spec.role == "module":
        return [f"{name} = Counter()"]
    if spec.role == "holder":
        return [f"{name} = Holder()"]
    if spec.role == "random":
        # Seeded per call where inputs are fresh; else one object, whose
        # state each call's draws advance.
        seed = "1000 + k" if schedule in FRESH_SCHEDULES else "7"
        return [f"{name} = random.Random({seed})"]
    if spec.role == "number":
        return [f"{name} = 0.5 + k" if schedule in FRESH_SCHEDULES else f"{name} = 0.5"]
    if spec.role == "scalar":
        value = "0.5 + k" if schedule in FRESH_SCHEDULES else "0.5"
        return [f"{name} = torch.tensor({value})"]
    grow = schedule in GROWING_SCHEDULES and spec.layout in ("contiguous", "sliced")
    shape = spec.shape
    lines: list[str]
    if spec.layout == "transposed" and len(shape) >= 2:
        stored = (shape[1], shape[0], *shape[2:])
        make = _DTYPE_FACTORY[spec.dtype].format(shape=_shape_text(stored, False))
        lines = [f"{name} = {make}.transpose(0, 1)"]
    elif spec.layout == "sliced" and shape:
        stored = (shape[0] * 2, *shape[1:])
        make = _DTYPE_FACTORY[spec.dtype].format(shape=_shape_text(stored, grow))
        lines = [f"{name} = {make}[::2]"]
    elif spec.layout == "expanded" and len(shape) >= 1:
        stored = (1, *shape[1:])
        make = _DTYPE_FACTORY[spec.dtype].format(shape=_shape_text(stored, False))
        lines = [f"{name} = {make}.expand({', '.join(map(str, shape))})"]
    elif spec.layout.startswith("alias") and spec.alias_of is not None and shape:
        # A second view of the named input's memory: the two overlap.
        start = 1 if spec.layout == "alias_offset" else 0
        alias = (
            f"{spec.alias_of}.reshape(-1)[{start}:{start + math.prod(shape)}].view({_dims(shape)})"
        )
        if spec.layout == "alias_sometimes":
            fresh = _DTYPE_FACTORY[spec.dtype].format(shape=_shape_text(shape, False))
            lines = [f"{name} = {alias} if k % 2 else {fresh}"]
        else:
            lines = [f"{name} = {alias}"]
    elif spec.layout == "nonleaf":
        make = _DTYPE_FACTORY[spec.dtype].format(shape=_shape_text(shape, grow))
        return [f"{name} = {make}.requires_grad_(True).mul(2)"]
    else:
        make = _DTYPE_FACTORY[spec.dtype].format(shape=_shape_text(shape, grow))
        lines = [f"{name} = {make}"]
    if spec.role == "parameter":
        lines.append(f"{name} = torch.nn.Parameter({name})")
    elif spec.requires_grad:
        lines.append(f"{name}.requires_grad_(True)")
    if grow and schedule == "marked_dynamic":
        lines.append(f"torch._dynamo.mark_dynamic({name}, 0)")
    return lines


def _dims(shape: tuple[int, ...]) -> str:
    return ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "")
