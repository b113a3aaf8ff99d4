"""Backends and devices as users name them, validated into what the oracle runs.

The oracle (:mod:`pytest_cgraph.oracle.compiling`) knows how to compile
with a :class:`~pytest_cgraph.oracle.compiling.Backend`; this module turns a
user's spec into one, or fails with one line that lists what is valid.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from pytest_cgraph.oracle.compiling import INDUCTOR_MODES, Backend
from pytest_cgraph.oracle.errors import ConfigurationError
from pytest_cgraph.validation import device_spec


def known_backend_names() -> list[str]:
    """Every backend name accepted, including ones registered at run time."""
    return sorted({*torch._dynamo.list_backends(exclude_tags=()), *INDUCTOR_MODES})


def resolve_backend(spec: str | Callable[..., Any] | Backend) -> Backend:
    """Turn a user's backend spec into a :class:`Backend`, or fail with one line.

    Accepted: a ``Backend``; a compiler callable (as ``torch.compile`` takes);
    a registered backend name; an Inductor mode; ``package.module:attr``.
    """
    if isinstance(spec, Backend):
        return spec
    if callable(spec):
        name = getattr(spec, "__name__", type(spec).__name__)
        return Backend(name, spec, uses_cudagraphs=bool(getattr(spec, "uses_cudagraphs", False)))
    if not isinstance(spec, str) or not spec:
        raise ConfigurationError(f"backend must be a name or a callable, got {spec!r}")
    if ":" in spec:
        module_name, _, attr = spec.partition(":")
        try:
            backend = Backend.named(spec)
        except ImportError as exc:
            raise ConfigurationError(
                f"backend {spec!r}: cannot import {module_name!r} "
                f"({type(exc).__name__}: {exc}); use package.module:attr"
            ) from None
        except AttributeError:
            raise ConfigurationError(
                f"backend {spec!r}: module {module_name!r} has no attribute {attr!r}"
            ) from None
        if not callable(backend.compiler):
            raise ConfigurationError(f"backend {spec!r} is not callable")
        return backend
    if spec not in INDUCTOR_MODES and spec not in torch._dynamo.list_backends(exclude_tags=()):
        raise ConfigurationError(
            f"unknown backend {spec!r}; valid: {', '.join(known_backend_names())}, "
            "or package.module:attr"
        )
    return Backend.named(spec)


def resolve_device(spec: str | torch.device | None) -> torch.device | None:
    """``None`` keeps arguments where they are; ``auto`` picks CUDA when present.

    Uses ``torch.cuda.is_available()`` and ``device_count()``, which do not
    initialise CUDA.
    """
    if spec is None:
        return None
    text = device_spec(spec)
    if text == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(text)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ConfigurationError(
                f"device {text!r} asked for, but this torch sees no CUDA device "
                "(use auto or cpu instead)"
            )
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ConfigurationError(
                f"device {text!r} asked for, but only {torch.cuda.device_count()} "
                "CUDA device(s) exist"
            )
    return device
