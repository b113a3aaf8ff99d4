"""Per-side argument copies keep what compiled code may key on, aliasing included."""

from __future__ import annotations

import torch

from pytest_cgraph.oracle.cloning import clone_preserving_aliases


def same_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def test_layout_is_kept_and_memory_is_new() -> None:
    x = torch.randn(4, 3).t()[1:]
    (copy,) = clone_preserving_aliases([x])
    assert (copy.shape, copy.stride(), copy.storage_offset()) == (
        x.shape,
        x.stride(),
        x.storage_offset(),
    )
    assert torch.equal(copy, x)
    assert not same_memory(copy, x)


def test_overlapping_views_share_one_new_storage_and_stay_views() -> None:
    base = torch.arange(12.0).reshape(4, 3)
    a, b = clone_preserving_aliases([base[:2], base[1:]])
    assert same_memory(a, b) and not same_memory(a, base)
    assert a._is_view() and b._is_view()
    a.mul_(10)
    assert b[0, 0] == 30.0  # the write shows through the other view, as in the original


def test_base_and_its_view_keep_their_relation() -> None:
    base = torch.zeros(3, 2)
    copy_base, copy_view = clone_preserving_aliases([base, base[1]])
    assert not copy_base._is_view()
    assert copy_view._base is copy_base


def test_autograd_standing_is_kept() -> None:
    leaf = torch.randn(3, 2, requires_grad=True)
    leaf.grad = torch.ones(3, 2)
    parameter = torch.nn.Parameter(torch.randn(2))
    leaf_copy, view_copy, nonleaf_copy, param_copy, plain_copy = clone_preserving_aliases(
        [leaf, leaf[0], leaf.detach() * 2 + torch.zeros(1, requires_grad=True), parameter, 7]
    )
    assert leaf_copy.is_leaf and leaf_copy.requires_grad
    assert torch.equal(leaf_copy.grad, leaf.grad) and leaf_copy.grad is not leaf.grad
    assert not view_copy.is_leaf and view_copy._base is leaf_copy
    assert not nonleaf_copy.is_leaf and nonleaf_copy.requires_grad
    assert isinstance(param_copy, torch.nn.Parameter)
    assert plain_copy == 7


def test_empty_tensors_alias_nothing() -> None:
    a, b = clone_preserving_aliases([torch.empty(0), torch.empty(0)])
    assert a.numel() == b.numel() == 0


def test_a_non_leaf_stays_a_non_leaf_and_keeps_its_view_ness() -> None:
    leaf = torch.randn(3, requires_grad=True)
    computed, viewed = (
        clone_preserving_aliases([leaf * 2])[0],
        clone_preserving_aliases([leaf[1:]])[0],
    )
    for copy in (computed, viewed):
        assert copy.requires_grad and not copy.is_leaf and copy.grad_fn is not None
    # Written in place like the original (a view of a leaf could not be).
    assert not computed._is_view()
    computed.add_(1)
    assert viewed._is_view()


def test_a_view_of_an_activation_is_copied_as_a_view_of_a_non_leaf() -> None:
    # An activation's slice (a view of a non-leaf) may be written in place;
    # a copy that viewed a leaf would make eager refuse the write, and the
    # program would be set aside as invalid.
    activation = torch.randn(2, 4, 4, requires_grad=True) * 1.0
    sliced = activation[:, :3, :3]
    (copy,) = clone_preserving_aliases([sliced])
    assert copy._is_view() and not copy._base.is_leaf
    assert copy.stride() == sliced.stride() and torch.equal(copy, sliced)
    copy.sub_(1)
    copy.sum().backward()


def test_a_lone_non_leaf_copy_keeps_its_values_exactly() -> None:
    values = torch.tensor([-0.0, float("nan"), float("inf"), 2.5])
    activation = values.clone().requires_grad_(True) * 1.0
    (copy,) = clone_preserving_aliases([activation])
    assert copy.grad_fn is not None and not copy.is_leaf
    assert torch.equal(torch.signbit(copy.detach()), torch.signbit(values))
    assert torch.isnan(copy[1]) and torch.equal(copy.detach()[[0, 2, 3]], values[[0, 2, 3]])


