"""What a difference between eager and compiled is, and the name of the bug it shows.

A :class:`Difference` is structured (its kind, a :class:`Place`, a facet,
the exception's type and message), so that its *signature* — the name of
the bug it shows, used to de-duplicate repro files and to recognise known
bugs — is computed from fields, never parsed back from text. Torch-free:
the plugin carries differences in reports and reads them while reporting.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import re
from dataclasses import dataclass
from typing import Any, Literal


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


#: The engine's frames that run one side of an iteration: in the stack dump of
#: a process that died, the innermost of them says which side killed it.
EAGER_FRAME = "_run_eager_side"
COMPILED_FRAME = "_run_compiled_side"


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
        return str(role.value)

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
        return str(self.role.value)


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
        message = self.message
        if self.exception_type:
            exception_type, message = _error_named(self.exception_type, message)
            parts.append(exception_type)
        if message and self.kind is not Kind.TIMEOUT:
            parts.append(message_key(message))
        return "-".join(filter(None, (_slug(part) for part in parts)))

    @property
    def kin_signature(self) -> str | None:
        """The signature with the autograd nodes its message names blanked, or ``None``
        where it names none.

        autograd's checks name the node that made the tensor they fault
        (``output 0 of MulBackward0``, ``of torch::autograd::CopyBackwards``,
        ``of CompiledFunction``): the program's op, not the bug. An entry whose
        signature differs only there is one mechanism met through another
        op, and the registry may claim it by its calls (:func:`kin_signature`).
        """
        if not self.exception_type or not self.message or self.kind is Kind.TIMEOUT:
            return None
        return kin_signature(self.signature, self.exception_type, self.message)

    @property
    def symptom(self) -> str:
        """The signature without the exception: what differs, where (and which facet).

        The ladder asks a rung for the same symptom, not the same signature:
        one bug raises a wrapped error on one rung (``BackendCompilerFailed``)
        and the bare one on the next, while a grad lost on one rung and a
        crash on the next are two bugs.
        """
        parts = [self.kind.value, self.place.token, self.facet or ""]
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


#: The wrapper torch puts around an error raised while the backend compiles.
#: The same check raises it bare when it fires at run time instead (a graph
#: compiled at call 1, the check at call 2): one bug, so signatures drop it.
_COMPILE_WRAPPER = "BackendCompilerFailed."


def _unwrapped(exception_type: str) -> str:
    """``BackendCompilerFailed.RuntimeError`` -> ``RuntimeError``; other types as they are."""
    return exception_type.removeprefix(_COMPILE_WRAPPER) or exception_type


#: The documented error CUDA-graph trees raise when an output of an earlier
#: replay is read after a later replay overwrote it.
OVERWRITTEN_OUTPUT_MESSAGE = "overwritten by a subsequent run"

#: The wrapper Dynamo puts around an error raised while it traces: the
#: overwritten-output error meets it when Dynamo wraps a kept tensor (an
#: optimizer's state, on a recompile) and is raised bare when the program
#: reads one. One mechanism (cg-generation-invalidates-kept-tensors), so its
#: signature drops the wrapper; other wrapped errors keep theirs, as recorded.
_TRACING_WRAPPER = "InternalTorchDynamoError"
_INNER_ERROR = re.compile(r"^(\w+): (.*)$", re.DOTALL)


def _error_named(exception_type: str, message: str | None) -> tuple[str, str | None]:
    """The error a signature names: the overwritten-output error unwrapped from Dynamo's."""
    if exception_type == _TRACING_WRAPPER and message and OVERWRITTEN_OUTPUT_MESSAGE in message:
        inner = _INNER_ERROR.match(message.strip())
        if inner is not None:
            return inner.group(1), inner.group(2)
    return _unwrapped(exception_type), message


def first_line(text: str) -> str:
    """The first non-blank line of ``text``."""
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()
    return ""


# Dynamo's structured errors open with a generic line ("RuntimeError when
# making fake tensor call") and name what failed in an ``Explanation:``
# paragraph, ending in the inner error (``got ValueError('...')``). The
# paragraph runs on over indented lines where an argument's repr wraps (a
# FakeTensor with a grad_fn or a dtype), up to the next ``Name:`` field
# (``Hint:``, ``Developer debug context:``) or a blank line.
_EXPLANATION = re.compile(
    r"^\s*Explanation:\s*(.*?)(?=\n\s*\n|\n\s*[A-Z][A-Za-z ]*:\s|\Z)",
    re.MULTILINE | re.DOTALL,
)


def bug_line(text: str) -> str:
    """The line that names the bug: the first, and Dynamo's explanation's inner error if any.

    The inner error alone names the bug: the call Dynamo failed on (its op,
    its arguments' shapes) is the program's, so two ops that meet one
    mechanism share a line.
    """
    head = first_line(text)
    explanation = _EXPLANATION.search(text)
    if explanation is None:
        return head
    detail = " ".join(explanation.group(1).split())
    _, got, inner = detail.rpartition(" got ")
    if not got:
        return f"{head}: {detail}"
    # ``ValueError('...')`` -> ``ValueError: ...``: the message, not a quote to blank.
    error = _ERROR_REPR.match(inner)
    message = error.group(3) if error else inner
    # Its first line: what follows (a C++ error's "Exception raised from ..." and
    # its frames) names the machine (addresses, the install's library paths),
    # not the bug, and would key one failure differently on every machine.
    message = message.split("\\n", 1)[0]
    return f"{head}: {error.group(1)}: {message}" if error else f"{head}: {message}"


