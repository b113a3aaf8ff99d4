"""Known bugs: which failures a registry of repro files claims, and when it asks for a layer."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from pytest_cgraph.failures import Case, Outcome, Verdict
from pytest_cgraph.oracle.difference import Difference, Kind, Place, Role, error_in_headline
from pytest_cgraph.registry.entries import (
    ADVANCED,
    AUTOCAST,
    BUGS_FILE,
    DATA_ASSIGNED,
    GRAD_READ,
    MODULE_CALL,
    KnownBug,
    Registry,
    program_ops,
    read_bugs,
    read_entry,
    recorded_settings,
    registry_files,
    shipped_baselines,
    without_calls,
)
from pytest_cgraph.registry.hazards import hazards
from pytest_cgraph.registry.judge import Judge
from pytest_cgraph.registry.repro_files import (
    BASE_SIGNATURE,
    FAILURE,
    LAYER,
    MARKER_LINE,
    header_value,
)
from pytest_cgraph.strategies.templates import TEMPLATES

WRONG = Difference(Kind.VALUE, 2, Place(Role.OUTPUT, index=0))
WRONG_GRAD = Difference(Kind.GRAD, 2, Place(Role.GRAD, name="a0"))
CRASH = Difference(
    Kind.CRASH,
    1,
    Place(Role.COMPILED, name="call"),
    exception_type="RuntimeError",
    message="setStorage: sizes [3] out of bounds",
)


def repro(directory: Path, name: str, signature: str, layer: str, program: str) -> Path:
    """A repro file as far as a registry reads one: its header and its program."""
    path = directory / f"{name}.py"
    path.write_text(
        f"{MARKER_LINE}\n{BASE_SIGNATURE}{signature}\n{LAYER}{layer}\n"
        f"PROGRAM_SOURCE = r'''\n{program}'''[1:]\n"
    )
    return path


def asked(answer: str | None, calls: list[int]) -> Callable[[], str | None]:
    """A layer finder that answers ``answer`` and counts its calls in ``calls``."""

    def layer_of() -> str | None:
        calls.append(1)
        return answer

    return layer_of


def test_a_broad_signature_is_known_only_at_the_entry_s_layer_and_with_its_ops(
    tmp_path: Path,
) -> None:
    program = "def program(a0):\n    return (a0.squeeze_(0).sin(),)\n"
    repro(tmp_path, "value-output-aot_eager", "value-output", "aot_eager", program)
    registry = Registry.load([tmp_path, tmp_path / "missing"])
    assert len(registry) == 1 and registry.needs_layer(WRONG)
    ops = frozenset({"squeeze_", "sin", "mul"})
    calls: list[int] = []
    entry = registry.match(WRONG, asked("aot_eager", calls), ops)
    assert entry is not None and entry.path.name == "value-output-aot_eager.py"
    assert calls == [1]  # the layer was asked, once
    assert registry.match(WRONG, lambda: "cudagraphs", ops) is None  # another layer: new
    # A program that lacks one of the known program's calls is another bug: no layer asked.
    calls.clear()
    assert registry.match(WRONG, asked("aot_eager", calls), frozenset({"sin"})) is None
    assert calls == []


def test_a_crash_s_message_names_its_bug_whatever_the_layer_or_ops(tmp_path: Path) -> None:
    repro(tmp_path, "crash", CRASH.signature, "eager", "def program():\n    pass\n")
    registry = Registry.load([tmp_path])
    assert not registry.needs_layer(CRASH)
    calls: list[int] = []
    assert registry.match(CRASH, asked(None, calls)) is not None
    assert calls == []
    other = Difference(**{**CRASH.__dict__, "message": "a different error entirely"})
    assert not registry.may_know(other) and registry.match(other, lambda: None) is None


def test_a_message_several_entries_share_is_narrowed_by_their_ops(tmp_path: Path) -> None:
    """torch raises one version-counter message from many mechanisms: where two
    entries share it, a program that makes no call of the hazards of either
    (here an in-place write, a random draw) is a new bug; one that writes in place
    through another op is the first's."""
    repro(tmp_path, "by-mul", CRASH.signature, "aot_eager", "def program(a0):\n    a0.mul_(2)\n")
    repro(
        tmp_path, "by-rng", CRASH.signature, "aot_eager", "def program(a0):\n    a0.rand_like()\n"
    )
    registry = Registry.load([tmp_path])
    assert not registry.needs_layer(CRASH)  # still a message: no ladder
    by_mul = registry.match(CRASH, lambda: None, frozenset({"mul_", "sin"}))
    assert by_mul is not None and by_mul.path.name == "by-mul.py"
    by_add = registry.match(CRASH, lambda: None, frozenset({"add_", "relu"}))
    assert by_add is not None and by_add.path.name == "by-mul.py"
    by_rng = registry.match(CRASH, lambda: None, frozenset({"randn_like"}))
    assert by_rng is not None and by_rng.path.name == "by-rng.py"
    assert registry.match(CRASH, lambda: None, frozenset({"t_", "relu"})) is None


def test_one_entry_held_twice_does_not_share_its_message(tmp_path: Path) -> None:
    # a repro file and the entry recorded from it, in two registries: still one bug
    program = "def program(a0):\n    a0.mul_(2)\n"
    repro(tmp_path, "repro", CRASH.signature, "aot_eager", program)
    (tmp_path / "known").mkdir()
    repro(tmp_path / "known", "entry", CRASH.signature, "aot_eager", program)
    registry = Registry.load([tmp_path, tmp_path / "known"])
    assert len(registry) == 2 and not registry.narrows(CRASH)
    assert registry.match(CRASH, lambda: None, frozenset({"t_"})) is not None


def test_entries_are_read_from_headers_and_foreign_files_are_skipped(tmp_path: Path) -> None:
    entry = read_entry(repro(tmp_path, "a", "grad-grad", "none", "def program(x):\n    x.t_()\n"))
    assert entry is not None
    assert (entry.signature, entry.layer, entry.ops) == ("grad-grad", None, frozenset({"t_"}))
    (tmp_path / "conftest.py").write_text("import pytest\n")
    # Ours by its first line but torn before its signature: it claims nothing.
    (tmp_path / "b.py").write_text(f"{MARKER_LINE}\n# no signature here\n")
    assert [e.path.name for e in Registry.load([tmp_path]).entries()] == ["a.py"]


