# pytest-cgraph repro
# signature: aliasing-aliasing-shares_argument_to_is_argument-aot_eager
# base signature: aliasing-aliasing-shares_argument_to_is_argument
# layer: aot_eager
# failure: aliasing difference at iteration 1, aliasing of output #0
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: set_intermediate.py; replay: python -m pytest_cgraph.record set_intermediate.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there), or pytest THIS_FILE
from __future__ import annotations

# The program, exactly as it ran (the oracle below executes this text).
PROGRAM_SOURCE = r'''
# set_() of a fresh intermediate onto an input's storage: eager returns v0, a distinct tensor
# sharing a0's storage; compiled returns a0 itself (is_argument).
# eager shares_argument -> compiled is_argument; diverges at aot_eager.
# Same class as the already-recorded set_() onto inputs.
import torch


def program(a0):
    v0 = a0 + 2
    v0.set_(a0)
    return (v0,)


def inputs(k):
    return (torch.ones(1),)
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'aliasing-aliasing-shares_argument_to_is_argument'  # the failure this file reproduces


# ---- the pytest-cgraph oracle: the code the campaign ran, verbatim; needs torch only ----
# ---- pytest_cgraph/oracle/errors.py ----
"""How a check ends when it does not pass. Torch-free, so the plugin can name them cheaply."""


from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass


class EquivalenceError(AssertionError):
    """The compiled program observably differs from eager.

    An ``AssertionError`` so that pytest reports it as a test failure (not an
    error) and so that Hypothesis treats it as a falsifying example. The
    message is short (torch's traceback of a crash is on ``difference``).
    """

    def __init__(self, difference: Difference, context: str = "") -> None:
        message = difference.describe()
        super().__init__(f"{message}\n{context}" if context else message)
        self.difference = difference
        self.context = context


class InvalidProgram(Exception):
    """Eager PyTorch itself raised, so the program has no reference behaviour.

    This is not a compiler bug: compiled code may legitimately accept programs
    that eager rejects (PyTorch's fuzzer rules), so campaigns count these
    instead of failing on them.
    """

    def __init__(self, iteration: int, phase: str, cause: BaseException) -> None:
        super().__init__(
            f"eager raised {type(cause).__name__} during {phase} of iteration {iteration}: "
            f"{_first_line(cause)}"
        )
        self.iteration = iteration
        self.phase = phase
        self.cause = cause

    @property
    def reason(self) -> str:
        """What eager raised, in one line, without the iteration: groups invalid programs."""
        return f"{type(self.cause).__name__}: {_first_line(self.cause)}"


class ConfigurationError(ValueError):
    """A backend, device or option value cannot be used; the message is one line."""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"


# ---- pytest_cgraph/oracle/protocol.py ----
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
  each call of ``program`` on both sides.

Producers (the generator, a marked test's writer) spell the names through
the constants here; consumers read them through :class:`ProgramSpec`.
"""


import hashlib
import linecache
from dataclasses import dataclass
from typing import Any

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

#: Values ``GRAD_MODE`` may take.
GRAD_MODES = ("grad", "no_grad", "inference_mode")

DEFAULT_ITERS = 5


class ProgramSourceError(ValueError):
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
        return cls(
            namespace=namespace,
            iters=int(namespace.get(ITERS, DEFAULT_ITERS)),
            fresh_inputs=bool(namespace.get(FRESH_INPUTS, False)),
            compiled_autograd=bool(namespace.get(COMPILED_AUTOGRAD, False)),
            rtol=namespace.get(RTOL),
            atol=namespace.get(ATOL),
            compiled_names=compiled,
            grad_mode=grad_mode,
        )


def source_filename(source: str) -> str:
    """The file name a program's code is compiled under: its own, derived from its text.

    Each program gets its own code identity, so that nothing torch keys on
    a code's file and name (recompilation and dynamic-shape state, caches)
    can carry over from one program to a different one checked before it
    in the same process. The same text always gets the same name.
    """
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    return f"<cgraph program {digest}>"


def load_source(source: str, filename: str | None = None) -> dict[str, Any]:
    """Execute a program's source in a fresh namespace; register it so tracebacks show it."""
    filename = filename or source_filename(source)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {"__name__": "cgraph_program"}
    exec(compile(source, filename, "exec"), namespace)
    return namespace


# ---- pytest_cgraph/oracle/difference.py ----
"""What a difference between eager and compiled is, and the name of the bug it shows.

A :class:`Difference` is structured (its kind, a :class:`Place`, a facet,
the exception's type and message), so that its *signature* — the name of
the bug it shows, used to de-duplicate repro files and to recognise known
bugs — is computed from fields, never parsed back from text. Torch-free:
the plugin carries differences in reports and reads them while reporting.
"""


import dataclasses
import enum
import hashlib
import re
from dataclasses import dataclass
from typing import Any


class Kind(str, enum.Enum):
    """What differs. The value is the word used in messages and signatures."""

    VALUE = "value"
    MUTATION = "mutation"
    GRAD = "grad"
    ALIASING = "aliasing"
    METADATA = "metadata"
    STALE_OUTPUT = "stale output"
    CRASH = "crash"
    TIMEOUT = "timeout"

    def __str__(self) -> str:
        return self.value


class Role(str, enum.Enum):
    """Where a difference shows: which kind of observed thing."""

    OUTPUT = "output"
    ARGUMENT = "argument"
    GRAD = "grad"
    ALIASING = "aliasing"
    STRUCTURE = "structure"
    RETAINED = "retained"
    COMPILED = "compiled"  # the compiled side raised; ``name`` is the phase
    PROGRAM = "program"  # the program as a whole (a hang)
    PROCESS = "process"  # the process checking it died


@dataclass(frozen=True)
class Place:
    """Where a difference is: ``output #2``, ``argument x``, ``grad of net.lin.weight``.

    ``index`` is an output's position; ``name`` an argument's or leaf's name
    (or the phase of a compiled-side crash); ``argument`` names the argument
    an output *is* (returned as itself); ``iteration`` is the iteration whose
    retained output was re-read.
    """

    role: Role
    index: int | None = None
    name: str | None = None
    argument: str | None = None
    iteration: int | None = None

    def __str__(self) -> str:
        role = self.role
        if role is Role.OUTPUT:
            return f"output #{self.index}" + (
                f" (argument {self.argument})" if self.argument else ""
            )
        if role is Role.ARGUMENT:
            return f"argument {self.name}"
        if role is Role.GRAD:
            return f"grad of {self.name}"
        if role is Role.ALIASING:
            return f"aliasing of output #{self.index}"
        if role is Role.STRUCTURE:
            return "returned structure"
        if role is Role.RETAINED:
            return f"output #{self.index} of iteration {self.iteration}, re-read at the end"
        if role is Role.COMPILED:
            return f"compiled {self.name}"
        return role.value

    @property
    def token(self) -> str:
        """The place in a signature: its role, without indices or names.

        One broken replay path shows in whichever output or argument a
        program happens to have, and must not count as many bugs; an output
        that is an argument itself is a different path from a computed one.
        """
        if self.role is Role.OUTPUT and self.argument:
            return "output_argument"
        if self.role is Role.COMPILED:
            return "compiled_" + _slug(self.name or "call")
        return self.role.value


@dataclass(frozen=True)
class Difference:
    """The first observable difference between eager and compiled.

    ``iteration`` counts calls from 1 (0: no iteration is known, for a hang
    or a dead process). ``facet`` refines the kind for the signature (which
    metadata field, how aliasing changed, a grad missing rather than wrong);
    ``message`` is the exception's text, ``traceback`` its stack.
    """

    kind: Kind
    iteration: int
    place: Place
    detail: str = ""
    facet: str | None = None
    max_abs: float | None = None
    max_rel: float | None = None
    index: tuple[int, ...] | None = None
    expected: str | None = None
    actual: str | None = None
    exception_type: str | None = None
    message: str | None = None
    traceback: str = ""

    @property
    def signature(self) -> str:
        """The bug's name: kind + place + facet + exception type + its message, normalised.

        Two crashes at the compiled call with different messages are two
        bugs; the same message under other shapes, names or numbers is one.
        """
        parts = [self.kind.value, self.place.token]
        if self.facet:
            parts.append(self.facet)
        if self.exception_type:
            parts.append(self.exception_type)
        if self.message and self.kind is not Kind.TIMEOUT:
            parts.append(message_key(self.message))
        return "-".join(filter(None, (_slug(part) for part in parts)))

    @property
    def ends_process(self) -> bool:
        """A hang or a dead process: re-running it in-process would hang or kill the checker."""
        return self.kind is Kind.TIMEOUT or self.place.role is Role.PROCESS

    def located(self, iteration: int, place: Place, kind: Kind | None = None) -> Difference:
        """This difference, placed at ``iteration`` and ``place`` (and re-kinded)."""
        return dataclasses.replace(self, iteration=iteration, place=place, kind=kind or self.kind)

    def headline(self) -> str:
        """One line: what differs, where, when."""
        if self.iteration == 0:
            return f"{self.kind} of the {self.place}: {self.detail or self.message or ''}".rstrip()
        head = f"{self.kind} difference at iteration {self.iteration}, {self.place}"
        if self.exception_type:
            head += f": {self.exception_type}: {bug_line(self.message or '')}"
        return head

    def describe(self, verbose: bool = False) -> str:
        """The message of an equivalence failure; the traceback only when ``verbose``."""
        lines = [self.headline()]
        if self.iteration == 0:
            return lines[0]
        if self.detail:
            lines.append(self.detail)
        if self.max_abs is not None:
            lines.append(
                f"largest abs difference {self.max_abs:.6g}, largest rel difference "
                f"{self.max_rel:.6g}, first differing index {self.index}"
            )
        if self.expected is not None:
            lines.append(f"eager:    {self.expected}")
            lines.append(f"compiled: {self.actual}")
        if verbose and self.message and self.message.strip() != first_line(self.message):
            lines.append(self.message.rstrip())
        if verbose and self.traceback:
            lines.append(self.traceback.rstrip())
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """Builtins only: travels in reports and in-flight records."""
        data = dataclasses.asdict(self)
        data["kind"] = self.kind.value
        data["place"] = {**dataclasses.asdict(self.place), "role": self.place.role.value}
        data["index"] = list(self.index) if self.index is not None else None
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Difference:
        """The inverse of :meth:`to_json`."""
        place = data["place"]
        return cls(
            **{
                **data,
                "kind": Kind(data["kind"]),
                "place": Place(**{**place, "role": Role(place["role"])}),
                "index": tuple(data["index"]) if data.get("index") is not None else None,
            }
        )


def first_line(text: str) -> str:
    """The first non-blank line of ``text``."""
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()
    return ""


# Dynamo's structured errors open with a generic line ("RuntimeError when
# making fake tensor call") and name what failed on an ``Explanation:`` line,
# ending in the inner error (``got ValueError('...')``).
_EXPLANATION = re.compile(r"^\s*Explanation:\s*(.*)$", re.MULTILINE)


def bug_line(text: str) -> str:
    """The line that names the bug: the first, and Dynamo's explanation's inner error if any."""
    head = first_line(text)
    explanation = _EXPLANATION.search(text)
    if explanation is None:
        return head
    detail = explanation.group(1).strip()
    _, got, inner = detail.rpartition(" got ")
    if not got:
        return f"{head}: {detail}"
    # ``ValueError('...')`` -> ``ValueError: ...``: the message, not a quote to blank.
    error = _ERROR_REPR.match(inner)
    return f"{head}: {error.group(1)}: {error.group(3)}" if error else f"{head}: {inner}"


_ERROR_REPR = re.compile(r"^(\w+)\((['\"])(.*)\2\)$")


_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_QUOTED = re.compile(r"(?<![A-Za-z0-9])(['\"`])[^'\"`]*?\1")
_SIZE = re.compile(r"torch\.Size\(\[[^\]]*\]\)")
# A shape or size list, the empty one (a 0-dim tensor's ``()``) included;
# not a call's parentheses (``f()``) or an index (``x[0]``).
_SHAPE = re.compile(r"(?<![\w\])])[\[(]\s*(?:-?\d+(?:\s*,\s*-?\d+)*\s*,?)?\s*[\])]")
_NUMBERED_NAME = re.compile(r"\b[A-Za-z_]+\d+(?:_\d+)*\b")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def normalised_message(message: str) -> str:
    """An exception's first line with what varies between programs blanked.

    Addresses become ``ADDR``, quoted text ``Q``, shapes and sizes
    ``SHAPE``, numbered names (``primals_1``, ``buf0``, ``v3``) ``NAME``,
    other numbers ``N``.
    """
    text = bug_line(message)
    text = _ADDRESS.sub("ADDR", text)
    text = _QUOTED.sub("Q", text)
    text = _SIZE.sub("SHAPE", text)
    text = _SHAPE.sub("SHAPE", text)
    text = _NUMBERED_NAME.sub("NAME", text)
    text = _NUMBER.sub("N", text)
    return re.sub(r"\s+", " ", text).strip()


def message_key(message: str) -> str:
    """A normalised message as a signature part: its first words, and a hash of all of it."""
    normal = normalised_message(message)
    if not normal:
        return ""
    words = _slug(" ".join(normal.split()[:6]))[:40].strip("_")
    return f"{words}_{hashlib.sha1(normal.encode()).hexdigest()[:6]}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")


@dataclass(frozen=True)
class Relation:
    """How one output relates to an argument or an earlier output: ``is`` it, or ``shares``
    its memory. ``target`` is ``argument <name>`` or ``output #<i>``."""

    how: str  # "is" or "shares"
    target: str

    @property
    def kind(self) -> str:
        """The relation without names: ``is_argument``, ``shares_output``."""
        return f"{self.how}_{self.target.split()[0]}"

    def __str__(self) -> str:
        return f"is {self.target}" if self.how == "is" else f"shares storage with {self.target}"


def describe_relations(relations: tuple[Relation, ...]) -> str:
    """A relation list as text (``aliases nothing`` when empty)."""
    return "; ".join(map(str, relations)) or "aliases nothing"


# ---- pytest_cgraph/oracle/compare.py ----
"""Judge two observations: the first observable difference, or ``None``.

The order of checks is the order in which a difference is most useful to a
reader: a crash, then what the call returned, how it aliased, what it did to
its arguments, and finally what backward left in ``.grad``.
"""


import math
from dataclasses import dataclass
from typing import Any

import torch


# torch.testing.assert_close's documented defaults, (rtol, atol) per dtype.
# Integer and bool tensors compare exactly.
_DEFAULT_TOLERANCES = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.complex32: (1e-3, 1e-5),
    torch.complex64: (1.3e-6, 1e-5),
    torch.complex128: (1e-7, 1e-7),
}

_SHOWN_ELEMENTS = 6


@dataclass(frozen=True)
class Tolerance:
    """Closeness for floating values; ``None`` means assert_close's default per dtype."""

    rtol: float | None = None
    atol: float | None = None

    def for_dtype(self, dtype: torch.dtype) -> tuple[float, float]:
        """The (rtol, atol) pair used for tensors of ``dtype``."""
        default_rtol, default_atol = _DEFAULT_TOLERANCES.get(dtype, (0.0, 0.0))
        return (
            default_rtol if self.rtol is None else self.rtol,
            default_atol if self.atol is None else self.atol,
        )


@dataclass(frozen=True)
class TensorSnapshot:
    """A tensor's metadata and a private copy of its values."""

    dtype: torch.dtype
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    storage_offset: int
    device: torch.device
    requires_grad: bool
    values: torch.Tensor

    @classmethod
    def of(cls, tensor: torch.Tensor) -> TensorSnapshot:
        """Copy ``tensor`` now; reading it later may see a replay's overwrite."""
        strided = tensor.layout == torch.strided
        return cls(
            dtype=tensor.dtype,
            shape=tuple(tensor.shape),
            stride=tuple(tensor.stride()) if strided else (),
            storage_offset=tensor.storage_offset() if strided else 0,
            device=tensor.device,
            requires_grad=tensor.requires_grad,
            values=tensor.detach().clone(),
        )

    def significant_layout(self) -> tuple[tuple[int, ...], int]:
        """Strides and offset as far as they can be observed through the tensor.

        The stride of a dimension of size 1 is never used to address an
        element, and a tensor with no elements addresses none: torch's own
        stride checks (``check_significant_strides``) skip both, and so does
        the oracle. -1 stands for a stride or offset that means nothing.
        """
        if not self.values.numel():
            return tuple(-1 for _ in self.stride), -1
        strides = tuple(
            stride if size > 1 else -1 for size, stride in zip(self.shape, self.stride, strict=True)
        )
        return strides, self.storage_offset


def compare_iteration(
    eager: Any, compiled: Any, iteration: int, tolerance: Tolerance
) -> Difference | None:
    """First difference between the two sides' observations of one iteration, or ``None``."""
    if compiled.error is not None:
        return crash_difference(compiled.error, compiled.traceback, iteration, compiled.phase)
    if eager.output_structure != compiled.output_structure:
        return Difference(
            Kind.METADATA,
            iteration,
            Place(Role.STRUCTURE),
            expected=eager.output_structure,
            actual=compiled.output_structure,
        )
    for index, (expected, actual) in enumerate(zip(eager.outputs, compiled.outputs, strict=True)):
        found = compare_values(expected, actual, tolerance, Kind.VALUE, check_layout=False)
        if found is not None:
            place = Place(Role.OUTPUT, index=index, argument=eager.output_arguments[index])
            return found.located(iteration, place)
    for index, (expected, actual) in enumerate(zip(eager.aliasing, compiled.aliasing, strict=True)):
        if expected != actual:
            return Difference(
                Kind.ALIASING,
                iteration,
                Place(Role.ALIASING, index=index),
                facet=_relations_facet(expected) + "_to_" + _relations_facet(actual),
                expected=describe_relations(expected),
                actual=describe_relations(actual),
            )
    if eager.argument_names != compiled.argument_names:
        # A module's parameters or buffers came and went differently.
        missing = [n for n in eager.argument_names if n not in compiled.argument_names]
        extra = [n for n in compiled.argument_names if n not in eager.argument_names]
        return Difference(
            Kind.METADATA,
            iteration,
            Place(Role.ARGUMENT, name=(missing or extra or eager.argument_names)[0]),
            detail="the arguments hold different tensors",
            facet="members",
            expected=", ".join(eager.argument_names),
            actual=", ".join(compiled.argument_names),
        )
    for name, expected, actual in zip(
        eager.argument_names, eager.arguments, compiled.arguments, strict=True
    ):
        found = compare_values(expected, actual, tolerance, Kind.MUTATION, check_layout=True)
        if found is not None:
            return found.located(iteration, Place(Role.ARGUMENT, name=name))
    for name, expected in eager.grads.items():
        actual = compiled.grads.get(name)
        place = Place(Role.GRAD, name=name)
        if (expected is None) != (actual is None):
            return Difference(
                Kind.GRAD,
                iteration,
                place,
                facet="presence",
                expected=_brief_grad(expected),
                actual=_brief_grad(actual),
            )
        if expected is not None:
            found = compare_values(expected, actual, tolerance, Kind.GRAD, check_layout=False)
            if found is not None:
                return found.located(iteration, place, kind=Kind.GRAD)
    return None


def crash_difference(
    error: BaseException, formatted_traceback: str, iteration: int, phase: str
) -> Difference:
    """The compiled side raised during ``phase`` of ``iteration``.

    torch wraps what went wrong inside a compiler (``BackendCompilerFailed``,
    Dynamo's own errors): the type and message that name the bug are the
    innermost ones, so the difference carries those, behind the wrapper's name.
    """
    names = [type(error).__name__]
    cause = error
    while (inner := _wrapped(cause)) is not None:
        cause = inner
        names.append(type(cause).__name__)
    return Difference(
        Kind.CRASH,
        iteration,
        Place(Role.COMPILED, name=phase),
        exception_type=".".join(names),
        message=str(cause) or "(no message)",
        traceback=formatted_traceback,
    )


def _wrapped(error: BaseException) -> BaseException | None:
    """The exception a compiler-stack wrapper carries, if ``error`` is one."""
    inner = getattr(error, "inner_exception", None)
    if isinstance(inner, BaseException):
        return inner
    if type(error).__module__.startswith("torch._dynamo") and error.__cause__ is not None:
        return error.__cause__
    return None


def _relations_facet(relations: tuple[Relation, ...]) -> str:
    return "_".join(sorted({relation.kind for relation in relations})) or "none"


def _brief_grad(grad: TensorSnapshot | None) -> str:
    return "None" if grad is None else f"tensor {_values_text(grad.values)}"


def compare_values(
    expected: Any, actual: Any, tolerance: Tolerance, value_kind: Kind, *, check_layout: bool
) -> Difference | None:
    """Compare one observed value; the result has no iteration or place yet.

    Metadata differences (dtype, shape, device, requires_grad, and with
    ``check_layout`` the significant strides and storage offset, see
    :meth:`TensorSnapshot.significant_layout`) are ``metadata``; differing
    values are ``value_kind``.
    """
    nowhere = Place(Role.OUTPUT)
    if isinstance(expected, TensorSnapshot) != isinstance(actual, TensorSnapshot):
        return Difference(
            Kind.METADATA,
            0,
            nowhere,
            facet="type",
            expected=_type_text(expected),
            actual=_type_text(actual),
        )
    if not isinstance(expected, TensorSnapshot):
        if _plain_equal(expected, actual):
            return None
        return Difference(value_kind, 0, nowhere, expected=repr(expected), actual=repr(actual))
    fields = [
        ("dtype", expected.dtype, actual.dtype),
        ("shape", expected.shape, actual.shape),
        ("device", expected.device, actual.device),
        ("requires_grad", expected.requires_grad, actual.requires_grad),
    ]
    if check_layout and expected.shape == actual.shape:
        (want_strides, want_offset), (got_strides, got_offset) = (
            expected.significant_layout(),
            actual.significant_layout(),
        )
        fields.append(("stride", want_strides, got_strides))
        fields.append(("storage_offset", want_offset, got_offset))
    for field_name, want, got in fields:
        if want != got:
            if field_name == "stride":
                want, got = expected.stride, actual.stride
            return Difference(
                Kind.METADATA,
                0,
                nowhere,
                detail=f"{field_name} differs",
                facet=field_name,
                expected=str(want),
                actual=str(got),
            )
    return value_difference(expected.values, actual.values, tolerance, value_kind)


def value_difference(
    expected: torch.Tensor, actual: torch.Tensor, tolerance: Tolerance, kind: Kind
) -> Difference | None:
    """Compare values of two same-shaped tensors as ``torch.testing.assert_close`` would."""
    expected = expected.detach().cpu()
    actual = actual.detach().cpu()
    if expected.dtype.is_floating_point or expected.dtype.is_complex:
        rtol, atol = tolerance.for_dtype(expected.dtype)
        close = torch.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
    else:
        close = actual == expected
    if bool(close.all()):
        return None
    mismatch = ~close
    wide_expected = _widen(expected)
    wide_actual = _widen(actual)
    abs_diff = (wide_actual - wide_expected).abs()
    abs_diff = torch.where(mismatch, abs_diff, torch.zeros_like(abs_diff))
    rel_diff = abs_diff / wide_expected.abs()  # inf where eager is 0
    first = tuple(int(i) for i in mismatch.nonzero()[0].tolist()) if mismatch.dim() else ()
    return Difference(
        kind,
        0,
        Place(Role.OUTPUT),
        detail=f"{int(mismatch.sum())} of {mismatch.numel()} elements differ",
        max_abs=_finite_max(abs_diff[mismatch]),
        max_rel=_finite_max(rel_diff[mismatch]),
        index=first,
        expected=_values_text(expected),
        actual=_values_text(actual),
    )


def _widen(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.to(torch.complex128 if tensor.dtype.is_complex else torch.float64)


def _finite_max(values: torch.Tensor) -> float:
    values = values.abs() if values.dtype.is_complex else values
    return float(values.nan_to_num(nan=math.inf, posinf=math.inf).max()) if values.numel() else 0.0


def _values_text(tensor: torch.Tensor) -> str:
    flat = tensor.reshape(-1)
    shown = flat[:_SHOWN_ELEMENTS].tolist()
    more = f" ... ({flat.numel()} elements)" if flat.numel() > _SHOWN_ELEMENTS else ""
    if tensor.dim() == 0:
        return repr(tensor.item())
    return f"{shown}{more}"


def _type_text(value: Any) -> str:
    if isinstance(value, TensorSnapshot):
        return f"tensor {value.dtype} {list(value.shape)}"
    return type(value).__name__


def _plain_equal(expected: Any, actual: Any) -> bool:
    try:
        return bool(expected == actual) and type(expected) is type(actual)
    except Exception:
        return False


# ---- pytest_cgraph/oracle/cloning.py ----
"""Deep copies of a program's arguments that keep everything a compiler may key on.

Each side of a check gets its own copy of the arguments, and the copies must
be indistinguishable from the originals to the program: dtype, shape,
strides, storage offset, ``requires_grad``, leaf-ness, ``nn.Parameter``-ness,
an existing ``.grad`` — and aliasing. Two arguments that are views of one
storage in the call are views of one (new) storage in each copy, because
input aliasing is exactly what compiled code handles specially.

Modules and optimizers are copied too: a module deep-copied (parameter
sharing, buffers, grads, training mode kept), an optimizer rebound to its
side's copies of the parameters. Without that, both sides would share one
module, and the eager side's update would be where the compiled side starts.
"""


import copy
from collections.abc import Iterator, Sequence
from typing import Any

import torch


def is_stateful_object(value: Any) -> bool:
    """A module or optimizer: an argument whose tensors live inside it."""
    return isinstance(value, (torch.nn.Module, torch.optim.Optimizer))


def clone_arguments(values: Sequence[Any], device: torch.device | None = None) -> list[Any]:
    """One side's copies of a program's flat arguments: tensors, modules, optimizers.

    Tensors are copied first (aliasing between them kept); modules and
    optimizers are then deep-copied through one memo that already maps each
    tensor argument to its copy, so a parameter passed both inside its
    module and on its own stays one tensor, and an optimizer's parameters
    are its side's copies of the module's. Other values pass through.
    """
    copies = clone_preserving_aliases(values, device)
    memo: dict[int, Any] = {
        id(original): twin
        for original, twin in zip(values, copies, strict=True)
        if isinstance(original, torch.Tensor)
    }
    # Modules before optimizers: an optimizer's parameters then resolve,
    # through the memo, to the copies its module's copy holds.
    order = sorted(
        (i for i, value in enumerate(values) if is_stateful_object(value)),
        key=lambda i: isinstance(values[i], torch.optim.Optimizer),
    )
    for index in order:
        try:
            twin = copy.deepcopy(values[index], memo)
        except RuntimeError as error:
            raise ValueError(
                f"argument {index} ({type(values[index]).__name__}) cannot be copied per side: "
                f"{str(error).splitlines()[0]}"
            ) from None
        if device is not None and isinstance(twin, torch.nn.Module):
            twin.to(device)
        copies[index] = twin
    return copies


def named_state(name: str, value: Any) -> Iterator[tuple[str, torch.Tensor | None]]:
    """The tensors a module or optimizer holds, named by path: ``net.lin.weight``.

    An optimizer's state is named by its parameters' positions in its
    groups: ``opt.state[0].momentum_buffer``.
    """
    if isinstance(value, torch.nn.Module):
        yield from ((f"{name}.{path}", t) for path, t in value.named_parameters())
        yield from ((f"{name}.{path}", t) for path, t in value.named_buffers())
    elif isinstance(value, torch.optim.Optimizer):
        position = 0
        for group in value.param_groups:
            for parameter in group["params"]:
                state = value.state.get(parameter, {})
                for key in sorted(state):
                    if isinstance(state[key], torch.Tensor):
                        yield f"{name}.state[{position}].{key}", state[key]
                position += 1


def storage_key(tensor: torch.Tensor) -> tuple[torch.device, int] | None:
    """Identity of the memory behind ``tensor``, or ``None`` when it has none.

    Zero-byte storages all report address 0 and would look aliased, so they
    are treated as aliasing nothing.
    """
    if tensor.layout != torch.strided:
        return None
    storage = tensor.untyped_storage()
    if storage.nbytes() == 0:
        return None
    return tensor.device, storage.data_ptr()


def is_host_scalar(tensor: torch.Tensor) -> bool:
    """A 0-dim tensor on the CPU: a host value as far as a device program goes."""
    return tensor.dim() == 0 and tensor.device.type == "cpu"


def clone_preserving_aliases(
    values: Sequence[Any], device: torch.device | None = None
) -> list[Any]:
    """Copy every tensor in ``values`` (a flat list); other values pass through.

    With ``device`` set, the copies are made there (arguments of a CUDA run
    built on the CPU) — except 0-dim CPU tensors, which stay on the host:
    they are host scalars, which the CUDA-graph path must handle as such.
    """
    copies: list[Any] = list(values)
    groups: dict[tuple[torch.device, int], list[int]] = {}
    for index, value in enumerate(values):
        if not isinstance(value, torch.Tensor):
            continue
        key = storage_key(value)
        if key is None or is_host_scalar(value):
            copies[index] = _clone_alone(value, device)
        else:
            groups.setdefault(key, []).append(index)
    for indices in groups.values():
        for index, twin in zip(
            indices, _clone_group([values[i] for i in indices], device), strict=True
        ):
            copies[index] = twin
    return copies


def _clone_alone(tensor: torch.Tensor, device: torch.device | None) -> torch.Tensor:
    copy = tensor.detach().clone()
    if device is not None and not is_host_scalar(tensor):
        copy = copy.to(device)
    return _restore_autograd(tensor, copy)


def _clone_group(tensors: list[torch.Tensor], device: torch.device | None) -> list[torch.Tensor]:
    """Copy tensors sharing one storage so that the copies share a new one.

    View-ness is kept as well as aliasing, because AOTAutograd treats a
    mutated input that is a view differently from one that owns its memory:
    an argument that was a view becomes a view (of the copy of the first
    argument that was not, or of a stand-in base over the whole storage).
    """
    new_storage = tensors[0].untyped_storage().clone()
    if device is not None and new_storage.device != device:
        new_storage = new_storage.to(device=device)

    def over_new_storage(
        tensor: torch.Tensor, size: Sequence[int], stride: Sequence[int], offset: int
    ) -> torch.Tensor:
        fresh = torch.empty(0, dtype=tensor.dtype, device=new_storage.device)
        return fresh.set_(new_storage, offset, size, stride)

    owner_index = next((i for i, t in enumerate(tensors) if not t._is_view()), None)
    if owner_index is not None:
        owner = tensors[owner_index]
        base = _restore_autograd(
            owner,
            over_new_storage(owner, owner.size(), owner.stride(), owner.storage_offset()),
        )
    else:
        # Only views were given: stand their base in with a flat tensor over
        # the whole storage, differentiable if any of the views was.
        first = tensors[0]
        base = over_new_storage(first, (new_storage.nbytes() // first.element_size(),), (1,), 0)
        if any(t.requires_grad for t in tensors):
            base.requires_grad_(True)

    copies = []
    for index, tensor in enumerate(tensors):
        if index == owner_index:
            copies.append(base)
        elif tensor._is_view():
            view = base.as_strided(tensor.size(), tensor.stride(), tensor.storage_offset())
            if tensor.requires_grad and not view.requires_grad:
                view.requires_grad_(True)
            elif view.requires_grad and not tensor.requires_grad:
                view = view.detach()
            copies.append(view)
        else:
            plain = over_new_storage(
                tensor, tensor.size(), tensor.stride(), tensor.storage_offset()
            )
            copies.append(_restore_autograd(tensor, plain))
    return copies


def _restore_autograd(original: torch.Tensor, copy: torch.Tensor) -> torch.Tensor:
    """Give ``copy`` the autograd standing of ``original``."""
    if not original.requires_grad:
        if isinstance(original, torch.nn.Parameter):
            return torch.nn.Parameter(copy, requires_grad=False)
        return copy
    if original.is_leaf:
        copy = (
            torch.nn.Parameter(copy)
            if isinstance(original, torch.nn.Parameter)
            else (copy.requires_grad_(True))
        )
        if original.grad is not None:
            copy.grad = original.grad.detach().clone().to(copy.device)
        return copy
    # A non-leaf with no alias among the arguments: a fresh leaf and one
    # differentiable op above it keep it a non-leaf that requires grad.
    return copy.requires_grad_(True).view_as(copy)


# ---- pytest_cgraph/oracle/observe.py ----
"""What one side of a check did in one iteration, frozen so later calls cannot change it.

CUDA-graph replays overwrite their outputs in place, and programs mutate
their inputs, so everything is copied the moment it is observed. The raw
outputs are kept separately by the engine for the retained-output check.
"""


from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch



def snapshot(value: Any) -> Any:
    """Snapshot a tensor; other values (ints, None, strings) are kept as they are."""
    return TensorSnapshot.of(value) if isinstance(value, torch.Tensor) else value


@dataclass
class Observation:
    """One side, one iteration: outputs, arguments after the call, grads, aliasing.

    ``output_arguments`` names, per output, the argument it *is* (returned
    as itself), else ``None``. ``error`` is set when the call or the
    backward raised; ``phase`` says which, ``traceback`` keeps the stack.
    """

    outputs: list[Any] = field(default_factory=list)
    output_arguments: list[str | None] = field(default_factory=list)
    output_structure: str = ""
    arguments: list[Any] = field(default_factory=list)
    argument_names: list[str] = field(default_factory=list)
    grads: dict[str, TensorSnapshot | None] = field(default_factory=dict)
    aliasing: list[tuple[Relation, ...]] = field(default_factory=list)
    error: BaseException | None = None
    phase: str = ""
    traceback: str = ""


def observed_arguments(flat_args: Sequence[Any], names: Sequence[str]) -> list[tuple[str, Any]]:
    """The argument values to observe, by name: each module or optimizer expanded into
    the tensors it holds (``net.lin.weight``), every other argument as itself."""
    observed: list[tuple[str, Any]] = []
    for name, value in zip(names, flat_args, strict=True):
        if is_stateful_object(value):
            observed.extend(named_state(name, value))
        else:
            observed.append((name, value))
    return observed


def describe_aliasing(
    outputs: Sequence[Any], arguments: Sequence[tuple[str, Any]]
) -> list[tuple[Relation, ...]]:
    """For each output, which arguments and earlier outputs it is, or shares memory with.

    Identity (the same tensor object returned twice, or an argument returned
    as itself) is kept apart from storage sharing, since compiled code must
    preserve both.
    """
    relations: list[tuple[Relation, ...]] = []
    for index, out in enumerate(outputs):
        if not isinstance(out, torch.Tensor):
            relations.append(())
            continue
        key = storage_key(out)
        found: list[Relation] = []
        others = [(f"argument {name}", arg) for name, arg in arguments]
        others += [(f"output #{earlier}", outputs[earlier]) for earlier in range(index)]
        for target, other in others:
            if not isinstance(other, torch.Tensor):
                continue
            if other is out:
                found.append(Relation("is", target))
            elif key is not None and storage_key(other) == key:
                found.append(Relation("shares", target))
        relations.append(tuple(found))
    return relations


# ---- pytest_cgraph/oracle/compiling.py ----
"""How the compiled side is compiled, and everything that differs between CUDA and CPU.

Everything device-specific is reached through here (``DeviceOps``,
``mark_step``, ``captured_graph_count``), so the engine stays
device-agnostic and the CUDA-only paths can be driven on CPU by test
doubles. So are the settings under which both sides run: Inductor's
comparable randomness and precision, and the telemetry torch would
otherwise pay for on every compile.
"""


import contextlib
import importlib
import logging
import re
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

#: Inductor modes accepted as backend names; ``torch.compile(mode=...)`` selects them.
INDUCTOR_MODES = ("reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")

#: Backend names whose compiled code goes through CUDA-graph trees on CUDA.
CUDAGRAPH_BACKENDS = frozenset({"cudagraphs", "reduce-overhead", "max-autotune"})

#: Backend names built on Inductor: their ladder has an ``inductor`` rung.
INDUCTOR_BACKENDS = frozenset({"inductor", *INDUCTOR_MODES})

#: The documented error CUDA-graph trees raise when an output of an earlier
#: replay is read after a later replay overwrote it. Reading such an output and
#: getting this error is correct behaviour, not a failure.
OVERWRITTEN_OUTPUT_MESSAGE = "overwritten by a subsequent run"


@dataclass(frozen=True)
class Backend:
    """One way of compiling the program under test.

    ``compiler`` is what ``torch.compile(backend=...)`` receives; ``mode`` is
    set instead for Inductor modes such as ``reduce-overhead``.
    """

    name: str
    compiler: str | Callable[..., Any]
    mode: str | None = None
    uses_cudagraphs: bool = False

    def compile(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Wrap ``fn`` for compilation; compiling itself happens on the first call."""
        if self.mode is not None:
            return torch.compile(fn, mode=self.mode)
        return torch.compile(fn, backend=self.compiler)

    @classmethod
    def named(cls, spec: str) -> Backend:
        """The backend a name stands for: an Inductor mode, ``package.module:attr``,
        or a registered backend name (``torch.compile`` itself rejects an unknown one)."""
        if spec in INDUCTOR_MODES:
            return cls(spec, "inductor", mode=spec, uses_cudagraphs=spec in CUDAGRAPH_BACKENDS)
        if ":" in spec:
            module_name, _, attr = spec.partition(":")
            compiler = getattr(importlib.import_module(module_name), attr)
            return cls(
                spec, compiler, uses_cudagraphs=bool(getattr(compiler, "uses_cudagraphs", 0))
            )
        return cls(spec, spec, uses_cudagraphs=spec in CUDAGRAPH_BACKENDS)


class DeviceOps(Protocol):
    """What the engine must do differently on a device with asynchronous kernels."""

    def synchronize(self) -> None:
        """Wait for queued kernels so that values read next are final."""

    def manual_seed(self, seed: int) -> None:
        """Seed every random stream the program may draw from."""


class CpuOps:
    """CPU kernels are synchronous; seeding torch's default generator suffices."""

    def synchronize(self) -> None:
        """Nothing is queued on CPU."""

    def manual_seed(self, seed: int) -> None:
        """Seed the CPU generator (and CUDA's lazily, as ``torch.manual_seed`` does)."""
        torch.manual_seed(seed)


@dataclass
class CudaOps:
    """Synchronise before reading, and seed the CUDA generators explicitly."""

    device: torch.device

    def synchronize(self) -> None:
        """Block until ``device`` has finished everything queued."""
        torch.cuda.synchronize(self.device)

    def manual_seed(self, seed: int) -> None:
        """Seed CPU and every CUDA generator: a program may draw on either."""
        torch.manual_seed(seed)
        torch.cuda.manual_seed_all(seed)


def device_ops_for(device: torch.device | None) -> DeviceOps:
    """Pick the device handling for a run on ``device``."""
    if device is not None and device.type == "cuda":
        return CudaOps(device)
    return CpuOps()


def mark_step() -> None:
    """Tell CUDA-graph trees that a new iteration starts (harmless without CUDA)."""
    torch.compiler.cudagraph_mark_step_begin()


def reset_compiler_state() -> None:
    """Forget compiled code and CUDA-graph trees, so checks do not leak into each other.

    ``torch._dynamo.reset`` resets the trees only when CUDA is available; the
    explicit call keeps the step counter of CPU-side doubles fresh too.
    """
    from torch._inductor.cudagraph_trees import reset_cudagraph_trees

    torch._dynamo.reset()
    reset_cudagraph_trees()


def captured_graph_count(backend: Backend) -> int:
    """Graphs really captured so far by ``backend``, from the trees' own records.

    Only CUDA-graph trees are asked; nothing a backend says of itself counts.
    """
    if not backend.uses_cudagraphs or not torch.cuda.is_available():
        return 0
    from torch._inductor import cudagraph_trees

    if not torch._C._is_key_in_tls("tree_manager_containers"):
        return 0
    containers = cudagraph_trees.get_obj(cudagraph_trees.local, "tree_manager_containers")
    count = 0
    for container in containers.values():
        manager = container.tree_manager
        if manager is None or manager.roots is None:
            continue
        pending = [node for nodes in manager.roots.values() for node in nodes]
        while pending:
            node = pending.pop()
            count += 1
            pending.extend(child for kids in node.children.values() for child in kids)
    return count


@dataclass
class CompileEvidence:
    """What torch itself said about compiling: graphs compiled, CUDA-graph skips."""

    compiles: int = 0
    skips: int = 0
    skip_reasons: Counter[str] = field(default_factory=Counter)


def skip_reason(message: str) -> str:
    """Reduce torch's skip message to a reason worth grouping by.

    ``"skipping cudagraphs due to skipping cudagraphs due to cpu device
    (primals_1). Found from : ..."`` becomes ``"cpu device"``.
    """
    first = message.strip().splitlines()[0] if message.strip() else "unknown"
    first = first.split(". Found from")[0]
    while first.startswith("skipping cudagraphs due to "):
        first = first[len("skipping cudagraphs due to ") :]
    first = re.sub(r"\s*\([^)]*\)\s*$", "", first).strip().rstrip(".:")
    return first or "unknown"


def drop_idle_trace_handler() -> None:
    """Remove torch's structured-trace handler when it has nowhere to write.

    While ``torch.__trace`` has a handler, every compile builds its
    structured-trace records (stacks, metadata, payloads): about a tenth of
    a small program's compile. Without ``TORCH_TRACE``, torch's own
    ``LazyTraceHandler`` removes itself at its first record; this does the
    same up front. A handler with a trace directory (``TORCH_TRACE`` set) is
    kept: whoever set it wants the trace.
    """
    trace_log = logging.getLogger("torch.__trace")
    for handler in list(trace_log.handlers):
        if (
            type(handler).__name__ == "LazyTraceHandler"
            and getattr(handler, "root_dir", "") is None
            and getattr(handler, "stream", "") is None
        ):
            trace_log.removeHandler(handler)


@contextmanager
def without_guard_profiling() -> Iterator[None]:
    """Skip Dynamo's guard-latency measurement while the block compiles.

    After building a frame's guards, Dynamo flushes the cache and times one
    evaluation of them (``profile_guard_manager``), for a metric only: about
    18 ms per compiled frame on these machines, an eighth of a small
    program's check. The guards themselves, and their check on the frame
    that created them, are untouched.
    """
    from torch._dynamo import guards

    original = getattr(guards, "profile_guard_manager", None)
    if original is None:
        yield
        return
    guards.profile_guard_manager = lambda *args, **kwargs: 0.0
    try:
        yield
    finally:
        guards.profile_guard_manager = original


class _SkipCollector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.reasons: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "skipping cudagraphs" in message:
            self.reasons[skip_reason(message)] += 1


@contextmanager
def collect_compile_evidence() -> Iterator[CompileEvidence]:
    """Count compiles and CUDA-graph skips while the block runs.

    Skip messages are taken from torch's ``cudagraphs`` log and kept from the
    user's terminal: they are reported in the check's summary instead.
    """
    from torch._dynamo.utils import counters
    from torch._inductor.cudagraph_utils import cudagraphs_log

    evidence = CompileEvidence()
    graphs_before = counters["stats"]["unique_graphs"]
    skips_before = counters["inductor"]["cudagraph_skips"]
    collector = _SkipCollector()
    propagate = cudagraphs_log.propagate
    cudagraphs_log.addHandler(collector)
    cudagraphs_log.propagate = False
    drop_idle_trace_handler()
    try:
        yield evidence
    finally:
        cudagraphs_log.removeHandler(collector)
        cudagraphs_log.propagate = propagate
        evidence.compiles = counters["stats"]["unique_graphs"] - graphs_before
        evidence.skips = counters["inductor"]["cudagraph_skips"] - skips_before
        evidence.skip_reasons = collector.reasons
        unexplained = evidence.skips - sum(collector.reasons.values())
        if unexplained > 0:
            evidence.skip_reasons["reason not logged"] += unexplained


#: Inductor settings under which its results are comparable with eager's:
#: random numbers drawn with eager's kernels, low-precision intermediates
#: rounded as eager rounds them.
COMPARABLE_INDUCTOR = {"fallback_random": True, "emulate_precision_casts": True}


def comparable_inductor() -> AbstractContextManager[Any]:
    """Inductor's config patched to :data:`COMPARABLE_INDUCTOR` while the block runs."""
    import torch._inductor.config as inductor_config

    return inductor_config.patch(**COMPARABLE_INDUCTOR)


def compiled_autograd_engine(backend: Backend, enabled: bool) -> AbstractContextManager[Any]:
    """Compiled autograd around the compiled side's call and backward, when asked for.

    The backward graph is then traced by the autograd engine and compiled
    with the same backend, instead of AOTAutograd's local backward alone.
    """
    if not enabled:
        return contextlib.nullcontext()
    from torch._dynamo import compiled_autograd

    return compiled_autograd._enable(backend.compile)


def grad_mode(name: str) -> AbstractContextManager[Any]:
    """The ambient grad mode a program's calls run under (the protocol's ``GRAD_MODE``)."""
    if name == "no_grad":
        return torch.no_grad()
    if name == "inference_mode":
        return torch.inference_mode()
    return contextlib.nullcontext()


# ---- pytest_cgraph/oracle/engine.py ----
"""Run one program eagerly and compiled for N iterations, and judge every iteration.

Per iteration both sides start from identical arguments and the same RNG
seed (a new seed each iteration, so a random stream frozen at record time
shows); after the call everything observable is snapshotted at once,
because a CUDA-graph replay overwrites its outputs in place. After the last
iteration the raw outputs kept from every iteration are read again: each
must still equal eager's or raise the documented "overwritten by a
subsequent run" error.
"""


import inspect
import traceback
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
import torch.utils._pytree as pytree


BackwardPolicy = Literal["auto"] | bool
FreshArgs = Callable[[int], Sequence[Any]]
#: ``advance(k, args, outputs)``: the arguments of call k+1 from call k's, per side.
Advance = Callable[[int, tuple[Any, ...], tuple[Any, ...]], Sequence[Any]]


@dataclass(frozen=True)
class CheckSettings:
    """How one check runs.

    ``ops`` is the device handling (synchronise, seed), chosen from the
    arguments' device when ``None``; tests pass a recording double to drive
    the CUDA path on CPU.
    """

    backend: Backend
    iters: int = 5
    device: torch.device | None = None
    backward: BackwardPolicy = "auto"
    tolerance: Tolerance = field(default_factory=Tolerance)
    seed: int = 0
    ops: DeviceOps | None = None
    compiled_autograd: bool = False
    grad_mode: str = "grad"


@dataclass(frozen=True)
class CheckReport:
    """What a passing check did, stated from torch's own counters and logs.

    ``graphs_captured`` counts graphs really recorded by CUDA-graph trees;
    on CPU it is 0 and ``skip_reasons`` says why torch skipped capture.
    """

    iterations: int
    backend: str
    device: str
    compiles: int
    graphs_captured: int
    graphs_skipped: int
    skip_reasons: dict[str, int]
    outputs_overwritten: int
    tensor_outputs: int = 0

    def summary(self) -> str:
        """One line for a terminal."""
        reasons = ", ".join(f"{reason} x{count}" for reason, count in self.skip_reasons.items())
        skipped = f"{self.graphs_skipped} skipped" + (f" ({reasons})" if reasons else "")
        return (
            f"{self.iterations} iterations on {self.device} with {self.backend}: "
            f"{self.compiles} graph(s) compiled, {self.graphs_captured} captured, {skipped}"
        )


def check_source(
    source: str,
    *,
    backend: Backend,
    device: torch.device | None = None,
    iters: int | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    seed: int = 0,
) -> CheckReport:
    """Check a program's source (see :mod:`~pytest_cgraph.oracle.protocol`).

    The source is the only thing executed, so what is checked here is
    exactly what a repro file holds. Arguments given here win over the
    source's own ``ITERS``, ``RTOL`` and ``ATOL``.
    """
    spec = ProgramSpec.of(load_source(source))
    settings = CheckSettings(
        backend=backend,
        iters=iters if iters is not None else spec.iters,
        device=device,
        tolerance=Tolerance(
            rtol if rtol is not None else spec.rtol, atol if atol is not None else spec.atol
        ),
        seed=seed,
        compiled_autograd=spec.compiled_autograd,
        grad_mode=spec.grad_mode,
    )
    compiled = None
    if spec.compiled_names != ("program",):
        # The compiled side's own copy of the source, with the named
        # functions compiled: ``program`` is then Python glue calling them.
        glue = load_source(source)
        for name in spec.compiled_names:
            glue[name] = backend.compile(glue[name])
        compiled = glue["program"]
    args = () if spec.fresh_inputs else tuple(spec.inputs(1))
    return run_check(
        spec.program,
        args,
        spec.inputs if spec.fresh_inputs else None,
        settings,
        spec.advance,
        compiled=compiled,
    )


def run_check(
    fn: Callable[..., Any],
    args: Sequence[Any],
    fresh_args: FreshArgs | None,
    settings: CheckSettings,
    advance: Advance | None = None,
    compiled: Callable[..., Any] | None = None,
) -> CheckReport:
    """The iteration loop: ``fn`` eagerly beside ``compiled`` (``fn`` compiled by default).

    ``advance``, when given, derives each side's next arguments from its own
    arguments and outputs (parameter updates, outputs fed back); it runs the
    same code on both sides, so the sides stay comparable.

    Warnings are recorded and dropped: torch's compile-time notices must not
    reach the user's terminal, nor turn into exceptions (and so into false
    crashes) under ``-W error``.
    """
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        reset_compiler_state()
        try:
            return _iterate(
                fn, compiled or settings.backend.compile(fn), args, fresh_args, settings, advance
            )
        finally:
            reset_compiler_state()


@dataclass
class _Side:
    """One side's function and its current flat arguments."""

    fn: Callable[..., Any]
    compiled: bool
    flat: list[Any] = field(default_factory=list)


def _iterate(
    fn: Callable[..., Any],
    compiled_fn: Callable[..., Any],
    args: Sequence[Any],
    fresh_args: FreshArgs | None,
    settings: CheckSettings,
    advance: Advance | None,
) -> CheckReport:
    eager, compiled = _Side(fn, False), _Side(compiled_fn, True)
    retained: list[tuple[list[Any], list[Any]]] = []
    device, ops = settings.device, settings.ops
    spec: Any = None
    names: list[str] = []
    tensor_outputs = 0
    with collect_compile_evidence() as evidence, comparable_inductor(), without_guard_profiling():
        for k in range(1, settings.iters + 1):
            if fresh_args is not None or spec is None:
                base = tuple(fresh_args(k)) if fresh_args is not None else tuple(args)
                flat, spec = pytree.tree_flatten(base)
                names = _argument_names(fn, base)
                device = device or _device_of(flat)
                ops = ops or device_ops_for(device)
                eager.flat = clone_arguments(flat, settings.device)
                compiled.flat = clone_arguments(flat, settings.device)
            assert ops is not None
            seen, eager_raw = _run_side(eager, spec, names, k, settings, ops)
            if seen.error is not None:
                raise InvalidProgram(k, seen.phase, seen.error)
            if k == 1:
                tensor_outputs = sum(isinstance(o, TensorSnapshot) for o in seen.outputs)
            with compiled_autograd_engine(settings.backend, settings.compiled_autograd):
                compiled_seen, compiled_raw = _run_side(compiled, spec, names, k, settings, ops)
            difference = compare_iteration(seen, compiled_seen, k, settings.tolerance)
            if difference is not None:
                raise EquivalenceError(difference, _context(settings, device))
            retained.append((eager_raw, compiled_raw))
            if advance is not None and k < settings.iters:
                for side, raw in ((eager, eager_raw), (compiled, compiled_raw)):
                    side.flat = _advanced(advance, k, side.flat, spec, raw)
        assert ops is not None
        ops.synchronize()
        difference, overwritten = _check_retained(retained, settings)
        retained.clear()
        if difference is not None:
            raise EquivalenceError(difference, _context(settings, device))
        captured = captured_graph_count(settings.backend)
    return CheckReport(
        iterations=settings.iters,
        backend=settings.backend.name,
        device=str(device),
        compiles=evidence.compiles,
        graphs_captured=captured,
        graphs_skipped=evidence.skips,
        skip_reasons=dict(evidence.skip_reasons),
        outputs_overwritten=overwritten,
        tensor_outputs=tensor_outputs,
    )


def _run_side(
    side: _Side,
    spec: pytree.TreeSpec,
    names: list[str],
    iteration: int,
    settings: CheckSettings,
    ops: DeviceOps,
) -> tuple[Observation, list[Any]]:
    """One call of one side, observed; returns the observation and the raw outputs."""
    observation = Observation()
    ops.manual_seed(settings.seed + iteration)
    if side.compiled and settings.backend.uses_cudagraphs:
        mark_step()
    try:
        with grad_mode(settings.grad_mode):
            result = side.fn(*pytree.tree_unflatten(side.flat, spec))
        ops.synchronize()
    except Exception as exc:
        return _failed(observation, exc, "call"), []
    flat_out, out_spec = pytree.tree_flatten(result)
    try:
        arguments = observed_arguments(side.flat, names)
        _observe_outputs(observation, flat_out, out_spec, arguments)
    except Exception as exc:  # e.g. reading a view torch has invalidated
        return _failed(observation, exc, "reading outputs"), flat_out
    roots = [
        out
        for out in flat_out
        if isinstance(out, torch.Tensor) and out.requires_grad and out.dtype.is_floating_point
    ]
    if settings.backward is True and not roots and not side.compiled:
        raise ConfigurationError("backward=True, but no floating output requires grad")
    phase = "backward"
    try:
        if roots and settings.backward is not False:
            torch.autograd.backward(torch.stack([out.sum().double() for out in roots]).sum())
            ops.synchronize()
        phase = "reading arguments"
        arguments = observed_arguments(side.flat, names)
        observation.argument_names = [name for name, _ in arguments]
        observation.arguments = [snapshot(value) for _, value in arguments]
        observation.grads = {
            name: None if value.grad is None else TensorSnapshot.of(value.grad)
            for name, value in arguments
            if isinstance(value, torch.Tensor) and value.is_leaf and value.requires_grad
        }
    except Exception as exc:
        return _failed(observation, exc, phase), flat_out
    return observation, flat_out


def _observe_outputs(
    observation: Observation,
    flat_out: list[Any],
    out_spec: pytree.TreeSpec,
    arguments: list[tuple[str, Any]],
) -> None:
    observation.output_structure = str(out_spec)
    # An output that is an argument itself is named so: its difference is a
    # different bug from one in a freshly computed output.
    by_identity = {id(value): name for name, value in arguments if isinstance(value, torch.Tensor)}
    observation.output_arguments = [by_identity.get(id(out)) for out in flat_out]
    observation.outputs = [snapshot(out) for out in flat_out]
    observation.aliasing = describe_aliasing(flat_out, arguments)


def _advanced(
    advance: Advance, k: int, flat_args: list[Any], spec: pytree.TreeSpec, outputs: list[Any]
) -> list[Any]:
    current = tuple(pytree.tree_unflatten(flat_args, spec))
    following = advance(k, current, tuple(outputs))
    flat, following_spec = pytree.tree_flatten(tuple(following))
    if following_spec != spec:
        raise ConfigurationError("advance() must return arguments of the same structure")
    return flat


def _failed(observation: Observation, exc: Exception, phase: str) -> Observation:
    observation.error = exc
    observation.phase = phase
    observation.traceback = "".join(traceback.format_exception(exc))
    return observation


def _check_retained(
    retained: list[tuple[list[Any], list[Any]]], settings: CheckSettings
) -> tuple[Difference | None, int]:
    """Re-read every output kept from every iteration; count documented overwrites."""
    overwritten = 0
    for k, (eager_raw, compiled_raw) in enumerate(retained, start=1):
        for index, (expected, actual) in enumerate(zip(eager_raw, compiled_raw, strict=True)):
            if not isinstance(expected, torch.Tensor) or not isinstance(actual, torch.Tensor):
                continue
            place = Place(Role.RETAINED, index=index, iteration=k)
            try:
                now = TensorSnapshot.of(actual)
            except RuntimeError as exc:
                if OVERWRITTEN_OUTPUT_MESSAGE in str(exc):
                    overwritten += 1
                    continue
                failed = _failed(Observation(), exc, "re-read")
                crash = crash_difference(exc, failed.traceback, k, "re-read")
                return crash, overwritten
            found = compare_values(
                TensorSnapshot.of(expected),
                now,
                settings.tolerance,
                Kind.STALE_OUTPUT,
                check_layout=False,
            )
            if found is not None:
                return found.located(k, place, kind=Kind.STALE_OUTPUT), overwritten
    return None, overwritten


def _argument_names(fn: Callable[..., Any], args: tuple[Any, ...]) -> list[str]:
    """Readable names of the flat arguments: ``x``, ``pair[1]``, ``args[3]``."""
    try:
        parameters = [
            p.name
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        parameters = []
    names = []
    for index, value in enumerate(args):
        top = parameters[index] if index < len(parameters) else f"args[{index}]"
        paths, _ = pytree.tree_flatten_with_path(value)
        names.extend(top + pytree.keystr(path) for path, _ in paths)
    return names


def _context(settings: CheckSettings, device: torch.device | None) -> str:
    return f"(backend {settings.backend.name}, device {device}, {settings.iters} iterations)"


def _device_of(flat: Sequence[Any]) -> torch.device:
    for leaf in flat:
        if isinstance(leaf, torch.Tensor):
            return leaf.device
    return torch.device("cpu")


# ---- pytest_cgraph/oracle/ladder.py ----
"""The ladder of compile layers: which is the first that diverges from eager.

A failure found with one backend is re-checked with each layer of the
compile stack, lowest first: ``eager`` (Dynamo's capture alone), then
``aot_eager`` (AOTAutograd's functionalization), then ``cudagraphs`` (the
CUDA-graph backend; on CPU its front half), then ``inductor`` for
Inductor-based backends and ``reduce-overhead`` on CUDA. The first rung
that differs says where the bug lives, and whether it is specific to the
CUDA-graph path (the rungs below agree with eager).
"""


from dataclasses import dataclass

import torch


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
) -> list[Rung]:
    """Check ``source`` on each rung, lowest first; stop at the first that diverges."""
    climbed = []
    for name in rungs_for(backend, str(device or "cpu")):
        try:
            check_source(source, backend=Backend.named(name), device=device, iters=iters)
        except EquivalenceError as error:
            climbed.append(Rung(name, difference=error.difference))
            if stop_at_first:
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


def first_diverging(rungs: list[Rung]) -> tuple[str | None, bool]:
    """The first rung that diverges (``None``: only the backend under test does), and
    whether the failure is specific to the CUDA-graph path."""
    for rung in rungs:
        if rung.diverges:
            return rung.name, rung.name in CUDAGRAPH_RUNGS
    return None, False


# ---- pytest_cgraph/oracle/driver.py ----
"""What a repro file does when run: replay its program, say in one line whether the bug is there.

``python FILE`` prints one line and exits 1 while eager and compiled still
differ, 0 once they agree (details, torch's traceback included, go to
stderr); ``--backend NAME`` replays it against another backend;
``--issue`` prints a bug report in the form PyTorch's compiler bug template
asks for. Under pytest the file's test fails while the bug is there.
"""


import argparse
import faulthandler
import importlib
import platform
import sys
import warnings
from dataclasses import dataclass

import torch



@dataclass(frozen=True)
class ReproCase:
    """A repro file's program and how it was found to fail.

    ``signature`` is the base signature of the failure the file was written
    for; ``modules`` are imported first (they register the backend).
    """

    source: str
    backend: str
    device: str = "cpu"
    modules: tuple[str, ...] = ()
    timeout: float | None = None
    signature: str = ""
    seed: int = 0


@dataclass(frozen=True)
class Replay:
    """What replaying a repro found with one backend."""

    backend: str
    difference: Difference | None = None
    invalid: str | None = None

    def same_as(self, signature: str) -> bool:
        """The replay failed the way the file was written for."""
        return self.difference is not None and self.difference.signature == signature

    def line(self, signature: str) -> str:
        """The one line ``python FILE`` prints."""
        if self.difference is None:
            why = (
                f"eager itself raised ({self.invalid})"
                if self.invalid
                else "eager and compiled agree"
            )
            return f"NOT REPRODUCED ({self.backend}): {why}"
        if not signature or self.same_as(signature):
            return f"REPRODUCED ({self.backend}): {self.difference.headline()}"
        return (
            f"REPRODUCED DIFFERENTLY ({self.backend}): {self.difference.headline()} "
            f"[was {signature}, now {self.difference.signature}]"
        )


def replay(case: ReproCase, backend: str | None = None) -> Replay:
    """Check the repro's program once, as the campaign checked it."""
    name = backend or case.backend
    for module in case.modules:
        importlib.import_module(module)
    device = torch.device(case.device) if case.device else None
    with warnings.catch_warnings(), collect_compile_evidence():  # torch's notices stay quiet
        warnings.simplefilter("ignore")
        try:
            check_source(case.source, backend=Backend.named(name), device=device, seed=case.seed)
        except EquivalenceError as error:
            return Replay(name, difference=error.difference)
        except InvalidProgram as invalid:
            return Replay(name, invalid=invalid.reason)
    return Replay(name)


def assert_fixed(case: ReproCase) -> None:
    """The file's test: fails while eager and compiled differ."""
    found = replay(case)
    assert found.difference is None, found.line(case.signature)


def issue_report(case: ReproCase, backend: str | None = None) -> str:
    """A Markdown bug report following PyTorch's compiler bug template."""
    name = backend or case.backend
    for module in case.modules:
        importlib.import_module(module)
    found = replay(case, name)
    spec = ProgramSpec.of(load_source(case.source))
    device = torch.device(case.device) if case.device else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rungs = climb(case.source, name, device, None, stop_at_first=False)
    if not any(rung.name == name for rung in rungs):
        rungs.append(Rung(name, difference=found.difference, invalid=found.invalid))
    headline = found.difference.headline() if found.difference else "no difference (fixed?)"
    cuda = (
        f"CUDA {torch.version.cuda}, {torch.cuda.get_device_name()}"
        if case.device.startswith("cuda")
        else "none used (CPU run)"
    )
    rows = "\n".join(f"| `{rung.name}` | {rung.verdict()} |" for rung in rungs)
    observed = found.difference.describe(verbose=True) if found.difference else found.line("")
    return f"""### 🐛 Describe the bug

`torch.compile` (backend `{name}`) differs from eager on this program: {headline}

The program runs {spec.iters} iterations eagerly and compiled, side by side, from
identical inputs and RNG seeds (seed {case.seed} + iteration), comparing outputs,
input mutations, gradients, aliasing and outputs retained across iterations.

```python
{case.source.rstrip()}
```

What each layer of the compile stack does with it (lowest first):

| layer | result |
|---|---|
{rows}

Observed:

```
{observed}
```

Settings of the check: Inductor config {COMPARABLE_INDUCTOR} (random ops use eager's
kernels; low-precision rounding as eager), iterations {spec.iters}, compiled autograd
{spec.compiled_autograd}, grad mode {spec.grad_mode}, device {case.device}.

Repro: save this report's program with the driver as a file (pytest-cgraph writes it as
a repro file) and run `python FILE` (exit 1 while the bug is there) or
`python FILE --backend aot_eager` to compare another backend.

### Versions

- torch {torch.__version__}
- Python {platform.python_version()} on {platform.platform()}
- GPU: {cuda}
"""


def main(case: ReproCase, argv: list[str] | None = None) -> None:
    """``python FILE [--backend NAME] [--issue]``."""
    parser = argparse.ArgumentParser(description="Replay a pytest-cgraph repro.")
    parser.add_argument("--backend", default=case.backend, help="backend to replay against")
    parser.add_argument("--issue", action="store_true", help="print a Markdown bug report")
    options = parser.parse_args(argv)
    faulthandler.enable()  # a crash of the process shows where it happened
    if options.issue:
        print(issue_report(case, options.backend))
        sys.exit(0)
    if case.timeout:
        # A hang reproduces as faulthandler's dump and exit 1 after TIMEOUT.
        faulthandler.dump_traceback_later(case.timeout, exit=True)
    found = replay(case, options.backend)
    faulthandler.cancel_dump_traceback_later()
    print(found.line(case.signature), flush=True)
    if found.difference is not None:
        print(found.difference.describe(verbose=True), file=sys.stderr)
    sys.exit(1 if found.difference is not None else 0)


REPRO = ReproCase(
    source=PROGRAM_SOURCE,
    backend=BACKEND,
    device=DEVICE,
    modules=tuple(BACKEND_MODULES),
    timeout=TIMEOUT,
    signature=SIGNATURE,
)


def test_aliasing_aliasing_shares_argument_to_is_argument_aot_eager():
    assert_fixed(REPRO)


if __name__ == "__main__":
    main(REPRO)
