"""A program's verdict does not depend on what the process checked before it.

A campaign checks thousands of programs in one long-lived process; its
repro is verified in a fresh one. If state left by earlier programs (Dynamo's
per-code caches and automatic-dynamic shapes, Inductor's caches, RNG,
config) changed a verdict, a finding would not reproduce alone. So: in a
fresh process, check two programs, then drawn programs, then the two
again; every verdict must be the same. By default 40 drawn programs; the
deep run (``-m deep``, in CI) draws 200, a campaign item's worth.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

# A known torch 2.13 difference (squeeze_ then clamp_ of a float64 input)
# and a program that passes (a computed output of a transposed input).
SCRIPT = textwrap.dedent(
    '''
    import json
    import sys

    from hypothesis import HealthCheck, given, settings

    from pytest_cgraph import EquivalenceError, InvalidProgram
    from pytest_cgraph.checking.runner import check_source
    from pytest_cgraph.strategies import programs

    FAILING = """
    import torch


    def program(a0):
        a0.squeeze_(0)
        a0.clamp_(min=-0.5, max=0.5)
        return (a0,)


    def inputs(k):
        return (torch.tensor([-1.25, 2.0], dtype=torch.float64)[:1].clone(),)
    """

    PASSING = """
    import torch


    def program(a0):
        v0 = a0 + 2
        return (v0,)


    def inputs(k):
        return (torch.randn(2, 1, generator=torch.Generator().manual_seed(k)).t(),)


    FRESH_INPUTS = True
    """


    def verdict(source):
        try:
            check_source(source, backend="aot_eager", device="cpu", iters=3)
        except EquivalenceError as error:
            return error.difference.signature
        except InvalidProgram:
            return "invalid"
        return "pass"


    before = [verdict(FAILING), verdict(PASSING)]
    checked = []


    @settings(
        max_examples=int(sys.argv[1]),
        database=None,
        derandomize=True,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(programs())
    def others(program):
        checked.append(verdict(program.render()))


    others()
    after = [verdict(FAILING), verdict(PASSING)]
    print(json.dumps({"before": before, "after": after, "others": len(checked)}))
    '''
)


@pytest.mark.parametrize(
    "others", [40, pytest.param(200, marks=pytest.mark.deep)], ids=["40", "200"]
)
def test_the_same_program_gets_the_same_verdict_before_and_after_others(others: int) -> None:
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(others)],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    # Hypothesis may draw fewer distinct programs than asked.
    assert result["others"] >= others * 3 // 4, result
    assert result["before"] == ["value-output_argument", "pass"], result
    assert result["after"] == result["before"], result
