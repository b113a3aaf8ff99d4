"""Module-level definitions a drawn statement may call: autograd Functions, custom ops, hooks.

A statement names a definition by writing its call (``SavedScale.apply(x)``,
``torch.ops.cgraph.add_one_(x)``); the program then carries the definition
above ``def program``, so the rendered source, and every repro file made
from it, stays standalone. Each template is there for one hazard of the
compile path, said in its first comment line.

Custom ops are registered once per process: a guard skips the
registration when an earlier program of the same process made it.
"""

from __future__ import annotations

import re

#: Call text -> definition. Keys are what statements write; order is stable.
TEMPLATES: dict[str, str] = {
    "SavedScale.apply": """
# Backward reads a tensor saved by forward; later in-place writes to it are
# what eager's version counter checks and a compiled graph must too.
class SavedScale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x
""",
    "DirtyDouble.apply": """
# Forward writes its input in place and says so with mark_dirty: the output
# is the input, and autograd rebases its history.
class DirtyDouble(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad * 2
""",
    "WithArgmax.apply": """
# Two outputs, one marked non-differentiable: the compiled graph must keep
# which outputs require grad.
class WithArgmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        index = x.reshape(-1).argmax()
        ctx.mark_non_differentiable(index)
        return x * 3, index

    @staticmethod
    def backward(ctx, grad, grad_index):
        return grad * 3
""",
    "OnceScale.apply": """
# A backward that is not itself differentiable (once_differentiable).
class OnceScale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 0.5

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        return grad * 0.5
""",
    "StraightSin.apply": """
# A setup_context-style Function whose backward and jvp are not the
# derivative of its forward (a straight-through estimator): under
# torch.func transforms too, its own formulas must be used, not the
# forward's autodiff.
class StraightSin(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return torch.sin(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, grad):
        return grad * 0.5

    @staticmethod
    def jvp(ctx, tangent):
        return tangent * 0.5
""",
    "SavedOutputWritten.apply": """
# Backward writes in place a tensor it saved that forward also returned: the
# caller's output changes when backward runs, as in eager.
class SavedOutputWritten(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x * 2
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        y.mul_(0.5)
        return grad * 2
""",
    "KeptThenWritten.apply": """
# Forward keeps an intermediate in Python state (a module-level list), then
# writes it in place: the compiled forward must return the written tensor.
kept_by_forward = []


class KeptThenWritten(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.sin(x)
        kept_by_forward.append(y)
        y *= 2
        return y

    @staticmethod
    def backward(ctx, grad):
        return grad * 2
""",
    "torch.ops.cgraph.set_to_": """
# A custom op that rebinds its argument to another tensor with set_
# (mutates_args): functionalization must carry the new size and storage.
if not hasattr(torch.ops.cgraph, "set_to_"):

    @torch.library.custom_op("cgraph::set_to_", mutates_args=("x",))
    def _cgraph_set_to_(x: torch.Tensor, source: torch.Tensor) -> None:
        x.set_(source)

    @_cgraph_set_to_.register_fake
    def _(x, source):
        x.set_(source)
""",
    "torch.ops.cgraph.add_one_": """
# A custom op that mutates its argument (mutates_args), with a fake kernel:
# functionalization must write the mutation back.
if not hasattr(torch.ops.cgraph, "add_one_"):

    @torch.library.custom_op("cgraph::add_one_", mutates_args=("x",))
    def _cgraph_add_one_(x: torch.Tensor) -> None:
        x.add_(1)

    @_cgraph_add_one_.register_fake
    def _(x):
        return None
""",
    "torch.ops.cgraph.scaled": """
# A functional custom op with a registered fake kernel and autograd formula:
# compiled code sees only the fake's metadata while tracing, and its own
# backward where grads flow.
if not hasattr(torch.ops.cgraph, "scaled"):

    @torch.library.custom_op("cgraph::scaled", mutates_args=())
    def _cgraph_scaled(x: torch.Tensor) -> torch.Tensor:
        return x * 1.5

    @_cgraph_scaled.register_fake
    def _(x):
        return torch.empty_like(x)

    _cgraph_scaled.register_autograd(lambda ctx, grad: grad * 1.5)
""",
    "checkpointed_sin": """
# Activation checkpointing: forward saves nothing, backward recomputes this
# body; the compiled graph must recompute what eager does.
def checkpointed_sin(t):
    return torch.sin(t) * 2
""",
    "checkpointed_inplace": """
# A checkpointed body that writes an intermediate in place before using it.
def checkpointed_inplace(t):
    u = t * 2
    u.add_(1)
    return u.sin()
""",
    "halve_grad_in_place": """
# A post-accumulate-grad hook that writes the accumulated grad in place.
def halve_grad_in_place(p):
    p.grad.mul_(0.5)
""",
    "step_in_backward": """
# An optimizer step inside backward: the hook updates the leaf in place as
# soon as its grad is accumulated, as optimizer-in-backward training does.
def step_in_backward(p):
    with torch.no_grad():
        p.add_(p.grad, alpha=-0.1)
""",
}

#: The module a ``module`` input is built from (``m1 = Counter()``), keyed like a call.
MODULE = "Counter()"
TEMPLATES[MODULE] = """
# A module argument: a parameter, and a buffer its forward writes in place
# (the compiled function must keep the buffer's mutation, and the
# parameter's grad through a module call).
class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.full((1,), 0.5))
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x):
        self.calls.add_(1)
        return x * self.weight + self.calls
"""

#: The class a ``holder`` input is built from (``h1 = Holder()``), keyed like a call.
HOLDER = "Holder()"
TEMPLATES[HOLDER] = """
# A plain Python object a step function keeps its state in: a count, a list,
# and a current state that is one of two sentinel objects. The program reads,
# rebinds and appends to them, and branches on which sentinel is current:
# compiled code must guard what it branched on and replay every write. Its
# Recorder class, built outside the call, appends to the list through a
# closure: the program builds one and records through it.
class Holder:
    # Copied per side and compared by these attributes (pytest-cgraph).
    __cgraph_state__ = ("count", "items", "state")

    def __init__(self):
        self.on, self.off = object(), object()
        self.state = self.on
        self.count = 0
        self.items = []
        self.Recorder = recorder_class(self.items)

    def __setstate__(self, state):
        # A copy (one per side) records into its own list.
        self.__dict__.update(state)
        self.Recorder = recorder_class(self.items)


def recorder_class(items):
    class Recorder:
        def note(self, value):
            items.append(value)

    return Recorder
"""

#: The module-level state ``module_state`` statements rebind and read, keyed by
#: each of its calls (every such statement starts with ``set_state(``).
MODULE_STATE = """
# Module-level state a step function keeps in a global: the program rebinds it
# through a helper and reads it directly, through a helper, and inside a
# nested_compile_region. Compiled code must read the value bound last, not the
# one it traced, however often a region traced once is called again.
STATE = torch.zeros(())


def set_state(value):
    global STATE
    STATE = value


def get_state():
    return STATE


@torch.compiler.nested_compile_region
def region_state(x):
    return x + STATE
"""
for _call in ("set_state(", "get_state(", "region_state("):
    TEMPLATES[_call] = MODULE_STATE

_CALLS = re.compile("|".join(re.escape(call) for call in TEMPLATES))


def templates_used(lines: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The definitions ``lines`` call, in the order they first appear."""
    found: dict[str, None] = {}
    for line in lines:
        for match in _CALLS.finditer(line):
            found.setdefault(TEMPLATES[match.group(0)].strip("\n"), None)
    return tuple(found)