def test_a_program_s_ops_are_its_calls_and_those_of_its_own_plain_functions() -> None:
    source = (
        "import torch\n\n"
        "def helper(x):\n    return x.cos()\n\n"
        "def program(a0, a1):\n"
        "    for _ in range(2):\n        a0 = torch.nn.functional.dropout(a0).add_(a1)\n"
        "    return (helper(a0), len(a1))\n"
    )
    assert program_ops(source) == frozenset({"dropout", "add_", "cos"})
    assert program_ops("def program(:\n") == frozenset()
    # A bound on a size is Python's, not an op (x.min() is one).
    bounded = "def program(a0):\n    a0.resize_(min(4, a0.numel()))\n    return (a0.min(),)\n"
    assert program_ops(bounded) == frozenset({"resize_", "numel", "min"})
    assert "min" not in program_ops("def program(a0):\n    return (a0[: min(2, 3)],)\n")


@pytest.mark.parametrize(
    ("statement", "op"),
    [
        ("v = a0[::2]", "[:]"),
        ("v = a0[..., 1]", "[:]"),
        ("v = a0[None]", "[:]"),
        ("v = a0[0, -1]", "[i]"),
        ("v = a0[a0 > 0]", "[t]"),
        ("v = a0[torch.tensor([0, 0])]", "[t]"),
        ("a0[a0 > 0] = 0.5", "[]="),
        ("a0[0] += 1", "[]="),
    ],
)
def test_a_subscript_is_an_op_of_its_kind(statement: str, op: str) -> None:
    # so an entry reached through a mask or a slice claims no program without one
    ops = program_ops(f"def program(a0):\n    {statement}\n    return (a0,)\n")
    assert op in ops and not ({"[:]", "[i]", "[t]", "[]="} - {op}) & ops, ops


@pytest.mark.parametrize(
    ("statement", "named", "classed"),
    [
        ("a0 -= 0.1 * a0.grad", {"isub", "mul", ".grad"}, {"inplace", "autograd"}),
        ("a0 += 1", {"iadd"}, {"inplace"}),
        ("a0 @= a0", {"imatmul"}, {"inplace"}),
        ("a0.grad = None", {".grad="}, {"autograd"}),
        ("a0.grad = a0.grad * 2", {".grad=", ".grad", "mul"}, {"autograd"}),
        ("h1.count += 1", set(), set()),  # an object's state, not a tensor's in-place op
    ],
)
def test_an_augmented_assignment_and_a_grad_assignment_are_ops(
    statement: str, named: set[str], classed: set[str]
) -> None:
    # A bug met where a name is rebound to an in-place op's result, then its .grad
    # set, is told by these: neither is a call.
    ops = program_ops(f"import torch\n\ndef program(a0, h1):\n    {statement}\n    return (a0,)\n")
    assert ops == named, ops
    assert hazards(ops) == classed


@pytest.mark.parametrize(
    "statement",
    [
        "v = a0.unbind(0)[1]",
        "v = a0.split(1)[-1]",
        "v = torch.chunk(a0, 2)[0]",
        "v = torch.autograd.grad(a0.sum(), a0)[0]",
        "v = a0.shape[0]",
        "v = a0.size()[-1]",
        "v = a0.sort(0)[1]",
        "v = WithArgmax.apply(a0)[0]",
    ],
)
def test_picking_from_a_tuple_or_from_metadata_is_no_subscript_op(statement: str) -> None:
    # the call is the op; only indexing a tensor is one of the subscript pseudo-ops
    ops = program_ops(f"def program(a0):\n    {statement}\n    return (v,)\n")
    assert not {"[:]", "[i]", "[t]", "[]="} & ops, ops
    assert program_ops("def program(a0):\n    return (a0.sum(0)[0],)\n") >= {"sum", "[i]"}


def test_an_entry_that_declares_no_ops_claims_every_program_of_its_signature(
    tmp_path: Path,
) -> None:
    baseline = Path(__file__).resolve().parents[2] / "pytest_cgraph" / "known" / "torch-2.13"
    name = (
        "aliasing-aliasing-is_output_shares_argument_shares_output_to_shares_argument_"
        "shares_output-aot_eager.toml"
    )
    declared = read_entry(baseline / name)
    assert declared is not None and declared.ops == frozenset()
    # The same entry without its ``ops`` line claims only programs calling contiguous
    # on a slice.
    undeclared = tmp_path / name
    undeclared.write_text(
        "\n".join(line for line in (baseline / name).read_text().splitlines() if line != "ops = []")
    )
    narrow = read_entry(undeclared)
    assert narrow is not None and narrow.ops == frozenset({"contiguous", "[:]"})
    flatten_program = frozenset({"view", "flatten"})
    assert declared.claims(flatten_program) and not narrow.claims(flatten_program)


def test_a_staged_programs_ops_are_its_stages_calls_not_the_glue() -> None:
    source = (
        "def stage0(a0):\n    return (a0.mul_(2),)\n\n\n"
        "def stage1(a0, v0):\n    return (v0.sin(),)\n\n\n"
        "def program(a0):\n    (v0,) = stage0(a0)\n    return stage1(a0, v0)\n\n\n"
        'COMPILE = ("stage0", "stage1")\n'
    )
    # and the pseudo-op that says it is staged: an entry recorded from a
    # staged program claims staged programs only.
    assert program_ops(source) == frozenset({"mul_", "sin", "COMPILE"})


