"""Deep copies of a program's arguments that keep everything a compiler may key on.

Each side of a check gets its own copy of the arguments, and the copies must
be indistinguishable from the originals to the program: dtype, shape,
strides, storage offset, ``requires_grad``, leaf-ness, ``nn.Parameter``-ness,
an existing ``.grad`` — and aliasing. Two arguments that are views of one
storage in the call are views of one (new) storage in each copy, because
input aliasing is exactly what compiled code handles specially.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch


def storage_key(tensor: torch.Tensor) -> tuple[torch.device, int] | None:
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


def clone_preserving_aliases(
    values: Sequence[Any], device: torch.device | None = None
) -> list[Any]:
    """Copy every tensor in ``values`` (a flat list); other values pass through.

    With ``device`` set, the copies are made there (arguments of a CUDA run
    built on the CPU).
    """
    copies: list[Any] = list(values)
    groups: dict[tuple[torch.device, int], list[int]] = {}
    for index, value in enumerate(values):
        if not isinstance(value, torch.Tensor):
            continue
        key = storage_key(value)
        if key is None:
            copies[index] = _clone_alone(value, device)
        else:
            groups.setdefault(key, []).append(index)
    for indices in groups.values():
        for index, copy in zip(
            indices, _clone_group([values[i] for i in indices], device), strict=True
        ):
            copies[index] = copy
    return copies


def _clone_alone(tensor: torch.Tensor, device: torch.device | None) -> torch.Tensor:
    copy = tensor.detach().clone()
    if device is not None:
        copy = copy.to(device)
    return _restore_autograd(tensor, copy)


def _clone_group(tensors: list[torch.Tensor], device: torch.device | None) -> list[torch.Tensor]:
    """Copy tensors sharing one storage so that the copies share a new one."""
    storage = tensors[0].untyped_storage()
    new_storage = storage.clone()
    if device is not None and new_storage.device != device:
        new_storage = new_storage.to(device=device)

    def view_of_new_storage(tensor: torch.Tensor) -> torch.Tensor:
        fresh = torch.empty(0, dtype=tensor.dtype, device=new_storage.device)
        return fresh.set_(new_storage, tensor.storage_offset(), tensor.size(), tensor.stride())

    # A leaf that requires grad owns the group's autograd identity: every
    # other member that requires grad becomes a view of it, as in the call.
    root_index = next((i for i, t in enumerate(tensors) if t.is_leaf and t.requires_grad), None)
    if root_index is None and any(t.requires_grad for t in tensors):
        # Non-leaf views of some leaf we were not given: stand that leaf in
        # with a flat tensor over the whole storage.
        flat = torch.empty(0, dtype=tensors[0].dtype, device=new_storage.device).set_(
            new_storage, 0, (new_storage.nbytes() // tensors[0].element_size(),), (1,)
        )
        hidden_root = flat.requires_grad_(True)
    else:
        hidden_root = None

    root_copy = None
    if root_index is not None:
        root_copy = _restore_autograd(tensors[root_index], view_of_new_storage(tensors[root_index]))

    copies = []
    for index, tensor in enumerate(tensors):
        if index == root_index:
            copies.append(root_copy)
        elif tensor.requires_grad:
            base = root_copy if root_copy is not None else hidden_root
            assert base is not None
            view = base.as_strided(tensor.size(), tensor.stride(), tensor.storage_offset())
            copies.append(view)
        else:
            copies.append(view_of_new_storage(tensor))
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
    # A non-leaf with no alias among the arguments: a fresh leaf and one
    # differentiable op above it keep it a non-leaf that requires grad.
    return copy.requires_grad_(True).view_as(copy)
