"""The plugin's options: declaration, ini keys, and validation with one-line errors.

No torch import here: options are parsed for every pytest run, including
runs that never use this plugin.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest

DEFAULT_BACKEND = "cudagraphs"
DEFAULT_DEVICE = "auto"
DEFAULT_ITERS = 5


@dataclass(frozen=True)
class Option:
    """One ``--cgraph-*`` flag and its ``cgraph_*`` ini key."""

    flag: str
    help: str
    default: Any = None
    kind: str = "string"

    @property
    def dest(self) -> str:
        """The attribute name on ``config.option`` and the ini key."""
        return self.flag.lstrip("-").replace("-", "_")


OPTIONS = (
    Option("--cgraph", "check cgraph tests against eager with the compile path", False, "bool"),
    Option(
        "--cgraph-backend",
        "torch.compile backend name, reduce-overhead, max-autotune, or package.module:attr "
        f"(default: {DEFAULT_BACKEND})",
        DEFAULT_BACKEND,
    ),
    Option(
        "--cgraph-device",
        f"auto, cpu, cuda or cuda:N (default: {DEFAULT_DEVICE})",
        DEFAULT_DEVICE,
    ),
    Option(
        "--cgraph-iters",
        f"iterations per program; 4+ replay CUDA graphs twice (default: {DEFAULT_ITERS})",
        DEFAULT_ITERS,
    ),
)


def add_options(parser: pytest.Parser) -> None:
    """Register every option in one group, each also as an ini key."""
    group = parser.getgroup("cgraph", "CUDA-graph equivalence (pytest-cgraph)")
    for option in OPTIONS:
        if option.kind == "bool":
            group.addoption(option.flag, action="store_true", default=None, help=option.help)
            parser.addini(option.dest, option.help, type="bool", default=option.default)
        else:
            group.addoption(option.flag, action="store", default=None, help=option.help)
            parser.addini(option.dest, option.help, default=str(option.default))


@dataclass(frozen=True)
class CgraphOptions:
    """Validated settings of a session: command line over ini over defaults."""

    enabled: bool
    backend: str
    device: str
    iters: int


def read_options(config: pytest.Config) -> CgraphOptions:
    """Collect and validate; a bad value is a ``pytest.UsageError`` of one line."""
    values = {}
    for option in OPTIONS:
        given = config.getoption(option.dest)
        values[option.dest] = (
            (given, "command line")
            if given is not None
            else (config.getini(option.dest), "ini file")
        )
    iters_value, where = values["cgraph_iters"]
    device, device_where = values["cgraph_device"]
    device = str(device).strip()
    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", device):
        raise pytest.UsageError(
            f"--cgraph-device: {device!r} from {device_where} is not auto, cpu, cuda or cuda:N"
        )
    backend = str(values["cgraph_backend"][0]).strip()
    if not backend:
        raise pytest.UsageError("--cgraph-backend: empty name; give a torch.compile backend")
    return CgraphOptions(
        enabled=bool(values["cgraph"][0]),
        backend=backend,
        device=device,
        iters=_positive_int(iters_value, "--cgraph-iters", where),
    )


def _positive_int(value: Any, flag: str, where: str) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise pytest.UsageError(
            f"{flag}: {value!r} from {where} is not a whole number; give a positive integer"
        ) from None
    if number < 1:
        raise pytest.UsageError(f"{flag}: {number} from {where} must be 1 or more")
    return number
