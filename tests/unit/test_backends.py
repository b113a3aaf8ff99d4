"""Backend names and devices judged without torch where the name alone tells, and the one
line an unknown name gets."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch._dynamo

from pytest_cgraph.checking import backends
from pytest_cgraph.checking.backends import (
    BUILTIN_BACKENDS,
    BUILTIN_BACKENDS_TORCH,
    INDUCTOR_MODES,
    LIST_COMMAND,
    check_backend,
    check_device,
    resolve_backend,
    unknown_backend,
)
from pytest_cgraph.errors import ConfigurationError

TESTS = Path(__file__).resolve().parents[1]


def test_the_static_names_are_the_installed_torchs_own() -> None:
    # On another torch release, record its names and its release here.
    release = ".".join(importlib.metadata.version("torch").split(".")[:2])
    assert release in BUILTIN_BACKENDS_TORCH
    # Asked of a fresh process: this one may have registered test backends.
    listed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import torch._dynamo; print(*torch._dynamo.list_backends(exclude_tags=()))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert set(listed) == BUILTIN_BACKENDS


def test_the_inductor_modes_are_the_oracles() -> None:
    from pytest_cgraph.oracle import compiling

    assert INDUCTOR_MODES == compiling.INDUCTOR_MODES


@pytest.fixture
def no_dynamo(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a pytest run whose plugins imported no ``torch._dynamo`` (this process has)."""
    monkeypatch.setattr(backends, "_dynamo_imported", lambda: False)

    def no_torch(*args: object, **kwargs: object) -> None:
        raise AssertionError("torch was asked")

    monkeypatch.setattr(backends, "known_backend_names", no_torch)


@pytest.mark.usefixtures("no_dynamo")
@pytest.mark.parametrize("name", ["cudagraphs", "aot_eager", "inductor", *INDUCTOR_MODES])
def test_a_builtin_name_or_mode_is_accepted_without_torch(name: str) -> None:
    check_backend(name)


@pytest.mark.usefixtures("no_dynamo")
def test_an_unknown_name_is_refused_without_torch_while_no_plugin_can_have_registered_it() -> None:
    with pytest.raises(ConfigurationError, match=r"^unknown backend 'cudagraph'; .*'cudagraphs'"):
        check_backend("cudagraph")


def test_an_unknown_name_is_asked_of_torch_once_dynamo_is_imported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A plugin that registers a backend has imported torch._dynamo to do it.
    registered = [*backends.known_backend_names(), "my_plugin_backend"]
    monkeypatch.setattr(backends, "known_backend_names", lambda: registered)
    check_backend("my_plugin_backend")
    with pytest.raises(ConfigurationError, match=r"closest: 'my_plugin_backend'"):
        check_backend("my_plugin_backnd")


@pytest.mark.usefixtures("no_dynamo")
def test_another_torch_release_asks_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backends, "_installed_torch_release", lambda: "2.99")
    with pytest.raises(AssertionError, match="torch was asked"):
        check_backend("aot_eager")
    check_backend("reduce-overhead")  # a mode is this package's, not torch's


@pytest.mark.usefixtures("no_dynamo")
def test_an_entry_point_backend_is_left_to_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backends, "_entry_point_backends", lambda: ["from_a_package"])
    with pytest.raises(AssertionError, match="torch was asked"):
        check_backend("from_a_package")


@pytest.mark.parametrize(
    ("name", "closest"),
    [
        ("cudagraph", "closest: 'cudagraphs'"),
        ("indcutor", "closest: 'inductor'"),
        ("reduce_overhead", "closest: 'reduce-overhead'"),
        ("aot-eager", "closest: 'aot_eager', 'eager'"),
        ("nosuchbackend", "none close"),
        ("relu_compile_error_TESTING", "closest: 'relu_compile_error_TESTING_ONLY'"),
    ],
)
def test_an_unknown_name_is_one_short_line_with_the_closest_names(name: str, closest: str) -> None:
    message = str(unknown_backend(name, backends.known_backend_names()))
    assert message == (
        f"unknown backend {name!r}; valid: a backend name ({closest}; all: {LIST_COMMAND}) "
        "or package.module:attr"
    )
    assert len(f"ERROR: pytest-cgraph: {message}") < 200


def test_resolving_an_unknown_name_gives_the_same_line() -> None:
    with pytest.raises(ConfigurationError) as raised:
        resolve_backend("cudagraph")
    assert str(raised.value) == str(unknown_backend("cudagraph", backends.known_backend_names()))


def test_the_list_command_prints_every_name_and_imports_what_it_is_given() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest_cgraph.backends", "cgraph_doubles.faults"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(TESTS)},
    )
    names = result.stdout.split()
    assert set(names) >= BUILTIN_BACKENDS | set(INDUCTOR_MODES)
    assert "faulty_lost_input_mutation" in names
    assert names == sorted(names)


def test_cpu_and_auto_need_no_torch() -> None:
    code = textwrap.dedent(
        """
        import sys
        from pytest_cgraph.checking.backends import check_device
        print(check_device("cpu"), check_device("auto"), "torch" in sys.modules)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert out.split() == ["cpu", "auto", "False"]


def test_cuda_is_asked_of_torch_cuda() -> None:
    if torch.cuda.is_available():
        assert check_device("cuda") == "cuda"
        with pytest.raises(ConfigurationError, match=r"only \d+ CUDA device\(s\) exist"):
            check_device(f"cuda:{torch.cuda.device_count()}")
    else:
        with pytest.raises(ConfigurationError, match="sees no CUDA device"):
            check_device("cuda:0")
