"""Entries: TOML data files that keep a program byte for byte and read as repro files do."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pytest_cgraph.errors import ConfigurationError
from pytest_cgraph.oracle.driver import ReproCase
from pytest_cgraph.recording import repro
from pytest_cgraph.recording.repro import entry_text, header_of, recorded_case, replay_file
from pytest_cgraph.registry.entries import Registry, read_entry
from pytest_cgraph.registry.repro_files import (
    BASE_SIGNATURE,
    ENTRY_LINE,
    LAYER,
    MARKER_LINE,
    write_repro,
)

PLAIN = "import torch\n\n\ndef program(a0):\n    return (a0.sin(),)\n"

SOURCES = {
    "plain": PLAIN,
    # Three single quotes end a multi-line literal string: an escaped string instead.
    "triple quotes": PLAIN.replace("import torch\n", "import torch\nNOTE = '''a \\n b'''\n"),
    "backslashes": PLAIN + 'PATTERN = r"\\d+\\\\"  # \\n stays two characters\n',
    "a final quote": PLAIN + "# it's'",
    "two final quotes": PLAIN + "X = ''",
    "a carriage return": PLAIN.replace("\n", "\r\n"),
    "control characters": PLAIN + "X = '\x00\x1b\x7f'\n",
    "tabs and unicode": PLAIN + "\tY = 'é — ✓'\n",
    "leading newlines": "\n\n" + PLAIN,
    "no final newline": PLAIN.rstrip("\n"),
    "double quotes": PLAIN + 'DOC = """x"""\n',
}

HEADER = [f"{BASE_SIGNATURE}value-output", f"{LAYER}aot_eager", "# size: 12"]


def written(directory: Path, case: ReproCase, header: list[str] = HEADER) -> Path:
    """``case`` written as an entry, as ``make_repro(..., entry=True)`` writes one."""
    path, _ = write_repro(directory, "entry", entry_text(header, case), 12, ".toml")
    return path


@pytest.mark.parametrize("source", SOURCES.values(), ids=SOURCES.keys())
def test_an_entry_keeps_its_program_byte_for_byte(tmp_path: Path, source: str) -> None:
    case = ReproCase(
        source=source,
        backend='odd"backend\\',
        device="cpu",
        modules=("my.backends", "other"),
        timeout=12.5,
        signature="value-output",
    )
    path = written(tmp_path, case)
    assert path.name == "entry.toml"
    read = recorded_case(path)
    assert read.source.encode() == source.encode()
    assert read == case
    # The header is the entry's first lines, as written: the registry reads it.
    text = path.read_text()
    assert text.startswith(f"{ENTRY_LINE}\n") and header_of(text)[: len(HEADER)] == HEADER
    try:
        compile(source, "program", "exec")
    except (SyntaxError, ValueError):
        # Kept byte for byte, but no program a registry can read: refused, not
        # read as calling nothing (which would claim every failing program).
        with pytest.raises(ConfigurationError, match="its program is not Python"):
            read_entry(path)
        return
    entry = read_entry(path)
    assert entry is not None and (entry.signature, entry.layer) == ("value-output", "aot_eager")


def test_a_program_is_a_literal_string_where_it_can_be(tmp_path: Path) -> None:
    text = written(tmp_path, ReproCase(PLAIN, "aot_eager")).read_text()
    assert f"\nprogram = '''\n{PLAIN}'''\n" in text
    # No timeout: no key (TOML has no null), and none read back.
    assert "timeout" not in text.partition("\nsignature = ")[2]
    assert recorded_case(tmp_path / "entry.toml").timeout is None


def test_a_registry_reads_entries_and_repro_files_side_by_side(tmp_path: Path) -> None:
    written(tmp_path, ReproCase(PLAIN, "aot_eager", signature="value-output"))
    (tmp_path / "standalone.py").write_text(
        f"{MARKER_LINE}\n{BASE_SIGNATURE}grad-grad\n{LAYER}none\n"
        "PROGRAM_SOURCE = r'''\ndef program(x):\n    x.t_()\n'''[1:]\n"
    )
    (tmp_path / "notes.toml").write_text("title = 'not an entry'\n")
    entries = Registry.load([tmp_path]).entries()
    assert [(e.path.name, e.signature, e.ops) for e in entries] == [
        ("entry.toml", "value-output", frozenset({"sin"})),
        ("standalone.py", "grad-grad", frozenset({"t_"})),
    ]


def test_a_process_ending_entry_replays_as_its_exported_repro_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = ReproCase(PLAIN, "aot_eager", timeout=5.0, signature="timeout-program")
    header = [f"{BASE_SIGNATURE}timeout-program", f"{LAYER}none"]
    path = written(tmp_path, case, header)
    ran: list[str] = []

    def run_script(script: Path, limit: float) -> subprocess.CompletedProcess[str]:
        ran.append(script.read_text())
        return subprocess.CompletedProcess([], 1, "", "Timeout (0:00:05)!\n")

    monkeypatch.setattr(repro, "run_script", run_script)
    assert replay_file(path) == "REPRODUCED: python FILE hung past TIMEOUT = 5 s"
    # What ran is the standalone file, oracle and all: an entry is data.
    (script,) = ran
    assert script.startswith(MARKER_LINE) and "class ReproCase" in script
    assert "TIMEOUT = 5.0" in script
