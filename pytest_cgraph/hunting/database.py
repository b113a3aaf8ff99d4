"""``--cgraph-database``: the Hypothesis example database a campaign shares.

A campaign item's Hypothesis search saves each failing program it finds in
an example database and replays what that database holds before it draws
anything new. Given one database shared by xdist workers, machines and
runs, a failure found anywhere is the first program checked everywhere.

The value is one entry or a comma-separated list of them:

- a directory (Hypothesis's ``DirectoryBasedExampleDatabase``); a relative
  one is resolved where it was given (the invocation directory for the
  command line, the ini file's directory for the ini key), once, on the
  controller, so xdist workers started elsewhere use the same directory;
- ``redis://[:password@]host:port/db`` or ``rediss://...`` (Hypothesis's
  ``RedisExampleDatabase``, needing the ``redis`` extra);
- either of them prefixed ``ro:``: only read (``ReadOnlyDatabase``), for a
  CI job that must replay a shared database's failures without changing it.

Several entries are one ``MultiplexedDatabase``: each is read, each writable
one is written. Parsing is syntax only and imports nothing heavy: options
are parsed by every pytest run. What needs the file system or the network
(:func:`check_usable`) runs at session start, and only for a campaign;
Hypothesis and the Redis client are imported when the database is built.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from pytest_cgraph.checking.validation import probe_writable
from pytest_cgraph.oracle.errors import ConfigurationError

if TYPE_CHECKING:
    from hypothesis.database import ExampleDatabase

#: Before an entry: read it, never write or delete anything in it.
READ_ONLY_PREFIX = "ro:"

REDIS_SCHEMES = ("redis", "rediss")

#: Prefix of this plugin's keys in a Redis shared with other Hypothesis users.
REDIS_KEY_PREFIX = b"pytest-cgraph:"

#: Seconds the session-start check waits for a Redis server before it gives up.
PING_SECONDS = 3.0

#: Seconds one Redis command may take during the run before the server counts as gone.
COMMAND_SECONDS = 30.0

#: The legal forms, quoted by every syntax error.
FORMS = "a directory, redis://host:port/db or rediss://host:port/db, each optionally prefixed ro:"

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


@dataclass(frozen=True)
class DatabaseEntry:
    """One database of the list: an absolute directory or a Redis URL, maybe read-only."""

    location: str
    read_only: bool = False

    @property
    def is_redis(self) -> bool:
        return _SCHEME.match(self.location) is not None

    @property
    def address(self) -> str:
        """``host:port`` of a Redis entry, for messages: its URL may carry a password."""
        url = urlsplit(self.location)
        return f"{url.hostname or 'localhost'}:{url.port or 6379}"

    def __str__(self) -> str:
        return (READ_ONLY_PREFIX if self.read_only else "") + self.location


@dataclass(frozen=True)
class DatabaseSpec:
    """The parsed ``--cgraph-database``, with directories already absolute.

    ``str(spec)`` is its canonical text, which parses back to an equal spec
    anywhere: that text is what the controller hands xdist workers.
    """

    entries: tuple[DatabaseEntry, ...]

    def __str__(self) -> str:
        return ",".join(map(str, self.entries))


def parse_database(value: str, base: Path) -> DatabaseSpec:
    """Parse the option's value; relative directories are taken from ``base``.

    Syntax only: whether a directory can be written or a server answers is
    :func:`check_usable`'s business, asked only when a campaign runs.
    """
    entries = []
    for part in value.split(","):
        text = part.strip()
        read_only = text.startswith(READ_ONLY_PREFIX)
        if read_only:
            text = text[len(READ_ONLY_PREFIX) :].strip()
        if not text:
            raise ConfigurationError(f"empty entry in {value!r}; give {FORMS}")
        scheme = _SCHEME.match(text)
        if scheme is None:
            location = str((base / Path(text).expanduser()).resolve())
        elif scheme.group(1).lower() in REDIS_SCHEMES:
            location = _redis_url(text)
        else:
            raise ConfigurationError(
                f"unknown scheme {scheme.group(0)!r} in {_without_password(text)!r}; give {FORMS}"
            )
        entries.append(DatabaseEntry(location, read_only))
    return DatabaseSpec(tuple(entries))


def _redis_url(text: str) -> str:
    """Check what the Redis client would only reject later, at the first save."""
    try:
        url = urlsplit(text)
        url.port  # noqa: B018  (raises ValueError for a port that is not a number)
    except ValueError:
        raise ConfigurationError(
            f"bad Redis URL {_without_password(text)!r}: the port must be a number; "
            "give redis://host:port/db"
        ) from None
    database = url.path.strip("/")
    if database and not database.isdigit():
        raise ConfigurationError(
            f"bad Redis URL {_without_password(text)!r}: the database must be a number "
            f"(got {database!r}); give redis://host:port/db"
        )
    return text


def _without_password(text: str) -> str:
    return re.sub(r"(://[^/@]*:)[^/@]*@", r"\1***@", text)


def base_directory(invocation_dir: Path, inifile: Path | None, from_ini: bool) -> Path:
    """Where a relative directory is taken from: the ini file's own directory for
    the ini key (the project's database, wherever pytest is started), else
    the directory pytest was invoked in."""
    return inifile.parent if from_ini and inifile is not None else invocation_dir


def check_usable(spec: DatabaseSpec) -> None:
    """Fail at session start, in one line, if an entry cannot be used as given.

    A writable directory must accept a file (what the probe makes is removed
    again); a read-only one may be missing (it holds nothing to replay yet,
    as on a CI cache miss) but must not be a file. A Redis entry needs the
    ``redis`` package and a server that answers a PING within
    :data:`PING_SECONDS`.
    """
    for entry in spec.entries:
        if entry.is_redis:
            _check_redis(entry)
        else:
            _check_directory(entry)


def _check_directory(entry: DatabaseEntry) -> None:
    path = Path(entry.location)
    if path.exists() and not path.is_dir():
        raise ConfigurationError(f"{entry.location!r} is a file; give a directory")
    if entry.read_only:
        return
    try:
        probe_writable(path)
    except OSError as error:
        raise ConfigurationError(
            f"{entry.location!r} cannot be written ({error.strerror or error}); give a "
            f"writable directory, or prefix it {READ_ONLY_PREFIX} to only read it"
        ) from None


def _check_redis(entry: DatabaseEntry) -> None:
    if importlib.util.find_spec("redis") is None:
        raise ConfigurationError(
            f"{entry.address}: the redis package is not installed; "
            "install pytest-cgraph[redis] (or pip install redis)"
        )
    import redis

    client = redis.Redis.from_url(
        entry.location, socket_connect_timeout=PING_SECONDS, socket_timeout=PING_SECONDS
    )
    try:
        client.ping()
    except redis.AuthenticationError as error:
        raise ConfigurationError(
            f"Redis at {entry.address} refused the login ({_one_line(error)}); put the "
            "password in the URL: redis://:PASSWORD@host:port/db"
        ) from None
    except (redis.ConnectionError, redis.TimeoutError) as error:
        raise ConfigurationError(
            f"cannot reach Redis at {entry.address} ({_one_line(error)}); start the server "
            "there or correct the URL"
        ) from None
    except redis.RedisError as error:
        raise ConfigurationError(
            f"{entry.address} did not answer PING as a Redis server does ({_one_line(error)}); "
            "correct the URL"
        ) from None
    finally:
        client.close()


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


@functools.cache
def build_database(spec: DatabaseSpec) -> ExampleDatabase:
    """The Hypothesis database of ``spec``, made once per process and shared by its items."""
    from hypothesis.database import MultiplexedDatabase

    databases = [_build_entry(entry) for entry in spec.entries]
    return databases[0] if len(databases) == 1 else MultiplexedDatabase(*databases)


def _build_entry(entry: DatabaseEntry) -> ExampleDatabase:
    from hypothesis.database import DirectoryBasedExampleDatabase, ReadOnlyDatabase

    database: ExampleDatabase
    if entry.is_redis:
        import redis
        from hypothesis.extra.redis import RedisExampleDatabase

        from pytest_cgraph.hunting.database_outage import OutageTolerant

        # Bounded reads too: a server that hangs (stopped, or a network that
        # drops packets) must raise for the outage wrapper, not block the item.
        client = redis.Redis.from_url(
            entry.location, socket_connect_timeout=PING_SECONDS, socket_timeout=COMMAND_SECONDS
        )
        # A server that goes away mid-run costs the run its replays, not its items.
        database = OutageTolerant(
            RedisExampleDatabase(client, key_prefix=REDIS_KEY_PREFIX),
            entry.address,
            (redis.RedisError, OSError),
        )
    else:
        database = DirectoryBasedExampleDatabase(entry.location)
    return ReadOnlyDatabase(database) if entry.read_only else database
