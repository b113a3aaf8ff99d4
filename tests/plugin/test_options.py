"""The plugin's options, header and usage errors, seen through pytest itself."""

from __future__ import annotations

import sys

import pytest

# torch is a C extension that cannot be imported twice in one process, and
# in-process pytester runs drop modules first imported inside them.
import torch

pytest_plugins = "pytester"

# The fuzz campaign items carry the "cgraph" marker; these tests are about the rest.
NO_CAMPAIGN = ("-m", "not cgraph")

OPTIONS = (
    "--cgraph",
    "--cgraph-backend",
    "--cgraph-device",
    "--cgraph-iters",
    "--cgraph-examples",
    "--cgraph-seed",
    "--cgraph-families",
    "--cgraph-repro-dir",
    "--cgraph-report",
    "--cgraph-report-html",
    "--cgraph-strict",
    "--cgraph-timeout",
    "--cgraph-isolate",
    "--cgraph-duration",
    "--cgraph-shrink-seconds",
    "--cgraph-known",
    "--cgraph-no-baseline",
    "--cgraph-check-known",
    "--cgraph-database",
)


@pytest.fixture(autouse=True)
def _compile_stack_loaded() -> None:
    """Load torch's compile stack before the in-process runs below.

    An in-process pytester run drops the modules it imported when it ends.
    ``--cgraph`` resolves the backend, which imports every registered
    backend module and Inductor's lowering; those register backends and an
    operator library that torch refuses to register twice, so a later test
    in this process importing them again would fail. Imported here, they
    outlive every inner run.
    """
    import torch._dynamo.repro.after_dynamo
    import torch._inductor.lowering  # noqa: F401
    from torch._dynamo.backends import registry

    registry._lazy_import()


TRIVIAL = """
def test_nothing():
    assert True
"""


