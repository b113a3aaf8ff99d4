"""Deep copies of a program's arguments that keep everything a compiler may key on.

Each side of a check gets its own copy of the arguments, and the copies must
be indistinguishable from the originals to the program: dtype, shape,
strides, storage offset, ``requires_grad``, leaf-ness, ``nn.Parameter``-ness,
an existing ``.grad``, the hooks registered on it — and aliasing. Two
arguments that are views of one storage in the call are views of one (new)
storage in each copy, because input aliasing is exactly what compiled code
handles specially.

Modules and optimizers are copied too: a module deep-copied (parameter
sharing, buffers, grads, training mode kept), an optimizer rebound to its
side's copies of the parameters. Without that, both sides would share one
module, and the eager side's update would be where the compiled side starts.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator, Sequence
from typing import Any

import torch


def is_stateful_object(value: Any) -> bool:
    """A module or optimizer: an argument whose tensors live inside it."""
    return isinstance(value, (torch.nn.Module, torch.optim.Optimizer))


def is_python_random(value: Any) -> bool:
    """A ``random.Random`` itself: a generator whose state a copy carries and a
    snapshot reads (``SystemRandom``, a subclass, has no state to read)."""
    return type(value) is random.Random


#: The class attribute by which an object opts in to being program state:
#: the names of the attributes a call may change, which are then compared.
STATE_ATTRIBUTES = "__cgraph_state__"


def state_attributes(value: Any) -> tuple[str, ...] | None:
    """The attributes an object declares as its state (``__cgraph_state__``), or
    ``None`` for an object that declares none.

    Only such an object is copied per side and compared by those attributes.
    Any other object passes through shared, as before: an object's other
    attributes (timestamps, ids, floats read off tensors, caches) may differ
    between two honest runs, and deep-copying an arbitrary object (a dataset,
    a tokenizer) may be costly or impossible.
    """
    if isinstance(value, (torch.Tensor, type)) or is_stateful_object(value):
        return None
    declared = getattr(type(value), STATE_ATTRIBUTES, None)
    if not isinstance(declared, tuple) or not all(isinstance(n, str) for n in declared):
        return None
    return declared


def clone_arguments(values: Sequence[Any], device: torch.device | None = None) -> list[Any]:
    """One side's copies of a program's flat arguments: tensors, modules, optimizers.

    Tensors are copied first (aliasing between them kept); modules and
    optimizers are then deep-copied through one memo that already maps each
    tensor argument to its copy, so a parameter passed both inside its
    module and on its own stays one tensor, and an optimizer's parameters
    are its side's copies of the module's. A ``random.Random`` is copied with
    its state, an object that declares its state (:func:`state_attributes`)
    with its attributes. Other values pass through.
    """
    copies = clone_preserving_aliases(values, device)
    memo: dict[int, Any] = {
        id(original): twin
        for original, twin in zip(values, copies, strict=True)
        if isinstance(original, torch.Tensor)
    }
    # Modules before optimizers: an optimizer's parameters then resolve,
    # through the memo, to the copies its module's copy holds.
    order = sorted(
        (i for i, value in enumerate(values) if is_stateful_object(value)),
        key=lambda i: isinstance(values[i], torch.optim.Optimizer),
    )
    # Hooks are carried once per tensor: the arguments' already are.
    carried = set(memo)
    for index in order:
        try:
            twin = copy.deepcopy(values[index], memo)
        except RuntimeError as error:
            raise ValueError(
                f"argument {index} ({type(values[index]).__name__}) cannot be copied per side: "
                f"{str(error).splitlines()[0]}"
            ) from None
        if isinstance(twin, torch.nn.Module):
            # A deep copy leaves a parameter's hooks behind.
            for original, copied in zip(values[index].parameters(), twin.parameters(), strict=True):
                if id(original) not in carried:
                    carried.add(id(original))
                    _carry_hooks(original, copied)
            if device is not None:
                twin.to(device)
        copies[index] = twin
    for index, value in enumerate(values):
        if is_python_random(value):
            # Its state is what each call's draws advance: shared, one
            # side's draws would move the numbers the other side sees.
            copies[index] = copy.deepcopy(value)
        elif state_attributes(value) is not None:
            # The same for an object's declared state; tensors in it resolve
            # to this side's copies.
            try:
                copies[index] = copy.deepcopy(value, dict(memo))
            except Exception as error:
                why = str(error).splitlines()[0] if str(error) else repr(error)
                raise ValueError(
                    f"argument {index} ({type(value).__name__}) declares {STATE_ATTRIBUTES} "
                    f"but cannot be copied per side: {why}"
                ) from None
    return copies


def named_state(name: str, value: Any) -> Iterator[tuple[str, torch.Tensor | None]]:
    """The tensors a module or optimizer holds, named by path: ``net.lin.weight``.

    An optimizer's state is named by its parameters' positions in its
    groups: ``opt.state[0].momentum_buffer``.
    """
    if isinstance(value, torch.nn.Module):
        yield from ((f"{name}.{path}", t) for path, t in value.named_parameters())
        yield from ((f"{name}.{path}", t) for path, t in value.named_buffers())
    elif isinstance(value, torch.optim.Optimizer):
        position = 0
        for group in value.param_groups:
            for parameter in group["params"]:
                state = value.state.get(parameter, {})
                for key in sorted(state):
                    if isinstance(state[key], torch.Tensor):
                        yield f"{name}.state[{position}].{key}", state[key]
                position += 1


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
    values: Sequence[Any], device: torch.device | None = None
) -> list[Any]:
    """Copy every tensor in ``values`` (a flat list); other values pass through.

    With ``device`` set, the copies are made there (arguments of a CUDA run
    built on the CPU) — except 0-dim CPU tensors, which stay on the host:
    they are host scalars, which the CUDA-graph path must handle as such.
    """
    copies: list[Any] = list(values)
    groups: dict[StorageKey, list[int]] = {}
    for index, value in enumerate(values):
        if not isinstance(value, torch.Tensor):
            continue
        key = storage_key(value)
        if key is None or is_host_scalar(value):
            copies[index] = _clone_alone(value, device)
        else:
            groups.setdefault(key, []).append(index)
    for indices in groups.values():
        for index, twin in zip(
            indices, _clone_group([values[i] for i in indices], device), strict=True
        ):
            copies[index] = twin
    for original, twin in zip(values, copies, strict=True):
        if isinstance(original, torch.Tensor):
            _carry_hooks(original, twin)
    return copies


def _carry_hooks(original: torch.Tensor, copy: torch.Tensor) -> None:
    """Register on ``copy`` the grad hooks and post-accumulate-grad hooks of ``original``.

    A test may register them on an argument (a gradient clip, an optimizer
    step run in backward), and how compiled code calls them is part of what
    is checked: each side's copy calls the same functions, in the same
    order, as the argument would have.
    """
    for hook in (original._backward_hooks or {}).values():
        copy.register_hook(hook)
    for hook in (original._post_accumulate_grad_hooks or {}).values():
        copy.register_post_accumulate_grad_hook(hook)


def _clone_alone(tensor: torch.Tensor, device: torch.device | None) -> torch.Tensor:
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
    if device is not None and new_storage.device != device:
        new_storage = new_storage.to(device=device)

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
