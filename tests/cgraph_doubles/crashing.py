"""Programs that kill their process in a function of "torch" of the caller's naming.

The function is code compiled under a torch file name, as a frame of torch's
would be, so the crash site a dump shows (``in NAME (torch/_NAME.py)``) is
the test's to choose. The crash happens on the compiled side only (eager
skips the call; Dynamo traces the branch taken), or on eager's only.
"""

from __future__ import annotations

CRASH_IN = """
import ctypes

import torch

_CODE = "import ctypes\\ndef {name}():\\n    ctypes.string_at(0)\\n"
_SPACE = {{}}
exec(compile(_CODE, "/site-packages/torch/_{name}.py", "exec"), _SPACE)


def program(a0):
    if {eager}torch.compiler.is_compiling():
        _SPACE["{name}"]()
    return (a0 + 1,)


def inputs(k):
    return (torch.ones(2),)


FRESH_INPUTS = False
ITERS = 3
"""


def crashing_program(name: str, in_eager: bool = False) -> str:
    """A program that segfaults in ``name`` when compiled (when eager, ``in_eager``)."""
    return CRASH_IN.format(name=name, eager="not " if in_eager else "")
