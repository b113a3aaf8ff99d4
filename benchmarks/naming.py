"""How far a finding's name can be trusted: leave-one-bug-out and meaning-preserving variants.

    python benchmarks/naming.py                      # the running torch's baseline
    python benchmarks/naming.py --forms-per-bug 1 --json naming.json

A known bug is only worth its name if the judge gives that name to the bug
met again, however it is written, and never to another bug. Two measures,
each replaying the baseline's own forms through the real judge
(:class:`pytest_cgraph.registry.judge.Judge`, with the ladder asked for the
first diverging layer where a match needs it):

- **Leave one bug out.** For each bug, the registry less that bug's forms
  judges each of its forms: every one must come out *new*. One named as
  another bug is a wrong name: in a campaign it would hide this bug.
- **Variants.** Each form is rewritten without changing what it computes,
  replayed, and judged by the whole registry: it must be named as its own
  bug. The rewrites: ``renamed`` (every local name of the program renamed),
  ``extra-op`` (an unrelated computation added first), ``spelled`` (a
  tensor method call written as the torch function and back, a binary
  operator as its function: ``a.add(b)``, ``torch.add(a, b)``, ``a + b``).
  A variant that no longer fails, or that eager rejects, is counted apart:
  it says nothing of the name.

Prints the counts (right, reported new, wrong name) per measure, and each
wrong name and known-reported-as-new with the form it came from. It replays
every form several times, and climbs the ladder for broad signatures: tens
of minutes for a whole baseline; ``--forms-per-bug`` bounds it.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from pytest_cgraph.checking.runner import check_source
from pytest_cgraph.failures import Case
from pytest_cgraph.oracle.difference import Difference
from pytest_cgraph.oracle.engine import intra_op_threads
from pytest_cgraph.oracle.errors import EquivalenceError, InvalidProgram
from pytest_cgraph.recording.repro import first_diverging_layer, masked_rungs, recorded_case
from pytest_cgraph.registry.entries import KnownBug, Registry, baseline_dir
from pytest_cgraph.registry.judge import Judge
from pytest_cgraph.registry.requirements import unmet

#: A tensor method that is also a torch function of the same name and meaning.
FUNCTIONAL = frozenset(
    {
        "add", "sub", "mul", "div", "sin", "cos", "exp", "abs", "neg", "sqrt", "tanh",
        "sigmoid", "relu", "clone", "sum", "mean", "matmul", "flatten", "reshape", "t",
        "transpose", "squeeze", "unsqueeze", "select", "narrow", "clamp", "where",
    }
)  # fmt: skip
#: Binary operators and the torch function each calls.
OPERATORS: dict[type[ast.operator], str] = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.Div: "div",
    ast.MatMult: "matmul",
}


# ------------------------------------------------------------------ rewrites


def _program_functions(tree: ast.Module) -> list[ast.FunctionDef]:
    """``program`` and its stages: what the program computes, not how inputs are made."""
    names = {"program"}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "COMPILE" for t in node.targets
        ):
            names |= {e.value for e in ast.walk(node.value) if isinstance(e, ast.Constant)}
    return [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]


class _Renamer(ast.NodeTransformer):
    """Every parameter and local name of one function, renamed consistently."""

    def __init__(self, function: ast.FunctionDef) -> None:
        local = {a.arg for a in function.args.args}
        for node in ast.walk(function):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                local.add(node.id)
        self.names = {name: f"renamed_{i}" for i, name in enumerate(sorted(local))}

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.arg = self.names.get(node.arg, node.arg)
        return node

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self.names.get(node.id, node.id)
        return node


def renamed(source: str) -> str | None:
    tree = ast.parse(source)
    functions = _program_functions(tree)
    for function in functions:
        _Renamer(function).visit(function)
    return ast.unparse(tree) if functions else None


def extra_op(source: str) -> str | None:
    tree = ast.parse(source)
    functions = _program_functions(tree)
    for function in functions[:1]:
        extra = ast.parse("unrelated = torch.arange(3.0).cos().sum()").body
        function.body[0:0] = extra
    return ast.unparse(tree) if functions else None


class _Respeller(ast.NodeTransformer):
    """``a.f(b)`` as ``torch.f(a, b)`` and back; ``a + b`` as ``torch.add(a, b)``."""

    changed = 0

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr not in FUNCTIONAL:
            return node
        if isinstance(func.value, ast.Name) and func.value.id == "torch":
            if node.args and not isinstance(node.args[0], ast.Starred):
                self.changed += 1
                method = ast.Attribute(node.args[0], func.attr, ast.Load())
                return ast.Call(method, node.args[1:], node.keywords)
            return node
        if isinstance(func.value, (ast.Name, ast.Subscript, ast.Call, ast.Attribute)):
            self.changed += 1
            torch_function = ast.Attribute(ast.Name("torch", ast.Load()), func.attr, ast.Load())
            return ast.Call(torch_function, [func.value, *node.args], node.keywords)
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        name = OPERATORS.get(type(node.op))
        if name is None or not isinstance(node.left, (ast.Name, ast.Subscript, ast.Call)):
            return node  # a tensor on the left, as far as a rewrite can tell
        self.changed += 1
        function = ast.Attribute(ast.Name("torch", ast.Load()), name, ast.Load())
        return ast.Call(function, [node.left, node.right], [])


def spelled(source: str) -> str | None:
    tree = ast.parse(source)
    speller = _Respeller()
    for function in _program_functions(tree):
        speller.visit(function)
    return ast.unparse(tree) if speller.changed else None


REWRITES: dict[str, Callable[[str], str | None]] = {
    "renamed": renamed,
    "extra-op": extra_op,
    "spelled": spelled,
}


# ------------------------------------------------------------------- judging


@dataclass
class Tally:
    """One measure's counts, and the forms behind each that is not right."""

    counts: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)

    def add(self, outcome: str, note: str | None = None) -> None:
        self.counts[outcome] += 1
        if note is not None:
            self.notes.append(note)


