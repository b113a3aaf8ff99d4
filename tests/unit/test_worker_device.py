"""Each xdist worker takes its own GPU; CPU and explicit devices are left alone."""

from __future__ import annotations

import pytest

from pytest_cgraph.plugin.options import worker_device


@pytest.mark.parametrize(
    ("spec", "worker", "count", "expected"),
    [
        ("auto", None, 0, "cpu"),
        ("auto", 3, 0, "cpu"),
        ("cpu", 1, 2, "cpu"),
        ("auto", None, 2, "cuda"),
        ("cuda", None, 1, "cuda"),
        ("auto", 0, 2, "cuda:0"),
        ("auto", 1, 2, "cuda:1"),
        ("cuda", 3, 2, "cuda:1"),
        ("cuda:1", 0, 2, "cuda:1"),
    ],
)
def test_worker_device(spec: str, worker: int | None, count: int, expected: str) -> None:
    assert worker_device(spec, worker, count) == expected