def test_how_inputs_change_between_calls_is_an_op_too() -> None:
    body = "def program(a0, a1):\n    a0.add_(1)\n    return (a1 * 1,)\n\n"
    by_call = "def inputs(k):\n    a0 = torch.zeros(1)\n    return (a0, a0[0:1] if k % 2 else a0)\n"
    fed_back = "def advance(k, args, outputs):\n    return (outputs[0], args[1])\n"
    plain = "def inputs(k):\n    a0 = torch.zeros(1)\n    return (a0, a0[0:1])\n"
    assert program_ops(body + by_call) == frozenset({"add_", "mul", "INPUTS_BY_CALL"})
    assert program_ops(body + plain + fed_back) == frozenset({"add_", "mul", "ADVANCE"})
    # the subscripts of inputs() are not the program's
    assert program_ops(body + plain) == frozenset({"add_", "mul"})
    # An argument built from another argument may share its storage.
    viewed = (
        "def inputs(k):\n    a0 = torch.zeros(2)\n    a1 = a0.reshape(-1)[0:1]\n"
        "    p2 = torch.nn.Parameter(torch.ones(1))\n    p2 = torch.nn.Parameter(p2)\n"
        "    return (a0, a1, p2)\n"
    )
    assert program_ops(body + viewed) == frozenset({"add_", "mul", "ALIASED_INPUTS"})
    rebuilt = viewed.replace("    a1 = a0.reshape(-1)[0:1]\n", "    a1 = torch.ones(1)\n")
    # p2 from itself is not aliasing
    assert program_ops(body + rebuilt) == frozenset({"add_", "mul"})
    # A copy of another argument shares nothing; two views of one base do, and so
    # does a view on some calls only.
    for copied in ("a0.clone()", "torch.zeros_like(a0)", "torch.full(a0.shape, 2.0)"):
        copy = viewed.replace("a0.reshape(-1)[0:1]", copied)
        assert "ALIASED_INPUTS" not in program_ops(body + copy), copied
    one_base = (
        "def inputs(k):\n    base = torch.zeros(4)\n    a0 = base[0:2]\n    a1 = base[1:3].T\n"
        "    return (a0, a1)\n"
    )
    assert "ALIASED_INPUTS" in program_ops(body + one_base)
    sometimes = (
        "def inputs(k):\n    a0 = torch.zeros(2)\n    a1 = a0[0:1] if k % 2 else torch.ones(1)\n"
        "    return (a0, a1)\n"
    )
    assert {"ALIASED_INPUTS", "INPUTS_BY_CALL"} <= program_ops(body + sometimes)


def test_a_dead_process_is_known_by_its_site_and_its_programs_ops(tmp_path: Path) -> None:
    from pytest_cgraph.failures import IN_A_GRAPH, death

    program = "def program(a0):\n    a0.unsqueeze_(0)\n    return (a0.unbind(0)[0],)\n"
    in_graph = death("killed by SIGSEGV", "SIGSEGV", IN_A_GRAPH)
    repro(tmp_path, "in-graph", in_graph.signature, "none", program)
    # an entry of an older version, recorded without a site
    repro(tmp_path, "siteless", death("killed by SIGSEGV", "SIGSEGV").signature, "none", program)
    registry = Registry.load([tmp_path])
    ops = frozenset({"squeeze_", "sin"})  # another in-place metadata change: the same bug
    first = registry.match(in_graph, lambda: None, ops)
    assert first is not None and first.path.name == "in-graph.py"
    # the same site reached by a program without the entry's hazards: a new bug
    assert registry.match(in_graph, lambda: None, frozenset({"sin"})) is None
    # a site no entry names: only the siteless entry claims it, by its ops
    elsewhere = death("killed by SIGSEGV", "SIGSEGV", "in gen_alias (torch/_x.py)")
    second = registry.match(elsewhere, lambda: None, ops)
    assert second is not None and second.path.name == "siteless.py"
    assert registry.match(elsewhere, lambda: None, frozenset({"sin"})) is None


def test_a_call_of_a_module_argument_is_its_class_not_its_name() -> None:
    module = "class Counter(torch.nn.Module):\n    pass\n"
    program = "def program(a0, {m}):\n    v0 = {m}(a0)\n    return (torch.sin(v0),)\n"
    by_name = "def inputs(k):\n    {m} = Counter()\n    return (torch.ones(1), {m})\n"
    inline = "def inputs(k):\n    return (torch.ones(1), torch.nn.Linear(1, 1))\n"
    hidden = "def inputs(k):\n    return (torch.ones(1), make())\n"
    for m in ("m1", "m2"):  # the generator numbers arguments: the name says nothing
        source = module + program.format(m=m) + by_name.format(m=m)
        assert program_ops(source) == frozenset({"Counter()", "sin"})
    assert program_ops(program.format(m="m1") + inline) == frozenset({"Linear()", "sin"})
    # A call of an argument inputs does not show the class of is still a module call.
    assert program_ops(program.format(m="m1") + hidden) == frozenset({MODULE_CALL, "sin"})
    # An argument that is only passed (a parameter, a scalar) is no call at all.
    passed = "def program(a0, p1):\n    return (a0 * p1,)\n"
    assert program_ops(passed + "def inputs(k):\n    return (1, Counter())\n") == {"mul"}


def test_a_data_assignment_is_an_op() -> None:
    source = "def program(a0):\n    a0.data = a0.data * 2\n    return (a0,)\n"
    assert program_ops(source) == frozenset({DATA_ASSIGNED, "mul"})


def test_a_grad_read_is_an_op_and_a_grad_assignment_is_another() -> None:
    branch = "def program(a0):\n    v0 = a0 * 2\n    return (v0 * (2 if v0.grad is None else 3),)\n"
    assert program_ops(branch) == frozenset({GRAD_READ, "mul"})
    cleared = "def program(a0):\n    a0.grad = None\n    return (a0 * 2,)\n"
    assert program_ops(cleared) == frozenset({".grad=", "mul"})


def test_a_view_read_as_an_attribute_is_an_op() -> None:
    source = "def program(a0):\n    v0 = a0 @ a0.mT\n    a0.mul_(2)\n    return (v0, a0.T.sum())\n"
    assert program_ops(source) == frozenset({"mT", "T", "matmul", "mul_", "sum"})


