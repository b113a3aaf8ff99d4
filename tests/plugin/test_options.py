"""The plugin's options, header and usage errors, seen through pytest itself."""

from __future__ import annotations

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
    "--cgraph-strict",
    "--cgraph-timeout",
    "--cgraph-isolate",
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
            "*--cgraph *run the fuzz campaign and check cgraph_equivalent tests*",
            "*--cgraph-backend=CGRAPH_BACKEND",
            "*torch.compile backend name, reduce-overhead*",
            "*--cgraph-device=CGRAPH_DEVICE",
            "*auto, cpu, cuda or cuda:N (default: auto)",
            "*--cgraph-iters=CGRAPH_ITERS",
            "*iterations per program*",
            "*--cgraph-examples=CGRAPH_EXAMPLES",
            "*programs per fuzz campaign item (default: 100)",
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
            "cgraph: backend=aot_eager device=cpu iters=5 capture=skipped on cpu (torch's skip "
            "reasons are counted) seed=* (rerun with --cgraph-seed=*)"
        ]
    )
    result.assert_outcomes(passed=1)


def test_no_header_without_cgraph(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TRIVIAL)
    result = pytester.runpytest()
    assert "cgraph:" not in result.stdout.str()
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--cgraph-backend", "nope"], "ERROR: pytest-cgraph: unknown backend 'nope'; valid: *"),
        (
            ["--cgraph-backend", "no_such_module:fn"],
            "ERROR: pytest-cgraph: backend 'no_such_module:fn': cannot import 'no_such_module'*",
        ),
        (
            ["--cgraph-iters", "many"],
            "ERROR: --cgraph-iters: 'many' from command line is not a whole number*",
        ),
        (["--cgraph-iters", "0"], "ERROR: --cgraph-iters: 0 from command line must be 1 or more"),
        (["--cgraph-iters=-3"], "ERROR: --cgraph-iters: -3 from command line must be 1 or more"),
        (
            ["--cgraph-timeout", "soon"],
            "ERROR: --cgraph-timeout: 'soon' from command line is not a number of seconds*",
        ),
        (
            ["--cgraph-timeout=-1"],
            "ERROR: --cgraph-timeout: -1 from command line must be 0 or a positive number",
        ),
        (
            ["--cgraph-families", "views,loops"],
            "ERROR: --cgraph-families: unknown 'loops' from command line; choose from *",
        ),
        (
            ["--cgraph-repro-dir", "notes.txt/repros"],
            "ERROR: --cgraph-repro-dir: 'notes.txt/repros' cannot be written (*notes.txt is not a "
            "directory); give a writable directory",
        ),
        (
            ["--cgraph-device", "tpu"],
            "ERROR: --cgraph-device: 'tpu' from command line is not auto, cpu, cuda or cuda:N",
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


def test_ini_keys_are_read_and_errors_say_where(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ncgraph_iters = -2\n")
    pytester.makepyfile(TRIVIAL)
    result = pytester.runpytest("--cgraph")
    result.stderr.fnmatch_lines(["ERROR: --cgraph-iters: -2 from ini file must be 1 or more"])


def test_command_line_wins_over_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ncgraph_iters = 7\ncgraph_backend = aot_eager\n")
    pytester.makepyfile(TRIVIAL)
    result = pytester.runpytest(
        "--cgraph", "--cgraph-iters", "4", "--cgraph-device", "cpu", *NO_CAMPAIGN
    )
    result.stdout.fnmatch_lines(["cgraph: backend=aot_eager device=cpu iters=4 *"])
