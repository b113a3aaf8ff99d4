"""A marked test as standalone program source: its function and arguments written inline.

A repro file must run with torch alone, so a failing ``cgraph_equivalent``
test is turned into the same kind of source a drawn program has
(``program``, ``inputs(k)``, ``ITERS``):

- the test function's text is copied (its decorators dropped, renamed so
  that pytest does not collect it as a test in the repro);
- what it names from its module is carried along: modules become imports,
  helper functions and classes written in the project are copied (with what
  they name in turn), constants become literals, and objects of installed
  packages (torch included) are imported by name;
- its arguments become literal values: dtype, shape, strides, storage
  offset, storage shared between arguments, ``requires_grad``, leaf-ness,
  ``Parameter``-ness and an existing ``.grad`` are kept.

- a module argument is rebuilt without its ``__init__``: its class (imported
  or copied), literal attributes, parameters and buffers as literals, and
  its submodules, so that its ``forward`` reads the same state;
- an optimizer argument is rebuilt without its ``__init__`` too: its class
  (imported or copied), defaults, param groups (hyper-parameters, and its
  parameters as the module arguments' own, named by attribute path) and
  state (momentum buffers, Adam's moments and step, ...), so that its
  ``step`` reads the same state and moves the same parameters;
- a tensor or module met twice (a parameter in its module, in an
  optimizer, passed on its own; a submodule registered under two names) is
  one object in the repro, as it was in the test.

What cannot be written this way (a test method, a learning-rate scheduler,
a hook, a tensor too large to inline, an object with no source) raises
:class:`NotInlinable` with the reason: the failure is then reported without
a repro file, saying why, rather than with a file that would not run or
would run something else.
"""

from __future__ import annotations

import ast
import dis
import functools
import importlib
import inspect
import math
import re
import sys
import sysconfig
import textwrap
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from pytest_cgraph.errors import CgraphError
from pytest_cgraph.oracle.cloning import StorageKey, storage_key
from pytest_cgraph.oracle.protocol import ATOL, FRESH_INPUTS, INPUTS, ITERS, PROGRAM, RTOL

#: Elements per tensor (or shared storage) written out as literals, at most.
INLINE_ELEMENTS = 4096

_LITERAL_TYPES = (int, float, complex, str, bytes, bool, type(None))


class NotInlinable(CgraphError):
    """The test cannot be written as a standalone program; the message says why."""


def program_source(
    function: Callable[..., Any],
    names: list[str],
    values: list[Any],
    iters: int,
    rtol: float | None = None,
    atol: float | None = None,
) -> tuple[str, int]:
    """Source defining ``program``, ``inputs(k)`` and ``ITERS``, and the program's size.

    ``program(*values)`` calls ``function`` with ``names`` as keywords, as
    the marker's check does. The size (elements of the arguments plus their
    count) orders repros of one signature: a smaller one replaces a larger.
    """
    function = _plain_function(function)
    module = _Module()
    body = module.test_function(function)
    arguments, size = _render_arguments(names, values, module)
    parameters = ", ".join(names)
    call = ", ".join(f"{name}={name}" for name in names)
    tolerances = "".join(
        f"{key} = {value!r}\n" for key, value in ((RTOL, rtol), (ATOL, atol)) if value
    )
    source = (
        f"# {function.__module__}.{function.__qualname__}, its arguments written inline\n"
        f"{module.preamble()}\n\n\n{body}\n\n\n"
        f"def {PROGRAM}({parameters}):\n    return {_renamed(function.__name__)}({call})\n\n\n"
        f"{arguments}\n\n{FRESH_INPUTS} = False\n{ITERS} = {iters}\n{tolerances}"
    )
    return source, size


def _plain_function(function: Callable[..., Any]) -> types.FunctionType:
    """The module-level function behind ``function``, or a refusal saying why not."""
    if isinstance(function, functools.partial):
        if function.args or function.keywords:
            raise NotInlinable("test methods and bound arguments are not written inline")
        function = function.func
    if inspect.ismethod(function):
        raise NotInlinable("test methods are not written inline (a module-level test function is)")
    function = inspect.unwrap(function)
    if not isinstance(function, types.FunctionType) or inspect.iscoroutinefunction(function):
        raise NotInlinable(f"{function!r} is not a plain function")
    if function.__name__ == "<lambda>":
        raise NotInlinable("a lambda is not written inline (a def is)")
    free = function.__code__.co_freevars
    if "<locals>" in function.__qualname__ and free:
        # A function defined in the test (a cgraph fixture check's model) is
        # written at module level when it reads only globals and its arguments.
        raise NotInlinable(
            f"{function.__qualname__} reads {', '.join(free)} of the function it is defined in"
        )
    return function