def test_an_ambient_autocast_is_an_op() -> None:
    source = "def program(a0):\n    return (a0 @ a0.mT,)\n"
    assert AUTOCAST in program_ops(source + "AUTOCAST = 'bfloat16'\n")
    assert AUTOCAST not in program_ops(source + "AUTOCAST = None\n")
    assert AUTOCAST not in program_ops(source)


def test_a_compile_setting_is_an_op_of_its_own_hazard() -> None:
    source = "def program(a0):\n    return (a0.sin(),)\n"
    config = "COMPILE_CONFIG = {'torch._functorch.config.activation_memory_budget': 0.5}\n"
    ops = program_ops(source + config)
    assert ops == frozenset({"sin", "CONFIG.activation_memory_budget"})
    assert hazards(ops) == frozenset({"config"})
    assert program_ops(source) == frozenset({"sin"})


COUNTER = "import torch\n" + TEMPLATES["Counter()"]
GRAD = Difference(Kind.GRAD, 1, Place(Role.GRAD, name="a0"))


def bugs_file(directory: Path, text: str) -> None:
    (directory / BUGS_FILE).write_text(text)


def test_a_form_of_a_bug_claims_every_program_making_the_bug_s_essential_calls(
    tmp_path: Path,
) -> None:
    inputs = "def inputs(k):\n    return (torch.ones(1, requires_grad=True), Counter())\n"
    forms = {
        "grad-grad-aot_eager-4": "def program(a0, m1):\n    v0 = m1(a0)\n    v0.mul_(a0)\n"
        "    return (a0, v0)\n",
        "grad-grad-aot_eager-5": "def program(a0, m1):\n    v0 = m1(a0)\n    v0.clamp_(max=0.5)\n"
        "    return (v0,)\n",
    }
    for name, program in forms.items():
        repro(tmp_path, name, "grad-grad", "aot_eager", COUNTER + program + inputs)
    campaign = COUNTER + (
        "def program(a0, m2):\n    v0 = m2(a0)\n    v1 = torch.sin(v0)\n    return (v1,)\n"
        "def inputs(k):\n    return (torch.ones(1, requires_grad=True), Counter())\n"
    )
    without_module = "def program(a0):\n    v0 = a0 * 2\n    v1 = torch.sin(v0)\n    return (v1,)\n"
    ops, other_ops = program_ops(campaign), program_ops(without_module)
    # One entry per form: the campaign's program makes neither form's every call.
    assert Registry.load([tmp_path]).match(GRAD, lambda: "aot_eager", ops) is None
    bugs_file(
        tmp_path,
        '[[bug]]\nid = "module-buffer-grad-ahead"\ntitle = "t"\nseverity = "silent"\n'
        'mechanism = "m"\nessential = ["Counter()"]\n'
        'forms = ["grad-grad-aot_eager-4.py", "grad-grad-aot_eager-5.py"]\n',
    )
    registry = Registry.load([tmp_path])
    known = registry.match(GRAD, lambda: "aot_eager", ops)
    assert known is not None and known.bug == "module-buffer-grad-ahead"
    # The bug's signature and layer, without its essential call: another bug.
    assert registry.match(GRAD, lambda: "aot_eager", other_ops) is None
    # The form's layer rule stays the entry's own.
    assert registry.match(GRAD, lambda: "cudagraphs", ops) is None
    # The bug travels with the entry to a worker.
    (entry,) = {KnownBug.from_json(e.to_json()) for e in registry.entries()} - {
        registry.entries()[1]
    }
    assert entry.claims(ops) and not entry.claims(other_ops)


def test_essential_alternatives_and_an_empty_essential(tmp_path: Path) -> None:
    entry = KnownBug("value-output", "aot_eager", tmp_path / "e.toml", frozenset({"x"}))
    either = dataclasses.replace(entry, bug="b", essential=("add_|mul_", "sin"))
    assert either.claims(frozenset({"mul_", "sin"})) and either.claims(frozenset({"add_", "sin"}))
    assert not either.claims(frozenset({"mul_"})) and not either.claims(frozenset({"sin", "x"}))
    assert dataclasses.replace(entry, bug="b", essential=()).claims(frozenset())
    # An alternative joined by "+" asks for all of its calls.
    joined = dataclasses.replace(entry, bug="b", essential=("ADVANCE|ALIASED_INPUTS+set_",))
    assert joined.claims(frozenset({"ADVANCE"}))
    assert joined.claims(frozenset({"ALIASED_INPUTS", "set_", "sum"}))
    assert not joined.claims(frozenset({"ALIASED_INPUTS"}))
    assert not joined.claims(frozenset({"set_"}))
    # ... and asks more than an alternative of one call: it ranks above it.
    one_call = dataclasses.replace(entry, bug="c", essential=("ADVANCE|set_",))
    program = frozenset({"ALIASED_INPUTS", "set_"})
    assert joined.precision(program) > one_call.precision(program)
    # An older controller's entry (no bug in its JSON) keeps its own calls.
    old = {key: value for key, value in entry.to_json().items() if key not in ("bug", "essential")}
    assert KnownBug.from_json(old) == entry


def test_forms_of_one_bug_do_not_make_a_shared_message_broad(tmp_path: Path) -> None:
    for name, call in (("a", "mul_(2)"), ("b", "t_()")):
        repro(
            tmp_path,
            f"crash-{name}",
            CRASH.signature,
            "aot_eager",
            f"def program(a0):\n    a0.{call}\n",
        )
    assert Registry.load([tmp_path]).narrows(CRASH)  # two entries of other calls: broad
    bugs_file(
        tmp_path,
        '[[bug]]\nid = "one"\ntitle = "t"\nseverity = "crash"\nmechanism = "m"\n'
        'essential = []\nforms = ["crash-a.py", "crash-b.py"]\n',
    )
    registry = Registry.load([tmp_path])
    assert not registry.narrows(CRASH)
    assert registry.match(CRASH, lambda: None, frozenset({"sin"})) is not None