def test_a_view_passed_without_its_base_keeps_the_base_geometry() -> None:
    # AOTAutograd replays an output's views from the input's base, so a copy
    # whose base had another rank would check another program.
    x = torch.zeros(2, 3).t()
    (copy,) = clone_preserving_aliases([x])
    assert copy._base is not None
    assert (copy._base.shape, copy._base.stride()) == (x._base.shape, x._base.stride())


def test_a_view_of_a_base_of_its_own_rank_is_checked_as_written() -> None:
    from pytest_cgraph.checking.runner import check_source

    # Mutating the input through an as_strided view and returning a view of
    # it compiles correctly for this input; with a flat stand-in base the
    # copy met torch's failure on bases of another rank (a false crash).
    source = (
        "import torch\n"
        "def program(a0):\n"
        "    a0.as_strided((1,), (1,), a0.storage_offset()).add_(1)\n"
        "    return (a0.unsqueeze(2),)\n"
        "def inputs(k):\n"
        "    return (torch.ones((1, 1)).transpose(0, 1),)\n"
        "ITERS = 2\n"
    )
    assert check_source(source, backend="aot_eager").iterations == 2


def test_hooks_registered_on_an_argument_are_registered_on_its_copies() -> None:
    stepped: list[torch.Tensor] = []
    leaf = torch.ones(3, requires_grad=True)
    leaf.register_hook(lambda grad: grad * 2)
    leaf.register_post_accumulate_grad_hook(stepped.append)
    non_leaf = torch.ones(3, requires_grad=True) * 1
    non_leaf.register_hook(lambda grad: grad * 3)
    aliased = torch.ones(4, requires_grad=True)
    view = aliased[1:]
    view.register_hook(lambda grad: grad * 5)
    copies = clone_preserving_aliases([leaf, non_leaf, aliased, view])
    (copies[0].sum() + copies[1].sum() + copies[3].sum()).backward()
    assert copies[0].grad.tolist() == [2.0, 2.0, 2.0]
    assert stepped and stepped[0] is copies[0]
    assert copies[2].grad.tolist() == [0.0, 5.0, 5.0, 5.0]
    assert leaf.grad is None  # the argument itself is left alone


def test_a_check_calls_the_hooks_of_its_arguments_on_each_side() -> None:
    from pytest_cgraph.checking.runner import check_equivalent

    calls: list[str] = []

    def clip(grad: torch.Tensor) -> torch.Tensor:
        calls.append("clip")
        return grad.clamp(-0.5, 0.5)

    weight = torch.full((3,), 2.0, requires_grad=True)
    weight.register_hook(clip)

    def program(w: torch.Tensor) -> torch.Tensor:
        out = (w * w).sum()
        out.backward()
        return w.grad

    check_equivalent(program, weight, iters=2, backend="aot_eager")
    assert len(calls) == 4  # two calls per side


def test_a_module_argument_keeps_its_parameters_hooks_once_each() -> None:
    from pytest_cgraph.oracle.sides import clone_arguments

    net = torch.nn.Linear(2, 2)
    net.weight.register_hook(lambda grad: grad * 2)
    shared = torch.nn.Sequential(net, net)  # one parameter, reached twice
    (module_twin,) = clone_arguments([shared])
    module_twin(torch.ones(1, 2)).sum().backward()
    net.weight._backward_hooks.clear()
    shared(torch.ones(1, 2)).sum().backward()
    assert torch.equal(module_twin[0].weight.grad, 2 * net.weight.grad)  # doubled once
    # Passed on its own as well: still one hook on the one copy.
    net.weight.register_hook(lambda grad: grad * 2)
    expected = 2 * net.weight.grad
    net.weight.grad = None
    weight_twin, module_twin = clone_arguments([net.weight, shared])
    assert module_twin[0].weight is weight_twin
    module_twin(torch.ones(1, 2)).sum().backward()
    assert torch.equal(weight_twin.grad, expected)
