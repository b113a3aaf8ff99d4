"""Plain torch scripts of findings: a few lines a compiler engineer can file upstream.

A repro file carries the whole oracle so that it runs the very check that
found its failure; that makes it some 2,300 lines, which nobody outside this
project will read. This module writes the same finding as a short script that
imports torch alone (and the module that registers the backend, where one
does): it builds the inputs, defines the function, runs it eagerly and under
``torch.compile`` for as many calls as the finding needs, each side from its
own copy of the inputs, prints both sides and fails with an ``assert`` on
exactly what differs.

A script is only as good as its verification, so every script is run twice
in a subprocess before it is handed out: with the finding's backend it must
fail (and, for a crash, raise the finding's exception), and with the
backend replaced by ``eager`` (or by no compile at all, where the finding
already shows on Dynamo alone) it must pass. Scripts are tried from the
smallest (shared inputs, no backward the failure does not need) to the most
faithful to the harness (per-side copies, the harness's backward, its
seeds), each first without the inputs the function never reads (a generated
program often takes one it ignores, and a reader would look for its part in
the failure) and then with all of them; the first that verifies is the one
given. A finding no script expresses (a hang, a difference in which tensors
a module holds) gets a reason instead of a wrong script.

``python -m pytest_cgraph.plain ENTRY.toml|REPRO.py [--out FILE]`` prints (or
writes) the script and a one-line verdict.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import importlib
import itertools
import os
import re
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pytest_cgraph.errors import CgraphError
from pytest_cgraph.oracle.difference import Difference, Kind, Role
from pytest_cgraph.oracle.protocol import (
    ADVANCE,
    ATOL,
    AUTOCAST,
    COMPILE,
    COMPILED_AUTOGRAD,
    FRESH_INPUTS,
    GRAD_MODE,
    INPUTS,
    ITERS,
    PROGRAM,
    RTOL,
)
from pytest_cgraph.registry.entries import (
    recorded_modules,
    recorded_settings,
    recorded_threads,
)
from pytest_cgraph.registry.repro_files import header_value

#: Protocol names a script has no use for: it states their effect directly.
_PROTOCOL_CONSTANTS = frozenset(
    {ITERS, FRESH_INPUTS, COMPILE, GRAD_MODE, AUTOCAST, COMPILED_AUTOGRAD, RTOL, ATOL}
)

#: Names the script binds itself; an inlined ``inputs`` body must not rebind them.
_SCRIPT_NAMES = frozenset(
    {
        "fn",
        "args",
        "eager_args",
        "compiled_args",
        "expected",
        "actual",
        "compiled_fn",
        "run",
        "relations",
        "error",
        "e",
        "k",
        "copy",
        "torch",
        "inputs",
        "advance",
    }
)

#: Names through which a function may read its parameters without naming them
#: (its frame, its locals): a program that uses one keeps all its inputs.
_INTROSPECTION = frozenset(
    {"locals", "vars", "eval", "exec", "globals", "inspect", "sys", "_getframe", "f_locals"}
)

#: In-place methods that only mark the tensor they are called on: a statement of
#: ``inputs()`` calling one on an input the script leaves out goes with that input.
_MARKING_METHODS = frozenset({"requires_grad_", "retain_grad"})

#: Backends whose compiled code goes through CUDA-graph trees on a CUDA device.
_CUDAGRAPH_BACKENDS = frozenset({"cudagraphs", "reduce-overhead", "max-autotune"})

#: ``torch.compile(mode=...)`` names accepted as backends.
_INDUCTOR_MODES = frozenset({"reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"})

#: The compiler name of ``torch.compile(fn)`` with torch's defaults (Inductor): what a
#: maintainer runs first, so a report's script uses it wherever the bug shows there.
DEFAULT = "default"

#: Seconds one verification run may take (an Inductor compile on a busy machine included).
RUN_LIMIT = 600.0

#: The return code a run that outlived :data:`RUN_LIMIT` is given.
TIMED_OUT = -1000


class Unsupported(CgraphError):
    """No plain script can state this finding faithfully; the message says why."""


# ---------------------------------------------------------------- the finding


@dataclass(frozen=True)
class Finding:
    """A recorded failure as an entry or repro file states it: what ran, and how."""

    name: str
    source: str
    backend: str
    device: str
    modules: tuple[str, ...]
    signature: str
    layer: str | None
    #: torch's intra-op threads it was found with (``None``: torch's default).
    threads: int | None = None

    @classmethod
    def read(cls, path: Path) -> Finding:
        """Read an entry (``.toml``) or a repro file (``.py``) without running it."""
        settings = recorded_settings(path)
        layer = header_value(path.read_text(errors="replace"), "# layer: ")
        return cls(
            name=path.name,
            source=str(settings["program"]),
            backend=str(settings["backend"]),
            device=str(settings.get("device") or "cpu"),
            modules=recorded_modules(settings),
            signature=str(settings["signature"]),
            layer=None if layer in (None, "none") else layer,
            threads=recorded_threads(settings),
        )

    @property
    def ends_process(self) -> bool:
        """A dead process or a hang: checking it in this process would end this process."""
        return self.signature.startswith(("crash-process", "timeout"))


# ------------------------------------------------------------ the program text


@dataclass
class ProgramText:
    """A program's source taken apart into what a script keeps.

    Statements are re-rendered by :func:`ast.unparse`, which drops comments:
    a program's comments explain the finding to this project's readers and
    would only lengthen an upstream report.
    """

    imports: list[ast.stmt]
    body: list[ast.stmt]
    inputs: ast.FunctionDef
    advance: ast.FunctionDef | None
    renamed: bool

    @classmethod
    def parse(cls, source: str) -> ProgramText:
        """Split ``source``; ``program`` becomes ``fn`` unless something else names it."""
        tree = ast.parse(source)
        imports: list[ast.stmt] = []
        body: list[ast.stmt] = []
        inputs: ast.FunctionDef | None = None
        advance: ast.FunctionDef | None = None
        for statement in _unguarded(tree.body):
            if isinstance(statement, (ast.Import, ast.ImportFrom)):
                if isinstance(statement, ast.ImportFrom) and statement.module == "__future__":
                    continue
                imports.append(statement)
            elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                continue  # a docstring
            elif _assigned_names(statement) and _assigned_names(statement) <= _PROTOCOL_CONSTANTS:
                continue
            elif isinstance(statement, ast.FunctionDef) and statement.name == INPUTS:
                inputs = statement
            elif isinstance(statement, ast.FunctionDef) and statement.name == ADVANCE:
                advance = statement
            else:
                body.append(statement)
        if inputs is None:
            raise Unsupported("the program defines no inputs()")
        others = [node for s in [*body, inputs] for node in ast.walk(s)]
        named_elsewhere = any(
            isinstance(node, ast.Name) and node.id == PROGRAM for node in others
        ) or any(isinstance(node, ast.FunctionDef) and node.name == "fn" for node in others)
        renamed = not named_elsewhere
        if renamed:
            for statement in body:
                if isinstance(statement, ast.FunctionDef) and statement.name == PROGRAM:
                    statement.name = "fn"
        return cls(imports, body, inputs, advance, renamed)

    @property
    def top_level_names(self) -> set[str]:
        """The names the program's own top-level code binds (its functions, classes,
        globals): an inlined ``inputs`` body must not rebind them."""
        names = set()
        for statement in self.body:
            if isinstance(statement, (ast.FunctionDef, ast.ClassDef)):
                names.add(statement.name)
            names |= _assigned_names(statement)
        return names

    @property
    def function(self) -> str:
        """The name the script calls the program by."""
        return "fn" if self.renamed else PROGRAM

    def definitions(self, with_advance: bool, roots: Sequence[ast.AST]) -> list[str]:
        """The top-level code the script needs: what the program, ``roots`` and (when
        called) ``advance`` use, and every statement run for its effect (a custom
        op's registration), each rendered without comments."""
        kept = [*self.body, *([self.advance] if with_advance and self.advance else [])]
        used = _loaded_names([*kept, *roots])
        # A definition or a plain assignment nothing uses is dropped, to a fixed point.
        while True:
            keep = [s for s in kept if _needed(s, used, self.function)]
            if len(keep) == len(kept):
                break
            kept = keep
            used = _loaded_names([*kept, *roots])
        return [ast.unparse(s) for s in kept]

    def import_lines(self, needed: Sequence[str]) -> list[str]:
        """The program's imports that the script's code uses, ``import torch`` first."""
        lines = ["import torch"]
        text = "\n".join(needed)
        for statement in self.imports:
            rendered = ast.unparse(statement)
            if rendered == "import torch":
                continue
            bound = [alias.asname or alias.name.split(".")[0] for alias in statement.names]  # type: ignore[attr-defined]
            if any(re.search(rf"\b{re.escape(name)}\b", text) for name in bound):
                lines.append(rendered)
        return lines

    def _program_def(self, body: Sequence[ast.stmt]) -> ast.FunctionDef | None:
        """The program's ``def`` in ``body``; ``None`` where it is no plain function
        (a module, an ``async def``) or is defined more than once."""
        found = [s for s in body if isinstance(s, ast.FunctionDef) and s.name == self.function]
        named = [s for s in body if self.function in _assigned_names(s)]
        return found[0] if len(found) == 1 and not named else None

    def unread_inputs(self) -> tuple[int, ...]:
        """The positions of the inputs the program never reads: a script may leave them
        out, with the program's parameters that take them.

        Conservative, since a wrong guess gives a script that raises a ``NameError``
        at best: a parameter whose name occurs anywhere in the function (a nested
        function or a lambda may close over it, a ``del`` or a rebinding is kept
        too) is read; none is dropped where something else calls the program (it
        would pass them), a decorator may look at its signature, the function may
        read its own frame (``locals()``), or ``inputs()`` returns no literal tuple
        (which value is which parameter is then unknown). A parameter with a
        default keeps its input, and whatever ``*args`` gathers is kept as it is.
        """
        function = self._program_def(self.body)
        elements = _returned_elements(self.inputs)
        if not self.renamed or function is None or function.decorator_list or elements is None:
            return ()
        if any(
            isinstance(node, ast.Name) and node.id == INPUTS
            for statement in self.body
            for node in ast.walk(statement)
        ):
            return ()  # the program's own code builds inputs too, positions and all
        read: set[str] = set()
        attributes: set[str] = set()
        own = {id(a) for a in [*function.args.posonlyargs, *function.args.args]}
        for node in ast.walk(function):
            if isinstance(node, ast.Name):
                read.add(node.id)
            elif isinstance(node, ast.Attribute):
                attributes.add(node.attr)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                read.update(node.names)
            elif isinstance(node, ast.arg) and id(node) not in own:
                read.add(node.arg)  # a nested parameter of that name: kept, to be safe
        if (read | attributes) & _INTROSPECTION:
            return ()
        positional = [*function.args.posonlyargs, *function.args.args]
        without_default = positional[: len(positional) - len(function.args.defaults)]
        return tuple(
            index
            for index, parameter in enumerate(without_default)
            if index < len(elements) and parameter.arg not in read
        )

    def without_inputs(self, positions: Collection[int]) -> ProgramText:
        """The program with the inputs at ``positions`` left out (see
        :meth:`unread_inputs`): its parameters that take them, their places in what
        ``inputs()`` returns, and the statements of ``inputs()`` that only built them."""
        body = copy.deepcopy(self.body)
        inputs = copy.deepcopy(self.inputs)
        function = self._program_def(body)
        elements = _returned_elements(inputs)
        if function is None or elements is None:
            raise Unsupported("the program's inputs cannot be told apart")
        dropped = {
            id(p)
            for i, p in enumerate([*function.args.posonlyargs, *function.args.args])
            if i in positions
        }
        function.args.posonlyargs = [a for a in function.args.posonlyargs if id(a) not in dropped]
        function.args.args = [a for a in function.args.args if id(a) not in dropped]
        *statements, last = inputs.body
        assert isinstance(last, ast.Return) and isinstance(last.value, (ast.Tuple, ast.List))
        last.value.elts = [e for i, e in enumerate(elements) if i not in positions]
        inputs.body = [*_live_statements(statements, last.value), last]
        return ProgramText(list(self.imports), body, inputs, self.advance, self.renamed)


def _unguarded(statements: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Top-level statements, with a registration guard (``if not hasattr(torch.ops...)``)
    opened: a script registers its custom ops once, so the guard only adds lines."""
    for statement in statements:
        test = getattr(statement, "test", None)
        if (
            isinstance(statement, ast.If)
            and not statement.orelse
            and isinstance(test, ast.UnaryOp)
            and isinstance(test.op, ast.Not)
            and isinstance(test.operand, ast.Call)
            and isinstance(test.operand.func, ast.Name)
            and test.operand.func.id == "hasattr"
        ):
            yield from statement.body
        else:
            yield statement


def _returned_elements(inputs: ast.FunctionDef) -> list[ast.expr] | None:
    """What ``inputs()`` returns, one expression an input, where it says so in one
    literal tuple (or list) at its end, with no ``*`` in it; ``None`` otherwise."""
    last = inputs.body[-1]
    if not isinstance(last, ast.Return) or not isinstance(last.value, (ast.Tuple, ast.List)):
        return None
    returns = [n for n in ast.walk(inputs) if isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom))]
    if len(returns) > 1 or any(isinstance(e, ast.Starred) for e in last.value.elts):
        return None
    return last.value.elts


def _live_statements(statements: list[ast.stmt], returned: ast.expr) -> list[ast.stmt]:
    """``statements`` less those that only build values nothing after them reads
    (an input left out, the generator only it drew from), found from the last up."""
    live = _loaded_names([returned])
    kept: list[ast.stmt] = []
    for statement in reversed(statements):
        if _serves_only_dead(statement, live):
            continue
        kept.append(statement)
        live = (live - _assigned_names(statement)) | _loaded_names([statement])
    return kept[::-1]


def _serves_only_dead(statement: ast.stmt, live: set[str]) -> bool:
    """Whether a statement of ``inputs()`` only binds or marks names nothing reads.

    Only two shapes go: an assignment to plain names whose value writes nothing
    in place (``a1 = a0.add_(1)`` changes ``a0``; drawing from a generator is
    allowed, the script only runs if it verifies), and marking a dead name
    (``a1.requires_grad_(True)``). Anything else stays, and what it reads stays
    live with it.
    """
    if isinstance(statement, ast.Expr):
        call = statement.value
        return (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr in _MARKING_METHODS
            and isinstance(call.func.value, ast.Name)
            and call.func.value.id not in live
        )
    if isinstance(statement, ast.Assign):
        targets, value = statement.targets, statement.value
    elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
        targets, value = [statement.target], statement.value
    else:
        return False
    bound: set[str] = set()
    for target in targets:
        names = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
        for name in names:
            if isinstance(name, ast.Starred):
                name = name.value
            if not isinstance(name, ast.Name):
                return False  # an attribute or an item: a write into something else
            bound.add(name.id)
    writes = any(
        isinstance(node, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await))
        or (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr.endswith("_")
            and not node.func.attr.startswith("__")
            and node.func.attr not in _MARKING_METHODS
        )
        for node in ast.walk(value)
    )
    return not writes and not bound & live


def _assigned_names(statement: ast.stmt) -> set[str]:
    """The names a plain assignment binds (empty for anything else)."""
    if isinstance(statement, ast.Assign):
        return {t.id for t in statement.targets if isinstance(t, ast.Name)}
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        return {statement.target.id}
    return set()


def _loaded_names(nodes: Sequence[ast.AST]) -> set[str]:
    return {
        node.id
        for root in nodes
        for node in ast.walk(root)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }


def _needed(statement: ast.stmt, used: set[str], function: str) -> bool:
    """Whether a top-level statement stays: it is the program, it is used, or it is
    run for an effect (a decorated definition registers something)."""
    if isinstance(statement, (ast.FunctionDef, ast.ClassDef)):
        return (
            statement.name == function or statement.name in used or bool(statement.decorator_list)
        )
    names = _assigned_names(statement)
    if names and isinstance(statement, (ast.Assign, ast.AnnAssign)):
        return bool(names & used)
    return True


class _Substitute(ast.NodeTransformer):
    """Replace a name by a constant and fold the integer arithmetic that leaves
    (``1000 + k`` with ``k = 1`` becomes ``1001``)."""

    def __init__(self, name: str, value: int) -> None:
        self.name, self.value = name, value

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.Constant(self.value) if node.id == self.name else node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        left, right = node.left, node.right
        if (
            isinstance(left, ast.Constant)
            and isinstance(right, ast.Constant)
            and type(left.value) is int
            and type(right.value) is int
            and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult))
        ):
            return ast.Constant(eval(ast.unparse(node)))  # two int literals
        return node


def inputs_body(inputs: ast.FunctionDef, k: int) -> tuple[list[ast.stmt], ast.expr] | None:
    """``inputs(k)``'s statements with ``k`` substituted, and what it returns, or ``None``
    when the body cannot stand at top level (it returns early, or returns nothing)."""
    fn = copy.deepcopy(inputs)
    params = [a.arg for a in fn.args.args]
    if params:
        fn = _Substitute(params[0], k).visit(fn)
    *statements, last = fn.body
    if not isinstance(last, ast.Return) or last.value is None:
        return None
    if any(isinstance(node, ast.Return) for s in statements for node in ast.walk(s)):
        return None
    if statements and isinstance(statements[0], ast.Expr):
        first = statements[0]
        if isinstance(first.value, ast.Constant):
            statements = statements[1:]
    return statements, last.value


# --------------------------------------------------------------- eager facts


@dataclass
class Facts:
    """What one eager call of the program shows, as the script must address it.

    ``arguments`` maps each observed argument's name (the oracle's: ``a0``,
    ``pair[1]``, ``m1.weight``) to its expression below the arguments' tuple
    (``[0]``, ``[1][1]``, ``[1].weight``); ``outputs`` holds each flat
    output's expression below the result and whether it is a tensor.
    """

    arguments: dict[str, str]
    outputs: list[tuple[str, bool]]
    roots: list[int]
    #: Floating outputs: where compiled code may require grad that eager does not.
    floating: list[int]
    draws_random: bool
    inputs_draw_random: bool
    own_backward: bool
    mutates: bool
    deep_copyable: bool
    flat_result: bool
    iters: int
    fresh_inputs: bool
    compiled_names: tuple[str, ...]
    grad_mode: str
    compiled_autograd: bool
    #: The dtype of the autocast around each call (``AUTOCAST``), or ``None``.
    autocast: str | None
    rtol: float | None
    atol: float | None
    has_advance: bool
    optimizer_state: bool = False
    #: Compile settings in force on the compiled side (``COMPILE_CONFIG``), in order.
    compile_config: tuple[tuple[str, Any], ...] = ()
    #: Expressions of the observed arguments that are tensors, in the harness's order.
    tensor_arguments: list[str] = field(default_factory=list)
    #: The positions of the inputs holding a tensor ``copy.deepcopy`` would not copy
    #: as it is (a view, a non-leaf, one with hooks): without them, it would do.
    uncopyable: frozenset[int] = frozenset()

    def without_inputs(self, positions: Collection[int]) -> Facts:
        """These facts for a script that leaves out the inputs at ``positions``: their
        arguments gone, and the others' expressions renumbered to where they now are."""
        arguments = {
            name: moved
            for name, expression in self.arguments.items()
            if (moved := _renumbered(expression, positions)) is not None
        }
        tensors = [_renumbered(expression, positions) for expression in self.tensor_arguments]
        uncopyable = frozenset(
            index - sum(p < index for p in positions)
            for index in self.uncopyable
            if index not in positions
        )
        return replace(
            self,
            arguments=arguments,
            tensor_arguments=[e for e in tensors if e is not None],
            uncopyable=uncopyable,
            deep_copyable=not uncopyable,
        )


def _input_of(expression: str) -> tuple[int, str]:
    """``[3].weight`` -> ``(3, ".weight")``: which input an argument's expression
    starts at, and the rest of it."""
    match = re.match(r"\[(\d+)\]", expression)
    assert match is not None, expression  # every argument's expression starts at its input
    return int(match.group(1)), expression[match.end() :]


def _renumbered(expression: str, positions: Collection[int]) -> str | None:
    """``[3].weight`` with the inputs at ``positions`` left out: ``[2].weight`` for
    one of them before it, ``None`` when it is one of them."""
    index, rest = _input_of(expression)
    if index in positions:
        return None
    return f"[{index - sum(p < index for p in positions)}]{rest}"


def eager_facts(source: str) -> Facts:
    """Run ``inputs(1)`` and one eager call of the program on the harness's copies."""
    import torch
    import torch.utils._pytree as pytree

    from pytest_cgraph.oracle.compiling import ambient, device_type_of
    from pytest_cgraph.oracle.engine import argument_names, watching_backward
    from pytest_cgraph.oracle.graphs import is_stateful_object, named_state
    from pytest_cgraph.oracle.protocol import ProgramSpec, forget_source, load_source
    from pytest_cgraph.oracle.sides import clone_arguments

    spec = ProgramSpec.of(load_source(source))
    try:
        state = torch.get_rng_state()
        base = tuple(spec.inputs(1))
        inputs_draw_random = not torch.equal(state, torch.get_rng_state())
        flat, _ = pytree.tree_flatten(base)
        names = argument_names(spec.program, base)
        expressions: list[str] = []
        for index, value in enumerate(base):
            paths, _ = pytree.tree_flatten_with_path(value)
            expressions.extend(f"[{index}]" + pytree.keystr(path) for path, _ in paths)
        arguments: dict[str, str] = {}
        tensor_arguments: list[str] = []
        optimizer_state = False
        for name, expression, value in zip(names, expressions, flat, strict=True):
            if isinstance(value, torch.nn.Module):
                for state_name, tensor in named_state(name, value):
                    path = state_name[len(name) + 1 :]
                    arguments[state_name] = expression + _attribute_path(path)
                    if tensor is not None:
                        tensor_arguments.append(arguments[state_name])
            elif is_stateful_object(value):
                optimizer_state = True
            else:
                arguments[name] = expression
                if isinstance(value, torch.Tensor):
                    tensor_arguments.append(expression)
        uncopyable = frozenset(
            index
            for index, value in enumerate(base)
            for t in pytree.tree_leaves(value)
            if isinstance(t, torch.Tensor)
            and not (
                t.is_leaf
                and not t._is_view()
                and not t._backward_hooks
                and not getattr(t, "_post_accumulate_grad_hooks", None)
            )
        )
        copies = clone_arguments(flat)
        observed = [t for t in _all_tensors(copies, is_stateful_object, named_state)]
        versions = [t._version for t in observed]
        args = pytree.tree_unflatten(copies, pytree.tree_flatten(base)[1])
        torch.manual_seed(1)
        seeded = torch.get_rng_state()
        device_type = device_type_of(pytree.tree_leaves(base))
        with ambient(spec.grad_mode, spec.autocast, device_type), watching_backward() as watch:
            result = spec.program(*args)
        draws_random = not torch.equal(seeded, torch.get_rng_state())
        mutates = any(t._version != v for t, v in zip(observed, versions, strict=True))
        leaves_with_paths, _ = pytree.tree_flatten_with_path(result)
        outputs = [
            (pytree.keystr(path), isinstance(leaf, torch.Tensor))
            for path, leaf in leaves_with_paths
        ]
        roots = [
            i
            for i, (_, leaf) in enumerate(leaves_with_paths)
            if isinstance(leaf, torch.Tensor)
            and leaf.requires_grad
            and leaf.dtype.is_floating_point
        ]
        floating = [
            i
            for i, (_, leaf) in enumerate(leaves_with_paths)
            if isinstance(leaf, torch.Tensor) and leaf.dtype.is_floating_point
        ]
        flat_result = isinstance(result, (tuple, list)) and all(
            not isinstance(r, (tuple, list, dict)) for r in result
        )
        return Facts(
            arguments=arguments,
            outputs=outputs,
            roots=roots,
            floating=floating,
            draws_random=draws_random,
            inputs_draw_random=inputs_draw_random,
            own_backward=watch.freed_graph,
            mutates=mutates,
            deep_copyable=not uncopyable,
            uncopyable=uncopyable,
            flat_result=flat_result,
            iters=spec.iters,
            fresh_inputs=spec.fresh_inputs,
            compiled_names=spec.compiled_names,
            grad_mode=spec.grad_mode,
            compiled_autograd=spec.compiled_autograd,
            autocast=spec.autocast,
            rtol=spec.rtol,
            atol=spec.atol,
            has_advance=spec.advance is not None,
            optimizer_state=optimizer_state,
            compile_config=spec.compile_config,
            tensor_arguments=tensor_arguments,
        )
    finally:
        forget_source(source)


def _all_tensors(values: list[Any], is_stateful: Any, named_state: Any) -> Iterator[Any]:
    import torch

    for value in values:
        if isinstance(value, torch.Tensor):
            yield value
        elif is_stateful(value):
            yield from (t for _, t in named_state("x", value) if t is not None)


def _attribute_path(path: str) -> str:
    """``lin.weight`` -> ``.lin.weight``; a part that is no identifier (``0`` of a
    Sequential) is indexed instead: ``[0].weight``."""
    parts = []
    for part in path.split("."):
        parts.append(f".{part}" if part.isidentifier() else f"[{part}]")
    return "".join(parts)


# ------------------------------------------------------------ the difference


def find_difference(finding: Finding) -> Difference | None:
    """Check the program as the harness does; the difference it shows, or ``None``.

    Its iteration is the number of calls the script needs: the harness saw
    nothing differ before it.
    """
    import torch

    from pytest_cgraph.oracle.compiling import Backend, collect_compile_evidence
    from pytest_cgraph.oracle.engine import check_source
    from pytest_cgraph.oracle.errors import EquivalenceError, InvalidProgram

    for module in finding.modules:
        importlib.import_module(module)
    with warnings.catch_warnings(), collect_compile_evidence():
        warnings.simplefilter("ignore")
        try:
            check_source(
                finding.source,
                backend=Backend.named(finding.backend),
                device=torch.device(finding.device),
            )
        except EquivalenceError as error:
            return error.difference
        except InvalidProgram as invalid:
            raise Unsupported(f"eager itself raises now ({invalid.reason})") from None
    return None


# ------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class Plan:
    """One way to write the script.

    ``inputs``: ``shared`` (one set of inputs, the program leaves them as they
    were), ``deepcopy`` (the inlined inputs, copied for the compiled side) or
    ``function`` (``inputs()`` called once per side, which keeps views and
    non-leaf tensors as they are made). ``backward``: the harness's backward
    of the outputs' sum after each call. ``seed``: ``torch.manual_seed(k)``
    before call ``k``, as the harness seeds. ``drop``: the positions of the
    inputs the script leaves out, which the program never reads.
    """

    calls: int
    inputs: str
    backward: bool
    seed: bool
    #: Backward of the outputs that require grad on each side and call, found at run
    #: time as the harness finds them (eager's first call is no guide to them).
    dynamic: bool = False
    drop: tuple[int, ...] = ()


class _Writer:
    """Renders the script of one finding under one plan, for one compiler.

    ``compiler`` is the backend to compile with, ``"eager"`` for the control
    run, or ``None`` for no compile at all (the control of a finding that
    already shows under Dynamo alone).
    """

    def __init__(
        self,
        finding: Finding,
        program: ProgramText,
        facts: Facts,
        difference: Difference | None,
        plan: Plan,
    ) -> None:
        if plan.drop:
            # Everything below reads the inputs through these two: the parameters,
            # inputs() and the arguments' positions are all renumbered here.
            program, facts = program.without_inputs(plan.drop), facts.without_inputs(plan.drop)
        self.finding, self.program, self.facts = finding, program, facts
        self.difference, self.plan = difference, plan
        kind = difference.kind if difference is not None else Kind.CRASH
        self.kind = kind
        self.stale = kind is Kind.STALE_OUTPUT
        self.crash = kind is Kind.CRASH
        self.fresh_per_call = facts.fresh_inputs and plan.calls > 1
        self.advance = facts.has_advance and plan.calls > 1
        if plan.inputs == "shared":
            self.e_args = self.c_args = "args"
        else:
            self.e_args, self.c_args = "eager_args", "compiled_args"

    # --- the parts

    def render(self, compiler: str | None) -> str:
        """The whole script."""
        inputs_function, setup, inputs_roots = self._inputs()
        helpers = self._helpers()
        check = self._check()
        sides = [*self._eager_side(), *self._compiled_side(compiler)]
        code_roots = [ast.parse("\n".join([*inputs_function, *setup, *helpers, *sides, *check]))]
        definitions = self.program.definitions(self.advance, [*code_roots, *inputs_roots])
        imports = self.program.import_lines(
            [*definitions, *inputs_function, *setup, *helpers, *sides, *check]
        )
        if self.plan.inputs == "deepcopy":
            imports.insert(0, "import copy")
        imports += [f"import {module}" for module in self.finding.modules]
        imports += _backend_import(compiler)
        imports += self._inductor_settings()
        imports += self._compile_config(imports)
        if self.finding.threads is not None:  # a condition of the finding, like a config flag
            imports.append(f"torch.set_num_threads({self.finding.threads})")
        # Blank lines around definitions only: the straight-line part reads as one block.
        blocks = [
            self._headline() + imports,
            *[[d] for d in [*definitions, *inputs_function, *helpers]],
            setup + sides + check,
        ]
        return "\n\n".join("\n".join(block) for block in blocks if block) + "\n"

    def _headline(self) -> list[str]:
        """What the script shows, in a comment: the backend, the calls, the difference
        (and, for a crash, the exception's line)."""
        import torch

        from pytest_cgraph.oracle.difference import bug_line

        difference, finding = self.difference, self.finding
        calls = f"{self.plan.calls} call" + ("s" if self.plan.calls > 1 else "")
        compiler = "torch.compile defaults" if finding.backend == DEFAULT else finding.backend
        head = f"# torch {torch.__version__}, {compiler} vs eager, {calls}: "
        if difference is None:
            return [head + "the compiled call kills the process"]
        if difference.kind is Kind.CRASH:
            innermost = (difference.exception_type or "").split(".")[-1]
            message = bug_line(difference.message or "")
            line = f"# {innermost}: {message}"
            return [
                head + f"the compiled {difference.place.name} raises",
                line if len(line) <= 100 else line[:97] + "...",
            ]
        what = re.sub(r" difference at iteration \d+,", " difference at", difference.headline())
        line = head + what.replace("iteration", "call").replace(", re-read at the end", "")
        return [line if len(line) <= 110 else line[:107] + "..."]

    def _inductor_settings(self) -> list[str]:
        """The Inductor settings the harness compares under, where they matter: random
        ops drawn by eager's kernels (which also decides where the min-cut partitioner
        of Inductor and of the cudagraphs backend puts them), and low-precision rounding
        as eager rounds."""
        backend = self.finding.backend
        inductor = backend.startswith("inductor") or backend in _INDUCTOR_MODES | {DEFAULT}
        lines = []
        if self.facts.draws_random and (inductor or backend == "cudagraphs"):
            lines.append("torch._inductor.config.fallback_random = True")
        if inductor and re.search(r"float16|bfloat16|half|autocast", self.finding.source):
            lines.append("torch._inductor.config.emulate_precision_casts = True")
        return ["import torch._inductor.config", *lines] if lines else []

    def _compile_config(self, imports: list[str]) -> list[str]:
        """The program's compile settings (``COMPILE_CONFIG``), set as a model author
        sets them: at the top of the script, before anything compiles."""
        lines: list[str] = []
        for name, value in self.facts.compile_config:
            module = name.rpartition(".")[0]
            if f"import {module}" not in imports + lines:
                lines.append(f"import {module}")
            lines.append(f"{name} = {value!r}")
        return lines

    def _inputs(self) -> tuple[list[str], list[str], list[ast.AST]]:
        """The ``inputs`` function if the script calls one, the lines that build each
        side's arguments, and the code they run."""
        plan, inputs = self.plan, self.program.inputs
        if self.fresh_per_call:
            return [ast.unparse(inputs)], [], [inputs]
        if plan.inputs in ("shared", "deepcopy"):
            inlined = inputs_body(inputs, 1)
            if inlined is None:
                raise Unsupported("inputs() cannot be inlined")
            statements, returned = inlined
            bound = {
                node.id
                for statement in statements
                for node in ast.walk(statement)
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
            }
            clash = bound & (_SCRIPT_NAMES | self.program.top_level_names)
            if clash:
                # A later plan calls inputs() as a function instead.
                raise Unsupported(f"inputs() binds {sorted(clash)[0]!r}, a name the script uses")
            lines = [ast.unparse(s) for s in statements]
            lines.append(f"{self.e_args} = {ast.unparse(returned)}")
            if plan.inputs == "deepcopy":
                lines.append(f"{self.c_args} = copy.deepcopy({self.e_args})")
            return [], lines, [*statements, returned]
        function = copy.deepcopy(inputs)
        params = [a.arg for a in function.args.args]
        if params:
            function = _Substitute(params[0], 1).visit(function)
            function.args.args = []
        reseed = "torch.manual_seed(0)\n" if self.facts.inputs_draw_random else ""
        (only,) = function.body if len(function.body) == 1 else (None,)
        if not reseed and isinstance(only, ast.Return) and only.value is not None:
            # inputs() only returns what it builds: each side builds its own in one line.
            built = ast.unparse(only.value)
            if len(built) <= 72:
                return [], [f"{self.e_args} = {built}", f"{self.c_args} = {built}"], [only.value]
        return (
            [ast.unparse(function)],
            [f"{reseed}{self.e_args} = inputs()", f"{reseed}{self.c_args} = inputs()"],
            [function],
        )

    def _call_lines(self, f: str, args: str, out: str, k: str) -> list[str]:
        """One call of one side: the harness's seed, grad mode and backward around it."""
        lines = []
        if self.plan.seed:
            lines.append(f"torch.manual_seed({k})")
        call = f"{out} = {f}(*{args})"
        contexts = {"no_grad": ["torch.no_grad()"], "inference_mode": ["torch.inference_mode()"]}
        around = contexts.get(self.facts.grad_mode, [])
        if self.facts.autocast is not None:
            device_type = self.finding.device.split(":")[0]
            around.append(f'torch.autocast("{device_type}", dtype=torch.{self.facts.autocast})')
        if around:
            lines += [f"with {', '.join(around)}:", f"    {call}"]
        else:
            lines.append(call)
        roots = self.facts.roots
        if self.plan.backward and roots and not self.plan.dynamic:
            sums = " + ".join(f"{out}{self.facts.outputs[i][0]}.sum()" for i in roots)
            lines.append(f"({sums}).backward()" if len(roots) > 1 else f"{sums}.backward()")
        elif self.plan.backward and len(self.facts.floating) == 1:
            # Whether the one floating output requires grad differs between the sides
            # (or the calls): each side's backward is its own, as the harness judges it.
            output = f"{out}{self.facts.outputs[self.facts.floating[0]][0]}"
            lines += [f"if {output}.requires_grad:", f"    {output}.sum().backward()"]
        elif self.plan.backward:
            # Which outputs require grad differs between the sides (or the calls):
            # each gets the backward of its own, as the harness judges each by its own.
            floating = ", ".join(f"{out}{self.facts.outputs[i][0]}" for i in self.facts.floating)
            floating += "," if len(self.facts.floating) == 1 else ""
            lines += [
                f"roots = [o.sum() for o in ({floating}) if o.requires_grad]",
                "if roots:",
                "    sum(roots).backward()",
            ]
        return lines

    def _helpers(self) -> list[str]:
        return [self._relations_helper()] if self.kind is Kind.ALIASING else []

    def _side(self, f: str, args: str, out: str, mark_step: bool) -> list[str]:
        """One side's calls, leaving the last outputs in ``out`` (all of them, in a
        list, for a stale output) and the arguments in ``args``."""
        calls = self.plan.calls
        step = ["torch.compiler.cudagraph_mark_step_begin()"] if mark_step else []
        if calls == 1 and not self.stale:
            return [*step, *self._call_lines(f, args, out, "1")]
        one_call = self._call_lines(f, args, "out", "k")
        if self.stale and len(one_call) == 1 and not (step or self.fresh_per_call or self.advance):
            # Every call's outputs kept, to be read again after the last.
            return [f"{out} = [{f}(*{args}) for _ in range({calls})]"]
        uses_k = self.plan.seed or self.fresh_per_call or self.advance
        loop = f"for k in range(1, {calls + 1}):" if uses_k else f"for _ in range({calls}):"
        body = []
        if self.fresh_per_call:
            body.append(f"{args} = inputs(k)")
        body += step
        if self.stale:
            body += self._call_lines(f, args, "out", "k")
            body.append(f"{out}.append(out)")
        else:
            body += self._call_lines(f, args, out, "k")
        if self.advance:
            last = "out" if self.stale else out
            outputs = (
                f"tuple({last})"
                if self.facts.flat_result
                else f"tuple(torch.utils._pytree.tree_leaves({last}))"
            )
            body += [f"if k < {calls}:", f"    {args} = advance(k, {args}, {outputs})"]
        return [*([f"{out} = []"] if self.stale else []), loop, *(f"    {b}" for b in body)]

    def _eager_side(self) -> list[str]:
        return self._side(self.program.function, self.e_args, "expected", False)

    def _compiled_side(self, compiler: str | None) -> list[str]:
        function = self.program.function
        compiled = self.facts.compiled_names
        lines: list[str] = []
        if compiler is None:
            f = function
        elif compiled != (PROGRAM,):
            lines += [f"{name} = {_compile_call(name, compiler)}" for name in compiled]
            f = function
        else:
            lines.append(f"compiled_fn = {_compile_call(function, compiler)}")
            f = "compiled_fn"
        mark_step = compiler in _CUDAGRAPH_BACKENDS and not self.finding.device.startswith("cpu")
        side = self._side(f, self.c_args, "actual", mark_step)
        if self.facts.compiled_autograd and compiler is not None:
            engine = _compile_call("", compiler).replace("torch.compile(, ", "torch.compile(")
            side = [
                f"with torch._dynamo.compiled_autograd._enable({engine}):",
                *(f"    {line}" for line in side),
            ]
        return lines + side

    # --- what is compared

    def _check(self) -> list[str]:
        difference, facts = self.difference, self.facts
        if self.finding.ends_process:
            return ['print("compiled ran; the process did not die")']
        assert difference is not None
        place = difference.place
        tolerance = ""
        if facts.rtol is not None or facts.atol is not None:
            tolerance = f", rtol={facts.rtol!r}, atol={facts.atol!r}"
        close = "torch.testing.assert_close({a}, {e}" + tolerance + ", equal_nan=True)"
        if self.crash:
            # The compiled call's own exception ends the script with torch's traceback:
            # what a maintainer reads first, and no harness lines around it.
            return []
        if self.stale:
            assert place.iteration is not None and place.index is not None
            path = f"[{place.iteration - 1}]" + facts.outputs[place.index][0]
            return self._compare(f"expected{path}", f"actual{path}", close)
        if place.role is Role.OUTPUT:
            path, is_tensor = facts.outputs[place.index or 0]
            e, a = f"expected{path}", f"actual{path}"
            if difference.kind is Kind.METADATA:
                return self._metadata(e, a, difference.facet)
            if not is_tensor:
                return [
                    f'print("eager:   ", {e})',
                    f'print("compiled:", {a})',
                    f"assert {a} == {e}",
                ]
            return self._compare(e, a, close)
        if place.role is Role.STRUCTURE:
            tree = "torch.utils._pytree.tree_structure"
            return [
                f'print("eager:   ", {tree}(expected))',
                f'print("compiled:", {tree}(actual))',
                f"assert {tree}(actual) == {tree}(expected)",
            ]
        if place.role is Role.ALIASING:
            single = self._single_other()
            if single is not None:
                out, other = single
                e = f"relation(expected{out}, {other.format(args=self.e_args, out='expected')})"
                a = f"relation(actual{out}, {other.format(args=self.c_args, out='actual')})"
            else:
                e = f"relations(expected, {self.e_args})"
                a = f"relations(actual, {self.c_args})"
            return [f'print("eager:   ", {e})', f'print("compiled:", {a})', f"assert {a} == {e}"]
        name = place.name or ""
        if difference.facet == "members":
            raise Unsupported("a module holds other tensors after the call: not a plain assert")
        if name not in facts.arguments:
            raise Unsupported(f"{place} has no plain expression (an optimizer's state)")
        suffix = facts.arguments[name]
        e, a = f"{self.e_args}{suffix}", f"{self.c_args}{suffix}"
        if place.role is Role.ARGUMENT:
            if difference.kind is Kind.METADATA:
                return self._metadata(e, a, difference.facet)
            return self._compare(e, a, close)
        if place.role is Role.GRAD:
            if difference.facet == "presence":
                return [
                    f'print("eager:    {name}.grad:", {e}.grad)',
                    f'print("compiled: {name}.grad:", {a}.grad)',
                    f'assert ({a}.grad is None) == ({e}.grad is None), "grad of {name}"',
                ]
            return [
                f'print("eager:    {name}.grad:", {e}.grad)',
                f'print("compiled: {name}.grad:", {a}.grad)',
                close.format(a=f"{a}.grad", e=f"{e}.grad"),
            ]
        raise Unsupported(f"no plain check for {difference.kind} at {place}")

    def _compare(self, e: str, a: str, close: str) -> list[str]:
        return [f'print("eager:   ", {e})', f'print("compiled:", {a})', close.format(a=a, e=e)]

    def _metadata(self, e: str, a: str, facet: str | None) -> list[str]:
        attribute = {
            "requires_grad": ".requires_grad",
            "shape": ".shape",
            "dtype": ".dtype",
            "device": ".device",
            "stride": ".stride()",
            "storage_offset": ".storage_offset()",
        }.get(facet or "")
        if facet == "type":
            e, a = f"type({e}).__name__", f"type({a}).__name__"
        elif attribute is None:
            raise Unsupported(f"no plain check for a {facet} difference")
        else:
            e, a = e + attribute, a + attribute
        return [f'print("eager:   ", {e})', f'print("compiled:", {a})', f"assert {a} == {e}"]

    def _others(self) -> list[str]:
        """What the differing output is compared with: each tensor argument and each
        earlier output, as ``{args}``/``{out}`` templates."""
        assert self.difference is not None
        index = self.difference.place.index or 0
        others = ["{args}" + suffix for suffix in self.facts.tensor_arguments]
        others += ["{out}" + path for path, is_tensor in self.facts.outputs[:index] if is_tensor]
        return others

    def _single_other(self) -> tuple[str, str] | None:
        """The differing output's path and the one tensor it is compared with, where
        there is one: then a three-line helper says how the two stand."""
        others = self._others()
        if len(others) != 1:
            return None
        assert self.difference is not None
        return self.facts.outputs[self.difference.place.index or 0][0], others[0]

    def _relations_helper(self) -> str:
        """``relations(out, args)``: how the differing output stands to each tensor
        argument and each earlier output, as the harness sees it: ``is`` it,
        ``shares`` its storage, or neither (``-``)."""
        difference, facts = self.difference, self.facts
        assert difference is not None
        index = difference.place.index or 0
        if self._single_other() is not None:
            return (
                "def relation(x, y):\n"
                "    shared = x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()\n"
                '    return "is" if x is y else "shares" if shared else "-"'
            )
        others = [other.format(args="args", out="out") for other in self._others()]
        listed = ", ".join(others) + ("," if len(others) == 1 else "")
        return (
            "def relations(out, args):\n"
            f"    x = out{facts.outputs[index][0]}\n"
            "    ptr = x.untyped_storage().data_ptr()\n"
            "    return [\n"
            '        "is" if o is x else "shares" if o.untyped_storage().data_ptr() == ptr'
            ' else "-"\n'
            f"        for o in ({listed})\n"
            "    ]"
        )


def _compile_call(function: str, compiler: str) -> str:
    if compiler == DEFAULT:
        return f"torch.compile({function})"
    if compiler in _INDUCTOR_MODES:
        return f'torch.compile({function}, mode="{compiler}")'
    if ":" in compiler:  # a backend given as module:function, imported by the script
        return f"torch.compile({function}, backend={compiler.partition(':')[2]})"
    return f'torch.compile({function}, backend="{compiler}")'


def _backend_import(compiler: str | None) -> list[str]:
    """The import a backend given as ``module:function`` needs (a compiler engineer's
    own backend, which Dynamo's registry does not know): the script imports it by
    name, as the harness did, so the report runs where the campaign ran."""
    if compiler is None or ":" not in compiler:
        return []
    module, _, function = compiler.partition(":")
    return [f"from {module} import {function}"]


# ---------------------------------------------------------------- candidates


def plans(
    finding: Finding, facts: Facts, difference: Difference | None, unread: tuple[int, ...] = ()
) -> list[Plan]:
    """The scripts worth trying, smallest first, most faithful to the harness last;
    each first without the ``unread`` inputs (see :func:`droppable_inputs`) where
    there are any, then with them, should leaving them out hide the failure."""
    found = _plans(finding, facts, difference)
    if not unread:
        return found
    # Planned from what the kept inputs are: without an unread view, deepcopy does.
    fewer = [
        replace(plan, drop=unread)
        for plan in _plans(finding, facts.without_inputs(unread), difference)
        # advance() steps the arguments by their positions, so it needs them all.
        if not (facts.has_advance and plan.calls > 1)
    ]
    paired = itertools.zip_longest(fewer, found)
    return [plan for pair in paired for plan in pair if plan is not None]


def _plans(finding: Finding, facts: Facts, difference: Difference | None) -> list[Plan]:
    """:func:`plans` for the inputs ``facts`` describes."""
    calls = difference.iteration if difference is not None and difference.iteration else 1
    kind = difference.kind if difference is not None else Kind.CRASH
    if kind is Kind.STALE_OUTPUT:
        calls = facts.iters
    role = difference.place.role if difference is not None else Role.PROCESS
    phase = difference.place.name if difference is not None else None
    can_backward = bool(facts.roots) and not facts.own_backward
    if role is Role.COMPILED and phase == "backward" and not facts.roots and facts.floating:
        can_backward = True  # only the compiled side's outputs require grad
    # Observed after the check's backward: grads, arguments, a crash in backward.
    after_backward = (
        kind in (Kind.GRAD, Kind.MUTATION, Kind.STALE_OUTPUT)
        or role in (Role.ARGUMENT, Role.GRAD)
        or (role is Role.COMPILED and phase != "call")
    )
    backward = can_backward and (calls > 1 or after_backward)
    seed = facts.draws_random
    copies = "deepcopy" if facts.deep_copyable else "function"
    shareable = (
        calls == 1
        and not facts.mutates
        and not backward
        and kind not in (Kind.MUTATION, Kind.GRAD)
        and role not in (Role.ARGUMENT, Role.GRAD)
    )
    found: list[Plan] = []
    if shareable:
        found.append(Plan(calls, "shared", False, seed))
    found.append(Plan(calls, copies, backward, seed))
    found.append(Plan(calls, copies, can_backward, True))
    if copies == "deepcopy":
        found.append(Plan(calls, "function", can_backward, True))
    if facts.floating and not facts.own_backward:
        dynamic = Plan(calls, copies, backward=True, seed=seed, dynamic=True)
        # No eager output requires grad at the first call, yet what differs is seen
        # after a backward: the outputs that need one may come later, or on one side
        # only. Tried right after the smallest script (which needs no backward where
        # the difference shows without one: a write lost in the call itself).
        needs_it_early = not facts.roots and after_backward
        found.insert(1 if needs_it_early else len(found), dynamic)
    if finding.ends_process and calls < facts.iters:
        found.append(Plan(facts.iters, copies, can_backward, True))
    return list(dict.fromkeys(found))


def droppable_inputs(
    program: ProgramText, facts: Facts, difference: Difference | None
) -> tuple[int, ...]:
    """The positions of the inputs a script may leave out: those the program never
    reads (:meth:`ProgramText.unread_inputs`), less the one whose value or grad is
    what differs (an unread input may share its storage with one that is written)."""
    unread = program.unread_inputs()
    place = difference.place if difference is not None else None
    if place is not None and place.role in (Role.ARGUMENT, Role.GRAD):
        expression = facts.arguments.get(place.name or "")
        if expression is None:
            return ()  # no script checks it anyway
        unread = tuple(i for i in unread if i != _input_of(expression)[0])
    return unread


# -------------------------------------------------------------- verification


@dataclass(frozen=True)
class Run:
    """One run of a script in a subprocess."""

    returncode: int
    output: str

    @property
    def tail(self) -> str:
        """The last line of its output: what a verdict quotes."""
        lines = [line for line in self.output.strip().splitlines() if line.strip()]
        return lines[-1][:160] if lines else ""


def run_scripts(
    texts: Sequence[str],
    limit: float = RUN_LIMIT,
    python: str | None = None,
    env: dict[str, str] | None = None,
) -> list[Run]:
    """Run each text as a file in a fresh interpreter, all at once, each in an empty
    directory (so nothing beside it is imported by accident). ``python`` is the
    interpreter (another torch's, to replay a script there; default: this one's) and
    ``env`` what is added to the environment (``TORCH_TRACE``)."""
    with tempfile.TemporaryDirectory(prefix="cgraph-plain-") as directory:
        children = []
        for number, text in enumerate(texts):
            path = Path(directory) / f"plain_{number}.py"
            path.write_text(text)
            children.append(
                subprocess.Popen(
                    [python or sys.executable, str(path)],
                    cwd=directory,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    env={**os.environ, "PYTHONWARNINGS": "ignore", **(env or {})},
                )
            )
        runs = []
        for child in children:
            try:
                output, _ = child.communicate(timeout=limit)
            except subprocess.TimeoutExpired:
                child.kill()
                child.communicate()
                runs.append(Run(TIMED_OUT, f"timed out after {limit:.0f} s"))
                continue
            runs.append(Run(child.returncode, output))
        return runs


def run_script(
    text: str,
    limit: float = RUN_LIMIT,
    python: str | None = None,
    env: dict[str, str] | None = None,
) -> Run:
    """Run one text as :func:`run_scripts` does."""
    return run_scripts([text], limit, python, env)[0]


@dataclass
class PlainResult:
    """A finding's plain script (if one verified), its verdict, and the attempts."""

    finding: Finding
    script: str | None
    verified: bool
    verdict: str
    control: str = "eager"
    attempts: list[str] = field(default_factory=list)
    #: What the verified script printed on the finding's backend: actual against expected.
    observed: str = ""
    #: What the harness saw when it checked the program (``None``: nothing, or not checked).
    difference: Difference | None = None
    #: The plan the verified script was written under (``None``: none verified).
    plan: Plan | None = None

    @property
    def lines(self) -> int:
        """The script's length in lines."""
        return len(self.script.splitlines()) if self.script else 0


def control_compiler(finding: Finding) -> str | None:
    """What the control run compiles with: ``eager`` (Dynamo alone), or nothing where
    the finding already shows there (its backend or first diverging layer is eager)."""
    if finding.backend == "eager" or finding.layer == "eager":
        return None
    return "eager"


def _fails_as_expected(finding: Finding, difference: Difference | None, run: Run) -> str | None:
    """Why the backend run does not show the finding, or ``None`` if it does."""
    if run.returncode == 0:
        return "passes on the backend"
    if run.returncode == TIMED_OUT:
        return "the backend run timed out"
    if finding.ends_process:
        signal = re.search(r"crash-process-(SIG[A-Z]+)", finding.signature)
        if signal and run.returncode >= 0:
            return f"exits {run.returncode} instead of dying by {signal.group(1)}"
        return None
    if difference is not None and difference.kind is Kind.CRASH:
        # The script lets the compiled call's exception end it: that exception it is.
        innermost = (difference.exception_type or "").split(".")[-1]
        if innermost and innermost not in run.output:
            return f"raises something else than {innermost}: {run.tail}"
        # The same type may be another check (AOTAutograd's "Encountered a set_ on a
        # graph input" and Inductor's "expected size 3==5" are both AssertionErrors):
        # the message's opening words, up to its first number or quote, must be there.
        opening = _message_opening(difference.message or "")
        if opening and opening not in run.output:
            return f"raises {innermost} with another message: {run.tail}"
        return None if "Traceback" in run.output else f"fails otherwise: {run.tail}"
    if "AssertionError" not in run.output:
        return f"fails otherwise: {run.tail}"
    return None


def _message_opening(message: str) -> str:
    """A message's first words, up to its first digit, quote or bracket (what varies
    by program), if they are at least two words: what tells one check from another."""
    first = message.strip().splitlines()[0] if message.strip() else ""
    opening = re.split(r"[\d'\"\[\(`]", first, maxsplit=1)[0].strip().rstrip(":,.")
    return opening if len(opening.split()) >= 2 else ""


class _Constants(ast.NodeTransformer):
    """``torch.randn(shape, generator=g)`` (or ``rand``) as ``torch.ones(shape)``."""

    def __init__(self) -> None:
        self.changed = 0

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = node.func
        drawn = (
            isinstance(func, ast.Attribute)
            and func.attr in ("randn", "rand")
            and isinstance(func.value, ast.Name)
            and func.value.id == "torch"
            and any(keyword.arg == "generator" for keyword in node.keywords)
        )
        if not drawn:
            return node
        self.changed += 1
        keywords = [keyword for keyword in node.keywords if keyword.arg != "generator"]
        ones = ast.Attribute(ast.Name("torch", ast.Load()), "ones", ast.Load())
        return ast.Call(ones, node.args, keywords)


def constant_inputs(source: str) -> str | None:
    """``source`` with the seeded random values its ``inputs()`` draws replaced by ones,
    and the generator dropped where nothing else draws from it; ``None`` where it
    draws none. A maintainer reads ``torch.ones(3)`` at a glance, and needs no
    generator to reproduce it; a script made from it is kept only where it still
    fails as found (:func:`make_plain`)."""
    tree = ast.parse(source)
    inputs = next(
        (node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "inputs"),
        None,
    )
    if inputs is None:
        return None
    constants = _Constants()
    constants.visit(inputs)
    if not constants.changed:
        return None
    still_drawn = any(
        isinstance(node, ast.keyword) and node.arg == "generator" for node in ast.walk(inputs)
    )
    if not still_drawn:
        inputs.body = [
            statement
            for statement in inputs.body
            if not (
                isinstance(statement, ast.Assign) and "Generator" in ast.unparse(statement.value)
            )
        ] or [ast.Pass()]
    ast.fix_missing_locations(tree)
    return ast.unparse(tree)


def make_plain(path: Path, verify: bool = True) -> PlainResult:
    """The verified plain script of the finding in ``path``, or why there is none.

    Where its inputs are seeded random values, the script is first tried with
    ones in their place (:func:`constant_inputs`), and kept where it still
    fails as found, with the same difference: the shorter script to read.
    """
    finding = Finding.read(path)
    simpler = constant_inputs(finding.source) if verify else None
    if simpler is not None:
        constant = replace(finding, source=simpler)
        result = _plain(constant, verify)
        seen = result.difference.signature if result.difference is not None else None
        if result.verified and seen not in (None, finding.signature):
            # The harness sees another signature now: the original must show it too.
            seen_before = _plain(finding, verify=False).difference
            same = seen_before is not None and seen_before.signature == seen
        else:
            same = result.verified and (seen is not None or finding.ends_process)
        if same:
            return result
    return _plain(finding, verify)


def _plain(finding: Finding, verify: bool) -> PlainResult:
    """:func:`make_plain` of one program text."""
    try:
        program = ProgramText.parse(finding.source)
        facts = eager_facts(finding.source)
        difference = None if finding.ends_process else find_difference(finding)
        if difference is None and not finding.ends_process:
            raise Unsupported("the harness no longer sees a difference (fixed?)")
        if difference is not None and difference.kind is Kind.TIMEOUT:
            raise Unsupported("a hang: a script would need the harness's time limit")
        if facts.fresh_inputs and facts.has_advance:
            raise Unsupported("fresh inputs and advance() together")
    except Unsupported as why:
        return PlainResult(finding, None, False, f"NO SCRIPT: {why}")
    except Exception as error:  # the program itself fails to load or run
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        return PlainResult(
            finding, None, False, f"NO SCRIPT: {type(error).__name__}: {first[:120]}"
        )
    control = control_compiler(finding)
    control_name = control or "no compile"
    attempts: list[str] = []
    first_text: str | None = None
    for plan in plans(finding, facts, difference, droppable_inputs(program, facts, difference)):
        try:
            writer = _Writer(finding, program, facts, difference, plan)
            text = writer.render(finding.backend)
            control_text = writer.render(control)
        except Unsupported as why:
            attempts.append(f"{_plan_words(plan)}: {why}")
            continue
        first_text = first_text or text
        if not verify:
            return PlainResult(
                finding,
                text,
                False,
                "NOT VERIFIED (--no-verify)",
                control_name,
                difference=difference,
            )
        # Both at once: the control is rarely wasted, and the wall time halves.
        failing, passing = run_scripts([text, control_text])
        problem = _fails_as_expected(finding, difference, failing)
        if problem is not None:
            attempts.append(f"{_plan_words(plan)}: {problem}")
            continue
        if passing.returncode != 0:
            attempts.append(f"{_plan_words(plan)}: fails on {control_name} too: {passing.tail}")
            continue
        lines = len(text.splitlines())
        verdict = (
            f"VERIFIED: fails on {finding.backend}, passes on {control_name}; "
            f"{plan.calls} call{'s' if plan.calls > 1 else ''}, {lines} lines"
        )
        if difference is not None and difference.signature != finding.signature:
            # The script shows what the harness sees now, which is worth saying.
            verdict += f" (the harness now sees {difference.signature})"
        return PlainResult(
            finding, text, True, verdict, control_name, attempts, failing.output, difference, plan
        )
    reason = attempts[-1] if attempts else "no plan"
    # The first script stays with an unverified result, for a reader to mend; the
    # command never prints it as a finding's script.
    unverified = f"NOT VERIFIED: {reason}"
    return PlainResult(
        finding, first_text, False, unverified, control_name, attempts, "", difference
    )


def render_for(result: PlainResult, compiler: str | None) -> str:
    """The verified script of ``result`` written for another compiler (:data:`DEFAULT`,
    a backend, ``None`` for no compile), under the plan that verified: what a report's
    ablation runs, and the script it shows where torch's defaults show the bug."""
    if result.plan is None:
        raise Unsupported("no script verified")
    finding = result.finding if compiler is None else replace(result.finding, backend=compiler)
    program = ProgramText.parse(finding.source)
    facts = eager_facts(finding.source)
    return _Writer(finding, program, facts, result.difference, result.plan).render(compiler)


def fails_as_found(result: PlainResult, run: Run) -> bool:
    """Whether ``run`` of a script of ``result`` fails as the finding does."""
    return run.returncode != 0 and (
        _fails_as_expected(result.finding, result.difference, run) is None
    )


def _plan_words(plan: Plan) -> str:
    words = [f"{plan.calls} call(s)", f"{plan.inputs} inputs"]
    words += [("each side's own backward" if plan.dynamic else "backward")] if plan.backward else []
    words += ["seeded"] if plan.seed else []
    words += [f"unread inputs {', '.join(map(str, plan.drop))} left out"] if plan.drop else []
    return ", ".join(words)


# ------------------------------------------------------------------------ CLI


def main(argv: list[str] | None = None) -> int:
    """``python -m pytest_cgraph.plain FILE [--out OUT]``: exit 0 when verified."""
    parser = argparse.ArgumentParser(
        prog="python -m pytest_cgraph.plain",
        description="Write a finding (an entry or a repro file) as a short plain torch "
        "script, verified to fail on its backend and pass on eager.",
    )
    parser.add_argument("path", type=Path, help="an entry (.toml) or a repro file (.py)")
    parser.add_argument("--out", type=Path, help="write the script here instead of printing it")
    parser.add_argument(
        "--no-verify", action="store_true", help="give the first script without running it"
    )
    parser.add_argument(
        "--issue", action="store_true", help="print a report ready to file on PyTorch's tracker"
    )
    options = parser.parse_args(argv)
    with contextlib.redirect_stdout(sys.stderr):  # torch's notices stay off the script
        result = make_plain(options.path, verify=not options.no_verify)
    if options.issue:
        # The report is the next stage's (recording.issue builds on this module).
        from pytest_cgraph.recording.issue import ready_to_file

        with contextlib.redirect_stdout(sys.stderr):
            report = ready_to_file(options.path, result)
        sys.stdout.write(report)
        return 0 if result.verified else 1
    # A script that did not verify is never given as the finding's script.
    if result.script is not None and (result.verified or options.no_verify):
        if options.out is not None:
            options.out.write_text(result.script)
        else:
            sys.stdout.write(result.script)
    for attempt in result.attempts if not result.verified else []:
        print(f"  tried {attempt}", file=sys.stderr)
    print(result.verdict)
    return 0 if result.verified else 1


__all__ = [
    "DEFAULT",
    "Finding",
    "PlainResult",
    "Unsupported",
    "main",
    "make_plain",
    "render_for",
]

if __name__ == "__main__":
    raise SystemExit(main())