def replay(case: Case, threads: int | None) -> Difference | str:
    """The difference ``case`` shows now, or why there is none to judge."""
    try:
        with warnings.catch_warnings(), intra_op_threads(threads):
            warnings.simplefilter("ignore")
            check_source(case.source, backend=case.backend, device=case.device, iters=case.iters)
    except EquivalenceError as error:
        return error.difference
    except InvalidProgram:
        return "eager rejects it"
    except Exception as error:
        return f"the harness failed: {type(error).__name__}"
    return "no difference"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--baseline", type=Path, help="a baseline directory (default: this torch's)"
    )
    parser.add_argument("--forms-per-bug", type=int, default=0, help="0: every form")
    parser.add_argument("--rewrites", default=",".join(REWRITES), help="which variants")
    parser.add_argument("--bugs", default="", help="only these bug ids (comma-separated)")
    parser.add_argument("--json", type=Path, help="write the counts and notes here")
    args = parser.parse_args(argv)
    directory = args.baseline or baseline_dir(torch.__version__)
    if directory is None:
        print(f"no baseline for torch {torch.__version__}: give --baseline", file=sys.stderr)
        return 2
    rewrites = [name for name in args.rewrites.split(",") if name]
    unknown = set(rewrites) - set(REWRITES)
    if unknown:
        print(f"unknown rewrite(s) {sorted(unknown)}; known: {sorted(REWRITES)}", file=sys.stderr)
        return 2
    registry = Registry.load([directory])
    layers: dict[tuple[str, str], str | None] = {}

    def layer_of(case: Case, difference: Difference) -> str | None:
        key = (case.source, difference.signature)
        if key not in layers:
            layers[key] = first_diverging_layer(case, difference)
        return layers[key]

    def judge_of(entries: list[KnownBug]) -> Judge:
        return Judge(Registry(entries), layer_of=layer_of, masked_at=masked_rungs)

    whole = judge_of(registry.entries())
    forms: dict[str, list[KnownBug]] = {}
    for entry in registry.entries():
        if entry.bug is not None and unmet(entry.requires) is None:
            forms.setdefault(entry.bug, []).append(entry)
    own, left_out = Tally(), Tally()
    variants = {name: Tally() for name in rewrites}
    started = time.monotonic()
    chosen = {name for name in args.bugs.split(",") if name}
    for bug, entries in forms.items():
        if chosen and bug not in chosen:
            continue
        if args.forms_per_bug:
            entries = entries[: args.forms_per_bug]
        without = judge_of([e for e in registry.entries() if e.bug != bug])
        for entry in entries:
            recorded = recorded_case(entry.path)
            if recorded.signature.startswith(("crash-process", "timeout")):
                continue  # it would take this process with it
            case = Case(recorded.source, recorded.backend, recorded.device, 5)
            difference = replay(case, recorded.threads)
            if isinstance(difference, str):
                own.add("not failing here", f"{entry.path.name}: {difference}")
                continue
            named = whole.known(case, difference)
            where = f"{bug} ({entry.path.name})"
            if named is not None and named.bug == bug:
                own.add("right")
            else:
                own.add("new" if named is None else "wrong name", f"{where}: {named and named.bug}")
            # Left out: the bug's own form must be new, never another bug.
            other = without.known(case, difference)
            if other is None:
                left_out.add("new (right)")
            else:
                left_out.add("wrong name", f"{where} named as {other.bug}")
            for name in rewrites:
                source = REWRITES[name](case.source)
                if source is None or source == case.source:
                    variants[name].add("no rewrite applies")
                    continue
                variant = Case(source, case.backend, case.device, case.iters)
                shown = replay(variant, recorded.threads)
                if isinstance(shown, str):
                    variants[name].add(shown)
                    continue
                got = whole.known(variant, shown)
                if got is not None and got.bug == bug:
                    variants[name].add("right")
                elif got is None:
                    variants[name].add("new", f"{where}: {shown.signature}")
                else:
                    variants[name].add("wrong name", f"{where} named as {got.bug}")
        print(f"{bug}: done ({time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)
    report = {
        "torch": torch.__version__,
        "baseline": directory.name,
        "forms per bug": args.forms_per_bug or "all",
        "own forms": own,
        "leave one bug out": left_out,
        **{f"variant: {name}": tally for name, tally in variants.items()},
    }
    print(f"torch {torch.__version__}, baseline {directory.name}, {len(forms)} bugs")
    for title, tally in report.items():
        if not isinstance(tally, Tally):
            continue
        print(f"{title}: " + ", ".join(f"{k} {v}" for k, v in sorted(tally.counts.items())))
        for note in tally.notes:
            print(f"    {note}")
    judged = [
        t for name, t in report.items() if name.startswith("variant") and isinstance(t, Tally)
    ]
    right = sum(t.counts["right"] for t in judged)
    named = sum(t.counts["right"] + t.counts["new"] + t.counts["wrong name"] for t in judged)
    wrong = sum(t.counts["wrong name"] for t in judged) + left_out.counts["wrong name"]
    if named:
        print(f"variants named right: {right} of {named} ({100 * right / named:.1f} %)")
    print(f"wrong names (leave-one-out and variants): {wrong}")
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {
                    k: {"counts": dict(v.counts), "notes": v.notes} if isinstance(v, Tally) else v
                    for k, v in report.items()
                },
                indent=2,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
