"""Judging observed values: tolerances per dtype, statistics, layout, signatures."""

from __future__ import annotations

import math

import pytest
import torch

from pytest_cgraph import EquivalenceError
from pytest_cgraph.oracle.compare import (
    TensorSnapshot,
    Tolerance,
    compare_values,
    crash_difference,
    value_difference,
)
from pytest_cgraph.oracle.difference import (
    Difference,
    Kind,
    Place,
    Relation,
    Role,
    describe_relations,
    message_key,
    normalised_message,
)
from pytest_cgraph.oracle.engine import Backend, CheckSettings, run_check


def test_float32_default_tolerance_is_assert_closes() -> None:
    tolerance = Tolerance()
    base = torch.ones(3)
    assert value_difference(base, base + 1e-6, tolerance, Kind.VALUE) is None
    assert value_difference(base, base + 1e-4, tolerance, Kind.VALUE) is not None


def test_float32_values_converted_to_float64_compare_at_float32_s_tolerance() -> None:
    # A float32 result converted at the end (x.double()): one float32 ulp apart
    # is rounding of the float32 computation, not a float64 difference.
    single = torch.tensor([8.1, -20.5, math.nan])
    apart = torch.nextafter(single, torch.tensor(math.inf))
    assert value_difference(single.double(), apart.double(), Tolerance(), Kind.VALUE) is None
    assert value_difference(  # what float64's tolerance alone would say
        single.double(), apart.double(), Tolerance(1e-7, 1e-7), Kind.VALUE
    )
    assert value_difference(single, single * 1.01, Tolerance(), Kind.VALUE) is not None
    # A value computed in float64 is held to float64's tolerance.
    double = torch.tensor([0.1, 1 / 3], dtype=torch.float64)
    found = value_difference(double, double * (1 + 1e-6), Tolerance(), Kind.VALUE)
    assert found is not None
    # So is a float32-exact value whose counterpart is not.
    exact = torch.tensor([1.5], dtype=torch.float64)
    assert value_difference(exact, exact + 1e-6, Tolerance(), Kind.VALUE) is not None


def test_integers_and_bools_compare_exactly_and_nans_equal() -> None:
    tolerance = Tolerance(rtol=1.0, atol=1.0)
    assert value_difference(torch.tensor([1, 2]), torch.tensor([1, 3]), tolerance, Kind.VALUE)
    assert value_difference(torch.tensor([True]), torch.tensor([False]), tolerance, Kind.VALUE)
    nan = torch.tensor([math.nan, 1.0])
    assert value_difference(nan, nan.clone(), Tolerance(), Kind.VALUE) is None


def test_statistics_point_at_the_worst_and_first_mismatch() -> None:
    found = value_difference(
        torch.tensor([1.0, 2.0, 4.0]), torch.tensor([1.0, 2.5, 8.0]), Tolerance(), Kind.VALUE
    )
    assert found is not None
    assert found.max_abs == 4.0
    assert found.max_rel == 1.0
    assert found.index == (1,)
    assert found.detail == "2 of 3 elements differ"


def layout(tensor: torch.Tensor, other: torch.Tensor) -> Difference | None:
    return compare_values(
        TensorSnapshot.of(tensor),
        TensorSnapshot.of(other),
        Tolerance(),
        Kind.MUTATION,
        check_layout=True,
    )


def test_argument_shape_changes_are_metadata() -> None:
    x = torch.randn(2, 3)
    found = layout(x, x.t())
    assert found is not None and found.kind is Kind.METADATA and found.facet == "shape"


def test_a_significant_stride_difference_is_metadata() -> None:
    x = torch.randn(3, 2)
    found = layout(x, x.t().contiguous().t())
    assert found is not None and found.facet == "stride"
    assert (found.expected, found.actual) == ("(2, 1)", "(1, 3)")


def test_strides_of_size_one_dimensions_mean_nothing() -> None:
    # The false alarm an Inductor campaign raised: (1, 2) tensors whose
    # strides differ only along the dimension of size 1.
    transposed = torch.randn(2, 1).transpose(0, 1)  # shape (1, 2), strides (1, 1)
    contiguous = torch.randn(1, 2)  # shape (1, 2), strides (2, 1)
    assert transposed.stride() != contiguous.stride()
    assert layout(transposed, contiguous.copy_(transposed)) is None


def test_strides_and_offsets_of_empty_tensors_mean_nothing() -> None:
    assert layout(torch.empty(0, 3), torch.empty(3, 0).t()) is None
    offset = torch.arange(6.0)[3:3].view(0, 1)
    assert layout(torch.empty(0, 1), offset) is None


