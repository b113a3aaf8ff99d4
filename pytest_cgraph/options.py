"""The plugin's options: declaration, ini keys, and validation with one-line errors.

No torch import here: options are parsed for every pytest run, including
runs that never use this plugin. Precedence is command line, then ini file,
then default; an error names the value, where it came from, and the legal form.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_cgraph.strategies.families import FAMILIES

DEFAULT_BACKEND = "cudagraphs"
DEFAULT_DEVICE = "auto"
DEFAULT_ITERS = 5
DEFAULT_EXAMPLES = 100
DEFAULT_REPRO_DIR = "cgraph-repros"
DEFAULT_TIMEOUT = 120.0


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
    Option(
        "--cgraph",
        "run the fuzz campaign and check cgraph_equivalent tests against eager",
        False,
        "bool",
    ),
    Option(
        "--cgraph-backend",
        "torch.compile backend name, reduce-overhead, max-autotune, or package.module:attr "
        f"(default: {DEFAULT_BACKEND})",
        DEFAULT_BACKEND,
    ),
    Option("--cgraph-device", f"auto, cpu, cuda or cuda:N (default: {DEFAULT_DEVICE})", "auto"),
    Option(
        "--cgraph-iters",
        f"iterations per program; 4+ replay CUDA graphs twice (default: {DEFAULT_ITERS})",
        DEFAULT_ITERS,
    ),
    Option(
        "--cgraph-examples",
        f"programs per fuzz campaign item (default: {DEFAULT_EXAMPLES})",
        DEFAULT_EXAMPLES,
    ),
    Option("--cgraph-seed", "seed of the whole campaign (default: random, printed)", ""),
    Option(
        "--cgraph-families",
        f"comma-separated program families to fuzz, of {','.join(FAMILIES)} (default: all)",
        "all",
    ),
    Option(
        "--cgraph-repro-dir",
        f"where repro files of failures go (default: {DEFAULT_REPRO_DIR})",
        DEFAULT_REPRO_DIR,
    ),
    Option("--cgraph-report", "write the run summary as JSON to this path", ""),
    Option(
        "--cgraph-strict",
        "known bugs (a repro already in the repro dir) fail the run too",
        False,
        "bool",
    ),
    Option(
        "--cgraph-timeout",
        "seconds one program may run before it is a timeout failure; 0 for no limit "
        f"(default: {DEFAULT_TIMEOUT:g})",
        DEFAULT_TIMEOUT,
    ),
    Option(
        "--cgraph-isolate",
        "check each program in a child process, so that a segfault or hang is a failure, "
        "not the end of the run (for runs without pytest-xdist)",
        False,
        "bool",
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


def worker_device(spec: str, worker: int | None, cuda_count: int) -> str:
    """The device one process checks on: with ``auto``/``cuda`` and several
    xdist workers, worker ``i`` takes ``cuda:i % count`` so they do not share a GPU."""
    if spec not in ("auto", "cuda") or cuda_count == 0:
        return "cpu" if spec == "auto" else spec
    if worker is None:
        return "cuda"
    return f"cuda:{worker % cuda_count}"


def session_device(config: pytest.Config) -> str:
    """The device this process checks on (imports torch; call only at run time)."""
    options = config.stash[OPTIONS_KEY]
    if options.device not in ("auto", "cuda"):
        return options.device
    import torch

    worker_input = getattr(config, "workerinput", None)
    worker = int(str(worker_input["workerid"]).lstrip("gw")) if worker_input else None
    return worker_device(options.device, worker, torch.cuda.device_count())


@dataclass(frozen=True)
class CgraphOptions:
    """Validated settings of a session: command line over ini over defaults."""

    enabled: bool
    backend: str
    device: str
    iters: int
    examples: int
    seed: int | None
    families: tuple[str, ...]
    repro_dir: Path
    report: Path | None
    strict: bool = False
    timeout: float = DEFAULT_TIMEOUT
    isolate: bool = False


OPTIONS_KEY = pytest.StashKey[CgraphOptions]()


def read_options(config: pytest.Config) -> CgraphOptions:
    """Collect and validate; a bad value is a ``pytest.UsageError`` of one line."""
    values: dict[str, tuple[Any, str]] = {}
    for option in OPTIONS:
        given = config.getoption(option.dest)
        values[option.dest] = (
            (given, "command line")
            if given is not None
            else (config.getini(option.dest), "ini file")
        )

    def text(dest: str) -> tuple[str, str]:
        value, where = values[dest]
        return str(value).strip(), where

    device, where = text("cgraph_device")
    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", device):
        raise pytest.UsageError(
            f"--cgraph-device: {device!r} from {where} is not auto, cpu, cuda or cuda:N"
        )
    backend, _ = text("cgraph_backend")
    if not backend:
        raise pytest.UsageError("--cgraph-backend: empty name; give a torch.compile backend")
    seed_text, seed_where = text("cgraph_seed")
    report, _ = text("cgraph_report")
    repro_dir, _ = text("cgraph_repro_dir")
    return CgraphOptions(
        enabled=bool(values["cgraph"][0]),
        backend=backend,
        device=device,
        iters=_positive_int(*text("cgraph_iters"), "--cgraph-iters"),
        examples=_positive_int(*text("cgraph_examples"), "--cgraph-examples"),
        seed=_seed(seed_text, seed_where) if seed_text else None,
        families=_families(*text("cgraph_families")),
        repro_dir=Path(repro_dir or DEFAULT_REPRO_DIR),
        report=Path(report) if report else None,
        strict=bool(values["cgraph_strict"][0]),
        timeout=_seconds(*text("cgraph_timeout"), "--cgraph-timeout"),
        isolate=bool(values["cgraph_isolate"][0]),
    )


def _positive_int(value: str, where: str, flag: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise pytest.UsageError(
            f"{flag}: {value!r} from {where} is not a whole number; give a positive integer"
        ) from None
    if number < 1:
        raise pytest.UsageError(f"{flag}: {number} from {where} must be 1 or more")
    return number


def _seconds(value: str, where: str, flag: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise pytest.UsageError(
            f"{flag}: {value!r} from {where} is not a number of seconds; give e.g. 120, or 0 "
            "for no limit"
        ) from None
    if not seconds >= 0 or seconds == float("inf"):
        raise pytest.UsageError(f"{flag}: {value} from {where} must be 0 or a positive number")
    return seconds


def _seed(value: str, where: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise pytest.UsageError(
            f"--cgraph-seed: {value!r} from {where} is not a whole number"
        ) from None


def _families(value: str, where: str) -> tuple[str, ...]:
    if value in ("", "all"):
        return FAMILIES
    names = tuple(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))
    unknown = [name for name in names if name not in FAMILIES]
    if unknown or not names:
        raise pytest.UsageError(
            f"--cgraph-families: unknown {', '.join(map(repr, unknown)) or 'empty list'} "
            f"from {where}; choose from {','.join(FAMILIES)} or all"
        )
    return names
