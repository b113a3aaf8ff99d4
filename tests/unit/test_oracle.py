"""check_equivalent: what it compares, what it reports, and what it refuses."""

from __future__ import annotations

import logging

import pytest
import torch

from pytest_cgraph import (
    CgraphError,
    ConfigurationError,
    EquivalenceError,
    InvalidProgram,
    check_equivalent,
)
from pytest_cgraph.oracle.difference import Kind


def scale_and_mutate(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    y.add_(3)
    return (x + y) * y


def test_cudagraphs_on_cpu_reports_the_skip_with_torchs_reason() -> None:
    report = check_equivalent(scale_and_mutate, torch.randn(3, requires_grad=True), torch.randn(3))
    assert report.iterations == 5
    assert report.device == "cpu"
    assert report.graphs_captured == 0
    assert report.graphs_skipped >= 1
    assert set(report.skip_reasons) == {"cpu device"}
    assert "0 captured" in report.summary()


def test_non_cudagraph_backend_reports_no_skips() -> None:
    report = check_equivalent(scale_and_mutate, torch.randn(3), torch.randn(3), backend="aot_eager")
    assert (report.compiles, report.graphs_skipped, report.skip_reasons) == (1, 0, {})


def test_callers_tensors_are_never_touched() -> None:
    x, y = torch.randn(3), torch.randn(3)
    before = y.clone()
    check_equivalent(scale_and_mutate, x, y, backend="aot_eager")
    assert torch.equal(y, before)


def test_eager_error_makes_the_program_invalid_not_failing() -> None:
    with pytest.raises(
        InvalidProgram, match="eager raised RuntimeError during call of iteration 1"
    ):
        check_equivalent(lambda x: x.view(5), torch.randn(3), backend="aot_eager")


def test_error_in_eager_backward_is_invalid_too() -> None:
    def refuse(grad: torch.Tensor) -> torch.Tensor:
        raise ValueError("this hook refuses every gradient")

    def failing_hook(x: torch.Tensor) -> torch.Tensor:
        y = x * 2
        y.register_hook(refuse)
        return y

    leaf = torch.randn(3, requires_grad=True)
    with pytest.raises(InvalidProgram, match="during backward of iteration 1"):
        check_equivalent(failing_hook, leaf, backend="aot_eager")


def test_compiled_only_error_is_a_crash_with_traceback() -> None:
    with pytest.raises(EquivalenceError) as caught:
        check_equivalent(torch.relu, torch.randn(4), backend="relu_runtime_error_TESTING_ONLY")
    difference = caught.value.difference
    assert difference.kind is Kind.CRASH
    assert difference.iteration == 1
    assert str(difference.place) == "compiled call"
    assert "ReluRuntimeError" in str(caught.value)
    # torch's traceback is kept, but shown only when asked for
    assert "Traceback" not in str(caught.value)
    assert "Traceback" in difference.traceback
    assert "Traceback" in difference.describe(verbose=True)


def test_value_difference_message_names_everything() -> None:
    with pytest.raises(EquivalenceError) as caught:
        check_equivalent(
            torch.relu, torch.tensor([-1.0, 2.0]), backend="relu_accuracy_error_TESTING_ONLY"
        )
    message = str(caught.value)
    assert message.splitlines()[0] == "value difference at iteration 1, output #0"
    assert "largest abs difference 1" in message
    assert "first differing index (1,)" in message
    assert "eager:    [0.0, 2.0]" in message
    assert "compiled: [0.0, 3.0]" in message
    assert "backend relu_accuracy_error_TESTING_ONLY, device cpu" in message
    assert caught.value.difference.signature == "value-output"


def test_aliased_arguments_keep_their_aliasing() -> None:
    seen: list[tuple[bool, int, torch.Tensor]] = []

    def write_one_read_other(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a.mul_(2)
        if not torch.compiler.is_compiling():  # eager's side: what the copies are
            shared = a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
            seen.append((shared, b.storage_offset() - a.storage_offset(), b.detach().clone()))
        return b + 1  # b overlaps a: its value depends on the write

    base = torch.arange(12.0).reshape(4, 3)
    report = check_equivalent(
        write_one_read_other, base[:2], base[1:], iters=2, backend="aot_eager"
    )
    assert report.iterations == 2
    # Eager's copies overlap as the caller's arguments do, and the write through
    # one shows in the other (compiled's must agree, or the check would fail).
    assert [(shared, offset) for shared, offset, _ in seen] == [(True, 3), (True, 3)]
    expected = base.clone()
    for _, _, b in seen:
        expected[:2] *= 2
        torch.testing.assert_close(b, expected[1:])


def test_arguments_copied_without_their_aliasing_would_be_caught() -> None:
    def write_one_read_other(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a.mul_(2)
        return b + 1

    def unaliasing(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]) -> object:
        # The graph reads a private copy of the last argument: a's write no longer shows in it.
        return lambda *args: gm(*args[:-1], args[-1].clone())

    base = torch.arange(12.0).reshape(4, 3)
    with pytest.raises(EquivalenceError) as caught:
        check_equivalent(write_one_read_other, base[:2], base[1:], iters=2, backend=unaliasing)
    assert caught.value.difference.signature == "value-output"


def test_same_tensor_returned_twice_and_views_of_inputs() -> None:
    def dup(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, ...]:
        c = a + b
        return a - b, c, a[0], c, b

    check_equivalent(dup, torch.randn(3, 2), torch.randn(3, 2))


def test_gradients_accumulate_across_iterations_on_both_sides() -> None:
    grads: list[torch.Tensor | None] = []

    def square(p: torch.Tensor) -> torch.Tensor:
        if not torch.compiler.is_compiling():  # eager's side: the grad before this call
            grads.append(None if p.grad is None else p.grad.clone())
        return (p * p).sum()

    leaf = torch.randn(3, requires_grad=True)
    report = check_equivalent(square, leaf, iters=3, backend="aot_eager")
    assert report.iterations == 3
    assert leaf.grad is None  # the caller's leaf was cloned, not used
    # d(p*p)/dp = 2p, added once per iteration: 0, 2p, 4p before calls 1, 2, 3.
    assert grads[0] is None
    torch.testing.assert_close(grads[1], 2 * leaf.detach())
    torch.testing.assert_close(grads[2], 4 * leaf.detach())


def test_gradients_reset_on_the_compiled_side_would_be_caught() -> None:
    def square(p: torch.Tensor) -> torch.Tensor:
        return (p * p).sum()

    def resetting(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]) -> object:
        def run(*args: torch.Tensor) -> object:
            for arg in args:
                arg.grad = None  # each call starts from no grad: accumulation lost
            return gm(*args)

        return run

    with pytest.raises(EquivalenceError) as caught:
        check_equivalent(square, torch.randn(3, requires_grad=True), iters=3, backend=resetting)
    assert caught.value.difference.kind is Kind.GRAD
    assert caught.value.difference.iteration == 2


def test_backward_false_compares_no_gradients() -> None:
    from cgraph_doubles.faults import FAULTS

    case = next(c for c in FAULTS if c.name == "stale_gradients")
    check_equivalent(case.program, fresh_args=case.fresh, backend=case.backend, backward=False)


def test_compiled_autograd_traces_the_backward_as_a_graph_of_its_own() -> None:
    def hooked(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        y = (x * w).sin()
        y.register_hook(lambda grad: grad * 2)
        return y

    def run(compiled_autograd: bool) -> int:
        return check_equivalent(
            hooked,
            torch.randn(3),
            torch.randn(3, requires_grad=True),
            backend="aot_eager",
            compiled_autograd=compiled_autograd,
        ).compiles

    # compiled autograd adds the graphs it traces from the autograd engine
    assert run(True) > run(False)


REFUSED_CAPTURE = """
import torch


def program(a0):
    torch.autograd.grad(a0.sum(), a0, create_graph=True)
    return (a0 * 2,)


def inputs(k):
    return (torch.ones(2, requires_grad=True),)


COMPILED_AUTOGRAD = True
"""


def test_a_refused_compiled_autograd_capture_leaves_no_compile_context_behind() -> None:
    import gc
    import types

    from pytest_cgraph.checking.runner import check_source

    # The capture raises "higher order gradients" after entering its compile
    # context; left open, a later garbage collection resets the context in
    # the middle of another program's compile ("compile_context is not set").
    with pytest.raises(EquivalenceError, match="higher order gradients"):
        check_source(REFUSED_CAPTURE, backend="aot_eager", iters=2)
    assert torch._guards.CompileContext.try_get() is None
    code = torch._guards.compile_context.__wrapped__.__code__
    still_open = [
        g
        for g in gc.get_objects()
        if type(g) is types.GeneratorType and g.gi_code is code and g.gi_frame is not None
    ]
    assert still_open == []


def test_random_programs_see_the_same_stream_on_both_sides() -> None:
    def noisy(x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.dropout(x, 0.5) + torch.rand_like(x)

    check_equivalent(noisy, torch.ones(8), backend="aot_eager")


UNSEEDED = """
import torch

G = torch.Generator().manual_seed(0)  # a generator no per-call seed reaches


def program(a0):
    return (a0 + torch.rand(3, generator=G),)


def inputs(k):
    return (torch.zeros(3),)
"""


def test_a_program_eager_cannot_repeat_is_invalid_not_a_difference() -> None:
    # Each call draws the next numbers of G: compiled code "differs" from
    # eager, but so does eager from itself (as a read of uninitialised
    # memory does), so the difference says nothing about the compiler.
    from pytest_cgraph.checking.runner import check_source

    with pytest.raises(InvalidProgram) as raised:
        check_source(UNSEEDED, backend="aot_eager")
    assert str(raised.value) == (
        "eager disagrees with itself when run again: value difference at iteration 1, "
        "output #0 (iteration 1)"
    )
    assert raised.value.reason.startswith("RuntimeError: eager disagrees with itself")


def test_fresh_args_give_each_iteration_its_own_arguments() -> None:
    seen: list[int] = []

    def fresh(k: int) -> tuple[torch.Tensor, torch.Tensor]:
        seen.append(k)
        return torch.full((2,), float(k)), torch.tensor(float(k))

    check_equivalent(lambda x, s: x * s, fresh_args=fresh, backend="aot_eager", iters=4)
    assert seen == [1, 2, 3, 4]


def test_tolerances_are_used() -> None:
    def off_by_little(x: torch.Tensor) -> torch.Tensor:
        return x + (1e-3 if torch.compiler.is_compiling() else 0.0)

    with pytest.raises(EquivalenceError):
        check_equivalent(off_by_little, torch.ones(2), backend="aot_eager")
    check_equivalent(off_by_little, torch.ones(2), backend="aot_eager", atol=1e-2, rtol=0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"backend": "aot_eagr"},
            r"^unknown backend 'aot_eagr'; valid: a backend name \(closest: 'aot_eager'.*; "
            r"all: python -m pytest_cgraph.backends\) or package.module:attr$",
        ),
        ({"backend": "no_such_module:fn"}, r"^backend 'no_such_module:fn': cannot import"),
        ({"backend": "torch:no_such_attr"}, r"has no attribute 'no_such_attr'$"),
        ({"device": "tpu"}, r"^unknown device 'tpu'; use auto, cpu, cuda or cuda:N$"),
        ({"iters": 0}, r"^iters must be a positive integer, got 0$"),
        ({"backward": "yes"}, r"^backward must be 'auto', True or False"),
    ],
)
def test_bad_configuration_is_one_line(kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message) as caught:
        check_equivalent(torch.sin, torch.randn(2), **kwargs)
    assert "\n" not in str(caught.value)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA message")