def test_help_lists_every_option_with_its_help(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(
        [
            "CUDA-graph equivalence (pytest-cgraph):",
            "*--cgraph *check cgraph_equivalent tests and the cgraph fixture*",
            "*--cgraph-backend=CGRAPH_BACKEND",
            "*torch.compile backend name, reduce-overhead*",
            "*--cgraph-device=CGRAPH_DEVICE",
            "*auto, cpu, cuda or cuda:N (default: auto)",
            "*--cgraph-iters=CGRAPH_ITERS",
            "*iterations per program*",
            "*--cgraph-examples=CGRAPH_EXAMPLES",
            "*programs drawn per fuzz campaign item, shrink steps not*",
            "*--cgraph-seed=CGRAPH_SEED",
            "*--cgraph-families=CGRAPH_FAMILIES",
            "*--cgraph-repro-dir=CGRAPH_REPRO_DIR",
            "*--cgraph-report=CGRAPH_REPORT",
        ]
    )
    for option in OPTIONS:
        ini_key = option.lstrip("-").replace("-", "_")
        result.stdout.fnmatch_lines([f"  {ini_key} (*"])


def test_header_says_what_runs(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TRIVIAL)
    result = pytester.runpytest(
        "--cgraph", "--cgraph-backend", "aot_eager", "--cgraph-device=cpu", *NO_CAMPAIGN
    )
    result.stdout.fnmatch_lines(
        [
            "cgraph: backend=aot_eager device=cpu iters=5 examples=100 capture=skipped on cpu "
            "(torch's skip reasons are counted) seed=* (rerun with --cgraph-seed=*)"
        ]
    )
    result.assert_outcomes(passed=1)


def test_check_known_passes_a_reproducing_entry_and_names_a_fixed_one(
    pytester: pytest.Pytester,
) -> None:
    from pytest_cgraph.registry.entries import BASELINE_ROOT

    registry = pytester.mkdir("known")
    entry = (BASELINE_ROOT / "torch-2.13" / "grad-grad-aot_eager.toml").read_text()
    (registry / "grad-grad-aot_eager.toml").write_text(entry)
    hook = "    v0.register_hook(lambda grad: grad * 2)\n"
    assert hook in entry
    (registry / "grad-grad-aot_eager-2.toml").write_text(entry.replace(hook, ""))
    result = pytester.runpytest(
        "--cgraph-check-known", "--cgraph-no-baseline", f"--cgraph-known={registry}"
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["FIXED: */known/grad-grad-aot_eager-2.toml no longer reproduces (NOT REPRODUCED *"]
    )


def test_no_header_without_cgraph(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TRIVIAL)
    result = pytester.runpytest()
    assert "cgraph:" not in result.stdout.str()
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["--cgraph-backend", "nope"],
            "ERROR: pytest-cgraph: unknown backend 'nope'; valid: a backend name (*; "
            "all: python -m pytest_cgraph.backends) or package.module:attr",
        ),
        (
            # registered by a plugin: torch is asked, and knows the plugin's names
            ["-p", "cgraph_doubles.faults", "--cgraph-backend", "faulty_lost_input_mutatoin"],
            "ERROR: pytest-cgraph: unknown backend 'faulty_lost_input_mutatoin'; valid: a "
            "backend name (closest: 'faulty_lost_input_mutation'*; all: *) or package.module:attr",
        ),
        (
            ["--cgraph-backend", "no_such_module:fn"],
            "ERROR: pytest-cgraph: backend 'no_such_module:fn': cannot import 'no_such_module'*",
        ),
        (
            ["--cgraph-iters", "many"],
            "ERROR: --cgraph-iters: iterations must be a positive integer, got 'many' "
            "(from command line)",
        ),
        (["--cgraph-iters", "0"], "ERROR: --cgraph-iters: *positive integer, got '0' (from *line)"),
        (["--cgraph-iters=-3"], "ERROR: --cgraph-iters: *positive integer, got '-3' (from *line)"),
        (
            # xdist's channel carries no int below -2**31: refused at once, not under -n
            ["--cgraph-seed=-3000000000"],
            "ERROR: --cgraph-seed: the seed must be a whole number, 0 or more, got "
            "'-3000000000' (from command line)",
        ),
        (
            ["--cgraph-seed", "x1"],
            "ERROR: --cgraph-seed: the seed must be a whole number, 0 or more, got 'x1' "
            "(from command line)",
        ),
        (
            ["--cgraph-timeout", "soon"],
            "ERROR: --cgraph-timeout: the time limit must be a non-negative number, got 'soon' "
            "(from command line)",
        ),
        (
            ["--cgraph-timeout=-1"],
            "ERROR: --cgraph-timeout: *non-negative number, got '-1' (from command line)",
        ),
        (
            ["--cgraph-families", "views,loops"],
            "ERROR: --cgraph-families: unknown 'loops'; choose from * or all (from command line)",
        ),
        (
            ["--cgraph-repro-dir", "notes.txt/repros"],
            "ERROR: --cgraph-repro-dir: 'notes.txt/repros' cannot be written (Not a directory); "
            "give a writable directory",
        ),
        (
            ["--cgraph-duration", "5x"],
            "ERROR: --cgraph-duration: the duration must be like 90s, 30m or 8h, got '5x' "
            "(from command line)",
        ),
        (
            ["--cgraph-known", "no/such/registry"],
            "ERROR: --cgraph-known: 'no/such/registry' is not a directory of repro files "
            "(from command line)",
        ),
        (
            ["--cgraph-repro-dir", "/proc/no/such/dir"],
            "ERROR: --cgraph-repro-dir: '/proc/no/such/dir' cannot be written (*); "
            "give a writable directory",
        ),
        (
            ["--cgraph-report", "notes.txt/report.json"],
            "ERROR: --cgraph-report: 'notes.txt/report.json' cannot be written (*); "
            "give a writable path",
        ),
        (
            ["--cgraph-device", "tpu"],
            "ERROR: --cgraph-device: unknown device 'tpu'; use auto, cpu, cuda or cuda:N "
            "(from command line)",
        ),
    ],
)
def test_bad_values_are_one_line_usage_errors(
    pytester: pytest.Pytester, args: list[str], line: str
) -> None:
    pytester.makepyfile(TRIVIAL)
    pytester.path.joinpath("notes.txt").write_text("a file, not a directory\n")
    result = pytester.runpytest("--cgraph", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([line])
    assert "Traceback" not in result.stderr.str()


def test_workers_without_xdist_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TRIVIAL)
    result = pytester.runpytest_subprocess("-p", "no:xdist", "--cgraph", "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*error: unrecognized arguments: -n*"])
    assert "Traceback" not in result.stderr.str()