def test_a_storage_offset_of_a_nonempty_tensor_is_observable() -> None:
    found = layout(torch.tensor([2.0, 3.0]), torch.arange(4.0)[2:])
    assert found is not None and found.facet == "storage_offset"


def test_output_strides_are_not_judged() -> None:
    x = torch.randn(2, 3)
    found = compare_values(
        TensorSnapshot.of(x),
        TensorSnapshot.of(x.t().contiguous().t()),
        Tolerance(),
        Kind.VALUE,
        check_layout=False,
    )
    assert found is None


def test_signature_is_kind_place_facet_and_exception() -> None:
    assert Difference(Kind.GRAD, 2, Place(Role.GRAD, name="x")).signature == "grad-grad"
    presence = Difference(Kind.GRAD, 2, Place(Role.GRAD, name="x"), facet="presence")
    assert presence.signature == "grad-grad-presence"
    # indices and argument names do not split one bug into many
    assert Difference(Kind.VALUE, 3, Place(Role.OUTPUT, index=2)).signature == "value-output"
    assert (
        Difference(Kind.VALUE, 3, Place(Role.OUTPUT, index=0, argument="a1")).signature
        == Difference(Kind.VALUE, 4, Place(Role.OUTPUT, index=1, argument="b0")).signature
        == "value-output_argument"
    )
    assert (
        Difference(Kind.MUTATION, 3, Place(Role.ARGUMENT, name="pair[1]")).signature
        == "mutation-argument"
    )
    stale = Difference(Kind.STALE_OUTPUT, 2, Place(Role.RETAINED, index=0, iteration=2))
    assert stale.signature == "stale_output-retained"
    assert str(stale.place) == "output #0 of iteration 2, re-read at the end"


def crash(message: str, error: type[Exception] = RuntimeError) -> Difference:
    return crash_difference(error(message), "", 1, "call")


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("expected size 1==2, stride 1==1 at dim=0", "expected size 3==4, stride 2==2 at dim=1"),
        (
            "The size of tensor a (3) must match the size of tensor b (2)",
            "The size of tensor a (5) must match the size of tensor b (4)",
        ),
        (
            "shape '[2, 3]' is invalid for input of size 5",
            "shape '[4]' is invalid for input of size 7",
        ),
        ("Tensor primals_1 at 0x7f3a2c is frozen", "Tensor arg0_1 at 0x55d0 is frozen"),
    ],
)
def test_one_bug_under_other_shapes_names_and_addresses_is_one_signature(
    first: str, second: str
) -> None:
    assert crash(first).signature == crash(second).signature


def test_different_messages_are_different_bugs() -> None:
    frozen = crash("cannot mutate tensors with frozen storage")
    detach = crash("Can't detach views in-place. Use detach() instead.")
    assert frozen.signature != detach.signature
    assert frozen.signature.startswith("crash-compiled_call-RuntimeError-cannot_mutate_tensors")
    # the same message from another exception type is another bug too
    assert crash("boom", ValueError).signature != crash("boom", RuntimeError).signature


def test_normalisation_blanks_what_varies() -> None:
    assert (
        normalised_message("expected size 1==2, stride 1==1 at dim=0\nmore detail")
        == "expected size N==N, stride N==N at dim=N"
    )
    assert normalised_message("got 'aot_eager' and torch.Size([2, 3])") == "got Q and SHAPE"
    assert normalised_message("Can't detach views in-place") == "Can't detach views in-place"
    # A 0-dim shape is a shape too: one bug, one key, whatever the shapes.
    assert message_key("ViewMeta sequence: () (actual) vs (2,) (expected)") == message_key(
        "ViewMeta sequence: (1,) (actual) vs (2,) (expected)"
    )
    assert normalised_message("f() takes x[0]") == "f() takes x[N]"
    # Dynamo's guard-on-the-same-frame assertion quotes the program's guard.
    guard = "Guard failed on the same frame it was created. This is a bug.Guard fail reason: 0/1: "
    assert message_key(guard + "2 <= a0.size()[1] <= 3  # v1 = a0.clone()") == message_key(
        guard + "a0.stride()[0] == a0.size()[1]  # (unknown source a0.stride()[0])"
    )
    assert message_key("") == ""