def test_cuda_without_cuda_is_one_line() -> None:
    with pytest.raises(ConfigurationError, match=r"^device 'cuda' asked for, but this torch sees"):
        check_equivalent(torch.sin, torch.randn(2), device="cuda")


def test_arguments_and_fresh_args_together_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="not both"):
        check_equivalent(torch.sin, torch.randn(2), fresh_args=lambda k: (torch.randn(2),))


def test_a_checked_program_leaves_nothing_in_linecache() -> None:
    import linecache

    from pytest_cgraph.checking.runner import check_source
    from pytest_cgraph.oracle.protocol import source_filename

    source = "import torch\n\n\ndef program(a0):\n    return (a0 + 1,)\n\n\ndef inputs(k):\n"
    source += "    return (torch.ones(2),)\n"
    check_source(source, backend="aot_eager")
    # registered for tracebacks while it ran; a long run's process keeps none of them
    assert source_filename(source) not in linecache.cache


# A hook defined beside the program and called in a backward compiled autograd
# traces: Dynamo inlines it from its own globals and imports its module by
# name, as it would a model's.
HOOK_IN_BACKWARD = """
import torch


def step_in_backward(p):
    with torch.no_grad():
        p.add_(p.grad, alpha=-0.1)


def program(a0, p1):
    p1.register_post_accumulate_grad_hook(step_in_backward)
    return (a0 @ a0.mT, p1)


def inputs(k):
    return (torch.ones(2, 2), torch.nn.Parameter(torch.ones(2)))


COMPILED_AUTOGRAD = True
"""


