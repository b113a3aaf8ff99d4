"""Python objects as arguments: a ``random.Random`` copied per side and compared
by state; a plain object copied per side and compared by its attributes; hooks
registered on a module argument between calls."""

from __future__ import annotations

import functools
import random
import threading
import time

import pytest
import torch

from pytest_cgraph import ConfigurationError, EquivalenceError, check_equivalent, check_source
from pytest_cgraph.oracle.difference import Kind
from pytest_cgraph.oracle.observe import PythonRandomState, object_state, snapshot
from pytest_cgraph.oracle.sides import clone_arguments
from pytest_cgraph.registry.entries import (
    ADVANCED,
    PYTHON_RANDOM,
    baseline_dir,
    program_ops,
    read_bugs,
)
from pytest_cgraph.registry.hazards import hazard_of
from pytest_cgraph.strategies import Program, draw_programs
from pytest_cgraph.strategies.generate import TRACE_BUILD_CLASS
from pytest_cgraph.strategies.program import MODULE_HOOKS
from pytest_cgraph.strategies.templates import HOLDER, TEMPLATES


def known_bug_ids() -> set[str]:
    """The bugs this torch's shipped baseline holds."""
    directory = baseline_dir(torch.__version__)
    return {b.id for b in read_bugs(directory)} if directory is not None else set()


def known_here(bug: str) -> pytest.MarkDecorator:
    """Skip unless this torch's shipped baseline holds ``bug``: the test shows
    the oracle seeing a difference torch makes, for as long as torch makes it."""
    return pytest.mark.skipif(
        bug not in known_bug_ids(), reason=f"{bug} is not known on this torch"
    )


#: Draws a number, and drops it: only the generator's state can tell.
STATE_ONLY = """
import random
import torch


def program(a0, r1):
    r1.random()
    return (a0 * 2,)


def inputs(k):
    return (torch.ones(2), random.Random(7))
"""


def test_a_random_generator_is_copied_per_side_with_its_state() -> None:
    original = random.Random(7)
    (copy,) = clone_arguments([original])
    assert copy is not original and copy.getstate() == original.getstate()
    copy.random()
    assert copy.getstate() != original.getstate()


def test_a_generator_is_observed_by_its_state_not_its_identity() -> None:
    first, second = random.Random(3), random.Random(3)
    assert snapshot(first) == snapshot(second)
    second.random()
    assert snapshot(first) != snapshot(second)
    assert repr(snapshot(first)).startswith("random.Random(state ")
    assert isinstance(snapshot(first), PythonRandomState)


def test_a_system_random_has_no_state_to_read_and_passes_through() -> None:
    system = random.SystemRandom()
    (copy,) = clone_arguments([system])
    assert copy is system and snapshot(system) is system


@known_here("python-random-argument-draw-replayed")
def test_a_draw_the_compiled_side_replays_shows_in_the_generator_s_state() -> None:
    # The output agrees; Dynamo draws once while tracing and bakes the number
    # in, so from the second call the compiled side's generator stays where
    # it was while eager's advances.
    with pytest.raises(EquivalenceError) as raised:
        check_source(STATE_ONLY, backend="eager", iters=3)
    difference = raised.value.difference
    assert (difference.kind, difference.iteration) == (Kind.MUTATION, 2)
    assert difference.place.name == "r1"


def test_a_program_drawing_from_a_generator_names_it_as_its_cause() -> None:
    assert PYTHON_RANDOM in program_ops(STATE_ONLY)
    assert hazard_of(PYTHON_RANDOM) == "rng"
    unused = STATE_ONLY.replace("    r1.random()\n", "")
    assert PYTHON_RANDOM not in program_ops(unused)


def test_a_drawn_program_with_a_generator_imports_random() -> None:
    drawn = [p for p in draw_programs(200, seed=3, families=("rng",)) if p.draws_python_random]
    assert drawn, "no random.Random argument in 200 rng programs"
    assert all(p.render().splitlines()[1] == "import random" for p in drawn)


