"""The program shapes that reach the compile path's hazards, checked end to end.

Each shape is built as a :class:`Program`, rendered, and checked by the
oracle: it must pass on a correct backend (no false alarm from the shape
itself) and, where a fault backend drops what the shape relies on, fail
with the difference that names it.
"""

from __future__ import annotations

import pytest
import torch

import cgraph_doubles.faults  # noqa: F401  (registers the fault backends)
from pytest_cgraph import EquivalenceError
from pytest_cgraph.checking.runner import check_source, load_source
from pytest_cgraph.oracle.difference import Kind
from pytest_cgraph.oracle.protocol import ADVANCE, INPUTS, PROGRAM
from pytest_cgraph.registry.entries import baseline_dir, read_bugs
from pytest_cgraph.strategies import InputSpec, Program, Statement, draw_programs
from pytest_cgraph.strategies.templates import TEMPLATES, templates_used


def statement(*lines: str, defines: str = "") -> Statement:
    return Statement(
        "test", lines, (defines,) if defines else (), frozenset(), templates_used(lines)
    )


def program(
    *statements: Statement,
    outputs: tuple[str, ...],
    inputs: tuple[InputSpec, ...] = (InputSpec("a0", shape=(2, 3)),),
    **fields: object,
) -> Program:
    return Program("mixed", inputs, statements, outputs, **fields)  # type: ignore[arg-type]


GRAPH_BREAK_ACROSS_A_MUTATION = program(
    statement("v0 = a0 * 2", defines="v0"),
    statement("torch._dynamo.graph_break()"),
    statement("a0.add_(v0)"),
    statement("v1 = a0.sum(0)", defines="v1"),
    outputs=("v0", "v1"),
)

CUSTOM_OP_MUTATING_AN_INPUT = program(
    statement("torch.ops.cgraph.add_one_(a0)"),
    statement("v0 = torch.ops.cgraph.scaled(a0)", defines="v0"),
    outputs=("v0",),
)

# The functional custom op is differentiable: the oracle's backward runs through it.
CUSTOM_OP_UNDER_BACKWARD = program(
    statement("v0 = torch.ops.cgraph.scaled(a0)", defines="v0"),
    outputs=("v0",),
    inputs=(InputSpec("a0", shape=(2, 3), requires_grad=True),),
)

AUTOGRAD_FUNCTIONS = program(
    statement("v0 = SavedScale.apply(a0)", defines="v0"),
    statement("v1 = WithArgmax.apply(v0)[0]", defines="v1"),
    statement("v2 = OnceScale.apply(v1 * 1)", defines="v2"),
    statement("v3 = DirtyDouble.apply(v2 * 1)", defines="v3"),
    statement("v3.sum().backward(retain_graph=True)"),
    outputs=("v3",),
    inputs=(InputSpec("a0", shape=(2, 3), requires_grad=True),),
)


# A module argument whose forward writes its buffer; between calls the
# buffer is reassigned (param_update schedule).
MODULE_WITH_A_BUFFER = program(
    statement("v0 = m1(a0)", defines="v0"),
    outputs=("v0",),
    inputs=(InputSpec("a0", shape=(2, 3), requires_grad=True), InputSpec("m1", role="module")),
    schedule="param_update",
)


def test_a_module_argument_is_carried_called_and_its_buffer_observed() -> None:
    source = MODULE_WITH_A_BUFFER.render()
    assert source.count("class Counter(") == 1 and "m1 = Counter()" in source
    assert "args[1].calls = args[1].calls * 0" in source
    check_source(source, backend="aot_eager", iters=4)
    from pytest_cgraph import EquivalenceError

    with pytest.raises(EquivalenceError) as caught:
        check_source(source, backend="faulty_lost_input_mutation", iters=3)
    assert caught.value.difference.kind is Kind.MUTATION
    assert "m1.calls" in caught.value.difference.headline()


def with_optimizer(optimizer: str, set_to_none: bool) -> Program:
    return program(
        statement("v0 = (a0 * p1).sum()", defines="v0"),
        statement("v0.backward(retain_graph=True)"),
        outputs=("v0",),
        inputs=(
            InputSpec("a0", shape=(3,)),
            InputSpec("p1", role="parameter", shape=(3,), requires_grad=True),
        ),
        schedule="optimizer",
        optimizer=optimizer,
        set_to_none=set_to_none,
    )


