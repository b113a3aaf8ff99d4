"""Options given to a pool of xdist workers in directories of their own, as the user wrote them."""

from __future__ import annotations

import pytest

from pytest_cgraph.plugin.xdist import joined_option_values

pytest_plugins = "pytester"

# Run by the worker, in its own directory: what it was handed.
WORKER_TEST = """
from pathlib import Path

from pytest_cgraph.plugin.options import OPTIONS_KEY


def test_the_worker_has_the_paths_as_given(request):
    options = request.config.stash[OPTIONS_KEY]
    assert str(options.database) == {database!r}
    assert options.known_dirs == (Path({known!r}),)
"""


def test_path_values_given_as_words_of_their_own_reach_workers_in_other_directories(
    pytester: pytest.Pytester,
) -> None:
    # xdist rewrites an existing path among the command-line words for a worker
    # started elsewhere, and stopped the run with an INTERNALERROR ("not relative
    # to an rsync root") for one outside its rsync roots.
    database, known, worker = (pytester.mkdir(name) for name in ("shared-db", "known", "w0"))
    (worker / "test_worker.py").write_text(
        WORKER_TEST.format(database=str(database), known=str(known))
    )
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--cgraph",
        "-m",
        "not cgraph",  # the campaign's items: not what this is about
        "--dist=load",
        "--tx",
        f"popen//chdir={worker}",
        "--cgraph-database",
        str(database),
        "--cgraph-known",
        str(known),
        timeout=300,
    )
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("given", "joined"),
    [
        (
            ["--cgraph", "--cgraph-database", "/db", "-x", "--cgraph-known", "k", "t.py"],
            ["--cgraph", "--cgraph-database=/db", "-x", "--cgraph-known=k", "t.py"],
        ),
        # a flag takes no value; a value already joined stays as it is
        (
            ["--cgraph-strict", "t.py", "--cgraph-seed=3"],
            ["--cgraph-strict", "t.py", "--cgraph-seed=3"],
        ),
        # after "--", every word is a path or name, whatever it looks like
        (["--", "--cgraph-known", "k"], ["--", "--cgraph-known", "k"]),
        (["--cgraph-iters"], ["--cgraph-iters"]),
    ],
)
def test_option_values_are_joined_to_their_flags(given: list[str], joined: list[str]) -> None:
    assert joined_option_values(given) == tuple(joined)