def test_cuda_graph_trees_overwritten_output_is_one_key_wherever_the_tensor_was_made() -> None:
    # As an H100 run with torch 2.11 saw them: the quoted stack trace is the
    # program's, a resumed frame's, or none; the mechanism is the same.
    def overwritten(trace: str) -> str:
        return (
            "Error: accessing tensor output of CUDAGraphs that has been overwritten by a "
            f"subsequent run. Stack trace: {trace}. To prevent overwriting, clone the tensor "
            "outside of torch.compile() or call torch.compiler.cudagraph_mark_step_begin() "
            "before each model invocation."
        )

    keys = {
        message_key(overwritten(trace))
        for trace in (
            'File "<cgraph program 65445101b213>", line 6, in program',
            'File "<eval_with_key>.774", line 42, in torch_dynamo_resume_in_forward_at_27',
            "[Could not find stack trace]",
        )
    }
    assert len(keys) == 1
    # torch's own distinction stays one: a .grad from a backward graph is told apart.
    grad = overwritten("[Could not find stack trace]").replace(
        "tensor output", "gradient tensor output"
    )
    assert message_key(grad) not in keys


def test_the_overwritten_output_error_is_one_signature_raised_bare_or_inside_dynamo() -> None:
    # An H100 run: a training step read its kept momentum buffer bare at one
    # call and met it inside Dynamo's wrapper at another (a recompile wraps
    # the optimizer's state): one mechanism, so one signature.
    message = (
        "Error: accessing tensor output of CUDAGraphs that has been overwritten by a "
        'subsequent run. Stack trace: File "sgd.py", line 127, in step'
    )

    def crash(exception_type: str, text: str) -> str:
        return Difference(
            Kind.CRASH,
            2,
            Place(Role.COMPILED, name="call"),
            exception_type=exception_type,
            message=text,
        ).signature

    bare = crash("RuntimeError", message)
    assert crash("InternalTorchDynamoError", f"RuntimeError: {message}") == bare
    # Any other error Dynamo wraps keeps its wrapper, as the baselines recorded it.
    other = "RuntimeError: Tensor must have a last dimension with stride 1"
    assert crash("InternalTorchDynamoError", other).startswith(
        "crash-compiled_call-InternalTorchDynamoError-RuntimeError"
    )


def fake_tensor_error(inner: str) -> str:
    return (
        "RuntimeError when making fake tensor call\n"
        "  Explanation: Dynamo failed to run FX node with fake tensors: call_method f(*(x,)):"
        f" got {inner}\n  Hint: Your code may result in an error when running in eager."
    )


def test_dynamo_s_generic_first_line_is_keyed_by_the_error_it_explains() -> None:
    permute = fake_tensor_error("ValueError('permute a tensor of rank 1, got length 3!')")
    leaf = fake_tensor_error("RuntimeError('a leaf Variable that requires grad is used')")
    assert message_key(permute) != message_key(leaf)
    assert message_key(permute) == message_key(
        fake_tensor_error("ValueError('permute a tensor of rank 2, got length 4!')")
    )
    assert normalised_message(leaf) == (
        "RuntimeError when making fake tensor call: RuntimeError: a leaf Variable that requires"
        " grad is used"
    )
    assert (
        crash(leaf).headline().endswith("RuntimeError: a leaf Variable that requires grad is used")
    )


def test_a_cpp_errors_backtrace_in_an_explanation_is_not_part_of_its_key() -> None:
    # A C++ error Dynamo quotes carries its frames, with addresses and the
    # install's library paths: the same bug on another machine keys the same.
    def quoted(library: str) -> str:
        frames = (
            "\\nException raised from throw_cannot_call_with_symbolic at TensorImpl.cpp:340"
            f" (most recent call first):\\nframe #0: c10::Error::Error() + 0x9d (0x7f in {library})"
        )
        return fake_tensor_error(
            f"RuntimeError('Cannot call storage_offset() on tensor with symbolic sizes{frames}')"
        )

    here, there = quoted("/work/.venv/lib/libc10.so"), quoted("/tmp/ci/.venv/lib/libc10.so")
    assert message_key(here) == message_key(there)
    assert normalised_message(here) == (
        "RuntimeError when making fake tensor call: RuntimeError: Cannot call storage_offset()"
        " on tensor with symbolic sizes"
    )


def test_a_wrapped_explanation_is_keyed_by_its_inner_error_not_the_call() -> None:
    # A FakeTensor's repr with a grad_fn wraps the explanation over lines;
    # the op Dynamo failed on (add_, transpose_) is the program's, not the bug's.
    inner = (
        "got RuntimeError('Output 0 of ApplyTemplateBackward is a view and is being"
        " modified inplace. This view was created inside a custom Function')"
    )

    def wrapped(call: str) -> str:
        return (
            "RuntimeError when making fake tensor call\n"
            "  Explanation: Dynamo failed to run FX node with fake tensors: "
            f"call_method {call}(*(FakeTensor(..., device='cuda:0', size=(3, 3, 2),\n"
            f"               grad_fn=<ApplyTemplateBackward>), 2), **{{}}): {inner}\n"
            "  Hint: Your code may result in an error when running in eager.\n"
            "  Developer debug context: \n"
        )

    assert message_key(wrapped("add_")) == message_key(wrapped("transpose_"))
    assert normalised_message(wrapped("add_")) == (
        "RuntimeError when making fake tensor call: RuntimeError: Output N of"
        " ApplyTemplateBackward is a view and is being modified inplace. This view was"
        " created inside a custom Function"
    )
    # The same error with the explanation on one line is the same bug.
    assert message_key(wrapped("mul_").replace(",\n               grad_fn", ", grad_fn")) == (
        message_key(wrapped("add_"))
    )