def test_a_programs_module_is_importable_while_checked_and_dropped_after() -> None:
    import sys

    from pytest_cgraph.checking.runner import check_source

    before = {name for name in sys.modules if name.startswith("cgraph_program")}
    # Not importable, the compiled backward raised ModuleNotFoundError: a false alarm.
    report = check_source(HOOK_IN_BACKWARD, backend="eager", iters=2)
    assert report.iterations == 2
    assert {name for name in sys.modules if name.startswith("cgraph_program")} == before


class _TraceFileHandler(logging.Handler):
    """Stands for a handler someone attached to torch's structured trace to keep it."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_pytests_log_capture_takes_no_structured_trace_from_a_check(
    caplog: pytest.LogCaptureFixture,
) -> None:
    trace_log = logging.getLogger("torch.__trace")
    # pytest attaches its capture to every logger that does not propagate
    assert caplog.handler in trace_log.handlers
    kept = _TraceFileHandler()
    trace_log.addHandler(kept)
    try:
        check_equivalent(scale_and_mutate, torch.randn(3), torch.randn(3), backend="aot_eager")
    finally:
        trace_log.removeHandler(kept)
    # while the check compiled, only a handler of the trace's own got its records
    assert kept.records
    assert not [record for record in caplog.records if record.name == "torch.__trace"]
    assert caplog.handler in trace_log.handlers  # and pytest's capture is back


def test_a_program_that_raises_with_grad_switched_off_leaves_grad_on() -> None:
    # Checks run one after another in one process: a program that switches
    # grad off and raises before switching it back must not take grad away
    # from every later check.
    source = (
        "import torch\n\n\n"
        "def program(a0):\n"
        "    torch.set_grad_enabled(False)\n"
        "    if a0.sum() > 0:\n"
        "        raise RuntimeError('the program fails')\n"
        "    torch.set_grad_enabled(True)\n"
        "    return (a0,)\n\n\n"
        "def inputs(k):\n"
        "    return (torch.ones(2),)\n"
    )
    from pytest_cgraph.checking.runner import check_source

    with pytest.raises(CgraphError):
        check_source(source, backend="eager")
    assert torch.is_grad_enabled()


def test_a_backward_inside_a_func_transform_is_not_the_program_s_own() -> None:
    from pytest_cgraph.oracle.engine import watching_backward

    x = torch.ones(2, requires_grad=True)
    with watching_backward() as watch:
        torch.func.grad(lambda t: (t * t).sum())(x)
    # func.grad's inner backward frees a graph of wrapped tensors: the
    # check's own backward over the program's outputs is still to run.
    assert not watch.freed_graph
    with watching_backward() as watch:
        (x * x).sum().backward()
    assert watch.freed_graph


def test_a_compile_that_fails_inside_func_grad_leaves_saved_tensor_hooks_enabled() -> None:
    from pytest_cgraph.checking.runner import check_source
    from pytest_cgraph.recording.repro import recorded_case
    from pytest_cgraph.registry.entries import baseline_dir

    directory = baseline_dir(torch.__version__)
    entry = (
        "crash-compiled_call-RuntimeError-Function_NAME_returned_an_invalid_gradie_33ef39"
        "-aot_eager.toml"
    )
    if directory is None or not (directory / entry).exists():
        pytest.skip("no such entry on this torch")
    case = recorded_case(directory / entry)
    # func.grad disables saved-tensor hooks while it runs; this compile
    # fails inside it and never enables them again, so every later program
    # using activation checkpointing would fail in eager.
    with pytest.raises(EquivalenceError):
        check_source(case.source, backend=case.backend)
    assert torch._C._autograd._saved_tensors_hooks_is_enabled()