def _renamed(name: str) -> str:
    """The copied test's name: pytest must not collect it from the repro."""
    return f"_{name}" if name.startswith("test") else name


class _Module:
    """The repro's module text: imports, constants and copied definitions, in order."""

    def __init__(self) -> None:
        self.imports: dict[str, str] = {"torch": "import torch"}
        self.constants: dict[str, str] = {}
        self.definitions: list[str] = []
        self.bound: dict[str, object] = {"torch": torch}
        self.visiting: set[int] = set()

    def test_function(self, function: types.FunctionType) -> str:
        """The test's own text, decorators dropped and renamed; its globals carried."""
        text, _ = _definition_text(function, keep_decorators=False)
        for name in _global_loads(function):
            self.need(name, function.__globals__)
        head, _, rest = text.partition(f"def {function.__name__}(")
        return f"{head}def {_renamed(function.__name__)}({rest}"

    def need(self, name: str, namespace: dict[str, Any]) -> None:
        """Bind ``name`` in the repro as ``namespace`` binds it."""
        if name not in namespace:
            return  # a builtin, or a name the code never reaches
        value = namespace[name]
        if name in self.bound:
            if self.bound[name] is not value and not _same_constant(self.bound[name], value):
                raise NotInlinable(f"two different objects are both named {name!r}")
            return
        self.bound[name] = value
        if isinstance(value, types.ModuleType):
            self.imports[name] = _module_binding(name, value)
        elif isinstance(value, (torch.dtype, torch.device, torch.Size)) or _is_literal(value):
            self.constants[name] = f"{name} = {_constant(value)}"
        elif isinstance(value, (types.FunctionType, type)):
            self.definition(name, value)
        elif _is_custom_op(value):
            self.custom_op(name, value)
        elif callable(value) and _importable_from_package(value):
            self.imports[name] = _import_line(name, value)
        else:
            raise NotInlinable(
                f"the test uses {name!r} (a {type(value).__name__}), "
                "which cannot be written into a standalone file"
            )

    def definition(self, name: str, value: types.FunctionType | type) -> None:
        """Import ``value`` from its installed package, or copy its source here."""
        if _importable_from_package(value):
            self.imports[name] = _import_line(name, value)
            return
        if id(value) in self.visiting:
            return
        self.visiting.add(id(value))
        text, loads = _definition_text(value, keep_decorators=True)
        if value.__name__ != name:
            raise NotInlinable(f"{value.__qualname__} is used under another name, {name!r}")
        namespace = vars(sys.modules[value.__module__])
        for needed in loads:
            self.need(needed, namespace)
        self.definitions.append(text)

    def custom_op(self, name: str, op: Any) -> None:
        """A ``torch.library.custom_op`` of the test's module: its decorated definition
        and every top-level statement there that registers to it (``register_fake``,
        ``register_autograd``), copied under a guard, so that a process that has
        registered the op already (the test's own) binds it instead of failing."""
        function = op._init_fn
        if id(op) in self.visiting:
            return
        self.visiting.add(id(op))
        module = sys.modules.get(function.__module__)
        try:
            source = inspect.getsource(module) if module is not None else None
        except (OSError, TypeError):
            source = None
        if source is None:
            raise NotInlinable(f"the source of custom op {name!r} is not available")
        tree = ast.parse(source)
        kept = [
            statement
            for statement in tree.body
            if _defines_or_registers(statement, name, function.__name__)
        ]
        if not any(isinstance(s, ast.FunctionDef) and s.name == name for s in kept):
            raise NotInlinable(f"custom op {name!r} is not defined by a def of that name")
        lines = source.splitlines()
        body = []
        for statement in kept:
            first = min(
                [statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", []))]
            )
            body.append("\n".join(lines[first - 1 : statement.end_lineno]))
            for needed in _loads(statement) - {name, "_", "torch"}:
                self.need(needed, vars(module))
        namespace, _, op_name = f"{op._namespace}::{op._name}".partition("::")
        guarded = textwrap.indent("\n\n".join(body), "    ")
        self.definitions.append(
            f"# The test's custom op; registered once per process.\n"
            f'if not hasattr(torch.ops.{namespace}, "{op_name}"):\n{guarded}\n'
            f"else:\n    {name} = torch.ops.{namespace}.{op_name}"
        )

    def preamble(self) -> str:
        parts = ["\n".join(self.imports.values())]
        if self.constants:
            parts.append("\n".join(self.constants.values()))
        parts.extend(self.definitions)
        return "\n\n\n".join(parts)


def _is_custom_op(value: object) -> bool:
    """Whether ``value`` is a ``torch.library.custom_op`` (a ``CustomOpDef``)."""
    from torch._library.custom_ops import CustomOpDef

    return isinstance(value, CustomOpDef)


def _defines_or_registers(statement: ast.stmt, name: str, function: str) -> bool:
    """Whether a top-level ``statement`` defines custom op ``name`` (its decorated
    def) or registers to it (``@name.register_fake``, ``name.register_autograd(...)``)."""
    if isinstance(statement, ast.FunctionDef) and statement.name in (name, function):
        return True
    targets: list[ast.expr] = []
    if isinstance(statement, ast.FunctionDef):
        targets = list(statement.decorator_list)
    elif isinstance(statement, ast.Expr):
        targets = [statement.value]
    for target in targets:
        call = target.func if isinstance(target, ast.Call) else target
        if (
            isinstance(call, ast.Attribute)
            and call.attr.startswith("register_")
            and isinstance(call.value, ast.Name)
            and call.value.id == name
        ):
            return True
    return False


def _loads(statement: ast.stmt) -> set[str]:
    """The names ``statement`` reads (its globals, as far as a copy needs them)."""
    bound = {node.arg for node in ast.walk(statement) if isinstance(node, ast.arg)} | {
        node.id
        for node in ast.walk(statement)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    }
    return {
        node.id
        for node in ast.walk(statement)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    } - bound


def _definition_text(
    value: types.FunctionType | type, keep_decorators: bool
) -> tuple[str, set[str]]:
    """The source of a module-level function or class, and the global names it loads."""
    try:
        source = textwrap.dedent(inspect.getsource(value))
    except (OSError, TypeError) as error:
        raise NotInlinable(
            f"the source of {value.__qualname__} is not available ({error})"
        ) from None
    try:
        node = ast.parse(source).body[0]
    except (SyntaxError, IndexError) as error:
        raise NotInlinable(f"the source of {value.__qualname__} does not parse ({error})") from None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        raise NotInlinable(f"{value.__qualname__} is not defined by a def or class statement")
    first = node.lineno - 1
    if keep_decorators and node.decorator_list:
        first = min(decorator.lineno for decorator in node.decorator_list) - 1
    text = "\n".join(source.splitlines()[first : node.end_lineno])
    if isinstance(value, types.FunctionType):
        loads = _global_loads(value)
        if keep_decorators:
            loads |= {name for decorator in node.decorator_list for name in _names_read(decorator)}
    else:
        # A class keeps no code object for its body: every name it reads counts.
        loads = _names_read(node)
    return text, loads


def _names_read(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _global_loads(function: types.FunctionType) -> set[str]:
    """Global names the function's code (nested code included) reads."""
    names: set[str] = set()
    pending = [function.__code__]
    while pending:
        code = pending.pop()
        for instruction in dis.get_instructions(code):
            # pytest's assertion rewriting adds "@py_builtins"-style names
            # that the source text does not use.
            name = str(instruction.argval)
            if instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME") and name.isidentifier():
                names.add(name)
        pending.extend(const for const in code.co_consts if isinstance(const, types.CodeType))
    return names


def _importable_from_package(value: Any) -> bool:
    """Whether ``value`` can be imported by name from an installed package or the stdlib.

    Project modules (tests, conftest, the user's own code next to them) are
    copied instead: a repro must not depend on the tree it was found in.
    """
    module_name = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    if not module_name or not qualname or "<locals>" in qualname:
        return False
    try:
        module = importlib.import_module(module_name)
    except Exception:
        return False
    found: Any = module
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if found is not value:
        return False
    top = module_name.partition(".")[0]
    if top in sys.stdlib_module_names or top in ("torch", "numpy"):
        return True
    origin = getattr(sys.modules.get(top), "__file__", None)
    if origin is None:
        return False
    installed = {Path(sysconfig.get_paths()[key]).resolve() for key in ("purelib", "platlib")}
    return any(path in Path(origin).resolve().parents for path in installed)


def _module_binding(name: str, module: types.ModuleType) -> str:
    """The lines that bind ``name`` to ``module`` in a repro: an import, or, for a
    namespace that is an attribute of a package and no module of its own
    (``aten = torch.ops.aten``: ``import torch.ops.aten`` fails), the package's
    import and the attribute."""
    dotted = module.__name__
    if sys.modules.get(dotted) is module:
        return f"import {dotted}" if dotted == name else f"import {dotted} as {name}"
    root, *path = dotted.split(".")
    reached: object = sys.modules.get(root)
    for part in path:
        reached = getattr(reached, part, None)
    if reached is not module:
        raise NotInlinable(f"module {name!r} ({dotted}) is neither imported nor reachable")
    return f"import {root}\n{name} = {dotted}"


def _import_line(name: str, value: Any) -> str:
    qualname = value.__qualname__
    if "." in qualname:
        raise NotInlinable(f"{value.__module__}.{qualname} is not a module-level name")
    alias = "" if qualname == name else f" as {name}"
    return f"from {value.__module__} import {qualname}{alias}"


def _is_literal(value: Any) -> bool:
    if isinstance(value, (tuple, list, set, frozenset)):
        return all(_is_literal(item) for item in value)
    if isinstance(value, dict):
        return all(_is_literal(k) and _is_literal(v) for k, v in value.items())
    return isinstance(value, _LITERAL_TYPES)


def _same_constant(bound: object, value: object) -> bool:
    try:
        return bool(_is_literal(bound) and bound == value)
    except Exception:
        return False


def _constant(value: Any) -> str:
    """Python source for a literal, dtype, device or size."""
    if isinstance(value, torch.dtype):
        return str(value)  # "torch.float32"
    if isinstance(value, torch.device):
        return f"torch.device({str(value)!r})"
    if isinstance(value, torch.Size):
        return f"torch.Size({list(value)!r})"
    if isinstance(value, float):
        if math.isnan(value):
            return 'float("nan")'
        if math.isinf(value):
            return 'float("inf")' if value > 0 else '-float("inf")'
        return repr(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        items = ", ".join(_constant(item) for item in value)
        if isinstance(value, list):
            return f"[{items}]"
        if isinstance(value, tuple):
            return f"({items}{',' if len(value) == 1 else ''})"
        return f"{type(value).__name__}([{items}])"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_constant(k)}: {_constant(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _render_arguments(names: list[str], values: list[Any], module: _Module) -> tuple[str, int]:
    """``def inputs(k)`` building ``values`` inline, and their size.

    Optimizers are written last, whatever their place among the arguments:
    their parameters are then the ones their modules' rebuilt copies hold.
    """
    writer = _InputsWriter(module, values)
    order = sorted(range(len(values)), key=lambda i: isinstance(values[i], torch.optim.Optimizer))
    for index in order:
        writer.argument(names[index], values[index])
    returned = ", ".join(names) + ("," if len(names) == 1 else "")
    body = textwrap.indent("\n".join([*writer.lines, f"return ({returned})"]), "    ")
    return f"def {INPUTS}(k):\n{body}", len(values) + writer.elements


#: Copied into a repro that rebuilds a module argument.
_REBUILT_MODULE = '''def _rebuilt(cls, training, attributes, parameters, buffers, children):
    """A ``cls`` module with exactly this state, built without running its ``__init__``
    (whose arguments are not known): what ``forward`` reads is the state."""
    module = cls.__new__(cls)
    torch.nn.Module.__init__(module)
    module.__dict__.update(attributes)
    for name, parameter in parameters.items():
        module.register_parameter(name, parameter)
    for name, (buffer, persistent) in buffers.items():
        module.register_buffer(name, buffer, persistent=persistent)
    for name, child in children.items():
        module.add_module(name, child)
    module.training = training
    return module'''

#: Copied into a repro that rebuilds an optimizer argument.
_REBUILT_OPTIMIZER = '''def _rebuilt_optimizer(cls, defaults, param_groups, state, attributes):
    """A ``cls`` optimizer with exactly these groups and state, built without running
    its ``__init__`` (whose arguments are not known): what ``step`` reads is the
    groups' hyper-parameters and the state, keyed by the parameters' positions."""
    optimizer = cls.__new__(cls)
    torch.optim.Optimizer.__init__(optimizer, param_groups, defaults)
    optimizer.__dict__.update(attributes)
    parameters = [p for group in optimizer.param_groups for p in group["params"]]
    for position, values in state.items():
        optimizer.state[parameters[position]] = values
    return optimizer'''


class _InputsWriter:
    """Writes the statements of ``inputs()``: its arguments, and what they hold.

    A tensor or module that ran as one object is one object in the repro: a
    parameter reached through its module, as a tensor argument and through
    an optimizer, or a submodule registered twice, is built once and named
    wherever it is met again; and a storage that two tensors view (among
    the arguments, the modules' parameters and buffers, the optimizers'
    state) is written once.

    A module is rebuilt by ``_rebuilt``: its class imported or copied like
    any name the test uses, its parameters and buffers as literals, its
    other attributes as literals. An optimizer is rebuilt by
    ``_rebuilt_optimizer``: its class, defaults, groups (their parameters
    named by their module's attribute path) and state.
    """

    def __init__(self, module: _Module, values: list[Any]) -> None:
        self.module = module
        self.lines: list[str] = []
        self.storages: dict[StorageKey | None, str] = {}
        self.shared = _shared_storages(values)
        #: The variable (or expression) each tensor written so far is known by.
        self.tensors: dict[int, str] = {}
        #: A module argument's parameters and buffers, by their attribute path.
        self.paths: dict[int, str] = {}
        #: Modules met more than once (a submodule registered twice, a module
        #: passed beside its parent), and the variable each is known by once written.
        self.repeated = _repeated_modules(values)
        self.modules: dict[int, str] = {}
        self.written = 0
        self.elements = 0

    def argument(self, name: str, value: Any) -> None:
        if isinstance(value, torch.nn.Module):
            self._helper("_rebuilt", _REBUILT_MODULE)
            self.lines.append(f"{name} = {self._module(name, value, variable=name)}")
            for path, parameter in value.named_parameters():
                self.paths.setdefault(id(parameter), f"{name}.get_parameter({path!r})")
            for path, buffer in value.named_buffers():
                self.paths.setdefault(id(buffer), f"{name}.get_buffer({path!r})")
        elif isinstance(value, torch.optim.Optimizer):
            self._helper("_rebuilt_optimizer", _REBUILT_OPTIMIZER)
            self.lines.append(f"{name} = {self._optimizer(name, value)}")
        elif isinstance(value, torch.Tensor):
            known = self.tensors.get(id(value))
            if known is None:
                self.tensor(name, value, variable=name)
            else:  # a parameter of a module argument before it, passed on its own too
                self.lines.append(f"{name} = {known}")
        elif _is_literal(value) or isinstance(value, (torch.dtype, torch.device, torch.Size)):
            self.lines.append(f"{name} = {_constant(value)}")
        else:
            raise NotInlinable(
                f"argument {name!r} is a {type(value).__name__}; only tensors, modules, "
                "optimizers and literal values are written inline"
            )

    def _helper(self, name: str, text: str) -> None:
        if name not in self.module.bound:
            self.module.bound[name] = text
            self.module.definitions.append(text)

    def tensor(self, path: str, tensor: torch.Tensor | None, variable: str | None = None) -> str:
        """The variable holding ``tensor``: written here (its ``.grad`` too) the first
        time it is met, named again after that."""
        if tensor is None:
            return "None"
        known = self.tensors.get(id(tensor))
        if known is not None:
            return known
        if variable is None:
            variable = f"_tensor{self.written}_{_identifier(path)}"
            self.written += 1
        expression, elements = _tensor_expression(
            path, tensor, self.storages, self.shared, self.lines
        )
        self.elements += elements
        self.lines.append(f"{variable} = {expression}")
        self.tensors[id(tensor)] = variable
        grad = tensor.grad if tensor.is_leaf else None
        if grad is not None:
            gradient = self.tensors.get(id(grad))
            if gradient is None:
                gradient, _ = _tensor_expression(
                    f"{path}.grad", grad, self.storages, self.shared, self.lines
                )
                self.tensors[id(grad)] = f"{variable}.grad"
            self.lines.append(f"{variable}.grad = {gradient}")
        return variable

    def _module(self, path: str, value: torch.nn.Module | None, variable: str = "") -> str:
        """``_rebuilt(...)`` for a module; a module met before is named, not rebuilt,
        and one that will be met again is bound to a variable first."""
        if value is None:  # a child slot registered empty, as a parameter may be
            return "None"
        known = self.modules.get(id(value))
        if known is not None:
            return known
        if variable:  # an argument: its own name, bound by the caller's line
            self.modules[id(value)] = variable
            return self._rebuilt_module(path, value)
        if id(value) not in self.repeated:
            return self._rebuilt_module(path, value)
        variable = f"_module{len(self.modules)}_{_identifier(path)}"
        self.lines.append(f"{variable} = {self._rebuilt_module(path, value)}")
        self.modules[id(value)] = variable
        return variable

    def _rebuilt_module(self, path: str, value: torch.nn.Module) -> str:
        cls = self._class(path, value)
        internal = _module_internals()
        attributes: dict[str, Any] = {}
        for key, attribute in vars(value).items():
            if key in internal:
                if key.endswith("hooks") and attribute:
                    raise NotInlinable(f"argument {path!r} has {key}; hooks are not written inline")
                continue
            if not (_is_literal(attribute) or isinstance(attribute, (torch.dtype, torch.Size))):
                raise NotInlinable(
                    f"argument {path!r} keeps {key!r}, a {type(attribute).__name__}; only "
                    "literal attributes of a module are written inline"
                )
            attributes[key] = attribute
        parameters = {
            key: self.tensor(f"{path}.{key}", parameter)
            for key, parameter in value._parameters.items()
        }
        buffers = {
            key: f"({self.tensor(f'{path}.{key}', buffer)}, "
            f"{key not in value._non_persistent_buffers_set})"
            for key, buffer in value._buffers.items()
        }
        children = {
            key: self._module(f"{path}.{key}", child) for key, child in value._modules.items()
        }
        return (
            f"_rebuilt({cls}, {value.training}, {_constant(attributes)}, "
            f"{_dictionary(parameters)}, {_dictionary(buffers)}, {_dictionary(children)})"
        )

    def _class(self, path: str, value: object) -> str:
        """The name the repro knows ``value``'s class by (imported or copied)."""
        cls = type(value)
        if "<locals>" in cls.__qualname__:
            raise NotInlinable(f"argument {path!r} is a {cls.__qualname__}, defined in a function")
        self.module.need(cls.__name__, {cls.__name__: cls})
        return cls.__name__

    def _optimizer(self, name: str, value: torch.optim.Optimizer) -> str:
        """``_rebuilt_optimizer(...)`` for an optimizer argument, or a refusal saying why.

        Its parameters are those of the module arguments (by attribute path)
        or tensor arguments they are; one that is neither is written inline.
        Its state is written as tensors and literals keyed by the parameters'
        positions in its groups, as ``state_dict`` keys them.
        """
        cls = self._class(name, value)
        bare = _bare_optimizer_attributes(type(value))
        attributes: dict[str, Any] = {}
        for key, attribute in vars(value).items():
            if key in ("defaults", "param_groups", "state"):
                continue
            if key.startswith("_optimizer_") and key.endswith("_hooks"):
                if attribute:
                    raise NotInlinable(f"argument {name!r} has {key}; hooks are not written inline")
                continue
            if key == "step" and hasattr(attribute, "_wrapped_by_lr_sched"):
                raise NotInlinable(
                    f"argument {name!r} has its step() wrapped by an LR scheduler; "
                    "schedulers are not written inline"
                )
            if not _is_literal(attribute):
                raise NotInlinable(
                    f"argument {name!r} keeps {key!r}, a {type(attribute).__name__}; only "
                    "literal attributes of an optimizer are written inline"
                )
            if key not in bare or not _same_constant(bare[key], attribute):
                attributes[key] = attribute
        # A parameter's position is its first place among the groups' parameters
        # (a duplicate keeps its place in the count), as ``state_dict`` numbers them.
        positions: dict[int, int] = {}
        flat = 0
        groups: list[str] = []
        for g, group in enumerate(value.param_groups):
            entries: list[str] = []
            for key, setting in group.items():
                if key == "params":
                    parameters: list[str] = []
                    for parameter in setting:
                        positions.setdefault(id(parameter), flat)
                        flat += 1
                        where = f"{name}.param_groups[{g}]['params'][{len(parameters)}]"
                        parameters.append(self._parameter(where, parameter))
                    entries.append(f"'params': [{', '.join(parameters)}]")
                else:
                    where = f"{name}.param_groups[{g}][{key!r}]"
                    entries.append(f"{_constant(key)}: {self._value(where, setting)}")
            groups.append("{" + ", ".join(entries) + "}")
        states: list[str] = []
        for parameter, state in value.state.items():
            position = positions.get(id(parameter))
            if position is None or not isinstance(state, dict):
                raise NotInlinable(
                    f"argument {name!r} keeps state for a {type(parameter).__name__} outside "
                    "its param_groups; only its parameters' state is written inline"
                )
            where = f"{name}.state[{position}]"
            states.append(f"{position}: {self._value(where, state)}")
        defaults = self._value(f"{name}.defaults", value.defaults)
        arguments = [cls, defaults, _block("[", groups, "]"), _block("{", states, "}")]
        arguments.append(_constant(attributes))
        return "_rebuilt_optimizer(\n" + textwrap.indent(",\n".join(arguments), "    ") + ",\n)"

    def _parameter(self, path: str, parameter: Any) -> str:
        """An optimizer's parameter: its module's, by attribute path; a tensor
        argument's, by its name; else written here."""
        if not isinstance(parameter, torch.Tensor):
            raise NotInlinable(f"{path} is a {type(parameter).__name__}, not a tensor")
        named = self.paths.get(id(parameter)) or self.tensors.get(id(parameter))
        return named or self._value(path, parameter)  # the optimizer's own: not moved either

    def _value(self, path: str, value: Any) -> str:
        """A hyper-parameter or state entry: tensors by identity, containers of them, literals.

        An optimizer's own tensors are not moved to the check's device as its
        parameters are, so only CPU ones are written (as they were).
        """
        if isinstance(value, torch.Tensor):
            if value.device.type != "cpu":
                raise NotInlinable(
                    f"{path} is on {value.device}; an optimizer's own tensors are written "
                    "inline on the CPU only"
                )
            return self.tensor(path, value)
        if _is_literal(value) or isinstance(value, (torch.dtype, torch.device, torch.Size)):
            return _constant(value)
        if type(value) in (list, tuple):
            items = [self._value(f"{path}[{i}]", item) for i, item in enumerate(value)]
            if type(value) is list:
                return f"[{', '.join(items)}]"
            return f"({', '.join(items)}{',' if len(items) == 1 else ''})"
        if type(value) is dict and all(_is_literal(key) for key in value):
            entries = (
                f"{_constant(key)}: {self._value(f'{path}[{key!r}]', item)}"
                for key, item in value.items()
            )
            return "{" + ", ".join(entries) + "}"
        raise NotInlinable(
            f"{path} is a {type(value).__name__}; an optimizer's settings and state are "
            "written inline as tensors and literal values only"
        )


def _block(opening: str, items: list[str], closing: str) -> str:
    """A list or dict display, one item a line (a group's settings make a long one)."""
    if not items:
        return opening + closing
    return opening + "\n" + "".join(f"    {item},\n" for item in items) + closing


def _bare_optimizer_attributes(cls: type[torch.optim.Optimizer]) -> dict[str, Any]:
    """The literal attributes ``Optimizer.__init__`` gives a ``cls``, which the repro's
    ``_rebuilt_optimizer`` runs too: those the argument still has need not be written."""
    bare = cls.__new__(cls)
    try:
        torch.optim.Optimizer.__init__(bare, [torch.zeros(1, requires_grad=True)], {})
    except Exception:
        return {}  # a class whose own add_param_group wants more: every attribute is written
    return {key: value for key, value in vars(bare).items() if _is_literal(value)}


def _identifier(path: str) -> str:
    """``path`` (``opt.state[0].exp_avg``) as part of a variable name."""
    return re.sub(r"\W+", "_", path).strip("_")


@functools.cache
def _module_internals() -> frozenset[str]:
    """The attributes every ``nn.Module`` has: rebuilt by ``Module.__init__``."""
    return frozenset(vars(torch.nn.Module()))


def _dictionary(entries: dict[str, str]) -> str:
    return "{" + ", ".join(f"{key!r}: {text}" for key, text in entries.items()) + "}"


def _repeated_modules(values: list[Any]) -> set[int]:
    """The modules reached more than once through the module arguments: one object
    each in the repro, as in the test (a forward that sets an attribute of one
    sets it for every place it is registered)."""
    met: set[int] = set()
    repeated: set[int] = set()
    for value in values:
        if isinstance(value, torch.nn.Module):
            for _, module in value.named_modules(remove_duplicate=False):
                (repeated if id(module) in met else met).add(id(module))
    return repeated


def _shared_storages(values: list[Any]) -> set[StorageKey]:
    """Storages that more than one tensor views, among the arguments and what their
    modules and optimizers hold: written once, viewed by each."""
    met: set[int] = set()
    seen: set[StorageKey] = set()
    shared: set[StorageKey] = set()
    for tensor in _held_tensors(values):
        if id(tensor) in met:
            continue  # one object, written once: no second view of its storage
        met.add(id(tensor))
        key = storage_key(tensor)
        if key is not None:  # an empty storage holds nothing to share
            (shared if key in seen else seen).add(key)
    return shared


def _held_tensors(value: Any) -> Iterator[torch.Tensor]:
    """Every tensor ``value`` is or holds that ``inputs()`` writes: a tensor and its
    ``.grad``, a module's parameters and buffers, an optimizer's parameters,
    settings and state, and those of a list of them."""
    if isinstance(value, torch.Tensor):
        yield value
        if value.is_leaf and value.grad is not None:
            yield value.grad
    elif isinstance(value, torch.nn.Module):
        for tensor in (*value.parameters(), *value.buffers()):
            yield from _held_tensors(tensor)
    elif isinstance(value, torch.optim.Optimizer):
        yield from _held_tensors(value.defaults)
        for group in value.param_groups:
            yield from _held_tensors(group)
        yield from _held_tensors(list(value.state.values()))
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _held_tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _held_tensors(item)


def _tensor_expression(
    name: str,
    tensor: torch.Tensor,
    storages: dict[StorageKey | None, str],
    shared: set[StorageKey],
    lines: list[str],
) -> tuple[str, int]:
    """An expression rebuilding ``tensor``; statements it needs go to ``lines`` first."""
    if type(tensor) not in (torch.Tensor, torch.nn.Parameter) or tensor.layout != torch.strided:
        raise NotInlinable(
            f"argument {name!r} is a {type(tensor).__name__} with layout {tensor.layout}; "
            "only plain strided tensors are written inline"
        )
    if tensor.is_quantized or tensor.device.type == "meta":
        raise NotInlinable(f"argument {name!r} is a {tensor.device.type}/quantized tensor")
    if tensor._backward_hooks or tensor._post_accumulate_grad_hooks:
        # The check calls them on each side's copy (a clip, an optimizer step run
        # in backward); a literal would leave them out.
        raise NotInlinable(f"argument {name!r} has hooks registered; hooks are not written inline")
    data = tensor.detach()
    storage_elements = data.untyped_storage().nbytes() // max(data.element_size(), 1)
    plain = (
        data.is_contiguous()
        and data.storage_offset() == 0
        and data.numel() == storage_elements
        and storage_key(data) not in shared
    )
    elements = data.numel() if plain else storage_elements
    if elements > INLINE_ELEMENTS:
        raise NotInlinable(
            f"argument {name!r} has {elements} elements; repro inputs are written inline "
            f"up to {INLINE_ELEMENTS}"
        )
    dtype = str(data.dtype)
    if plain:
        flat = _flat_literal(data.reshape(-1).cpu().tolist())
        expression = f"torch.tensor({flat}, dtype={dtype}).reshape({tuple(data.shape)!r})"
    else:
        key = storage_key(data)
        if key not in storages:
            storages[key] = f"_storage{len(storages)}"
            whole = torch.as_strided(data, (storage_elements,), (1,), 0).cpu().tolist()
            lines.append(f"{storages[key]} = torch.tensor({_flat_literal(whole)}, dtype={dtype})")
        else:
            elements = 0  # counted with the first argument viewing it
        expression = (
            f"{storages[key]}.as_strided({tuple(data.shape)!r}, {tuple(data.stride())!r}, "
            f"{data.storage_offset()})"
        )
    if isinstance(tensor, torch.nn.Parameter):
        expression = f"torch.nn.Parameter({expression}, requires_grad={tensor.requires_grad})"
    elif tensor.requires_grad:
        expression += ".requires_grad_()" if tensor.is_leaf else ".requires_grad_().clone()"
    return expression, elements


def _flat_literal(values: list[Any]) -> str:
    """A flat list literal, eight values per line."""
    items = [_constant(value) for value in values]
    if len(items) <= 8:
        return "[" + ", ".join(items) + "]"
    rows = [", ".join(items[i : i + 8]) for i in range(0, len(items), 8)]
    return "[\n    " + ",\n    ".join(rows) + ",\n]"


def backend_name(backend: str | Callable[..., Any]) -> str:
    """A backend as a repro names it: its name, or ``module:attr`` for a compiler."""
    if isinstance(backend, str):
        return backend
    module = getattr(backend, "__module__", None)
    qualname = getattr(backend, "__qualname__", "")
    if module and qualname and "." not in qualname and "<" not in qualname:
        return f"{module}:{qualname}"
    raise NotInlinable(f"the backend {backend!r} has no importable name (use module:attr)")
