"""The ``serving`` family: what a serving step does to its caches, call after call.

Its ops grow a cache by a row (``torch.cat``), write a preallocated one in
place at the step's position (a Python number that changes every call, or
the first or last row), shift a ring buffer, and read the filled part. Its
schedules change the inputs from call to call as a server's do: shapes that
grow, outputs fed back as the next call's inputs, host numbers that change,
or one cache kept; a growing batch marked dynamic
(``torch._dynamo.mark_dynamic``) or left to Dynamo's automatic dynamic
shapes. The ops are the family's alone: ``mixed`` draws none.
"""

from __future__ import annotations

import warnings
from collections import Counter

from pytest_cgraph.strategies import OPS, draw_programs

SERVING_ONLY = {"cache_append", "cache_write", "cache_shift", "cache_prefix", "cache_scatter"}


def test_a_serving_step_grows_writes_and_reads_its_caches_over_changing_calls() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        drawn = draw_programs(150, families=("serving",), seed=1)
    ops = Counter(statement.op for program in drawn for statement in program.statements)
    assert set(ops) >= SERVING_ONLY, ops
    schedules = Counter(program.schedule for program in drawn)
    assert set(schedules) >= {"dynamic", "feedback", "fresh", "persistent", "marked_dynamic"}
    sources = [program.render() for program in drawn]
    # A batch marked dynamic before the call, as a server marks it: the size grows.
    assert any("torch._dynamo.mark_dynamic(" in s and "+ k - 1" in s for s in sources)
    assert any("torch.cat([" in s for s in sources)
    # A write at the step's position, carried by a number that changes every call.
    assert any("int(n" in s and "% " in s and "0.5 + k" in s for s in sources)
    assert any("torch.roll(" in s for s in sources)
    # Rows shifted over themselves from a clone; a functional update copied back.
    assert any("[1:] = " in s and "[:-1].clone()" in s for s in sources)
    assert any("torch.slice_scatter(" in s and ".copy_(v" in s for s in sources)


def test_the_serving_ops_are_drawn_by_no_other_family() -> None:
    for op in OPS:
        if op.name in SERVING_ONLY:
            assert op.families == {"serving"}, op