# Read only: with a1.mul_(2) first, torch 2.13 reuses the graph compiled for
# the aliased call on the unaliased one and crashes (a recorded difference).
ALIASED_ON_ODD_CALLS = program(
    statement("v0 = a0 + a1.sum()", defines="v0"),
    outputs=("v0",),
    inputs=(
        InputSpec("a0", shape=(4,)),
        InputSpec("a1", shape=(3,), layout="alias_sometimes", alias_of="a0"),
    ),
    schedule="fresh",
)


# Two separately compiled functions: the second writes the first's output
# and an input the first read, and returns a view of the first's output.
CHAINED_STAGES = program(
    statement("v0 = a0 * 2", defines="v0"),
    statement("v1 = v0.sum(0)", defines="v1"),
    statement("v0.add_(1)"),
    statement("a0.mul_(0.5)"),
    statement("v2 = v0[0]", defines="v2"),
    outputs=("v1", "v2"),
    chain_at=2,
)

# An argument that requires grad through an op of its own, written in place.
NON_LEAF_INPUT = program(
    statement("a0.add_(1)"),
    statement("v0 = a0 * a0", defines="v0"),
    outputs=("v0",),
    inputs=(InputSpec("a0", shape=(2, 3), requires_grad=True, layout="nonleaf"),),
    schedule="fresh",
)

LOW_PRECISION_AND_COMPLEX = program(
    statement("v0 = a0.float() + torch.view_as_real(a1).sum(-1)", defines="v0"),
    statement("a1.real.mul_(2)"),
    statement("v1 = a1.imag", defines="v1"),
    statement("a2.add_(v0.to(a2.dtype))"),
    outputs=("v0", "v1", "a2"),
    inputs=(
        InputSpec("a0", shape=(3,), dtype="float16"),
        InputSpec("a1", shape=(3,), dtype="complex64"),
        InputSpec("a2", shape=(3,), dtype="bfloat16"),
    ),
)


# Two inputs written through one foreach op (disjoint memory).
FOREACH_OVER_INPUTS = program(
    statement("torch._foreach_mul_([a0, a1], 2.0)"),
    statement("v0 = torch._foreach_add([a0, a1], 1.5)[-1]", defines="v0"),
    outputs=("v0",),
    inputs=(InputSpec("a0", shape=(2, 3)), InputSpec("a1", shape=(3,))),
)

# Checkpointed bodies (one writing an intermediate in place), then a backward
# that recomputes them; the oracle's own backward recomputes them again.
CHECKPOINTED = program(
    statement(
        "v0 = torch.utils.checkpoint.checkpoint(checkpointed_inplace, a0, use_reentrant=False)",
        defines="v0",
    ),
    statement(
        "v1 = torch.utils.checkpoint.checkpoint(checkpointed_sin, v0, use_reentrant=False)",
        defines="v1",
    ),
    statement("v1.sum().backward(retain_graph=True)"),
    outputs=("v1",),
    inputs=(InputSpec("a0", shape=(2, 3), requires_grad=True),),
)

# An autocast region that writes its result and an input in place; a grad
# kept on a non-leaf; hooks that run once a leaf's grad is accumulated.
AUTOCAST_AND_GRAD_HOOKS = program(
    statement("a1.register_post_accumulate_grad_hook(halve_grad_in_place)"),
    statement(
        'with torch.autocast("cpu", dtype=torch.bfloat16):',
        "    v0 = a0 @ a0.mT",
        "    v0.add_(1)",
        "    a0.mul_(2)",
        defines="v0",
    ),
    statement("v1 = a1 * v0.float().sum()", defines="v1"),
    statement(
        "v1.retain_grad()", "v1.sum().backward(retain_graph=True)", "v2 = v1.grad", defines="v2"
    ),
    outputs=("v1", "v2"),
    inputs=(InputSpec("a0", shape=(2, 3)), InputSpec("a1", shape=(3,), requires_grad=True)),
)

# Layout changes, overlapping windows, value-dependent sizes, Python over
# tensors, torch.func, inference tensors, .grad assigned.
LAYOUTS_AND_TRANSFORMS = program(
    statement(
        "v0 = a0.reshape(1, 2, 3, 1).contiguous(memory_format=torch.channels_last)", defines="v0"
    ),
    statement("v1 = a0.unfold(1, 2, 1)", defines="v1"),
    statement("v2 = a0.nonzero()", defines="v2"),
    statement("v3 = torch.stack([t * i for i, t in enumerate(a0.unbind(0))])", defines="v3"),
    statement("v4 = torch.vmap(lambda t: t * t.sum())(a0)", defines="v4"),
    statement("v5 = 2 if v0.is_contiguous() else 3", defines="v5"),
    statement("with torch.inference_mode():", "    v6 = a0 * 2", defines="v6"),
    statement("a0.index_fill_(0, torch.tensor([1, 1]), 2.0)"),
    statement("p1.grad = p1.detach() * 2"),
    outputs=("v0", "v1", "v2", "v3", "v4", "v5", "v6", "a0"),
    inputs=(
        InputSpec("a0", shape=(2, 3)),
        InputSpec("p1", role="parameter", shape=(3,), requires_grad=True),
    ),
)