def test_hooks_registered_between_calls_are_calls_of_the_program() -> None:
    # Drawn a quarter as often as other schedules: 14 of these 300.
    drawn = draw_programs(300, seed=2, families=("schedules",))
    hooked = [p for p in drawn if p.schedule == "module_hooks"]
    assert hooked, "no module_hooks schedule in 300 schedules programs"
    for program in hooked:
        source = program.render()
        assert program.module_indices, "a module_hooks program has a module argument"
        assert program.module_hook in source
        registered = program.module_hook.split("(")[0]
        assert f"{ADVANCED}.{registered}" in program_ops(source)
        assert hazard_of(registered) == "autograd"
    # The same registration inside the program is a call of its own name.
    inside = "def program(m1, a0):\n    m1.register_forward_hook(print)\n    return (m1(a0),)\n"
    assert "register_forward_hook" in program_ops(inside)
    assert f"{ADVANCED}.register_forward_hook" not in program_ops(inside)


@known_here("module-hook-added-after-compile")
@pytest.mark.parametrize("hook", MODULE_HOOKS)
def test_a_hook_registered_after_the_first_call_is_a_difference_torch_makes(hook: str) -> None:
    # torch's default skips guards on module hooks: the compiled function,
    # traced before the hook was added, never runs it (backend eager shows it).
    source = f"""
import torch


class Scale(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.full((1,), 0.5))

    def forward(self, x):
        return x * self.weight


def program(a0, m1):
    return (m1(a0),)


def inputs(k):
    return (torch.ones(2, requires_grad=True), Scale())


def advance(k, args, outputs):
    if k == 1:
        args[1].{hook}
    return args
"""
    with pytest.raises(EquivalenceError) as raised:
        check_source(source, backend="eager", iters=3)
    difference = raised.value.difference
    assert difference.iteration == 2
    assert difference.kind is (Kind.VALUE if "forward" in hook else Kind.GRAD)


#: A Holder argument (the generator's template) whose state the program
#: branches on and rebinds.
TOGGLE = f"""
import torch

{TEMPLATES[HOLDER]}

def program(a0, h1):
    v0 = a0 + 1 if h1.state is h1.on else a0 * 2
    h1.state = h1.off if h1.state is h1.on else h1.on
    return (v0,)


def inputs(k):
    return (torch.ones(2), Holder())
"""


def _holder() -> object:
    namespace: dict[str, object] = {"torch": torch}
    exec(TEMPLATES[HOLDER], namespace)
    return namespace["Holder"]()  # type: ignore[operator]


def test_an_object_that_declares_its_state_is_copied_per_side() -> None:
    holder = _holder()
    tensor = torch.ones(2)
    holder.weight = tensor  # type: ignore[attr-defined]
    copied_tensor, copied = clone_arguments([tensor, holder])
    assert copied is not holder and copied.items is not holder.items  # type: ignore[attr-defined]
    assert copied.state is copied.on and copied.weight is copied_tensor  # type: ignore[attr-defined]


def test_an_object_is_observed_by_its_declared_attributes_and_their_identities() -> None:
    holder = _holder()
    holder.items.append(3)  # type: ignore[attr-defined]
    state = dict(object_state("h1", holder))
    assert state == {
        "h1.count": 0,
        "h1.items": (3,),
        "h1.state": "<the object h1.on holds>",
    }


