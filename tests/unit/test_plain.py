"""Plain torch scripts of baseline findings (``pytest_cgraph.recording.plain``).

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

from pytest_cgraph.oracle.difference import Difference, Kind, Place, Role
from pytest_cgraph.recording import plain
from pytest_cgraph.recording.plain import ProgramText, inputs_body, main, make_plain

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
            # The program never reads its first input a0: the script leaves it out, and
            # checks p1's grad where it now is.
            "torch.testing.assert_close(compiled_args[0].grad, eager_args[0].grad",
            id="grad",
        ),
        pytest.param(
            "crash-compiled_call-RuntimeError-expand_the_requested_shape_has_too_b44eb2-aot_eager.toml",
            1,
            # Nothing after the compiled call: its exception ends the script.
            "actual = compiled_fn(*args)\n",
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
    assert not check.endswith("\n") or result.script.endswith(check)
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


# ------------------------------------------------------- inputs never read


def _entry(tmp_path: Path, program: str, signature: str = "mutation-argument") -> Path:
    """A baseline entry of ``program`` on aot_eager, as the harness records one."""
    path = tmp_path / f"{signature}-aot_eager.toml"
    path.write_text(
        f"# pytest-cgraph entry\n# signature: {signature}-aot_eager\n# layer: aot_eager\n\n"
        f'signature = "{signature}"\nbackend = "aot_eager"\nbackend_modules = []\n'
        f"device = \"cpu\"\n\nprogram = '''\n{program}'''\n"
    )
    return path


def _unread(source: str) -> tuple[int, ...]:
    return ProgramText.parse(
        f"import torch\n\n{source}\n\ndef inputs(k):\n"
        "    return (torch.ones(1), torch.ones(1), torch.ones(1))\n"
    ).unread_inputs()


@pytest.mark.parametrize(
    ("program", "unread"),
    [
        pytest.param("def program(a0, a1, a2):\n    return (a1 + 1,)", (0, 2), id="plain"),
        pytest.param(
            "def program(a0, a1, a2):\n    f = lambda: a0 * 2\n    return (a1 + f(),)",
            (2,),
            id="lambda",
        ),
        pytest.param(
            "def program(a0, a1, a2):\n    def f():\n        return a2 * 2\n    return (a1 + f(),)",
            (0,),
            id="closure",
        ),
        pytest.param("def program(*args):\n    return (args[1] + 1,)", (), id="star-args"),
        pytest.param("def program(a0, *rest):\n    return (rest[0] + 1,)", (0,), id="star-rest"),
        pytest.param("def program(a0, a1, a2):\n    return (locals()['a0'] + 1,)", (), id="locals"),
        pytest.param("def program(a0, a1, a2=None):\n    return (a1 + 1,)", (0,), id="a-default"),
        pytest.param(
            "def program(a0, a1, a2):\n    del a0\n    a2 = a1 + 1\n    return (a2,)",
            (),
            id="del-and-rebind",
        ),
        pytest.param(
            "def program(a0, a1, a2):\n    f = lambda a0: a0 + 1\n    return (f(a1),)",
            (2,),
            id="shadowing-parameter",
        ),
        pytest.param(
            "@torch.no_grad()\ndef program(a0, a1, a2):\n    return (a1 + 1,)", (), id="decorated"
        ),
        pytest.param(
            "def program(a0, a1, a2):\n    return (a1 + 1,)\n\n"
            "def twice(*args):\n    return program(*args), program(*args)",
            (),
            id="called-elsewhere",
        ),
    ],
)
def test_only_inputs_the_function_cannot_read_count_as_unread(
    program: str, unread: tuple[int, ...]
) -> None:
    assert _unread(program) == unread


def test_leaving_inputs_out_takes_their_parameters_and_only_their_statements() -> None:
    program = ProgramText.parse(
        "import torch\n\n"
        "def program(a0, a1, a2, a3):\n    return (a0 + a2,)\n\n"
        "def inputs(k):\n"
        "    g = torch.Generator().manual_seed(1000 + k)\n"
        "    a0 = torch.randn((1,), generator=g)\n"
        "    a1 = torch.randn((2,), generator=g)[::2]\n"
        "    a1.requires_grad_(True)\n"
        "    a2 = torch.randn((1,), generator=g)\n"
        "    a3 = a2.add_(1)\n"  # writes a2 in place: stays
        "    return (a0, a1, a2, a3)\n"
    )
    assert program.unread_inputs() == (1, 3)
    without = program.without_inputs((1, 3))
    assert ast.unparse(without.inputs).splitlines()[1:] == [
        "    g = torch.Generator().manual_seed(1000 + k)",
        "    a0 = torch.randn((1,), generator=g)",
        "    a2 = torch.randn((1,), generator=g)",
        "    a3 = a2.add_(1)",
        "    return (a0, a2)",
    ]
    assert without.definitions(False, [])[0].startswith("def fn(a0, a2):")
    # The program as parsed is left as it was, for the plans that keep every input.
    assert ast.unparse(program.inputs).endswith("return (a0, a1, a2, a3)")
    assert program.definitions(False, [])[0].startswith("def fn(a0, a1, a2, a3):")


def test_an_unread_input_is_left_out_of_the_script_which_still_verifies() -> None:
    entry = BASELINE / "mutation-argument-aot_eager-4.toml"  # foreach-duplicate-tensor
    assert "def program(a0, a1):" in entry.read_text()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = make_plain(entry)
    assert result.verified, (result.verdict, result.attempts, result.script)
    assert result.script is not None
    assert "a1" not in result.script
    assert "def fn(a0):" in result.script
    assert "eager_args = (a0,)" in result.script
    assert "torch.testing.assert_close(compiled_args[0], eager_args[0]" in result.script
    assert result.lines <= 19  # 20 with a1 drawn, passed and taken


def test_an_input_read_through_a_closure_stays_and_the_check_follows_its_position(
    tmp_path: Path,
) -> None:
    # a0 is never read; a1 only inside a lambda; what differs is a2, written twice
    # through a foreach op over a list that holds it twice.
    entry = _entry(
        tmp_path,
        "import torch\n\n"
        "def program(a0, a1, a2):\n"
        "    f = lambda: a1 * 2\n"
        "    torch._foreach_add_([a2, a2], 1.5)\n"
        "    return (f(),)\n\n"
        "def inputs(k):\n"
        "    g = torch.Generator().manual_seed(1000)\n"
        "    a0 = torch.randn((3,), generator=g)\n"
        "    a1 = torch.randn((1,), generator=g)\n"
        "    a2 = torch.randn((1,), generator=g)\n"
        "    return (a0, a1, a2)\n\n"
        "ITERS = 2\n",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = make_plain(entry)
    assert result.verified, (result.verdict, result.attempts, result.script)
    assert result.script is not None
    assert "a0" not in result.script
    assert "def fn(a1, a2):" in result.script
    assert "eager_args = (a1, a2)" in result.script
    # a2 was the third input and is the second now: the check reads it there.
    assert "torch.testing.assert_close(compiled_args[1], eager_args[1]" in result.script
    assert 'print("compiled:", compiled_args[1])' in result.script


def test_a_script_that_fails_without_its_unread_inputs_falls_back_to_all_of_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = plain.run_scripts

    def without_a1_it_passes(texts: list[str], limit: float = plain.RUN_LIMIT) -> list[plain.Run]:
        runs = real(texts, limit)
        return [
            plain.Run(0, "") if "def fn(a0):" in t else r for t, r in zip(texts, runs, strict=True)
        ]

    monkeypatch.setattr(plain, "run_scripts", without_a1_it_passes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = make_plain(BASELINE / "mutation-argument-aot_eager-4.toml")
    assert result.verified, (result.verdict, result.attempts, result.script)
    assert result.script is not None
    assert "def fn(a0, a1):" in result.script
    assert result.attempts == [
        "1 call(s), deepcopy inputs, unread inputs 1 left out: passes on the backend"
    ]


def test_without_its_unread_view_a_finding_copies_its_inputs_with_deepcopy() -> None:
    # a1, never read, is a view: inputs() would have to run once per side with it.
    entry = BASELINE / "metadata-argument-requires_grad-aot_eager-2.toml"
    assert "a1 = torch.randn((2,), generator=g)[::2]" in entry.read_text()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        facts = plain.eager_facts(plain.Finding.read(entry).source)
        result = make_plain(entry)
    assert (facts.deep_copyable, facts.uncopyable) == (False, frozenset({1}))
    assert facts.without_inputs((1, 2)).deep_copyable
    assert facts.without_inputs((0,)).uncopyable == frozenset({0})
    assert result.verified, (result.verdict, result.attempts, result.script)
    assert result.script is not None
    assert "a1" not in result.script and "a2" not in result.script
    assert "compiled_args = copy.deepcopy(eager_args)" in result.script
    assert "def inputs" not in result.script
    assert "assert compiled_args[0].requires_grad == eager_args[0].requires_grad" in result.script


def test_torch_log_records_are_left_out_of_what_the_script_printed() -> None:
    from pytest_cgraph.recording import issue

    log = "W1126 23:16:43.128000 12064 torch/_inductor/cudagraph_utils.py:380] skipping"
    printed = issue._observed(f"eager:    True\n{log}\nAssertionError")
    assert printed == "eager:    True\nAssertionError"


@pytest.mark.parametrize(
    ("entry_name", "condition", "in_script"),
    [
        # aot-autocast-off-region-backward-low-precision: the backward after the
        # call, outside the autocast, is where the two differ.
        (
            "grad-grad-aot_eager-9.toml",
            "AUTOCAST",
            'with torch.autocast("cpu", dtype=torch.bfloat16):\n    actual = compiled_fn(',
        ),
        # partitioner-memory-budget-recomputes-random-op: the setting is the cause.
        (
            "grad-grad-aot_eager-10.toml",
            "COMPILE_CONFIG",
            "import torch._functorch.config\n"
            "torch._functorch.config.activation_memory_budget = 0.0\n",
        ),
    ],
)
def test_a_condition_of_the_calls_becomes_plain_code_of_the_script(
    entry_name: str, condition: str, in_script: str
) -> None:
    """An ambient autocast and compile settings are protocol names the script has
    not: it spells them as torch code, where a model author would."""
    entry = BASELINE / entry_name
    assert f"{condition} = " in entry.read_text()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = make_plain(entry)
    assert result.verified, (result.verdict, result.attempts, result.script)
    assert result.script is not None and condition not in result.script
    assert in_script in result.script


# ------------------------------------------------------- a backend of one's own

OWN_BACKEND = '''
import torch


def lose_input_writes(gm, example_inputs):
    """A compiler that runs the graph on copies of its tensor arguments."""

    def run(*args):
        return gm(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])

    return run
'''


def test_a_backend_given_as_module_and_function_is_imported_by_the_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A compiler engineer's own backend, which Dynamo's registry does not know:
    # the script imports it as the harness did, and is verified on it.
    (tmp_path / "own_backend.py").write_text(OWN_BACKEND)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # the verifying subprocesses
    entry = _entry(
        tmp_path,
        "import torch\n\n\ndef program(a0):\n    a0.add_(1)\n    return (a0 * 2,)\n\n\n"
        "def inputs(k):\n    return (torch.ones(2),)\n",
    )
    entry.write_text(
        entry.read_text().replace(
            'backend = "aot_eager"', 'backend = "own_backend:lose_input_writes"'
        )
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = make_plain(entry)
    assert result.verified, (result.verdict, result.attempts, result.script)
    assert result.script is not None
    assert "from own_backend import lose_input_writes" in result.script
    assert "torch.compile(fn, backend=lose_input_writes)" in result.script


def test_a_crash_of_the_same_type_with_another_message_is_not_the_finding() -> None:
    """An Inductor report's ablation said `aot_eager_decomp_partition` fails, where it
    raised AOTAutograd's "Encountered a set_ on a graph input", another AssertionError
    than the finding's "expected size 3==5": the message's opening words must match."""
    finding = plain.Finding(
        name="set.toml",
        source="def program():\n    return ()\n",
        backend="inductor",
        device="cpu",
        modules=(),
        signature="crash-compiled_call-AssertionError-expected_size_N_N_stride_N_N_at_25f776",
        layer=None,
    )
    crash = Difference(
        Kind.CRASH,
        1,
        Place(Role.COMPILED, name="call"),
        exception_type="AssertionError",
        message="expected size 3==5, stride 1==1 at dim=0",
    )
    same = plain.Run(1, "Traceback (most recent call last):\nAssertionError: expected size 3==5")
    other = plain.Run(1, "Traceback (most recent call last):\nAssertionError: Encountered a set_")
    assert plain._fails_as_expected(finding, crash, same) is None
    assert "another message" in str(plain._fails_as_expected(finding, crash, other))
