"""The plugin's options: declaration, ini keys, and validation with one-line errors.

No torch import here: options are parsed for every pytest run, including
runs that never use this plugin. Precedence is command line, then ini file,
then default; an error names the value, where it came from, and the legal form.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from pytest_cgraph.checking.validation import (
    device_spec,
    duration,
    known_dirs,
    non_negative_number,
    positive_int,
)
from pytest_cgraph.hunting.database import DatabaseSpec, base_directory, parse_database
from pytest_cgraph.oracle.errors import ConfigurationError
from pytest_cgraph.strategies.families import FAMILIES

DEFAULT_BACKEND = "cudagraphs"
DEFAULT_DEVICE = "auto"
DEFAULT_ITERS = 5
DEFAULT_EXAMPLES = 100
DEFAULT_REPRO_DIR = "cgraph-repros"
DEFAULT_TIMEOUT = 120.0
DEFAULT_SHRINK_SECONDS = 20.0

T = TypeVar("T")


class OptionKind(enum.Enum):
    """How an option is given: a flag, one value, or a value that may repeat."""

    FLAG = "flag"
    VALUE = "value"
    REPEATED = "repeated"


@dataclass(frozen=True)
class Option:
    """One ``--cgraph-*`` flag and its ``cgraph_*`` ini key."""

    flag: str
    help: str
    default: Any = None
    kind: OptionKind = OptionKind.VALUE

    @property
    def dest(self) -> str:
        """The attribute name on ``config.option`` and the ini key."""
        return self.flag.lstrip("-").replace("-", "_")


OPTIONS = (
    Option(
        "--cgraph",
        "check cgraph_equivalent tests and the cgraph fixture against compiled code; the fuzz "
        "campaign runs too when no test path is given, or with --cgraph-examples, "
        "--cgraph-duration, --cgraph-families or --cgraph-shards",
        False,
        OptionKind.FLAG,
    ),
    Option(
        "--cgraph-backend",
        "torch.compile backend name, reduce-overhead, max-autotune, or package.module:attr; "
        "a comma-separated list gives the campaign's budget to each in turn (the first "
        f"checks marked tests and the fixture) (default: {DEFAULT_BACKEND})",
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
        f"programs drawn per fuzz campaign item, shrink steps not counted "
        f"(default: {DEFAULT_EXAMPLES})",
        DEFAULT_EXAMPLES,
    ),
    Option(
        "--cgraph-duration",
        "time box of the whole campaign (90s, 30m, 8h), over all its items and workers, "
        "whatever --cgraph-examples says",
        "",
    ),
    Option(
        "--cgraph-shards",
        "split each family's budget (examples or duration) over N campaign items, "
        "cgraph::<family>[0] ... [N-1], so that many workers stay busy (default: 1)",
        1,
    ),
    Option(
        "--cgraph-shrink-seconds",
        f"seconds spent shrinking one failure (default: {DEFAULT_SHRINK_SECONDS:g}; less once "
        "its statement count has not fallen for 40%% of it)",
        DEFAULT_SHRINK_SECONDS,
    ),
    Option("--cgraph-seed", "seed of the whole campaign (default: random, printed)", ""),
    Option(
        "--cgraph-families",
        f"comma-separated program families to fuzz, of {','.join(FAMILIES)} (default: all)",
        "all",
    ),
    Option(
        "--cgraph-repro-dir",
        f"where repro files of failures go; also a registry of known bugs "
        f"(default: {DEFAULT_REPRO_DIR})",
        DEFAULT_REPRO_DIR,
    ),
    Option(
        "--cgraph-known",
        "another directory of entries or repro files whose bugs count as known (repeatable)",
        (),
        OptionKind.REPEATED,
    ),
    Option(
        "--cgraph-no-baseline",
        "do not count the torch differences shipped with pytest-cgraph as known",
        False,
        OptionKind.FLAG,
    ),
    Option(
        "--cgraph-check-known",
        "run every known-bug repro (baseline, --cgraph-known, repro dir) and report "
        "which no longer reproduce",
        False,
        OptionKind.FLAG,
    ),
    Option("--cgraph-report", "write the run summary as JSON to this path", ""),
    Option(
        "--cgraph-report-html",
        "write the run summary as a one-page HTML picture (charts, signatures) to this path",
        "",
    ),
    Option(
        "--cgraph-strict",
        "known bugs (a repro already in a registry) fail the run too",
        False,
        OptionKind.FLAG,
    ),
    Option(
        "--cgraph-timeout",
        "seconds one program may run before it is a timeout failure; 0 for no limit "
        f"(default: {DEFAULT_TIMEOUT:g})",
        DEFAULT_TIMEOUT,
    ),
    Option(
        "--cgraph-database",
        "Hypothesis example database shared by workers, machines and runs, whose failures "
        "are replayed first: a directory or redis://host:port/db; ro: before one only reads "
        "it; several, comma-separated, are used together (default: Hypothesis's own)",
        "",
    ),
    Option(
        "--cgraph-isolate",
        "check each program in a child process, replaced every 500 programs, so that a "
        "segfault or hang is a failure, not the end of the run (on with --cgraph-duration)",
        False,
        OptionKind.FLAG,
    ),
)


def add_options(parser: pytest.Parser) -> None:
    """Register every option in one group, each also as an ini key."""
    group = parser.getgroup("cgraph", "CUDA-graph equivalence (pytest-cgraph)")
    for option in OPTIONS:
        if option.kind is OptionKind.FLAG:
            group.addoption(option.flag, action="store_true", default=None, help=option.help)
            parser.addini(option.dest, option.help, type="bool", default=option.default)
        elif option.kind is OptionKind.REPEATED:
            group.addoption(option.flag, action="append", default=None, help=option.help)
            parser.addini(option.dest, option.help, type="linelist", default=[])
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


@dataclass(frozen=True)
class CgraphOptions:
    """Validated settings of a session: command line over ini over defaults."""

    enabled: bool
    #: The backend marked tests, the fixture and repro replays use: the first named.
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
    duration: float | None = None
    shrink_seconds: float = DEFAULT_SHRINK_SECONDS
    known_dirs: tuple[Path, ...] = ()
    baseline: bool = True
    check_known: bool = False
    shards: int = 1
    database: DatabaseSpec | None = None
    report_html: Path | None = None
    #: Every backend named, in order: the campaign hunts on each (empty: ``backend`` alone).
    backends: tuple[str, ...] = ()

    @property
    def campaign_backends(self) -> tuple[str, ...]:
        """The backends the campaign spreads its budget over."""
        return self.backends or (self.backend,)


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

    def text(dest: str) -> str:
        return str(values[dest][0]).strip()

    def checked(dest: str, parse: Callable[[str], T]) -> T:
        value, where = values[dest]
        try:
            return parse(str(value).strip())
        except ConfigurationError as error:
            flag = "--" + dest.replace("_", "-")
            raise pytest.UsageError(f"{flag}: {error} (from {where})") from None

    backends = checked("cgraph_backend", _backends)
    report = text("cgraph_report")
    return CgraphOptions(
        enabled=bool(values["cgraph"][0]),
        backend=backends[0],
        backends=backends,
        device=checked("cgraph_device", device_spec),
        iters=checked("cgraph_iters", lambda v: positive_int(v, "iterations")),
        examples=checked("cgraph_examples", lambda v: positive_int(v, "examples")),
        seed=checked("cgraph_seed", _seed) if text("cgraph_seed") else None,
        families=checked("cgraph_families", _families),
        repro_dir=Path(text("cgraph_repro_dir") or DEFAULT_REPRO_DIR),
        report=Path(report) if report else None,
        strict=bool(values["cgraph_strict"][0]),
        timeout=checked("cgraph_timeout", lambda v: non_negative_number(v, "the time limit")),
        isolate=bool(values["cgraph_isolate"][0]),
        duration=(
            checked("cgraph_duration", lambda v: duration(v, "the duration"))
            if text("cgraph_duration")
            else None
        ),
        shrink_seconds=checked(
            "cgraph_shrink_seconds", lambda v: non_negative_number(v, "the shrink time")
        ),
        known_dirs=checked("cgraph_known", lambda _: known_dirs(values["cgraph_known"][0] or ())),
        baseline=not bool(values["cgraph_no_baseline"][0]),
        check_known=bool(values["cgraph_check_known"][0]),
        shards=checked("cgraph_shards", lambda v: positive_int(v, "shards")),
        database=(
            checked(
                "cgraph_database",
                lambda v: parse_database(
                    v,
                    base_directory(
                        config.invocation_params.dir,
                        config.inipath,
                        from_ini=values["cgraph_database"][1] == "ini file",
                    ),
                ),
            )
            if text("cgraph_database")
            else None
        ),
        report_html=Path(text("cgraph_report_html")) if text("cgraph_report_html") else None,
    )


def _seed(value: str) -> int:
    """A whole number, not negative: xdist's channel (execnet) cannot carry an int below
    -2**31, so a negative seed would stop a run under ``-n`` where it works without."""
    try:
        seed = int(value)
    except ValueError:
        seed = -1
    if seed < 0:
        raise ConfigurationError(
            f"the seed must be a whole number, 0 or more, got {value!r}"
        ) from None
    return seed


def _backends(value: str) -> tuple[str, ...]:
    """``NAME`` or ``NAME,NAME,...``: each a backend, in the order given, once each."""
    names = tuple(dict.fromkeys(part.strip() for part in value.split(",")))
    if not value or "" in names:
        raise ConfigurationError(
            f"empty name in {value!r}; give a torch.compile backend, or several "
            "separated by commas (cudagraphs,inductor)"
        )
    return names


def _families(value: str) -> tuple[str, ...]:
    if value in ("", "all"):
        return FAMILIES
    names = tuple(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))
    unknown = [name for name in names if name not in FAMILIES]
    if unknown or not names:
        raise ConfigurationError(
            f"unknown {', '.join(map(repr, unknown)) or 'empty list'}; "
            f"choose from {','.join(FAMILIES)} or all"
        )
    return names
