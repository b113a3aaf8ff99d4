"""The prestarted runner the deep tier runs exported files with behaves as
``python -I FILE``: status, signal, streams, arguments, and nothing kept
from one script to the next."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cgraph_doubles.prestarted import Prestarted

SCRIPTS = {
    "exits": "import sys\nprint('to stdout')\nprint('to stderr', file=sys.stderr)\nsys.exit(3)\n",
    "argv": "import sys\nprint(sys.argv[1:])\n",
    "raises": "raise ValueError('boom')\n",
    "message": "import sys\nsys.exit('a message')\n",
    "killed": "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
    "sets": (
        "import torch._dynamo.config as c\n"
        "print(c.cache_size_limit)\n"
        "c.cache_size_limit = 1\n"
        "import sys\nsys.modules['torch'].marked_by_a_script = True\n"
    ),
    "isolated": "import sys\nprint(repr(sys.path[0]), sys.flags.isolated)\n",
}


def _written(tmp_path: Path) -> dict[str, Path]:
    paths = {}
    for name, text in SCRIPTS.items():
        paths[name] = tmp_path / f"{name}.py"
        paths[name].write_text(text)
    return paths


def _plain(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-I", str(script), *args], capture_output=True, text=True, check=False
    )


@pytest.mark.skipif(sys.platform == "win32", reason="the runner forks")
def test_each_script_runs_as_python_i_runs_it(tmp_path: Path) -> None:
    scripts = _written(tmp_path)
    runner = Prestarted(tmp_path)
    try:
        runs = {name: runner.run(path) for name, path in scripts.items()}
        argv = runner.run(scripts["argv"], "--backend", "eager")
        second = runner.run(scripts["sets"])
    finally:
        runner.close()
    exits = runs["exits"]
    assert (exits.returncode, exits.stdout, exits.stderr) == (3, "to stdout\n", "to stderr\n")
    assert argv.stdout == "['--backend', 'eager']\n"
    assert runs["raises"].returncode == 1 and "ValueError: boom" in runs["raises"].stderr
    assert (runs["message"].returncode, runs["message"].stderr) == (1, "a message\n")
    assert runs["killed"].returncode == -9
    # What one script set is gone for the next: each is a fresh child.
    assert second.stdout == runs["sets"].stdout
    # The same answers as the script run alone.
    for name in ("exits", "raises", "message", "killed", "sets", "isolated"):
        alone = _plain(scripts[name])
        assert (runs[name].returncode, runs[name].stdout) == (alone.returncode, alone.stdout), name
    assert runs["isolated"].stdout.split()[-1] == "1"


def test_a_script_that_reads_the_environment_runs_as_its_own_process(tmp_path: Path) -> None:
    script = tmp_path / "environment.py"
    script.write_text(
        "import os, sys\nprint('torch' in sys.modules, os.environ.get('HOME') is not None)\n"
    )
    runner = Prestarted(tmp_path)
    try:
        run = runner.run(script)
    finally:
        runner.close()
    # Not forked from the server, where torch is imported already.
    assert run.stdout.split()[0] == "False"
