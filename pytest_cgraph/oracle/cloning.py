"""Copies of tensors that keep everything a compiler may key on, aliasing included.

Each side of a check gets its own copy of the arguments, and a tensor's copy
must be indistinguishable from the original to the program: dtype, shape,
strides, storage offset, ``requires_grad``, leaf-ness, ``nn.Parameter``-ness,
an existing ``.grad``, the hooks registered on it — and aliasing. Two
arguments that are views of one storage in the call are views of one (new)
storage in each copy, because input aliasing is exactly what compiled code
handles specially.

This module copies tensors, and gives a tensor other memory in place (of
another device or dtype) while what holds it holds it still. What else an
argument holds is :mod:`graphs`'s to find, and :mod:`sides` copies a side's
arguments as one object graph, its tensors through this module.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

#: The identity of a tensor's memory: its device and its storage's address.
StorageKey = tuple[torch.device, int]


def storage_key(tensor: torch.Tensor) -> StorageKey | None:
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
    values: Sequence[Any], device: torch.device | None = None, *, carry_hooks: bool = True
) -> list[Any]:
    """Copy every tensor in ``values`` (a flat list); other values pass through.

    With ``device`` set, the copies are made there (arguments of a CUDA run
    built on the CPU) — except 0-dim CPU tensors, which stay on the host:
    they are host scalars, which the CUDA-graph path must handle as such.
    Each copy gets its original's hooks unless ``carry_hooks`` is false
    (:func:`sides.clone_arguments` carries them itself, over its side's graph).
    """
    copies: list[Any] = list(values)
    groups: dict[StorageKey, list[int]] = {}
    for index, value in enumerate(values):
        if not isinstance(value, torch.Tensor):
            continue
        key = storage_key(value)
        if key is None or is_host_scalar(value):
            copies[index] = clone_alone(value, device)
        else:
            groups.setdefault(key, []).append(index)
    for indices in groups.values():
        for index, twin in zip(
            indices, _clone_group([values[i] for i in indices], device), strict=True
        ):
            copies[index] = twin
    if carry_hooks:
        for original, twin in zip(values, copies, strict=True):
            if isinstance(original, torch.Tensor):
                carry_over_hooks(original, twin)
    return copies


def carry_over_hooks(
    original: torch.Tensor, copy: torch.Tensor, hook_copy: Callable[[Any], Any] | None = None
) -> None:
    """Register on ``copy`` the grad hooks and post-accumulate-grad hooks of ``original``.

    A test may register them on an argument (a gradient clip, an optimizer
    step run in backward), and how compiled code calls them is part of what
    is checked: each side's copy calls the same functions, in the same
    order, as the argument would have. ``hook_copy`` gives each hook as this
    side has it (a hook that closes over a module calls this side's copy).
    """
    for hook in (original._backward_hooks or {}).values():
        copy.register_hook(hook_copy(hook) if hook_copy is not None else hook)
    for hook in (original._post_accumulate_grad_hooks or {}).values():
        copy.register_post_accumulate_grad_hook(hook_copy(hook) if hook_copy is not None else hook)


def clone_alone(tensor: torch.Tensor, device: torch.device | None) -> torch.Tensor:
    """A copy of ``tensor`` over memory of its own (aliasing nothing), with its
    autograd standing: a leaf stays a leaf with its ``.grad``, a non-leaf a
    non-leaf; on ``device`` where one is given, unless it is a host scalar."""
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
    if device is not None and not is_on_device(new_storage.device, device):
        new_storage = storage_on(new_storage, device)

    def over_new_storage(
        tensor: torch.Tensor, size: Sequence[int], stride: Sequence[int], offset: int | torch.SymInt
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
        # Only views were given: stand their base in with a tensor of the
        # base's own geometry (AOTAutograd replays an output's views from
        # the base, so a base of another rank is another program), or a
        # flat one over the whole storage where the base is not at hand;
        # differentiable if any of the views was.
        first = tensors[0]
        known = first._base
        if known is not None and known.dtype == first.dtype:
            geometry: tuple[Sequence[int], Sequence[int], int | torch.SymInt] = (
                known.size(),
                known.stride(),
                known.storage_offset(),
            )
        else:
            geometry = ((new_storage.nbytes() // first.element_size(),), (1,), 0)
        base = over_new_storage(first, *geometry)
        if any(_views_an_activation(t) for t in tensors):
            base = _as_activation(base)
        elif any(t.requires_grad for t in tensors):
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
    # A non-leaf with no alias among the arguments: one differentiable op
    # keeps it a non-leaf that requires grad, and a view only if it was one:
    # a view of that non-leaf, never of a leaf (a view of a leaf may not be
    # written in place, where the original may).
    activation = _as_activation(copy)
    return activation.view_as(activation) if original._is_view() else activation


def _views_an_activation(tensor: torch.Tensor) -> bool:
    """Whether ``tensor`` is a view of a non-leaf that requires grad (an activation)."""
    base = tensor._base
    return base is not None and base.requires_grad and not base.is_leaf


def _as_activation(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor``, over the same storage, made a non-leaf that requires grad.

    Multiplying in place by a leaf 1 that requires grad leaves every value as
    it was (signed zeros and NaNs included) and gives the tensor a grad_fn,
    as a model's activation has; its views may then be written in place.
    """
    one = torch.ones((), dtype=tensor.dtype, device=tensor.device, requires_grad=True)
    return tensor.mul_(one)


def is_on_device(where: torch.device, device: torch.device) -> bool:
    """Whether memory ``where`` is on ``device`` (``cuda`` names whichever ``cuda:N``)."""
    return where.type == device.type and device.index in (None, where.index)


def storage_on(storage: torch.UntypedStorage, device: torch.device) -> torch.UntypedStorage:
    """A copy of ``storage`` on ``device``, byte for byte (through a tensor: a
    storage's own ``to`` knows only the devices of a loaded backend module)."""
    raw = torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage)
    return raw.to(device).untyped_storage()


def tensor_over(
    storage: torch.UntypedStorage, dtype: torch.dtype, like: torch.Tensor
) -> torch.Tensor:
    """A tensor of ``dtype`` over ``storage`` with the geometry of ``like``: its size,
    strides and storage offset (in elements)."""
    fresh = torch.empty(0, dtype=dtype, device=storage.device)
    return fresh.set_(storage, like.storage_offset(), like.size(), like.stride())


def replace_memory(
    tensor: torch.Tensor,
    fresh: torch.Tensor,
    convert_grad: Callable[[torch.Tensor], torch.Tensor],
) -> None:
    """Give ``tensor`` the memory (device, dtype) of ``fresh`` in place, as
    ``Module.to`` and ``Module.double`` do: the tensor keeps its identity
    (what holds it holds it still), leaf-ness, ``requires_grad`` and hooks;
    its ``.grad`` is converted with ``convert_grad``.

    Where torch cannot give a tensor of one kind the memory of another (the
    ``meta`` device), the two are swapped instead (``swap_tensors``, as
    ``Module.to`` does then).
    """
    grad = tensor.grad if tensor.is_leaf else None
    if grad is not None:
        tensor.grad = None
    if torch._has_compatible_shallow_copy_type(tensor, fresh):
        tensor.data = fresh
    else:
        stand_in = (
            torch.nn.Parameter(fresh, requires_grad=tensor.requires_grad)
            if isinstance(tensor, torch.nn.Parameter)
            else fresh.requires_grad_(tensor.requires_grad)
        )
        torch.utils.swap_tensors(tensor, stand_in)
    if grad is not None:
        tensor.grad = convert_grad(grad)