def test_a_bugs_file_is_no_entry_and_a_broken_one_is_an_error(tmp_path: Path) -> None:
    bugs_file(tmp_path, '[[bug]]\nid = "x"\n')
    assert registry_files(tmp_path) == []
    with pytest.raises(ValueError, match="bug 'x'"):
        read_bugs(tmp_path)
    bugs_file(tmp_path, "[[bug]\n")
    with pytest.raises(ValueError, match="not a bugs file"):
        read_bugs(tmp_path)
    assert read_bugs(tmp_path / "missing") == []
    # A space in an essential item would make the bug claim nothing: refused.
    spaced = (
        '[[bug]]\nid = "x"\ntitle = "t"\nseverity = "silent"\nmechanism = "m"\n'
        'essential = ["ALIASED_INPUTS + set_"]\nforms = []\n'
    )
    bugs_file(tmp_path, spaced)
    with pytest.raises(ValueError, match="no spaces around"):
        read_bugs(tmp_path)
    bugs_file(tmp_path, spaced.replace(" + ", "+"))
    assert read_bugs(tmp_path)[0].essential == ("ALIASED_INPUTS+set_",)


def test_a_plain_function_the_program_calls_lends_it_its_calls() -> None:
    from pytest_cgraph.registry.entries import program_ops

    inlined = (
        "import torch\n\n\n"
        "def _test_step(grid):\n"
        "    torch._foreach_mul_([grid, grid[0]], 2.0)\n    return grid * 1\n\n\n"
        "def program(grid):\n    return _test_step(grid=grid)\n"
    )
    assert program_ops(inlined) == {"_foreach_mul_", "[i]", "mul"}
    # The generator's templates stay calls of their own name, as campaigns draw them.
    template = (
        "def checkpointed_sin(t):\n    return torch.utils.checkpoint.checkpoint(torch.sin, t)\n\n\n"
        "def program(a0):\n    return (checkpointed_sin(a0),)\n"
    )
    assert program_ops(template) == {"checkpointed_sin"}


def test_an_autograd_check_one_bug_holds_is_still_narrowed_by_its_calls(tmp_path: Path) -> None:
    # autograd's leaf check ends many mechanisms: a double backward through a
    # graph break raises it too, with none of the registered bug's calls.
    leaf = Difference(
        **{
            **CRASH.__dict__,
            "message": "a leaf Variable that requires grad is being used in an in-place operation.",
        }
    )
    written = "def program(a0):\n    with torch.no_grad():\n        a0.mul_(2)\n"
    repro(tmp_path, "no-grad-write", leaf.signature, "aot_eager", written)
    bugs_file(
        tmp_path,
        '[[bug]]\nid = "one"\ntitle = "t"\nseverity = "crash"\nmechanism = "m"\n'
        'essential = ["no_grad"]\nforms = ["no-grad-write.py"]\n',
    )
    registry = Registry.load([tmp_path])
    assert registry.narrows(leaf) and not registry.narrows(CRASH)
    calls = frozenset({"no_grad", "mul_"})
    assert registry.match(leaf, lambda: "aot_eager", calls) is not None
    assert registry.match(leaf, lambda: "aot_eager", frozenset({"grad", "graph_break"})) is None
    # The check names no mechanism: raised first by another layer, it is another bug
    # (Inductor's, where the registered one is AOTAutograd's), whatever the calls.
    assert registry.layer_decides(leaf) and not registry.layer_decides(CRASH)
    assert registry.match(leaf, lambda: "inductor", calls) is None


def test_of_two_bugs_that_claim_a_program_the_closer_claim_wins() -> None:
    """A ``.data`` write inside an inference_mode region is claimed by both a
    ``.data=`` bug and an ``inference_mode|enable_grad`` one; the bug whose
    essential call is one call, not one of two, is the program's, whichever
    file came first. A bug that claims any program loses to both."""

    def form(bug: str, essential: tuple[str, ...], ops: set[str]) -> KnownBug:
        return KnownBug(
            "value-output", "aot_eager", Path(f"{bug}.toml"), frozenset(ops), bug, essential
        )

    # Each bug has a form that makes both calls: a program making a call of a meaning
    # none of a bug's forms has is not met through it (Registry.explains).
    region = form(
        "inference-mode-region", ("inference_mode|enable_grad",), {"inference_mode", ".data="}
    )
    data = form("data-assign-alias", (".data=",), {".data=", "detach", "inference_mode"})
    anything = form("fake-grad-mode", (), {"sin"})
    ops = frozenset({"inference_mode", ".data=", "clone"})
    for order in ([region, data, anything], [anything, data, region], [data, region]):
        assert Registry(order).match(WRONG, lambda: "aot_eager", ops) is data
    # Where one claim is all there is, it still wins: precision only orders claimants.
    assert Registry([region, anything]).match(WRONG, lambda: "aot_eager", ops) is region
    assert Registry([anything]).match(WRONG, lambda: "aot_eager", ops) is anything


def test_a_filed_bug_is_named_before_an_entry_of_no_bug_that_claims_more() -> None:
    """The run's own repro of a failure (no bug, every hazard of the program) must
    not hide the filed torch bug the failure is: the test names the bug."""
    own = KnownBug(
        "value-output", "aot_eager", Path("value-output-aot_eager.py"),
        frozenset({"_foreach_mul_", "[i]"}), None, None, True,
    )  # fmt: skip
    user = KnownBug("value-output", "aot_eager", Path("mine.toml"), frozenset({"[i]"}))
    filed = KnownBug(
        "value-output", "aot_eager", Path("value-output-aot_eager-10.toml"),
        frozenset({"_foreach_mul_"}), "foreach-duplicate-tensor", ("_foreach_add_|_foreach_mul_",),
    )  # fmt: skip
    ops = frozenset({"_foreach_mul_", "[i]"})
    assert own.precision(ops) > filed.precision(ops)
    for order in ([own, user, filed], [filed, own, user], [user, filed, own]):
        assert Registry(order).match(WRONG, lambda: "aot_eager", ops) is filed
    # Entries of no bug keep their load order: the first loaded claims it.
    assert Registry([user, own]).match(WRONG, lambda: "aot_eager", ops) is user
    assert Registry([own, user]).match(WRONG, lambda: "aot_eager", ops) is own


