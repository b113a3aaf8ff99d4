"""Run many standalone scripts as ``python -I FILE`` runs each, without paying
torch's import for every one.

The deep tier runs the exported file of every known bug alone: about 120
processes, and half of each one's time was ``import torch`` and Dynamo's own
import before the file's first program ran. Here one isolated interpreter
imports them once, then forks a fresh child per script: each child starts with
torch imported and nothing else done, runs the script as ``__main__`` with its
own ``sys.argv``, standard streams and exit status, and dies with it, so no
state of one script (Dynamo's caches, a config it set, a crash) reaches the next.

The one difference from ``python -I FILE`` is that torch was imported before
the script's first line. A script that reads the environment before its
imports could see that, so :meth:`Prestarted.run` runs such a file as its own
process instead. Forking is safe here because the server only imports: no
OpenMP pool, thread or CUDA context exists before the fork. POSIX only.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# The server: import what every exported file imports, then fork one child per
# request line ({"script", "args", "stdout", "stderr"}) and answer its status.
SERVER = r"""
import atexit, json, os, runpy, sys, traceback
import torch, torch._dynamo, torch._functorch.aot_autograd
ready = sys.stdout
ready.write("ready\n"); ready.flush()
for line in sys.stdin:
    request = json.loads(line)
    child = os.fork()
    if child == 0:
        code = 1
        try:
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            for fd, name in ((1, "stdout"), (2, "stderr")):
                os.dup2(os.open(request[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
            sys.stdin = open(0, closefd=False)
            sys.stdout = open(1, "w", closefd=False)
            sys.stderr = open(2, "w", closefd=False)
            sys.argv = [request["script"], *request["args"]]
            try:
                runpy.run_path(request["script"], run_name="__main__")
                code = 0
            except SystemExit as stop:
                if stop.code is None or isinstance(stop.code, int):
                    code = stop.code or 0
                else:
                    print(stop.code, file=sys.stderr)
            except BaseException:
                traceback.print_exc()
            atexit._run_exitfuncs()
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except BaseException:
                    pass
            os._exit(code)
    _, status = os.waitpid(child, 0)
    ready.write(json.dumps(os.waitstatus_to_exitcode(status)) + "\n")
    ready.flush()
"""


class Prestarted:
    """One server process; :meth:`run` is ``subprocess.run([python, "-I", script])``."""

    def __init__(self, scratch: Path) -> None:
        self._scratch = scratch
        self._runs = 0
        self._server = subprocess.Popen(
            [sys.executable, "-I", "-c", SERVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._server.stdout is not None
        assert self._server.stdout.readline() == "ready\n", "the prestarted server did not start"

    def run(self, script: Path, *args: str) -> subprocess.CompletedProcess[str]:
        """Run SCRIPT with ARGS as ``python -I`` would: its exit status (negative
        for a signal) and what it printed."""
        if "environ" in script.read_text():
            return subprocess.run(
                [sys.executable, "-I", str(script), *args],
                capture_output=True,
                text=True,
                check=False,
            )
        self._runs += 1
        stdout = self._scratch / f"run-{self._runs}.out"
        stderr = self._scratch / f"run-{self._runs}.err"
        request = {
            "script": str(script),
            "args": list(args),
            "stdout": str(stdout),
            "stderr": str(stderr),
        }
        assert self._server.stdin is not None and self._server.stdout is not None
        self._server.stdin.write(json.dumps(request) + "\n")
        self._server.stdin.flush()
        answer = self._server.stdout.readline()
        assert answer, "the prestarted server died"
        return subprocess.CompletedProcess(
            [sys.executable, "-I", str(script), *args],
            json.loads(answer),
            stdout.read_text(errors="replace"),
            stderr.read_text(errors="replace"),
        )

    def close(self) -> None:
        """End the server (its children have all been waited for)."""
        if self._server.stdin is not None:
            self._server.stdin.close()
        self._server.wait(timeout=60)
        if self._server.stdout is not None:
            self._server.stdout.close()
