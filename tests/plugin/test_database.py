"""``--cgraph-database``: a failure one run saves is the first program another run checks.

Each round trip is two campaigns in fresh processes and different working
directories (so different repro dirs: the failure is new to both): run 1
hunts until a fault-injection backend fails and saves the shrunk program;
run 2, with another seed and a budget of one program, fails at that first
program. A premise test shows that program alone finds nothing without the
database. Redis tests use a real ``redis-server`` of their own and skip
when there is none.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

# Loaded here so the in-process runs below do not drop (and then reload) them.
import cgraph_doubles.inprocess  # noqa: F401
from pytest_cgraph.hunting.database import REDIS_KEY_PREFIX
from pytest_cgraph.plugin.options import OPTIONS_KEY
from pytest_cgraph.plugin.xdist import XdistHooks

pytest_plugins = "pytester"

TESTS = Path(__file__).resolve().parents[1]

#: Replays restart the random stream: random programs differ from eager at iteration 3.
FAULT = (
    "-p",
    "cgraph_doubles.faults",
    "--cgraph-backend=faulty_frozen_rng",
    "--cgraph-families=rng",
    "--cgraph-shrink-seconds=1",
)
#: Run 1: hunts until it finds the fault (at its second program).
HUNTS = ("--cgraph-seed=1", "--cgraph-examples=3")
#: Run 2: another seed, one program.
ONE_PROGRAM = ("--cgraph-seed=5", "--cgraph-examples=1")


def campaign(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, where: str, *args: str
) -> tuple[pytest.RunResult, dict]:
    """A campaign in a fresh process, run from ``pytester.path / where``."""
    directory = pytester.path / where
    directory.mkdir(exist_ok=True)
    # Kept in front of what is there: the plugin the outer run imports is the one to test.
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(TESTS), os.getenv("PYTHONPATH")]))
    )
    monkeypatch.chdir(directory)
    result = pytester.runpytest_subprocess(
        "--cgraph", "-p", "no:cacheprovider", "--cgraph-report=r.json", *FAULT, *args
    )
    return result, json.loads((directory / "r.json").read_text())


def replayed_first(result: pytest.RunResult, report: dict, found: set[str]) -> None:
    """Run 2's one program failed, as one of run 1's failures: it was a replay."""
    result.assert_outcomes(failed=1)
    (failure,) = report["failures"]
    assert failure["signature"] in found
    assert (failure["examples_to_failure"], report["drawn"]) == (1, 1)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a ``redis-server`` of this test's own, empty, stopped afterwards."""
    redis = pytest.importorskip("redis", reason="needs the redis package: pip install redis")
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server is not on PATH (apt-get install redis-server)")
    directory = tmp_path_factory.mktemp("redis")
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    command = [server, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
    command += ["--appendonly", "no", "--dir", str(directory)]
    with (directory / "server.log").open("w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=directory)
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=1)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if process.poll() is not None or time.monotonic() > deadline:
                    log_text = (directory / "server.log").read_text().strip()
                    pytest.skip(f"redis-server did not start on port {port}: {log_text[-300:]}")
                time.sleep(0.05)
        client.close()
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def redis_contents(url: str) -> dict[bytes, set[bytes]]:
    """Every key of the server and its members (the example database keeps sets)."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        return {key: client.smembers(key) for key in client.scan_iter()}
    finally:
        client.close()


def test_the_second_runs_one_program_alone_finds_nothing(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The premise of the round trips below: what run 2 finds, it finds by replaying.
    result, report = campaign(pytester, monkeypatch, "alone", *ONE_PROGRAM)
    result.assert_outcomes(passed=1)
    assert (report["failures"], report["drawn"]) == ([], 1)


def test_a_failure_saved_in_a_directory_is_replayed_first_by_another_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = pytester.path / "shared-db"
    first, found = campaign(
        pytester, monkeypatch, "first", *HUNTS, "--cgraph-database=../shared-db"
    )
    first.assert_outcomes(failed=1)
    assert any(shared.iterdir())  # relative to where run 1 was started
    second, report = campaign(
        pytester, monkeypatch, "second", *ONE_PROGRAM, f"--cgraph-database={shared}"
    )
    replayed_first(second, report, {failure["signature"] for failure in found["failures"]})


# Deep: the read-only test below saves into Redis and replays from it the same
# way, through ro:, in the default suite.
@pytest.mark.deep
def test_a_failure_saved_in_redis_is_replayed_first_by_another_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, redis_url: str
) -> None:
    first, found = campaign(
        pytester, monkeypatch, "first", *HUNTS, f"--cgraph-database={redis_url}"
    )
    first.assert_outcomes(failed=1)
    keys = set(redis_contents(redis_url))
    assert keys and all(key.startswith(REDIS_KEY_PREFIX) for key in keys)
    second, report = campaign(
        pytester, monkeypatch, "second", *ONE_PROGRAM, f"--cgraph-database={redis_url}"
    )
    replayed_first(second, report, {failure["signature"] for failure in found["failures"]})


def test_read_only_redis_is_replayed_first_and_never_written(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, redis_url: str
) -> None:
    first, found = campaign(
        pytester, monkeypatch, "first", *HUNTS, f"--cgraph-database={redis_url}"
    )
    first.assert_outcomes(failed=1)
    before = redis_contents(redis_url)
    assert before
    # The README's combination: writes go to the local directory, Redis is only read.
    second, report = campaign(
        pytester, monkeypatch, "second", *ONE_PROGRAM, f"--cgraph-database=.db,ro:{redis_url}"
    )
    replayed_first(second, report, {failure["signature"] for failure in found["failures"]})
    assert redis_contents(redis_url) == before
    assert any((pytester.path / "second" / ".db").iterdir())


def test_a_redis_server_that_goes_away_costs_the_replays_not_the_items(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, redis_url: str
) -> None:
    # The server answers the session's check, then shuts down as the item starts.
    monkeypatch.setenv("CGRAPH_TEST_REDIS", redis_url)
    (pytester.path / "gone").mkdir()
    (pytester.path / "gone" / "conftest.py").write_text(
        "import os\nimport redis\n\n\ndef pytest_runtest_setup(item):\n"
        "    redis.Redis.from_url(os.environ['CGRAPH_TEST_REDIS']).shutdown(nosave=True)\n"
    )
    result, report = campaign(
        pytester, monkeypatch, "gone", *HUNTS, f"--cgraph-database={redis_url}"
    )
    result.assert_outcomes(failed=1)  # the fault, found and reported as without a database
    (failure,) = report["failures"]
    assert failure["verified"] and Path(failure["repro"]).is_file(), failure
    address = redis_url.removeprefix("redis://").split("/")[0]
    result.stdout.fnmatch_lines(
        [f"*the example database at {address} stopped answering (*); this run goes on without it*"]
    )


def test_a_lost_database_warns_once_and_is_then_left_alone(redis_url: str) -> None:
    import redis

    from pytest_cgraph.hunting.database import build_database, parse_database
    from pytest_cgraph.hunting.database_outage import DatabaseLost

    database = build_database(parse_database(redis_url, Path.cwd()))
    database.save(b"key", b"value")
    assert list(database.fetch(b"key")) == [b"value"]
    redis.Redis.from_url(redis_url).shutdown(nosave=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("error")  # as under -W error: still a warning, never raised
        database.save(b"key", b"other")
        assert list(database.fetch(b"key")) == []
        database.delete(b"key", b"value")
        database.move(b"key", b"elsewhere", b"value")
    assert [warning.category for warning in caught] == [DatabaseLost]
    assert "stopped answering" in str(caught[0].message)


TRIVIAL = """
def test_nothing():
    assert True
"""


def usage_error(pytester: pytest.Pytester, *args: str) -> str:
    """The one line of an in-process run stopped at start (the checks raise, nothing runs)."""
    pytester.makepyfile(TRIVIAL)
    pytester.path.joinpath("notes.txt").write_text("a file, not a directory\n")
    result = pytester.runpytest("--cgraph", "-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "Traceback" not in result.stderr.str()
    (line,) = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    return line


FORMS = "a directory, redis://host:port/db or rediss://host:port/db, each optionally prefixed ro:"


@pytest.mark.parametrize(
    ("value", "line"),
    [
        (
            "http://cache:80/db",
            "ERROR: --cgraph-database: unknown scheme 'http://' in 'http://cache:80/db'; "
            f"give {FORMS} (from command line)",
        ),
        ("db,,more", f"ERROR: --cgraph-database: empty entry in 'db,,more'; give {FORMS} *"),
        ("notes.txt", "ERROR: --cgraph-database: '*/notes.txt' is a file; give a directory"),
        (
            "/proc/no/such/db",
            "ERROR: --cgraph-database: '/proc/no/such/db' cannot be written (*); "
            "give a writable directory, or prefix it ro: to only read it",
        ),
    ],
)
def test_a_database_that_cannot_be_used_is_a_one_line_usage_error(
    pytester: pytest.Pytester, value: str, line: str
) -> None:
    import fnmatch

    error = usage_error(pytester, f"--cgraph-database={value}")
    assert fnmatch.fnmatch(error, line), error


def test_an_unreachable_redis_server_is_a_one_line_usage_error(pytester: pytest.Pytester) -> None:
    pytest.importorskip("redis")
    port = free_port()  # nothing listens there
    error = usage_error(pytester, f"--cgraph-database=.db,ro:redis://127.0.0.1:{port}/0")
    assert error.startswith(
        f"ERROR: --cgraph-database: cannot reach Redis at 127.0.0.1:{port} ("
    ), error
    assert error.endswith("); start the server there or correct the URL"), error


def test_redis_without_the_redis_package_says_which_extra_to_install(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)  # as if it were not installed
    error = usage_error(pytester, "--cgraph-database=redis://ci:6379/0")
    assert error == (
        "ERROR: --cgraph-database: ci:6379: the redis package is not installed; "
        "install pytest-cgraph[redis] (or pip install redis)"
    )


def test_an_ini_error_says_so(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ncgraph_database = s3://bucket\n")
    error = usage_error(pytester)
    assert error.endswith("(from ini file)"), error


def test_without_cgraph_a_database_is_only_parsed(pytester: pytest.Pytester) -> None:
    # Runs that never fuzz do not need the server: only syntax is checked.
    pytester.makepyfile(TRIVIAL)
    port = free_port()
    result = pytester.runpytest("-p", "no:cacheprovider", f"--cgraph-database=redis://h:{port}")
    result.assert_outcomes(passed=1)


def test_the_ini_keys_directory_is_the_ini_files_and_workers_get_it_resolved(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini("[pytest]\ncgraph_database = .cgraph-db, ro:redis://ci:6379/0\n")
    monkeypatch.chdir(pytester.mkdir("tests"))
    config = pytester.parseconfigure(str(pytester.path))
    database = config.stash[OPTIONS_KEY].database
    assert str(database) == f"{pytester.path / '.cgraph-db'},ro:redis://ci:6379/0"
    node = SimpleNamespace(workerinput={})
    XdistHooks(config, 7).pytest_configure_node(node)
    # (and the controller's registries: none here)
    assert node.workerinput == {
        "cgraph_seed": 7,
        "cgraph_database": str(database),
        "cgraph_known": [],
    }

    given = pytester.parseconfigure(str(pytester.path), "--cgraph-database=db")
    assert str(given.stash[OPTIONS_KEY].database) == str(pytester.path / "tests" / "db")


# xdist variant: a worker whose working directory is not the controller's.
@pytest.mark.deep
def test_a_worker_started_elsewhere_saves_into_the_controllers_directory(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = pytester.mkdir("worker-home")
    result, report = campaign(
        pytester,
        monkeypatch,
        "controller",
        *HUNTS,
        "--cgraph-database=shared-db",
        "--dist=load",
        f"--tx=popen//chdir={home}",
    )
    result.assert_outcomes(failed=1)
    assert report["failures"]
    assert any((pytester.path / "controller" / "shared-db").iterdir())
    assert not (home / "shared-db").exists()
