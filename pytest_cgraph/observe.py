"""What one side of a check did in one iteration, frozen so later calls cannot change it.

CUDA-graph replays overwrite their outputs in place, and programs mutate
their inputs, so everything is copied the moment it is observed. The raw
outputs are kept separately by the runner for the retained-output check.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from pytest_cgraph.cloning import storage_key


@dataclass(frozen=True)
class TensorSnapshot:
    """A tensor's metadata and a private copy of its values."""

    dtype: torch.dtype
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    storage_offset: int
    device: torch.device
    requires_grad: bool
    values: torch.Tensor

    @classmethod
    def of(cls, tensor: torch.Tensor) -> TensorSnapshot:
        """Copy ``tensor`` now; reading it later may see a replay's overwrite."""
        strided = tensor.layout == torch.strided
        return cls(
            dtype=tensor.dtype,
            shape=tuple(tensor.shape),
            stride=tuple(tensor.stride()) if strided else (),
            storage_offset=tensor.storage_offset() if strided else 0,
            device=tensor.device,
            requires_grad=tensor.requires_grad,
            values=tensor.detach().clone(),
        )


def snapshot(value: Any) -> Any:
    """Snapshot a tensor; other values (ints, None, strings) are kept as they are."""
    return TensorSnapshot.of(value) if isinstance(value, torch.Tensor) else value


@dataclass
class Observation:
    """One side, one iteration: outputs, arguments after the call, grads, aliasing.

    ``error`` is set when the call or the backward raised; ``phase`` says
    which, and ``traceback`` keeps the formatted stack for the report.
    """

    outputs: list[Any] = field(default_factory=list)
    output_names: list[str] = field(default_factory=list)
    output_structure: str = ""
    arguments: list[Any] = field(default_factory=list)
    argument_names: list[str] = field(default_factory=list)
    grads: dict[str, TensorSnapshot | None] = field(default_factory=dict)
    aliasing: list[str] = field(default_factory=list)
    error: BaseException | None = None
    phase: str = ""
    traceback: str = ""


def describe_aliasing(
    outputs: Sequence[Any], arguments: Sequence[Any], argument_names: Sequence[str]
) -> list[str]:
    """For each output, which arguments and earlier outputs share its memory.

    Identity (the same tensor object returned twice, or an argument returned
    as itself) is kept apart from storage sharing, since compiled code must
    preserve both.
    """
    relations = []
    for index, out in enumerate(outputs):
        if not isinstance(out, torch.Tensor):
            relations.append("")
            continue
        key = storage_key(out)
        parts = []
        for arg, name in zip(arguments, argument_names, strict=True):
            if not isinstance(arg, torch.Tensor):
                continue
            if arg is out:
                parts.append(f"is argument {name}")
            elif key is not None and storage_key(arg) == key:
                parts.append(f"shares storage with argument {name}")
        for earlier in range(index):
            other = outputs[earlier]
            if not isinstance(other, torch.Tensor):
                continue
            if other is out:
                parts.append(f"is output #{earlier}")
            elif key is not None and storage_key(other) == key:
                parts.append(f"shares storage with output #{earlier}")
        relations.append("; ".join(parts))
    return relations
