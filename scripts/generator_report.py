"""Draw programs and report what the generator produces: cost, coverage, and verdicts.

    python scripts/generator_report.py --count 1000
    python scripts/generator_report.py --count 2000 --per-family
    python scripts/generator_report.py --count 1000 --backend cudagraphs --backend aot_eager \
        --save-failures failures/

Prints draw cost per program, the share of programs that run eagerly without
error (with the top reasons for the rest), a coverage table of families, ops
and features, and, per backend given, how many programs pass, are invalid, or
fail (by signature). Failing programs are written to --save-failures.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

from pytest_cgraph import EquivalenceError, InvalidProgram
from pytest_cgraph.checking.runner import check_source
from pytest_cgraph.strategies import FAMILIES, OPS, Program, draw_programs


def timed_draw(count: int, families: tuple[str, ...], seed: int) -> tuple[list[Program], float]:
    started = time.perf_counter()
    drawn = draw_programs(count, families=families, seed=seed)
    return drawn, time.perf_counter() - started


def coverage(drawn: list[Program]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for program in drawn:
        counts.update(program.all_features())
    return counts


def verdicts(drawn: list[Program], backend: str, save: Path | None) -> None:
    outcome: Counter[str] = Counter()
    invalid: Counter[str] = Counter()
    started = time.perf_counter()
    for index, program in enumerate(drawn):
        source = program.render()
        try:
            check_source(source, backend=backend, device="cpu")
            outcome["pass"] += 1
        except InvalidProgram as exc:
            outcome["invalid"] += 1
            invalid[str(exc).split(": ", 1)[-1][:90]] += 1
        except EquivalenceError as exc:
            signature = exc.difference.signature
            outcome[f"FAIL {signature}"] += 1
            if save is not None:
                save.mkdir(parents=True, exist_ok=True)
                path = save / f"{backend}-{index:04d}-{signature}.py"
                path.write_text(source + "\n# " + str(exc).replace("\n", "\n# ") + "\n")
    seconds = time.perf_counter() - started
    print(
        f"\n## {backend}: {len(drawn)} programs in {seconds:.1f} s "
        f"({len(drawn) / seconds:.1f} programs/s)"
    )
    for key, count in outcome.most_common():
        print(f"  {count:5d}  {key}")
    for reason, count in invalid.most_common(8):
        print(f"        invalid x{count}: {reason}")


def per_family(count: int, seed: int) -> None:
    """The coverage table of campaign items: each family drawn on its own."""
    share = max(count // len(FAMILIES), 1)
    tables: dict[str, Counter[str]] = {}
    total = 0.0
    for family in FAMILIES:
        drawn, seconds = timed_draw(share, (family,), seed)
        total += seconds
        tables[family] = coverage(drawn)
    print(
        f"drew {share} programs per family, {share * len(FAMILIES)} in all,"
        f" {1000 * total / (share * len(FAMILIES)):.2f} ms per program (generation only)"
    )
    keys = [op.name for op in OPS] + sorted(
        {k for t in tables.values() for k in t if k not in {op.name for op in OPS}}
        - {f"family:{f}" for f in FAMILIES}
    )
    print(f"\n{'':32}" + "".join(f"{family[:9]:>10}" for family in FAMILIES))
    for key in keys:
        print(f"{key[:32]:32}" + "".join(f"{tables[f].get(key, 0):>10}" for f in FAMILIES))
    never = [op.name for op in OPS if not any(t.get(op.name) for t in tables.values())]
    print(f"\nops never drawn: {never or 'none'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--families", default="mixed")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backend", action="append", default=[])
    parser.add_argument("--save-failures", type=Path)
    parser.add_argument(
        "--per-family",
        action="store_true",
        help="draw --count programs split over all families, as campaign items do, and print"
        " programs using each op and feature per family",
    )
    args = parser.parse_args()
    if args.per_family:
        per_family(args.count, args.seed)
        return
    families = tuple(args.families.split(","))
    drawn, seconds = timed_draw(args.count, families, args.seed)
    print(
        f"drew {len(drawn)} programs in {seconds:.2f} s: "
        f"{1000 * seconds / max(len(drawn), 1):.2f} ms per program (generation only)"
    )
    statements = [len(p.statements) for p in drawn]
    print(
        f"statements per program: mean {sum(statements) / len(statements):.2f}, "
        f"max {max(statements)}"
    )
    counts = coverage(drawn)
    print("\n## families")
    for family in FAMILIES:
        print(f"  {counts.get('family:' + family, 0):5d}  {family}")
    print("\n## ops (programs using each)")
    missing = [op.name for op in OPS if not counts.get(op.name)]
    for op in OPS:
        print(f"  {counts.get(op.name, 0):5d}  {op.name}")
    print("\n## other features")
    op_names = {op.name for op in OPS}
    for key, count in sorted(counts.items()):
        if key not in op_names and not key.startswith("family:"):
            print(f"  {count:5d}  {key}")
    print(f"\nops never drawn: {missing or 'none'}")
    for backend in args.backend:
        verdicts(drawn, backend, args.save_failures)


if __name__ == "__main__":
    main()