class Timed:
    """A user's state object that declares nothing: a timestamp, a NaN, a count."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.best = float("nan")
        self.calls = 0


def record_call(x: torch.Tensor, timed: Timed) -> torch.Tensor:
    timed.calls += 1
    timed.started = time.perf_counter()
    return x * 2


def test_an_object_that_declares_no_state_is_shared_and_not_compared() -> None:
    # As before objects could declare their state: one object for both
    # sides, and nothing of it compared (a timestamp differs run to run).
    timed = Timed()
    (same,) = clone_arguments([timed])
    assert same is timed
    check_equivalent(record_call, torch.ones(2), timed, backend="eager", iters=2)
    assert timed.calls == 4  # both sides called it, on the caller's object


class Unclonable:
    __cgraph_state__ = ("lock",)

    def __init__(self) -> None:
        self.lock = threading.Lock()


def test_a_declared_object_that_cannot_be_copied_is_one_clear_error() -> None:
    with pytest.raises(ConfigurationError, match="declares __cgraph_state__ but cannot be copied"):
        check_equivalent(lambda x, u: x * 2, torch.ones(2), Unclonable(), backend="eager")


def test_a_program_using_an_object_argument_names_its_class() -> None:
    assert {"Holder()", "Holder() is"} <= program_ops(TOGGLE)
    counting = TOGGLE.replace(
        "    v0 = a0 + 1 if h1.state is h1.on else a0 * 2\n"
        "    h1.state = h1.off if h1.state is h1.on else h1.on\n",
        "    h1.count += 1\n    v0 = a0 * h1.count\n",
    )
    assert "Holder()" in program_ops(counting) and "Holder() is" not in program_ops(counting)
    # A module argument is named by its calls, not by reading its attributes.
    module = (
        "class Net(torch.nn.Module):\n    pass\n\n\n"
        "def program(m1, a0):\n    return (a0 * m1.training,)\n\n\n"
        "def inputs(k):\n    return (Net(), torch.ones(1))\n"
    )
    assert "Net()" not in program_ops(module)
    # torch's own classes built in inputs are not objects of the program's state.
    parameter = (
        "def program(p1):\n    return (p1.grad,)\n\n\n"
        "def inputs(k):\n    return (torch.nn.Parameter(torch.ones(1)),)\n"
    )
    assert "Parameter()" not in program_ops(parameter)


def test_holder_arguments_are_drawn_and_used() -> None:
    drawn = draw_programs(300, seed=3, families=("schedules",))
    held = [p for p in drawn if any(s.role == "holder" for s in p.inputs)]
    assert held, "no Holder argument in 300 schedules programs"
    # Each is used at once (as a module is called), so it is never idle.
    assert all("python_state" in p.all_features() for p in held)


def _rejected_store(store: str, error: str) -> str:
    return f"""
import torch

{TEMPLATES[HOLDER]}

def program(a0, h1):
    try:
        {store}
    except {error}:
        h1.count += 1
    return (a0 + h1.count,)


def inputs(k):
    return (torch.ones(2), Holder())
"""


def test_stores_python_rejects_are_drawn_inside_a_handler() -> None:
    drawn = draw_programs(400, seed=5, families=("schedules",))
    sources = "\n".join(p.render() for p in drawn)
    assert "except AttributeError:" in sources
    assert "__weakref__ = None" in sources or "__dict__ = None" in sources


def test_a_caught_delete_of_a_missing_attribute_runs_the_handler_on_both_sides() -> None:
    report = check_source(_rejected_store("del h1.missing", "AttributeError"), backend="eager")
    assert report.iterations == 5


@known_here("dynamo-rejected-store-replayed")
@pytest.mark.parametrize(
    ("store", "error"),
    [("h1.__weakref__ = None", "AttributeError"), ("h1.__dict__ = None", "TypeError")],
)
def test_a_rejected_store_replayed_after_the_graph_is_a_crash_torch_makes(
    store: str, error: str
) -> None:
    with pytest.raises(EquivalenceError) as raised:
        check_source(_rejected_store(store, error), backend="eager", iters=2)
    difference = raised.value.difference
    assert difference.kind is Kind.CRASH
    assert difference.exception_type == error


def test_a_function_that_keeps_its_intermediate_in_python_state_is_drawn() -> None:
    drawn = [p for seed in (1, 2, 3) for p in draw_programs(300, seed=seed, families=("autograd",))]
    kept = [p.render() for p in drawn if "KeptThenWritten.apply" in p.render()]
    assert kept, "no KeptThenWritten in 900 autograd programs"
    assert all("kept_by_forward = []" in source for source in kept)


@known_here("dynamo-function-forward-kept-intermediate")
def test_a_kept_intermediate_written_in_forward_is_a_refusal_torch_makes() -> None:
    source = f"""
import torch

{TEMPLATES["KeptThenWritten.apply"]}

def program(a0):
    return (KeptThenWritten.apply(a0),)