CONJUGATE_VIEWS_AND_FORWARD_MODE = program(
    statement("v0 = c1.conj()", defines="v0"),
    statement("v0.mul_(2)"),
    statement("v1 = a0.t().stride(0) + 1 if a0.dim() else 1", defines="v1"),
    statement("v2 = 2 if a0[1:]._is_view() else 3", defines="v2"),
    statement("torch.nn.functional.silu(a0, inplace=True)"),
    statement("a0.cumsum_(0)"),
    statement("v3 = a0.new_full((2,), 1)", defines="v3"),
    statement("v4 = torch.func.jvp(torch.sin, (a0,), (torch.ones_like(a0),))[1]", defines="v4"),
    outputs=("v0", "v1", "v2", "v3", "v4", "a0", "c1"),
    inputs=(
        InputSpec("a0", shape=(2, 3)),
        InputSpec("c1", shape=(2,), dtype="complex64"),
    ),
)


@pytest.mark.parametrize(
    "shape",
    [
        CHAINED_STAGES,
        NON_LEAF_INPUT,
        LOW_PRECISION_AND_COMPLEX,
        GRAPH_BREAK_ACROSS_A_MUTATION,
        CUSTOM_OP_MUTATING_AN_INPUT,
        CUSTOM_OP_UNDER_BACKWARD,
        AUTOGRAD_FUNCTIONS,
        FOREACH_OVER_INPUTS,
        CHECKPOINTED,
        AUTOCAST_AND_GRAD_HOOKS,
        LAYOUTS_AND_TRANSFORMS,
        CONJUGATE_VIEWS_AND_FORWARD_MODE,
    ],
    ids=[
        "chained",
        "non_leaf_input",
        "low_precision_and_complex",
        "graph_break",
        "custom_op",
        "custom_op_backward",
        "autograd_function",
        "foreach",
        "checkpoint",
        "autocast_and_grad_hooks",
        "layouts_and_transforms",
        "conjugate_views_and_forward_mode",
    ],
)
def test_a_shape_passes_on_a_correct_backend(shape: Program) -> None:
    report = check_source(shape.render(), backend="aot_eager", iters=3)
    assert report.iterations == 3


def test_a_graph_break_splits_the_program_into_graphs() -> None:
    report = check_source(GRAPH_BREAK_ACROSS_A_MUTATION.render(), backend="aot_eager", iters=2)
    assert report.compiles >= 2


@pytest.mark.parametrize(
    "shape",
    [
        GRAPH_BREAK_ACROSS_A_MUTATION,
        CUSTOM_OP_MUTATING_AN_INPUT,
        CHAINED_STAGES,
        NON_LEAF_INPUT,
        FOREACH_OVER_INPUTS,
        AUTOCAST_AND_GRAD_HOOKS,
        CONJUGATE_VIEWS_AND_FORWARD_MODE,
    ],
    ids=[
        "graph_break",
        "custom_op",
        "chained",
        "non_leaf_input",
        "foreach",
        "autocast",
        "conjugate",
    ],
)
def test_a_lost_input_mutation_is_caught_through_the_shape(shape: Program) -> None:
    from pytest_cgraph import EquivalenceError

    with pytest.raises(EquivalenceError) as caught:
        check_source(shape.render(), backend="faulty_lost_input_mutation", iters=3)
    # Seen first where the lost write is read: the input, an output, or a grad.
    assert caught.value.difference.kind in (Kind.MUTATION, Kind.VALUE, Kind.GRAD)


@pytest.mark.parametrize(
    ("optimizer", "set_to_none"),
    [
        ("torch.optim.SGD(params, lr=0.1, momentum=0.9)", False),
        ("torch.optim.Adam(params, lr=0.1)", True),
    ],
)
def test_an_optimizer_steps_between_calls_on_each_side(optimizer: str, set_to_none: bool) -> None:
    shape = with_optimizer(optimizer, set_to_none)
    source = shape.render()
    assert f"zero_grad(set_to_none={set_to_none})" in source
    check_source(source, backend="aot_eager", iters=4)
    # The schedule really steps: the parameter moves between calls.
    namespace = load_source(source, "<optimizer>")
    args = namespace[INPUTS](1)
    before = args[1].detach().clone()
    namespace[PROGRAM](*args)
    args = namespace[ADVANCE](1, args, None)
    assert not args[1].detach().equal(before)


