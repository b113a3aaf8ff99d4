"""Backends and devices as users name them, validated into what the oracle runs.

The oracle (:mod:`pytest_cgraph.oracle.compiling`) knows how to compile
with a :class:`~pytest_cgraph.oracle.compiling.Backend`; this module turns a
user's spec into one, or fails with one line that names the closest valid
names and how to list them all.

No torch import at module level: the plugin checks ``--cgraph-backend``
and ``--cgraph-device`` before any test runs, and a typo should be
answered in the second pytest takes to start, not after the seconds
``import torch._dynamo`` costs. Most names are judged from
:data:`BUILTIN_BACKENDS` alone (:func:`check_backend`); only one that a
plugin may have registered at run time needs torch to tell.

``python -m pytest_cgraph.backends [MODULE ...]`` prints every name
accepted, after importing the modules named (those that register backends).
"""

from __future__ import annotations

import difflib
import functools
import importlib
import importlib.metadata
import re
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from pytest_cgraph.checking.validation import device_spec
from pytest_cgraph.oracle.errors import ConfigurationError

if TYPE_CHECKING:
    import torch

    from pytest_cgraph.oracle.compiling import Backend

#: The torch releases (major.minor) whose own backend names :data:`BUILTIN_BACKENDS` holds.
BUILTIN_BACKENDS_TORCH = ("2.13", "2.14")

#: Every name that torch 2.13 and 2.14 register themselves, ``list_backends(exclude_tags=())``.
#: A unit test compares it with the installed torch's. Under another release it
#: is not trusted: every name is asked of torch.
BUILTIN_BACKENDS = frozenset(
    {
        "aot_eager",
        "aot_eager_decomp_partition",
        "aot_eager_decomp_partition_crossref",
        "aot_eager_decomp_partition_with_mode",
        "aot_eager_default_partitioner",
        "aot_ts",
        "cudagraphs",
        "dynamo_accuracy_minifier_backend",
        "dynamo_minifier_backend",
        "eager",
        "eager_debug",
        "eager_noexcept",
        "inductor",
        "invoke_subgraph",
        "non_leaf_compile_error_TESTING_ONLY",
        "openxla",
        "openxla_eval",
        "pre_dispatch_eager",
        "relu_accuracy_error_TESTING_ONLY",
        "relu_compile_error_TESTING_ONLY",
        "relu_runtime_error_TESTING_ONLY",
        "ts",
        "tvm",
    }
)

#: ``pytest_cgraph.oracle.compiling.INDUCTOR_MODES``, repeated here because that
#: module imports torch (a unit test keeps the two equal).
INDUCTOR_MODES = ("reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")

#: What an unknown name's message tells the user to run to see every valid name.
LIST_COMMAND = "python -m pytest_cgraph.backends"

#: The entry-point group through which installed packages give torch backend names.
ENTRY_POINT_GROUP = "torch_dynamo_backends"

#: At most this many characters of close names in an unknown name's message.
_CLOSE_NAMES_CHARS = 60


def known_backend_names() -> list[str]:
    """Every backend name accepted, including ones registered at run time."""
    import torch._dynamo

    return sorted({*torch._dynamo.list_backends(exclude_tags=()), *INDUCTOR_MODES})


def check_backend(spec: str) -> None:
    """Accept ``spec`` or fail with one line, importing torch only where only torch can tell.

    This is the check the plugin makes at start, so that a typo costs no
    ``import torch._dynamo``; :func:`resolve_backend` is what running needs.
    """
    verdict = _known_without_torch(spec)
    if verdict is None:
        resolve_backend(spec)
    elif not verdict:
        raise unknown_backend(spec, [*BUILTIN_BACKENDS, *INDUCTOR_MODES, *_entry_point_backends()])