def inputs(k):
    return (torch.ones(4, requires_grad=True),)
"""
    with pytest.raises(EquivalenceError) as raised:
        check_source(source, backend="eager", iters=2)
    difference = raised.value.difference
    assert difference.kind is Kind.CRASH
    assert "aliases an input or output" in (difference.message or "")


def test_a_holder_copied_per_side_records_into_its_own_list() -> None:
    # The Recorder class closes over the list: a copy that kept the original's
    # class would record into the other side's list, and hide a lost append.
    holder = _holder()
    (copied,) = clone_arguments([holder])
    copied.Recorder().note(7)  # type: ignore[attr-defined]
    assert (copied.items, holder.items) == ([7], [])  # type: ignore[attr-defined]


#: An append through a method of a class that closes over the Holder's list.
RECORDING = f"""
import torch

{TEMPLATES[HOLDER]}

def program(a0, h1):
    h1.Recorder().note(h1.count)
    return (a0 * len(h1.items),)


def inputs(k):
    return (torch.ones(2), Holder())
"""


def test_an_append_through_a_closure_is_drawn_and_named_by_its_class() -> None:
    drawn = [
        p.render()
        for seed in (1, 2)
        for p in draw_programs(400, seed=seed, families=("schedules",))
    ]
    assert any(".Recorder().note(" in source for source in drawn)
    assert {"Holder()", "Recorder"} <= program_ops(RECORDING)


@pytest.mark.parametrize(
    ("bug", "source", "iteration"),
    [
        # A branch on an attribute's identity, replayed from the first call.
        pytest.param("dynamo-attribute-identity-unguarded", TOGGLE, 2, id="identity"),
        # An append through a closure, dropped.
        pytest.param("dynamo-closure-cell-append-dropped", RECORDING, 1, id="closure-append"),
    ],
)
def test_a_holder_s_state_lost_by_compiling_is_a_difference_torch_makes(
    bug: str, source: str, iteration: int
) -> None:
    if bug not in known_bug_ids():
        pytest.skip(f"{bug} is not known on this torch")
    with pytest.raises(EquivalenceError) as raised:
        check_source(source, backend="eager", iters=3)
    difference = raised.value.difference
    assert difference.iteration == iteration
    assert difference.kind in (Kind.VALUE, Kind.MUTATION)


def _module_state_program(body: str) -> str:
    """A program over the generator's module state, its inputs changing each call."""
    return f"""
import torch

{TEMPLATES["set_state("]}

def program(a0):
{body}


def inputs(k):
    return (torch.full((2,), float(k)),)


FRESH_INPUTS = True
"""


#: Each read follows its own rebind: directly, through a helper, inside a region.
MODULE_STATE_READS = _module_state_program(
    "    set_state(a0 * 2)\n"
    "    v0 = a0 + STATE\n"
    "    set_state(a0 + 1)\n"
    "    v1 = get_state() * a0\n"
    "    set_state(v1)\n"
    "    v2 = region_state(v1)\n"
    "    return (v0, v1, v2)"
)

#: A region called again after the global it reads was rebound.
MODULE_STATE_REUSED = _module_state_program(
    "    set_state(a0)\n"
    "    v0 = region_state(a0)\n"
    "    set_state(v0 + 1)\n"
    "    v0 = v0 + region_state(a0)\n"
    "    return (v0,)"
)


@functools.cache
def _schedules_programs() -> tuple[Program, ...]:
    """400 schedules programs (seed 3), drawn once for the tests that look into them."""
    return tuple(draw_programs(400, seed=3, families=("schedules",)))


def _schedules_drawing(op: str) -> tuple[tuple[Program, ...], list[Program]]:
    """400 schedules programs (seed 3), and those of them that draw ``op``."""
    drawn = _schedules_programs()
    drawing = [p for p in drawn if op in p.all_features()]
    assert drawing, f"no {op} statement in 400 schedules programs"
    return drawn, drawing