def test_inputs_aliased_on_some_calls_only() -> None:
    namespace = load_source(ALIASED_ON_ODD_CALLS.render(), "<alias>")
    odd, even = namespace[INPUTS](1), namespace[INPUTS](2)
    assert odd[1].untyped_storage().data_ptr() == odd[0].untyped_storage().data_ptr()
    assert even[1].untyped_storage().data_ptr() != even[0].untyped_storage().data_ptr()
    check_source(ALIASED_ON_ODD_CALLS.render(), backend="aot_eager", iters=4)


def test_the_rendered_program_carries_each_definition_it_calls_once() -> None:
    source = AUTOGRAD_FUNCTIONS.render()
    for name in ("SavedScale", "WithArgmax", "OnceScale", "DirtyDouble"):
        assert source.count(f"class {name}(") == 1
    assert "cgraph::add_one_" not in source
    # Registering a custom op is guarded: a second program in the same
    # process (or the same program loaded twice) does not re-register it.
    for _ in range(2):
        load_source(CUSTOM_OP_MUTATING_AN_INPUT.render(), "<twice>")
    assert set(templates_used(["torch.ops.cgraph.add_one_(x)"])) == {
        TEMPLATES["torch.ops.cgraph.add_one_"].strip("\n")
    }


def test_a_chained_program_compiles_each_stage_and_hands_over_what_the_second_reads() -> None:
    source = CHAINED_STAGES.render()
    assert "COMPILE = ('stage0', 'stage1')" in source
    assert "def stage1(a0, v0, v1):" in source  # v2 is the second stage's own
    assert "    (v0, v1,) = stage0(a0)" in source
    report = check_source(source, backend="aot_eager", iters=2)
    assert report.compiles >= 2
    # One statement kept: nothing to split, one compiled function.
    single = program(statement("v0 = a0 * 2", defines="v0"), outputs=("v0",), chain_at=1)
    assert not single.chained and "COMPILE" not in single.render()


GRAD_MODE_PROBE = """
import torch


def program(a0):
    assert torch.is_inference_mode_enabled()
    return (a0 * 2,)


def inputs(k):
    return (torch.ones(3, requires_grad=True),)


GRAD_MODE = {mode!r}
"""


def test_the_ambient_grad_mode_is_around_both_sides_calls() -> None:
    from pytest_cgraph.oracle.errors import InvalidProgram

    check_source(GRAD_MODE_PROBE.format(mode="inference_mode"), backend="aot_eager", iters=2)
    with pytest.raises(InvalidProgram):
        check_source(GRAD_MODE_PROBE.format(mode="grad"), backend="aot_eager", iters=2)
    drawn = program(statement("v0 = a0 * 2", defines="v0"), outputs=("v0",), grad_mode="no_grad")
    assert "GRAD_MODE = 'no_grad'" in drawn.render()


AUTOCAST_PROBE = """
import torch


def program(a0):
    v0 = a0 @ a0.mT
    assert v0.dtype is torch.bfloat16, v0.dtype
    return (v0,)


def inputs(k):
    return (torch.ones(2, 3, requires_grad=True),)


AUTOCAST = {dtype!r}
"""


def test_an_ambient_autocast_is_around_both_sides_calls() -> None:
    from pytest_cgraph.oracle.errors import InvalidProgram

    check_source(AUTOCAST_PROBE.format(dtype="bfloat16"), backend="aot_eager", iters=2)
    with pytest.raises(InvalidProgram):
        check_source(AUTOCAST_PROBE.format(dtype=None), backend="aot_eager", iters=2)
    drawn = program(statement("v0 = a0 * 2", defines="v0"), outputs=("v0",), autocast="bfloat16")
    assert "AUTOCAST = 'bfloat16'" in drawn.render()
    assert "autocast:bfloat16" in drawn.all_features()


def test_a_backend_that_drops_the_ambient_autocast_is_caught() -> None:
    """The compiled side's calls run under the autocast too: one that escapes it
    computes the matmul in float32, and the output's dtype tells."""
    from pytest_cgraph import EquivalenceError

    source = AUTOCAST_PROBE.format(dtype="bfloat16").replace(
        "    assert v0.dtype is torch.bfloat16, v0.dtype\n", ""
    )
    with pytest.raises(EquivalenceError) as caught:
        check_source(source, backend="faulty_autocast_escaped", iters=2)
    assert caught.value.difference.kind is Kind.METADATA


