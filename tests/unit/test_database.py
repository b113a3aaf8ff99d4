"""``--cgraph-database`` on its own: the syntax, the session-start checks, the built database."""

from __future__ import annotations

import fnmatch
import os
import sys
from pathlib import Path

import pytest
from hypothesis.database import (
    DirectoryBasedExampleDatabase,
    MultiplexedDatabase,
    ReadOnlyDatabase,
)

from pytest_cgraph.errors import ConfigurationError
from pytest_cgraph.hunting.database import (
    REDIS_KEY_PREFIX,
    DatabaseEntry,
    DatabaseSpec,
    base_directory,
    build_database,
    check_usable,
    parse_database,
)


def test_a_relative_directory_is_made_absolute_from_the_base(tmp_path: Path) -> None:
    spec = parse_database(".cgraph-db", tmp_path)
    assert spec == DatabaseSpec((DatabaseEntry(str(tmp_path / ".cgraph-db")),))
    assert parse_database(str(tmp_path / "db"), Path("/elsewhere")).entries[0].location == str(
        tmp_path / "db"
    )
    assert parse_database("~/db", tmp_path).entries[0].location == str(Path.home() / "db")


def test_entries_redis_urls_and_read_only_prefixes(tmp_path: Path) -> None:
    spec = parse_database(
        " .db , ro:redis://ci:6379/0,ro: shared,rediss://:pw@host:6380/2", tmp_path
    )
    assert spec.entries == (
        DatabaseEntry(str(tmp_path / ".db")),
        DatabaseEntry("redis://ci:6379/0", read_only=True),
        DatabaseEntry(str(tmp_path / "shared"), read_only=True),
        DatabaseEntry("rediss://:pw@host:6380/2"),
    )
    assert [entry.is_redis for entry in spec.entries] == [False, True, False, True]
    assert spec.entries[1].address == "ci:6379"
    assert spec.entries[3].address == "host:6380"  # never the password
    assert DatabaseEntry("redis://cache").address == "cache:6379"


def test_the_canonical_text_parses_back_anywhere(tmp_path: Path) -> None:
    # What the controller hands xdist workers: it must mean the same in any directory.
    spec = parse_database("db,ro:redis://ci:6379/0", tmp_path)
    assert str(spec) == f"{tmp_path / 'db'},ro:redis://ci:6379/0"
    assert parse_database(str(spec), Path("/somewhere/else")) == spec


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "http://cache:80/db",
            "unknown scheme 'http://' in 'http://cache:80/db'; give a directory, "
            "redis://host:port/db or rediss://host:port/db, each optionally prefixed ro:",
        ),
        ("s3://bucket/db", "unknown scheme 's3://' in 's3://bucket/db'; give a directory, *"),
        ("db,,other", "empty entry in 'db,,other'; give a directory, *"),
        ("ro:", "empty entry in 'ro:'; give *"),
        (
            "redis://:secret@ci:port/0",
            "bad Redis URL 'redis://:***@ci:port/0': the port must be a number; "
            "give redis://host:port/db",
        ),
        (
            "redis://ci:6379/cache",
            "bad Redis URL 'redis://ci:6379/cache': the database must be a number "
            "(got 'cache'); give redis://host:port/db",
        ),
    ],
)
def test_bad_syntax_is_one_line(tmp_path: Path, value: str, message: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        parse_database(value, tmp_path)
    assert "\n" not in str(raised.value)
    assert raised.match(fnmatch.translate(message))


def test_a_relative_directory_comes_from_the_ini_files_directory_for_the_ini_key() -> None:
    invoked, ini = Path("/project/tests"), Path("/project/pyproject.toml")
    assert base_directory(invoked, ini, from_ini=True) == Path("/project")
    assert base_directory(invoked, ini, from_ini=False) == invoked
    assert base_directory(invoked, None, from_ini=True) == invoked


def test_a_writable_directory_is_probed_and_nothing_is_left_behind(tmp_path: Path) -> None:
    check_usable(parse_database("new/db", tmp_path))
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "db").mkdir()
    check_usable(parse_database("db", tmp_path))
    assert list((tmp_path / "db").iterdir()) == []


def test_a_read_only_directory_may_be_missing_but_not_a_file(tmp_path: Path) -> None:
    check_usable(parse_database("ro:not-restored-yet", tmp_path))
    (tmp_path / "notes.txt").write_text("a file\n")
    with pytest.raises(ConfigurationError, match=r"'.*notes\.txt' is a file; give a directory"):
        check_usable(parse_database("ro:notes.txt", tmp_path))


@pytest.mark.parametrize("entry", ["notes.txt", "notes.txt/db"])
def test_a_file_or_a_path_through_one_is_refused(tmp_path: Path, entry: str) -> None:
    (tmp_path / "notes.txt").write_text("a file\n")
    with pytest.raises(ConfigurationError) as raised:
        check_usable(parse_database(entry, tmp_path))
    assert raised.match(
        r"'.*notes.txt' is a file; give a directory"
        if entry == "notes.txt"
        else r"'.*notes.txt/db' cannot be written \(Not a directory\); give a writable "
        r"directory, or prefix it ro: to only read it"
    )


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes into read-only dirs"
)
def test_an_unwritable_directory_is_refused(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    try:
        with pytest.raises(ConfigurationError, match=r"cannot be written \(Permission denied\)"):
            check_usable(parse_database("locked", tmp_path))
        check_usable(parse_database("ro:locked", tmp_path))  # reading it is enough
    finally:
        locked.chmod(0o755)


def test_redis_without_the_redis_package_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)  # as if it were not installed
    with pytest.raises(ConfigurationError) as raised:
        check_usable(parse_database("ro:redis://ci:6379/0", tmp_path))
    assert str(raised.value) == (
        "ci:6379: the redis package is not installed; "
        "install pytest-cgraph[redis] (or pip install redis)"
    )


def test_one_database_per_spec_and_process(tmp_path: Path) -> None:
    spec = parse_database("db", tmp_path)
    database = build_database(spec)
    assert isinstance(database, DirectoryBasedExampleDatabase)
    assert database.path == tmp_path / "db"
    assert build_database(parse_database(str(tmp_path / "db"), Path("/"))) is database
    read_only = build_database(parse_database("ro:db", tmp_path))
    assert read_only == ReadOnlyDatabase(DirectoryBasedExampleDatabase(tmp_path / "db"))


def test_several_entries_are_one_multiplexed_database(tmp_path: Path) -> None:
    redis = pytest.importorskip("redis")
    from hypothesis.extra.redis import RedisExampleDatabase

    from pytest_cgraph.hunting.database_outage import OutageTolerant

    # Building connects to nothing: the client connects at its first command.
    database = build_database(parse_database(".cgraph-db,ro:redis://ci:6379/0", tmp_path))
    assert isinstance(database, MultiplexedDatabase)
    local, shared = database._wrapped
    assert local == DirectoryBasedExampleDatabase(tmp_path / ".cgraph-db")
    assert isinstance(shared, ReadOnlyDatabase)
    # A server that goes away mid-run costs the replays only (database_outage).
    assert isinstance(shared._wrapped, OutageTolerant) and shared._wrapped.address == "ci:6379"
    server = shared._wrapped.wrapped
    assert isinstance(server, RedisExampleDatabase)
    assert server._prefix == REDIS_KEY_PREFIX
    kwargs = server.redis.connection_pool.connection_kwargs
    assert (kwargs["host"], kwargs["port"], kwargs["db"]) == ("ci", 6379, 0)
    assert isinstance(server.redis, redis.Redis)