def test_module_state_is_drawn_and_rebound_before_each_read() -> None:
    _, stateful = _schedules_drawing("module_state")
    for program in stateful:
        assert "def set_state(value):" in program.render()
        for statement in program.statements:
            if statement.op == "module_state":
                # Both sides run one module: a read of an earlier call's
                # binding would read the other side's.
                assert statement.lines[0].startswith("set_state(")
    assert any("region_state(" in p.render_body() for p in stateful)


def test_mixed_draws_module_state_but_never_a_class_statement() -> None:
    # A class statement compiles under a setting of its own, which mixed does
    # not draw (it kept mixed programs from shrinking to one input).
    drawn = draw_programs(400, seed=1, families=("mixed",))
    assert any("module_state" in p.all_features() for p in drawn)
    assert not any("local_class" in p.all_features() for p in drawn)
    assert all(TRACE_BUILD_CLASS not in dict(p.compile_config) for p in drawn)


def test_module_state_read_after_its_own_rebind_agrees_on_both_sides() -> None:
    report = check_source(MODULE_STATE_READS, backend="eager", iters=3)
    assert report.iterations == 3 and report.tensor_outputs == 3


def test_a_program_using_module_state_names_its_helpers() -> None:
    assert {"set_state", "region_state"} <= program_ops(MODULE_STATE_REUSED)


@known_here("nested-region-rebound-global")
def test_a_region_reused_after_its_global_was_rebound_is_a_difference_torch_makes() -> None:
    with pytest.raises(EquivalenceError) as raised:
        check_source(MODULE_STATE_REUSED, backend="eager", iters=2)
    difference = raised.value.difference
    assert difference.iteration == 1
    assert difference.kind is Kind.VALUE


@pytest.mark.skipif(
    torch.torch_version.TorchVersion(torch.__version__) < "2.14.1",
    reason="nested-region-rebound-global: fixed in torch 2.14.1",
)
def test_a_region_reused_after_its_global_was_rebound_agrees_where_torch_fixed_it() -> None:
    report = check_source(MODULE_STATE_REUSED, backend="eager", iters=2)
    assert report.iterations == 2 and report.tensor_outputs == 1


def _local_class_program(body: str) -> str:
    """A program that builds a class inside the call, compiled as the generator
    compiles one (with the setting under which Dynamo traces a class statement)."""
    return f"""
import torch


def program(a0):
{body}


def inputs(k):
    return (torch.ones(3),)


COMPILE_CONFIG = {{{TRACE_BUILD_CLASS!r}: True}}
"""


LOCAL_CLASS_COUNT = _local_class_program(
    "    class Local:\n"
    "        count = 0\n"
    "        def scale(self, t):\n"
    "            return t * 2\n"
    "    Local.count += 1\n"
    "    return (Local().scale(a0) + Local.count,)"
)

LOCAL_CLASS_APPEND = _local_class_program(
    "    class Local:\n"
    "        items = []\n"
    "    Local.items.append(1)\n"
    "    return (a0 * len(Local.items),)"
)


def test_a_class_built_in_the_call_is_drawn_and_compiled_with_its_setting() -> None:
    drawn, with_class = _schedules_drawing("local_class")
    assert all((TRACE_BUILD_CLASS, True) in p.compile_config for p in with_class)
    assert all(
        TRACE_BUILD_CLASS not in dict(p.compile_config) for p in drawn if p not in with_class
    )
    assert all("    class Local:" in p.render_body() for p in with_class)


def test_a_class_built_in_the_call_whose_count_is_rebound_agrees() -> None:
    report = check_source(LOCAL_CLASS_COUNT, backend="eager", iters=2)
    # One graph: the class statement traced under the setting (without it, a
    # break there makes two), so the agreement is Dynamo's, not eager's.
    assert report.compiles == 1 and report.tensor_outputs == 1


@known_here("dynamo-local-class-attribute-mutation-lost")
def test_an_append_to_a_class_built_in_the_call_lost_is_a_difference_torch_makes() -> None:
    with pytest.raises(EquivalenceError) as raised:
        check_source(LOCAL_CLASS_APPEND, backend="eager", iters=2)
    difference = raised.value.difference
    assert difference.iteration == 1 and difference.kind is Kind.VALUE