def test_between_equal_essential_calls_the_closer_program_wins() -> None:
    one = KnownBug("value-output", None, Path("a.toml"), frozenset({"sin", "mul_"}), "a", ("mul_",))
    two = KnownBug("value-output", None, Path("b.toml"), frozenset({"cos", "mul_"}), "b", ("mul_",))
    ops = frozenset({"cos", "mul_", "add"})
    assert Registry([one, two]).match(WRONG, lambda: None, ops) is two
    assert Registry([two, one]).match(WRONG, lambda: None, ops) is two


@pytest.mark.parametrize("directory", sorted(shipped_baselines().values()), ids=lambda p: p.name)
def test_every_shipped_form_met_again_through_its_own_calls_is_its_own_bug(
    directory: Path,
) -> None:
    """Where several bugs claim a program, the form's own program must still be
    judged its bug: else a campaign meeting that form names the wrong mechanism."""
    registry = Registry.load([directory])
    misjudged = []
    for entry in registry.entries():
        if entry.bug is None:
            continue
        # Judged as a broad failure of its signature (no message to name it by):
        # the program's calls and the layer decide, as they do in a campaign; at a
        # later call, so that what advance does between calls counts too.
        failure = cast(
            Difference,
            SimpleNamespace(signature=entry.signature, message="", kin_signature=None, iteration=2),
        )
        failure.ends_process = False  # type: ignore[misc]
        judged = registry.match(failure, lambda entry=entry: entry.layer, entry.ops)
        if judged is None or judged.bug != entry.bug:
            misjudged.append(f"{entry.path.name}: {entry.bug} judged {judged and judged.bug}")
    assert not misjudged, "\n".join(misjudged)


def version_error(node: str) -> Difference:
    """autograd's version-counter check, naming ``node`` as the maker of the written tensor."""
    return Difference(
        Kind.CRASH,
        1,
        Place(Role.COMPILED, name="backward"),
        exception_type="RuntimeError",
        message="one of the variables needed for gradient computation has been modified by "
        f"an inplace operation: [torch.FloatTensor [3]], which is output 0 of {node}, is at "
        "version 2; expected version 1 instead. Hint: enable anomaly detection.",
    )


def test_an_autograd_check_naming_another_node_is_one_signature_apart_and_one_kin() -> None:
    copy, mul = version_error("torch::autograd::CopyBackwards"), version_error("MulBackward0")
    slices = version_error("CopySlices")
    assert len({copy.signature, mul.signature, slices.signature}) == 3
    assert copy.kin_signature == mul.kin_signature == slices.kin_signature
    assert copy.kin_signature not in (None, copy.signature, mul.signature)
    # No node named: nothing to blank.
    assert CRASH.kin_signature is None and WRONG.kin_signature is None
    # The view+inplace check names the view op written through: one kin too.
    written = [
        Difference(
            Kind.CRASH,
            1,
            Place(Role.COMPILED, name="call"),
            exception_type="RuntimeError",
            message=f"Output 0 of {view} is a view and is being modified inplace. This view "
            "was created inside a custom Function (or because an input was returned as-is)",
        )
        for view in ("Slice", "AsStrided", "CompiledFunction")
    ]
    assert len({d.signature for d in written}) == 3
    assert len({d.kin_signature for d in written}) == 1 and written[0].kin_signature is not None


def test_an_entry_claims_its_check_met_through_another_node_by_its_bug_s_calls(
    tmp_path: Path,
) -> None:
    recorded = version_error("MulBackward0")
    path = tmp_path / "version.py"
    path.write_text(
        f"{MARKER_LINE}\n{BASE_SIGNATURE}{recorded.signature}\n{LAYER}aot_eager\n"
        f"{FAILURE}{recorded.headline()}\n"
        "PROGRAM_SOURCE = r'''\ndef program(a0):\n    v0 = a0 * 2\n    v0.add_(1)\n"
        "    return (v0,)\n'''[1:]\n"
    )
    bugs_file(
        tmp_path,
        '[[bug]]\nid = "saved-then-written"\ntitle = "t"\nseverity = "crash"\n'
        'mechanism = "m"\nessential = ["add_|copy_"]\nforms = ["version.py"]\n',
    )
    registry = Registry.load([tmp_path])
    (entry,) = registry.entries()
    assert entry.kin_signature == recorded.kin_signature
    # The entry travels to a worker with it.
    assert KnownBug.from_json(entry.to_json()) == entry
    through_copy = version_error("torch::autograd::CopyBackwards")
    known = registry.match(through_copy, lambda: "aot_eager", frozenset({"copy_", "sin"}))
    assert known is not None and known.bug == "saved-then-written"
    # The same check, without the bug's calls: another mechanism.
    assert registry.match(through_copy, lambda: "aot_eager", frozenset({"sin", "mul"})) is None


#: An autograd node as its checks name it, told apart here independently of the oracle's own.
NODE_NAMED = re.compile(r"\b\w*(?:Backwards?\d*|CompiledFunction|CopySlices|AccumulateGrad)\b")


@pytest.mark.parametrize("directory", sorted(shipped_baselines().values()), ids=lambda p: p.name)
def test_every_shipped_entry_whose_check_names_a_node_has_its_kin(directory: Path) -> None:
    """An entry's kin is keyed on the message its header holds: it must be the
    message its signature was keyed on, or the entry would claim no kin."""
    without, kin = [], 0
    for path in registry_files(directory):
        entry = read_entry(path)
        error = error_in_headline(header_value(path.read_text(), FAILURE) or "")
        if entry is None or error is None or not NODE_NAMED.search(error[1]):
            continue
        kin += 1
        if entry.kin_signature is None:
            without.append(path.name)
    assert not without, without
    assert kin > 0


