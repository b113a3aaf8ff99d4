"""Plain torch scripts of baseline findings (``pytest_cgraph.plain``).

Each kind of difference a compiler engineer files upstream (a wrong value, a
wrong write to an argument, a wrong gradient, a crash) gets a short script
that must fail on the finding's backend and pass on eager: the module runs
both in subprocesses before handing the script out, and these tests hold it
to that on small baseline entries that compile quickly on aot_eager.
"""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import pytest

from pytest_cgraph.plain import ProgramText, inputs_body, main, make_plain
from pytest_cgraph.registry import read_bugs

BASELINE = Path(__file__).resolve().parents[2] / "pytest_cgraph" / "known" / "torch-2.13"


def _imports(script: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(script)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize(
    ("entry", "calls", "check"),
    [
        pytest.param(
            "value-output-aot_eager-2.toml",
            1,
            "torch.testing.assert_close(actual[0], expected[0]",
            id="value",
        ),
        pytest.param(
            "mutation-argument-aot_eager.toml",
            2,
            "torch.testing.assert_close(compiled_args[0], eager_args[0]",
            id="mutation",
        ),
        pytest.param(
            "grad-grad-aot_eager-2.toml",
            1,
            "torch.testing.assert_close(compiled_args[1].grad, eager_args[1].grad",
            id="grad",
        ),
        pytest.param(
            "crash-compiled_call-RuntimeError-expand_the_requested_shape_has_too_b44eb2-aot_eager.toml",
            1,
            "assert error is None",
            id="crash",
        ),
    ],
)
def test_a_finding_becomes_a_short_script_that_fails_on_its_backend_only(
    entry: str, calls: int, check: str
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = make_plain(BASELINE / entry)
    assert result.verified, (result.verdict, result.attempts, result.script)
    assert result.script is not None
    assert result.verdict.startswith("VERIFIED: fails on aot_eager, passes on eager")
    assert _imports(result.script) <= {"torch", "copy"}
    assert 'torch.compile(fn, backend="aot_eager")' in result.script
    assert check in result.script
    assert f"{calls} call" in result.verdict
    assert result.lines <= 30


def test_inputs_are_inlined_with_k_substituted() -> None:
    program = ProgramText.parse(
        "import torch\n\n"
        "def program(a0):\n    return (a0 + 1,)\n\n"
        "def inputs(k):\n"
        "    g = torch.Generator().manual_seed(1000 + k)\n"
        "    return (torch.randn(2, generator=g),)\n\n"
        "ITERS = 3\n"
    )
    found = inputs_body(program.inputs, 1)
    assert found is not None
    statements, returned = found
    assert [ast.unparse(s) for s in statements] == ["g = torch.Generator().manual_seed(1001)"]
    assert ast.unparse(returned) == "(torch.randn(2, generator=g),)"
    # The protocol's constants are dropped, and the program is called fn.
    assert program.definitions(False, []) == ["def fn(a0):\n    return (a0 + 1,)"]


def test_a_registration_guard_is_opened_and_unused_code_dropped() -> None:
    program = ProgramText.parse(
        "import math\nimport torch\n\n"
        "if not hasattr(torch.ops.cgraph, 'twice'):\n\n"
        "    @torch.library.custom_op('cgraph::twice', mutates_args=())\n"
        "    def _twice(x: torch.Tensor) -> torch.Tensor:\n        return x * 2\n\n"
        "UNUSED = 3\n\n"
        "def helper(x):\n    return x\n\n"
        "def program(a0):\n    return (torch.ops.cgraph.twice(a0),)\n\n"
        "def inputs(k):\n    return (torch.ones(1),)\n"
    )
    kept = program.definitions(False, [])
    assert kept[0].startswith("@torch.library.custom_op")
    assert kept[1].startswith("def fn(a0):")
    assert len(kept) == 2
    assert program.import_lines(kept) == ["import torch"]


def test_the_command_prints_the_script_and_a_verdict(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "plain.py"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(
            [str(BASELINE / "value-output-aot_eager-2.toml"), "--no-verify", "--out", str(out)]
        )
    assert code == 1  # not verified: not run
    assert capsys.readouterr().out.strip() == "NOT VERIFIED (--no-verify)"
    assert "def fn(a0):" in out.read_text()


def test_a_report_ready_to_file_carries_the_bug_the_script_and_what_it_printed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pytest_cgraph import plain

    monkeypatch.setattr(plain, "versions", lambda: "PyTorch version: 2.13.0+cpu")
    entry = BASELINE / "value-output-aot_eager-2.toml"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = plain.ready_to_file(entry)
    bug = next(b for b in read_bugs(BASELINE) if entry.name in b.forms)
    sections = ["### Title", "### 🐛 Describe the bug", "### Versions"]
    assert [line for line in report.splitlines() if line.startswith("### ")] == sections
    assert f"[AOTAutograd] {bug.title}" in report
    assert " ".join(bug.mechanism.split()) in report
    assert 'torch.compile(fn, backend="aot_eager")' in report
    # What the script printed on the backend: both sides' values and the assertion.
    output = report.split("Output on `aot_eager`", 1)[1]
    assert "eager:" in output and "compiled:" in output and "AssertionError" in output
    assert "First diverging layer: aot_eager" in report
    assert "PyTorch version: 2.13.0+cpu" in report
    assert "pytest_cgraph" not in report.split("### Versions")[0]  # nothing of the harness