def test_a_compiler_wrapper_is_named_with_what_it_wraps() -> None:
    from torch._dynamo.exc import BackendCompilerFailed

    inner = RuntimeError("more than one element of the written-to tensor refers to a location")
    wrapped = crash_difference(BackendCompilerFailed(lambda: None, inner, None), "", 2, "call")
    assert wrapped.exception_type == "BackendCompilerFailed.RuntimeError"
    assert wrapped.message == str(inner)
    assert wrapped.headline().endswith(f"BackendCompilerFailed.RuntimeError: {inner}")
    # One check, raised while the backend compiles or bare at run time: one bug.
    bare = crash_difference(inner, "", 2, "call")
    assert wrapped.signature == bare.signature
    assert wrapped.signature.startswith("crash-compiled_call-RuntimeError-more_than_one_")


def test_a_tensor_type_name_is_a_dtype_not_a_bug() -> None:
    def crashed(message: str) -> str:
        return crash_difference(RuntimeError(message), "", 1, "backward").signature

    version = "one of the variables needed for gradient computation has been modified by an "
    version += "inplace operation: [{}], which is output 0 of Mul, is at version 1"
    signatures = {
        crashed(version.format(name))
        for name in ("torch.FloatTensor [1]", "torch.DoubleTensor [2, 3]", "CPUBFloat16Type [1]")
    }
    assert len(signatures) == 1
    assert crashed(version.replace("Mul", "Relu").format("torch.FloatTensor [1]")) not in signatures


def test_a_difference_survives_json() -> None:
    found = Difference(
        Kind.METADATA,
        3,
        Place(Role.OUTPUT, index=1, argument="a0"),
        facet="stride",
        index=(0, 1),
        max_abs=1.0,
    )
    assert Difference.from_json(found.to_json()) == found


def test_an_aliasing_relation_names_its_target_by_place_not_by_text() -> None:
    argument = Relation("is", Place(Role.ARGUMENT, name="x"))
    earlier = Relation("shares", Place(Role.OUTPUT, index=1))
    assert (argument.kind, earlier.kind) == ("is_argument", "shares_output")
    assert describe_relations((argument, earlier)) == (
        "is argument x; shares storage with output #1"
    )
    assert describe_relations(()) == "aliases nothing"


def _feeds_back_its_output(a0: torch.Tensor) -> tuple[torch.Tensor]:
    return (a0 + 2,)


def _transposed() -> tuple[torch.Tensor]:
    return (torch.arange(4.0).view(2, 2).t(),)


def _fed_back(k: int, args: tuple, outputs: tuple) -> tuple:
    return (outputs[0],)


def test_an_output_fed_back_as_an_argument_brings_no_layout_difference_with_it() -> None:
    # Eager's add keeps a transposed input's layout; this compiled side returns
    # it contiguous. Output layouts are not judged, so the argument it becomes
    # at the next call is judged by what that call does to it: nothing here.
    def contiguous_outputs(a0: torch.Tensor) -> tuple[torch.Tensor]:
        return tuple(out.contiguous() for out in _feeds_back_its_output(a0))

    settings = CheckSettings(backend=Backend.named("eager"), iters=3)
    report = run_check(
        _feeds_back_its_output, _transposed(), None, settings, _fed_back, contiguous_outputs
    )
    assert report.iterations == 3


def test_a_layout_one_side_s_call_changes_is_a_difference_whatever_it_came_in_as() -> None:
    # As above, and the compiled call also re-lays its argument out in place
    # (same values): after the call both sides' layouts happen to agree, but
    # only the compiled side changed it.
    def relaid(a0: torch.Tensor) -> tuple[torch.Tensor]:
        out = _feeds_back_its_output(a0)[0].contiguous()
        if a0.is_contiguous():
            a0.set_(a0.t().contiguous().t())
        return (out,)

    settings = CheckSettings(backend=Backend.named("eager"), iters=3)
    with pytest.raises(EquivalenceError) as caught:
        run_check(_feeds_back_its_output, _transposed(), None, settings, _fed_back, relaid)
    difference = caught.value.difference
    assert (difference.signature, difference.iteration) == ("metadata-argument-stride", 2)