def test_a_bug_of_any_symptom_claims_every_difference_of_a_program_making_its_calls(
    tmp_path: Path,
) -> None:
    repro(tmp_path, "rebind", "value-output", "aot_eager", "def program(a0):\n    pass\n")
    repro(tmp_path, "other", CRASH.signature, "aot_eager", "def program(a0):\n    pass\n")
    bugs_file(
        tmp_path,
        '[[bug]]\nid = "rebinds"\ntitle = "t"\nseverity = "silent"\nmechanism = "m"\n'
        'essential = ["set_to_"]\nany_symptom = true\nforms = ["rebind.py"]\n\n'
        '[[bug]]\nid = "other"\ntitle = "t"\nseverity = "crash"\nmechanism = "m"\n'
        'essential = []\nforms = ["other.py"]\n',
    )
    registry = Registry.load([tmp_path])
    calls, rebinding = [], frozenset({"set_to_", "clone"})
    # Another signature, another layer: the bug's calls are enough.
    known = registry.match(version_error("MulBackward0"), asked("cudagraphs", calls), rebinding)
    assert known is not None and known.bug == "rebinds"
    known = registry.match(WRONG, asked("inductor", calls), rebinding)
    assert known is not None and known.bug == "rebinds"
    # Without them, nothing; and a form whose signature matches comes first.
    assert registry.match(WRONG, asked("inductor", calls), frozenset({"clone"})) is None
    known = registry.match(CRASH, asked(None, calls), rebinding)
    assert known is not None and known.bug == "other"
    # The claim travels to a worker with the entry.
    (entry,) = [e for e in registry.entries() if e.bug == "rebinds"]
    assert KnownBug.from_json(entry.to_json()).any_symptom


def test_any_symptom_must_be_a_boolean(tmp_path: Path) -> None:
    bugs_file(
        tmp_path,
        '[[bug]]\nid = "rebinds"\ntitle = "t"\nseverity = "silent"\nmechanism = "m"\n'
        'essential = ["set_to_"]\nany_symptom = "yes"\nforms = []\n',
    )
    with pytest.raises(ValueError, match="any_symptom must be true or false"):
        read_bugs(tmp_path)


@pytest.mark.parametrize(
    ("statement", "op"),
    [
        ("v = a0 * 1", "mul"),
        ("v = a0 + 0", "add"),
        ("v = a0 / 1.0", "div"),
        ("v = 2 - a0", "sub"),
        ("v = a0 @ a0", "matmul"),
        ("v = a0 // 2", "floor_divide"),
        ("v = a0 ** 2", "pow"),
    ],
)
def test_a_binary_operator_is_the_op_it_calls(statement: str, op: str) -> None:
    # a0 * 1 and a0.mul(1) are one op: a bug registered through one spelling
    # claims the other (a no-op multiplication whose output is its input, say).
    spelled = program_ops(f"def program(a0):\n    {statement}\n    return (v,)\n")
    called = program_ops(f"def program(a0):\n    v = torch.{op}(a0, a0)\n    return (v,)\n")
    assert spelled == called == {op}


def test_a_range_star_unpacked_into_a_call_is_an_op_of_its_own() -> None:
    # Dynamo passes such a range's start, stop and step: the spelling is the cause.
    starred = program_ops("def program(a0):\n    return (a0.flip(*range(2)),)\n")
    spelled_out = program_ops("def program(a0):\n    return (a0.flip(0, 1),)\n")
    assert starred == {"flip", "*range"} and spelled_out == {"flip"}
    tupled = program_ops("def program(a0):\n    return (a0.flip(tuple(range(2))),)\n")
    assert "*range" not in tupled


def test_a_bug_claims_no_program_making_a_call_of_a_meaning_its_forms_never_make() -> None:
    """Leave-one-bug-out on the 2.14 baseline named a no-op ``transpose_`` of a saved
    input as the one-node-for-all-outputs bug: both raise autograd's version check,
    and that bug's essential calls are broad. A shrunk program keeps only what its
    failure needs, so a metadata change, a grad mode, a custom op or a module no form
    of the bug makes is another mechanism; a call of the same meaning is not."""
    one_node = KnownBug(
        "grad-grad",
        "aot_eager",
        Path("one-node.toml"),
        frozenset({"backward", "add_"}),
        "one-node",
        ("backward|grad",),
    )
    registry = Registry([one_node])
    assert registry.match(WRONG_GRAD, lambda: "aot_eager", frozenset({"backward", "mul_"}))
    for other in ("transpose_", "no_grad", "add_one_", "Counter()", "to", "rand_like"):
        calls = frozenset({"backward", "add_", other})
        assert registry.match(WRONG_GRAD, lambda: "aot_eager", calls) is None, other
    # Arithmetic, views, reads of .grad and cuts between graphs say nothing of the
    # mechanism (a serving campaign's aliased-input reuse came out new for its
    # two compiled stages).
    calls = frozenset({"backward", "add_", "mul", "t", "[i]", ".grad", "graph_break", "COMPILE"})
    assert registry.match(WRONG_GRAD, lambda: "aot_eager", calls) is one_node


@pytest.mark.parametrize("directory", sorted(shipped_baselines().values()), ids=lambda p: p.name)
def test_every_shipped_form_s_own_program_is_one_its_bug_is_known_to_make(directory: Path) -> None:
    """A bug knows every call its forms' programs make, not only the ``ops`` a form
    declares: unbind-split-copy's form declares ``unbind`` and its program also
    breaks the graph, and judged by its own program it was reported as new."""
    registry = Registry.load([directory])
    unexplained = [
        entry.path.name
        for entry in registry.entries()
        if entry.bug is not None
        and not registry.explains(entry, program_ops(str(recorded_settings(entry.path)["program"])))
    ]
    assert unexplained == []