_ERROR_REPR = re.compile(r"^(\w+)\((['\"])(.*)\2\)$")


_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
# A tensor's legacy type name: its dtype and device, not the bug
# ("[torch.FloatTensor [1]]", "[CPUBFloat16Type [2, 3]]", "torch.cuda.HalfTensor").
_TENSOR_TYPE = re.compile(
    r"\b(?:torch\.(?:cuda\.)?[A-Za-z0-9]+Tensor|(?:CPU|CUDA)[A-Za-z0-9]+Type)\b"
)
_QUOTED = re.compile(r"(?<![A-Za-z0-9])(['\"`])[^'\"`]*?\1")
_SIZE = re.compile(r"torch\.Size\(\[[^\]]*\]\)")
# A shape or size list, the empty one (a 0-dim tensor's ``()``) included;
# not a call's parentheses (``f()``) or an index (``x[0]``).
_SHAPE = re.compile(r"(?<![\w\])])[\[(]\s*(?:-?\d+(?:\s*,\s*-?\d+)*\s*,?)?\s*[\])]")
_NUMBERED_NAME = re.compile(r"\b[A-Za-z_]+\d+(?:_\d+)*\b")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
# Dynamo's "Guard failed on the same frame it was created" quotes the guard
# and the user code it came from: the program's, not the bug's.
_GUARD_REASON = re.compile(r"\s*Guard fail reason:.*$")
# CUDA-graph trees' "accessing tensor output of CUDAGraphs that has been
# overwritten" quotes where the tensor was made: the program's line, a
# resumed frame's, or "[Could not find stack trace]"; one mechanism, any line.
_STACK_TRACE = re.compile(r"\s*Stack trace:.*$")


def normalised_message(message: str) -> str:
    """An exception's first line with what varies between programs blanked.

    Tensor type names (``torch.FloatTensor``) become ``TENSOR``, addresses
    ``ADDR``, quoted text ``Q``, shapes and sizes ``SHAPE``, numbered names
    (``primals_1``, ``buf0``, ``v3``) ``NAME``, other numbers ``N``; a
    guard Dynamo quotes, and the stack trace CUDA-graph trees quote, are dropped.
    """
    text = _STACK_TRACE.sub("", _GUARD_REASON.sub("", bug_line(message)))
    text = _TENSOR_TYPE.sub("TENSOR", text)
    text = _ADDRESS.sub("ADDR", text)
    text = _QUOTED.sub("Q", text)
    text = _SIZE.sub("SHAPE", text)
    text = _SHAPE.sub("SHAPE", text)
    text = _NUMBERED_NAME.sub("NAME", text)
    text = _NUMBER.sub("N", text)
    return re.sub(r"\s+", " ", text).strip()


# An autograd node's name where autograd's checks quote it: a backward node
# (``MulBackward0``, ``ApplyTemplateBackward``, ``torch::autograd::CopyBackwards``),
# ``CopySlices``, ``AccumulateGrad``, the node of a compiled graph, or the view
# op the view+inplace check names ("Output 0 of Slice is a view ...": which
# view a program wrote through is the op it drew, not another mechanism).
_AUTOGRAD_NODE = re.compile(
    r"\b(?:torch::autograd::)?(?:[A-Z][A-Za-z]*Backwards?\d*|CopySlices|AccumulateGrad"
    r"|CompiledFunction(?:Backward)?)\b|(?<=\bof )[A-Z][A-Za-z0-9]*(?= is a view\b)"
)


_HEADLINE_ERROR = re.compile(
    r"^[a-z_ ]+ difference at iteration \d+, [^:]+: (?P<type>[A-Za-z_][\w.]*): (?P<message>.+)$"
)


def error_in_headline(headline: str) -> tuple[str, str] | None:
    """The exception type and message a failure's :meth:`Difference.headline` names,
    or ``None`` for a headline of no exception: how an entry's header gives back
    the message its signature was keyed on."""
    match = _HEADLINE_ERROR.match(headline.strip())
    return (match.group("type"), match.group("message")) if match else None


def kin_signature(signature: str, exception_type: str, message: str) -> str | None:
    """``signature``, of a failure raising ``exception_type: message``, with the
    autograd node names of its message blanked; ``None`` where the message names
    none, or ``signature`` does not end in the message's key.

    Kept apart from the signature: blanking them there would rename every
    recorded entry whose message names a node, and a user's registry with them.
    """
    _, named = _error_named(exception_type, message)
    if not named or not _AUTOGRAD_NODE.search(bug_line(named)):
        return None
    key = message_key(named)
    if not key or not signature.endswith(f"-{key}"):
        return None
    blanked = _AUTOGRAD_NODE.sub("NODE", bug_line(named))
    return f"{signature[: -len(key)]}{message_key(blanked)}"


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
    its memory. ``target`` is the argument's or output's :class:`Place`."""

    how: Literal["is", "shares"]
    target: Place

    @property
    def kind(self) -> str:
        """The relation without names: ``is_argument``, ``shares_output``."""
        return f"{self.how}_{self.target.role.value}"

    def __str__(self) -> str:
        return f"is {self.target}" if self.how == "is" else f"shares storage with {self.target}"


def describe_relations(relations: tuple[Relation, ...]) -> str:
    """A relation list as text (``aliases nothing`` when empty)."""
    return "; ".join(map(str, relations)) or "aliases nothing"
