"""``python -m pytest_cgraph.record``: a hand-written program becomes a registry entry."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from pytest_cgraph.recording.record import main
from pytest_cgraph.recording.repro import replay_in_process
from pytest_cgraph.registry.entries import KnownBug, Registry, read_entry
from pytest_cgraph.registry.repro_files import ENTRY_LINE, MARKER_LINE

DIFFERS = """
import torch


def program(a0):
    torch._foreach_add_([a0, a0], 1.5)
    a0.clamp_(min=-0.5, max=5.0)
    return (a0,)


def inputs(k):
    return (torch.zeros(1, dtype=torch.float64),)
"""

# The same tensor twice in a _foreach_ list is written once when compiled
# (torch 2.13 and 2.14); once in the list, it agrees.
AGREES = DIFFERS.replace("[a0, a0]", "[a0]")


def recorded(directory: Path) -> tuple[Path, KnownBug]:
    """DIFFERS written as a program file and recorded into ``directory/known``."""
    program = directory / "foreach_then_clamp.py"
    program.write_text(DIFFERS)
    registry = directory / "known"
    assert main([str(program), "--backend", "aot_eager", "--into", str(registry)]) == 0
    (entry,) = Registry.load([registry]).entries()
    return program, entry


def test_a_differing_program_is_recorded_and_refreshed_in_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, entry = recorded(tmp_path)
    registry = entry.path.parent
    assert entry.signature == "value-output_argument" and entry.layer == "aot_eager"
    assert entry.ops == {"_foreach_add_", "clamp_"}
    # An entry: the header and the program as TOML data, no copy of the oracle.
    written = entry.path.read_text()
    assert entry.path.suffix == ".toml" and written.startswith(ENTRY_LINE)
    assert "class ReproCase" not in written and "\nprogram = '''\n" in written
    # A second entry of the same signature, renamed: refreshing keeps both.
    twin = entry.path.with_name(entry.path.stem + "-2.toml")
    twin.write_text(entry.path.read_text())
    # A repro file (a standalone script) in the registry becomes an entry of its name.
    standalone = entry.path.with_name(entry.path.stem + "-3.py")
    assert main(["--export", str(entry.path), str(standalone)]) == 0
    assert read_entry(standalone) is not None
    assert main(["--refresh", str(registry)]) == 0
    names = sorted([entry.path.name, twin.name, f"{entry.path.stem}-3.toml"])
    assert sorted(path.name for path in registry.glob("*.*") if path.suffix != ".lock") == names
    assert capsys.readouterr().out.count("refreshed") == 3
    for name in names:
        assert (registry / name).read_text().startswith(ENTRY_LINE)


def test_a_refresh_keeps_what_was_written_into_an_entry_by_hand(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, entry = recorded(tmp_path)
    text = entry.path.read_text()
    found_by = (
        "# requires: avx512\n# found by: cgraph::mutation; replay: pytest --cgraph --cgraph-seed 7"
    )
    declared = '# Why: the clamp after any duplicate _foreach_add_ is this bug.\nops = ["clamp_"]'
    text = re.sub(r"^# found by: .*$", found_by, text, count=1, flags=re.MULTILINE)
    text = text.replace('\ndevice = "cpu"\n', f'\ndevice = "cpu"\n{declared}\n', 1)
    entry.path.write_text(text)
    assert main(["--refresh", str(entry.path.parent)]) == 0
    assert "refreshed" in capsys.readouterr().out
    assert entry.path.read_text() == text  # nothing else changed either
    refreshed = read_entry(entry.path)
    assert refreshed is not None and refreshed.ops == {"clamp_"}
    assert refreshed.requires == ("avx512",)


def test_an_entry_exports_as_a_standalone_repro_that_reproduces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program, entry = recorded(tmp_path)
    out = tmp_path / "standalone.py"
    assert main(["--export", str(entry.path), str(out)]) == 0
    text = out.read_text()
    assert text.startswith(MARKER_LINE) and "class ReproCase" in text
    # The entry's header and program carry over unchanged.
    head = entry.path.read_text().splitlines()[1:10]
    assert text.splitlines()[1:10] == head
    assert replay_in_process(text).same_as(entry.signature)
    assert main(["--export", str(program), str(tmp_path / "nope.py")]) == 2
    assert "is not a pytest-cgraph entry" in capsys.readouterr().err


def test_a_program_that_agrees_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = tmp_path / "fine.py"
    program.write_text(AGREES)
    assert main([str(program), "--into", str(tmp_path / "known")]) == 1
    assert "no difference: eager and aot_eager agree" in capsys.readouterr().err
    assert not list((tmp_path / "known").glob("*.toml"))


def test_a_missing_program_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "nope.py"), "--into", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith(f"error: cannot read {tmp_path / 'nope.py'}")
    assert sys.modules.get("pytest_cgraph.recording.record") is not None


def test_a_program_that_kills_its_process_is_recorded_by_its_crash_site(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cgraph_doubles.crashing import crashing_program
    from pytest_cgraph.recording.repro import replay_file

    program = tmp_path / "segfaults_when_compiled.py"
    program.write_text(crashing_program("read_zero"))
    registry = tmp_path / "known"
    # the check runs in a child: the segfault does not take this process with it
    assert main([str(program), "--backend", "aot_eager", "--into", str(registry)]) == 0
    printed = capsys.readouterr().out
    (entry,) = Registry.load([registry]).entries()
    assert entry.signature.startswith("crash-process-SIGSEGV-in_read_zero_torch_read_zero_py_")
    assert printed.startswith(f"{entry.signature}: ")
    assert "killed by SIGSEGV in read_zero (torch/_read_zero.py)" in printed
    assert replay_file(entry.path) == (
        "REPRODUCED: python FILE killed by SIGSEGV in read_zero (torch/_read_zero.py)"
    )


def test_a_backend_a_module_registers_is_recorded_with_import(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_cgraph.registry.entries import recorded_settings

    program = tmp_path / "adds.py"
    program.write_text(
        "import torch\n\n\ndef program(a0):\n    a0.add_(2)\n    return (a0 * 1,)\n\n\n"
        "def inputs(k):\n    return (torch.zeros(2),)\n"
    )
    registry = tmp_path / "known"
    backend = ["--backend", "faulty_lost_input_mutation", "--into", str(registry)]
    # the check runs in a child, which knows the backend only once the module is imported
    assert main([str(program), *backend]) == 1
    assert "unknown backend 'faulty_lost_input_mutation'" in capsys.readouterr().err
    # a module that is not there is one line, not a dead child
    assert main([str(program), *backend, "--import", "no_such_module_xyz"]) == 1
    assert "No module named 'no_such_module_xyz'" in capsys.readouterr().err
    assert main([str(program), *backend, "--import", "cgraph_doubles.faults"]) == 0
    (entry,) = Registry.load([registry]).entries()
    assert "cgraph_doubles.faults" in recorded_settings(entry.path)["backend_modules"]
    assert "--import cgraph_doubles.faults" in entry.path.read_text()


def test_a_refresh_that_keeps_a_file_as_it_was_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, entry = recorded(tmp_path)
    # A repro file whose entry is there already: it cannot become that entry.
    standalone = entry.path.with_suffix(".py")
    assert main(["--export", str(entry.path), str(standalone)]) == 0
    capsys.readouterr()
    assert main(["--refresh", str(entry.path.parent)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert sorted(lines) == [
        f"KEPT AS IT WAS {standalone.name}: {entry.path.name} is there already",
        f"refreshed {entry.path.name}",
    ]
    assert standalone.exists()


def test_a_thread_count_is_checked_with_and_kept_in_the_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_cgraph.recording.plain import make_plain
    from pytest_cgraph.recording.repro import recorded_case

    program = tmp_path / "adds.py"
    program.write_text(
        "import torch\n\n\ndef program(a0):\n    return (a0 + 1,)\n\n\n"
        "def inputs(k):\n    return (torch.zeros(2),)\n"
    )
    registry = tmp_path / "known"
    backend = ["--backend", "faulty_crash_with_threads", "--import", "cgraph_doubles.faults"]
    # One thread: the backend compiles, so there is nothing to record.
    assert main([str(program), *backend, "--threads", "1", "--into", str(registry)]) == 1
    assert "no difference" in capsys.readouterr().err
    assert main([str(program), *backend, "--threads", "2", "--into", str(registry)]) == 0
    (entry,) = Registry.load([registry]).entries()
    assert recorded_case(entry.path).threads == 2
    assert "\nthreads = 2  #" in entry.path.read_text()
    # The plain script sets the count too: it is a condition of the bug.
    plain = make_plain(entry.path, verify=False)
    assert plain.script is not None and "\ntorch.set_num_threads(2)\n" in plain.script
    with pytest.raises(SystemExit):
        main([str(program), *backend, "--threads", "0", "--into", str(registry)])
    assert "'0' is not a thread count" in capsys.readouterr().err