def test_what_advance_does_is_no_part_of_a_first_call_s_difference() -> None:
    """A training campaign's module-buffer bug came out new for its program's
    ``optimizer`` schedule: an ``advance`` between calls, which the bug's forms do
    not have. Its difference was at the first call, before any advance ran: there
    the schedule is no part of the mechanism; at a later call it may be."""
    bug = KnownBug(
        "grad-grad",
        "aot_eager",
        Path("buffer.toml"),
        frozenset({"Counter()", "backward"}),
        "module-buffer-grad-ahead",
        ("Counter()",),
    )
    registry = Registry([bug])
    calls = frozenset({"Counter()", "backward", "pow", ADVANCED, f"{ADVANCED}.register_hook"})
    first = Difference(Kind.GRAD, 1, Place(Role.GRAD, name="a0"))
    assert registry.match(first, lambda: "aot_eager", calls) is bug
    assert registry.match(WRONG_GRAD, lambda: "aot_eager", calls) is None


def test_a_crash_message_names_its_bug_only_where_the_bug_s_essential_calls_are_made() -> None:
    """Dynamo raises "Guard failed on the same frame it was created" from more than
    one mechanism: an in-place metadata op under ``vmap``, and ``aten.transpose_`` of
    an input whose size changes. A serving hunt's aten program was named the vmap
    bug by the message alone; the message names the bug only with ``vmap`` present."""
    guard = Difference(
        Kind.CRASH,
        2,
        Place(Role.COMPILED, name="call"),
        exception_type="AssertionError",
        message="Guard failed on the same frame it was created",
    )
    vmap_bug = KnownBug(
        guard.signature,
        "eager",
        Path("vmap.toml"),
        frozenset({"vmap", "transpose_"}),
        "dynamo-vmap-inplace-guard",
        ("vmap",),
    )
    registry = Registry([vmap_bug])
    assert registry.match(guard, lambda: "eager", frozenset({"vmap", "transpose_"})) is vmap_bug
    assert registry.match(guard, lambda: "eager", frozenset({"transpose_", "add"})) is None
    # No calls known (a check of a function whose source is not read): the message decides.
    assert registry.match(guard, lambda: "eager", frozenset()) is vmap_bug


def test_a_module_of_the_test_s_own_that_writes_its_buffer_is_read_as_a_counter() -> None:
    """A model author's module incrementing a buffer in forward (``s.n += 1``) met the
    module-buffer bug, whose essential call is the templates' ``Counter()``: the class
    a module is of says nothing; what its forward writes does."""
    module = (
        "class M(torch.nn.Module):\n"
        "    def forward(s, x):\n"
        "        s.n += 1\n"
        "        return x * s.n\n"
        "class Plain(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x * self.w\n"
    )
    program = "def program(model, x):\n    return (model(x),)\n"
    for built, read_as in (
        ("_rebuilt(M, True, {}, {}, {}, {})", "Counter()"),
        ("M()", "Counter()"),
        ("Plain()", "Plain()"),
    ):
        inputs = f"def inputs(k):\n    model = {built}\n    return (model, torch.ones(1))\n"
        assert read_as in program_ops(module + program + inputs), built


def test_autograd_s_check_raised_inside_the_compiled_call_is_the_bug_of_its_backward_form() -> None:
    """A training step that calls backward itself meets the one-node bug's version
    check inside the compiled call; its forms raise it from the caller's backward.
    Where the check is raised is how it is seen: the layer and the calls decide."""
    in_backward = version_error("AddmmBackward0")
    in_call = dataclasses.replace(in_backward, place=Place(Role.COMPILED, name="call"))
    assert in_call.signature != in_backward.signature
    bug = KnownBug(
        in_backward.signature,
        "aot_eager",
        Path("one-node.toml"),
        frozenset({"backward", "step"}),
        "one-node-unused-outputs",
        ("backward",),
    )
    registry = Registry([bug])
    assert registry.match(in_call, lambda: "aot_eager", frozenset({"backward", "pow"})) is bug
    # Another layer first raising it is another bug, wherever it is raised.
    assert registry.match(in_call, lambda: "inductor", frozenset({"backward", "pow"})) is None


REJECTED_STORE = (
    "def program(a0):\n"
    "    v0 = a0 + 1\n"
    "    v1 = a0.clamp_(0)\n"
    "    return (v0, v1)\n"
    "def inputs(k):\n"
    "    return (torch.ones(2),)\n"
)


def test_statements_making_unexplained_calls_are_deleted_and_their_names_not_returned() -> None:
    pruned = without_calls(REJECTED_STORE, frozenset({"inplace"}))
    assert pruned is not None
    assert "clamp_" not in pruned and "v0 = a0 + 1" in pruned
    assert "return (v0,)" in pruned and "def inputs(k)" in pruned
    # Nothing to delete: no smaller program to check.
    assert without_calls(REJECTED_STORE, frozenset({"index-write"})) is None


def test_a_known_bug_met_beside_a_stray_call_is_named_once_the_call_is_deleted() -> None:
    """A time-boxed campaign's shrink may stop before deleting a stray call (a
    ``clamp_`` beside the bug's own calls): the judge checks the program once more
    without it, and names the bug if the failure stays; a failure that needs the
    call is another mechanism, and stays new."""
    bug = KnownBug("value-output", "aot_eager", Path("b.toml"), frozenset({"add"}), "b", ("add",))
    registry = Registry([bug])
    ops = program_ops(REJECTED_STORE)
    assert registry.match(WRONG, lambda: "aot_eager", ops) is None
    assert registry.unexplained(WRONG, ops) == {"inplace"}
    checked: list[str] = []

    def still_fails(case: Case) -> Outcome:
        checked.append(case.source)
        return Outcome(Verdict.FAIL, WRONG)

    def now_passes(case: Case) -> Outcome:
        return Outcome(Verdict.PASS)

    case = Case(REJECTED_STORE, "aot_eager", "cpu", 2)
    named = Judge(registry, lambda case, difference: "aot_eager", recheck=still_fails)
    assert named.known(case, WRONG) is bug
    (smaller,) = checked
    assert "clamp_" not in smaller
    needs_it = Judge(registry, lambda case, difference: "aot_eager", recheck=now_passes)
    assert needs_it.known(case, WRONG) is None
    # Without a way to check again, the judge names what it reads, no more.
    assert Judge(registry, lambda case, difference: "aot_eager").known(case, WRONG) is None