def _known_without_torch(spec: str) -> bool | None:
    """Whether ``spec`` names a backend, when that is known without importing torch; else None.

    A name outside the built-in ones is refused only while ``torch._dynamo``
    is not imported: registering a backend imports it, so until then no
    plugin can have registered one (an installed package's entry point is
    loaded by torch itself, and so is left to torch).
    """
    if ":" in spec:
        return None  # the module must be imported to see
    if spec in INDUCTOR_MODES:
        return True
    if _installed_torch_release() not in BUILTIN_BACKENDS_TORCH:
        return None
    if spec in BUILTIN_BACKENDS:
        return True
    if _dynamo_imported() or spec in _entry_point_backends():
        return None
    return False


def _dynamo_imported() -> bool:
    return "torch._dynamo" in sys.modules


@functools.cache
def _installed_torch_release() -> str | None:
    """``major.minor`` of the installed torch, read from its metadata (no import)."""
    try:
        version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None
    match = re.match(r"(\d+)\.(\d+)", version)
    return f"{match.group(1)}.{match.group(2)}" if match else None


def _entry_point_backends() -> list[str]:
    return [entry.name for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)]


def unknown_backend(spec: str, names: Iterable[str]) -> ConfigurationError:
    """The one-line error for a name no backend has: the closest names, and how to list all.

    Listing every name made a line of 600 characters, most of them debug
    and testing backends nobody meant.
    """
    close: list[str] = []
    for name in difflib.get_close_matches(spec, sorted(set(names)), n=3):
        if close and len(", ".join(map(repr, [*close, name]))) > _CLOSE_NAMES_CHARS:
            break
        close.append(name)
    nearest = f"closest: {', '.join(map(repr, close))}" if close else "none close"
    return ConfigurationError(
        f"unknown backend {spec!r}; valid: a backend name ({nearest}; all: {LIST_COMMAND}) "
        "or package.module:attr"
    )


def resolve_backend(spec: str | Callable[..., Any] | Backend) -> Backend:
    """Turn a user's backend spec into a :class:`Backend`, or fail with one line.

    Accepted: a ``Backend``; a compiler callable (as ``torch.compile`` takes);
    a registered backend name; an Inductor mode; ``package.module:attr``.
    """
    from pytest_cgraph.oracle.compiling import Backend

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
    names = known_backend_names()
    if spec not in names:
        raise unknown_backend(spec, names)
    return Backend.named(spec)


def check_device(spec: str | torch.device) -> str:
    """The device as text once this machine can use it, or fail with one line.

    Only CUDA needs torch to tell, and then only ``import torch``,
    ``torch.cuda.is_available()`` and ``device_count()``, which do not
    initialise CUDA; ``auto`` and ``cpu`` are judged without it.
    """
    text = device_spec(spec)
    if not text.startswith("cuda"):
        return text
    import torch

    if not torch.cuda.is_available():
        raise ConfigurationError(
            f"device {text!r} asked for, but this torch sees no CUDA device "
            "(use auto or cpu instead)"
        )
    _, _, index = text.partition(":")
    if index and int(index) >= torch.cuda.device_count():
        raise ConfigurationError(
            f"device {text!r} asked for, but only {torch.cuda.device_count()} CUDA device(s) exist"
        )
    return text


def resolve_device(spec: str | torch.device | None) -> torch.device | None:
    """``None`` keeps arguments where they are; ``auto`` picks CUDA when present."""
    if spec is None:
        return None
    text = check_device(spec)
    import torch

    if text == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(text)


def main(argv: list[str] | None = None) -> int:
    """Print every backend name accepted, one a line, after importing the modules named."""
    import argparse

    parser = argparse.ArgumentParser(
        prog=LIST_COMMAND, description="Print every backend name --cgraph-backend accepts."
    )
    parser.add_argument(
        "modules", nargs="*", metavar="MODULE", help="import first: a module that registers some"
    )
    for module in parser.parse_args(argv).modules:
        importlib.import_module(module)
    for name in known_backend_names():
        print(name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