def test_cuda_without_cuda_is_a_usage_error(pytester: pytest.Pytester) -> None:
    if torch.cuda.is_available():
        pytest.skip("checks the message given when no CUDA device exists")
    pytester.makepyfile(TRIVIAL)
    result = pytester.runpytest("--cgraph", "--cgraph-device", "cuda")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: pytest-cgraph: device 'cuda' asked for, but this torch sees no CUDA device*"]
    )


# pytest.main in a fresh process, then the heavy modules it imported.
MODULES_AFTER_MAIN = """
import sys
import pytest
code = pytest.main(["-p", "no:cacheprovider", "--cgraph", *sys.argv[1:]])
print("exit", int(code), sorted(m for m in ("torch", "torch._dynamo") if m in sys.modules))
"""


@pytest.mark.parametrize(
    ("args", "line", "imported"),
    [
        (
            ["--cgraph-backend", "nosuchbackend"],
            "ERROR: pytest-cgraph: unknown backend 'nosuchbackend'; valid: a backend name "
            "(none close; all: python -m pytest_cgraph.backends) or package.module:attr",
            [],
        ),
        (
            ["--cgraph-backend", "cudagraph"],
            "ERROR: pytest-cgraph: unknown backend 'cudagraph'; valid: a backend name "
            "(closest: 'cudagraphs'; all: python -m pytest_cgraph.backends) or package.module:attr",
            [],
        ),
        (
            # every name of a list is checked, the second too
            ["--cgraph-backend", "aot_eager,cudagraph"],
            "ERROR: pytest-cgraph: unknown backend 'cudagraph'; valid: a backend name "
            "(closest: 'cudagraphs'; all: python -m pytest_cgraph.backends) or package.module:attr",
            [],
        ),
        (
            ["--cgraph-backend", "aot_eager,,inductor"],
            "ERROR: --cgraph-backend: empty name in 'aot_eager,,inductor'; give a torch.compile "
            "backend, or several separated by commas (cudagraphs,inductor) (from command line)",
            [],
        ),
        (
            ["--cgraph-database", "notes.txt"],
            "ERROR: --cgraph-database: '*notes.txt' is a file; give a directory",
            [],
        ),
        (
            ["--cgraph-backend", "reduce-overhead", "--cgraph-database", "redis://127.0.0.1:1/0"],
            "ERROR: --cgraph-database: *127.0.0.1:1*",
            [],
        ),
        (
            ["--cgraph-backend", "aot_eager", "--cgraph-report", "notes.txt/r.json"],
            "ERROR: --cgraph-report: 'notes.txt/r.json' cannot be written (*); give a writable *",
            [],
        ),
        (
            ["--cgraph-device", "cuda"],
            "ERROR: pytest-cgraph: device 'cuda' asked for, but this torch sees no CUDA device*",
            ["torch"],
        ),
    ],
)
def test_a_bad_value_is_told_before_torch_is_imported_where_torch_is_not_needed(
    pytester: pytest.Pytester, args: list[str], line: str, imported: list[str]
) -> None:
    # Only a CUDA device needs torch to judge, and then not torch._dynamo, which
    # cost seconds before the line.
    if torch.cuda.is_available() and "cuda" in args:
        pytest.skip("checks the message given when no CUDA device exists")
    pytester.path.joinpath("notes.txt").write_text("a file, not a directory\n")
    result = pytester.run(sys.executable, "-c", MODULES_AFTER_MAIN, *args, timeout=120)
    assert result.outlines[-1] == f"exit 4 {imported}"
    assert [text for text in result.errlines if text.strip()] == [result.errlines[0]]
    result.stderr.fnmatch_lines([line])


def test_ini_keys_are_read_and_errors_say_where(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ncgraph_iters = -2\n")
    pytester.makepyfile(TRIVIAL)
    result = pytester.runpytest("--cgraph")
    result.stderr.fnmatch_lines(
        ["ERROR: --cgraph-iters: iterations must be a positive integer, got '-2' (from ini file)"]
    )


def test_command_line_wins_over_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ncgraph_iters = 7\ncgraph_backend = aot_eager\n")
    pytester.makepyfile(TRIVIAL)
    result = pytester.runpytest(
        "--cgraph", "--cgraph-iters", "4", "--cgraph-device", "cpu", *NO_CAMPAIGN
    )
    result.stdout.fnmatch_lines(["cgraph: backend=aot_eager device=cpu iters=4 *"])