def test_an_autocast_value_that_is_no_dtype_is_one_line() -> None:
    from pytest_cgraph.oracle.protocol import ProgramSourceError

    with pytest.raises(ProgramSourceError, match=r"^AUTOCAST must be one of \('bfloat16', "):
        check_source(AUTOCAST_PROBE.format(dtype="int8"), backend="aot_eager", iters=2)


MEMORY_BUDGET_PROBE = """
import torch


def program(a0):
    return (torch.nn.functional.dropout(a0.sin(), 0.5).cos(),)


def inputs(k):
    return (torch.linspace(0.1, 1.0, 64).requires_grad_(),)


ITERS = 1
{config}
"""


def test_compile_settings_are_in_force_on_the_compiled_side_and_put_back() -> None:
    """Under a memory budget of 0 the partitioner recomputes the dropout in the
    backward (partitioner-memory-budget-recomputes-random-op): the gradients
    tell that the setting was in force. Without it the same program passes, and
    the process's setting is as it was before the check."""
    import torch._functorch.config as functorch_config

    from pytest_cgraph import EquivalenceError

    setting = "{'torch._functorch.config.activation_memory_budget': 0.0}"
    check_source(MEMORY_BUDGET_PROBE.format(config=""), backend="aot_eager")
    with pytest.raises(EquivalenceError) as caught:
        check_source(
            MEMORY_BUDGET_PROBE.format(config=f"COMPILE_CONFIG = {setting}"), backend="aot_eager"
        )
    assert caught.value.difference.kind is Kind.GRAD
    assert functorch_config.activation_memory_budget == 1.0
    drawn = program(
        statement("v0 = a0 * 2", defines="v0"),
        outputs=("v0",),
        compile_config=(("torch._functorch.config.activation_memory_budget", 0.5),),
    )
    assert f"COMPILE_CONFIG = {setting.replace('0.0', '0.5')}" in drawn.render()
    assert "compile_config:activation_memory_budget" in drawn.all_features()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            "0.5",
            r"^COMPILE_CONFIG must be a dict from a setting's full name to its value, got float$",
        ),
        (
            "{'torch.backends.cudnn.benchmark': True}",
            r"^COMPILE_CONFIG names 'torch.backends.cudnn.benchmark': a setting of one of ",
        ),
        (
            "{'torch._functorch.config.activation_budget': 0.5}",
            r"^COMPILE_CONFIG names 'torch._functorch.config.activation_budget', which this "
            r"torch's torch._functorch.config does not have$",
        ),
    ],
)
def test_a_compile_setting_torch_does_not_have_is_one_line(config: str, message: str) -> None:
    from pytest_cgraph.oracle.protocol import ProgramSourceError

    with pytest.raises(ProgramSourceError, match=message):
        check_source(
            MEMORY_BUDGET_PROBE.format(config=f"COMPILE_CONFIG = {config}"), backend="aot_eager"
        )


def _rebinding(source: str) -> str:
    return f"""
import torch

{TEMPLATES["torch.ops.cgraph.set_to_"]}

def program(a0):
    torch.ops.cgraph.set_to_(a0, {source})
    return (a0 / 3,)


def inputs(k):
    return (torch.arange(9.0).reshape(3, 3),)
"""


def test_a_custom_op_that_rebinds_its_argument_is_drawn() -> None:
    drawn = draw_programs(300, seed=2, families=("mutation",))
    assert any("torch.ops.cgraph.set_to_(" in p.render() for p in drawn)


def test_a_custom_op_rebinding_its_argument_to_the_same_size_passes() -> None:
    report = check_source(_rebinding("a0 * 3"), backend="aot_eager", iters=2)
    assert report.iterations == 2


def _known_here(bug: str) -> bool:
    directory = baseline_dir(torch.__version__)
    return directory is not None and bug in {b.id for b in read_bugs(directory)}


@pytest.mark.skipif(not _known_here("custom-op-set-size-change"), reason="not known on this torch")
def test_a_custom_op_rebinding_its_argument_to_another_size_differs() -> None:
    with pytest.raises(EquivalenceError) as raised:
        check_source(_rebinding("a0.reshape(-1) * 3"), backend="aot_eager", iters=2)
    assert raised.value.difference.kind is Kind.CRASH
    assert "expand" in (raised.value.difference.message or "")


def test_resampling_is_drawn_over_rank_two_and_three_tensors() -> None:
    drawn = draw_programs(300, seed=2, families=("autograd",))
    resampled = [p.render() for p in drawn if "interpolate(" in p.render()]
    assert resampled, "no interpolate in 300 autograd programs"
    assert all("scale_factor=2" in source for source in resampled)
