"""The README's examples run as shown, and print what it says they print.

A new user copies a README example into a file and runs the README's
command: an example that names undefined fixtures, or output from an older
version of the plugin, is the first thing they meet. So every ``python``
block of the README is an example, named by the comment above it
(``<!-- example: test_clamp.py -->``); an ``<!-- output: COMMAND -->`` block
is what ``COMMAND`` prints, run in a fresh directory holding the examples;
a ``<!-- transcript -->`` block is shell commands (``$ ...``) and what they
print, run after it.
"""

from __future__ import annotations

import re
import runpy
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import cgraph_doubles.inprocess  # noqa: F401  (kept loaded across in-process runs)

pytest_plugins = "pytester"

README = Path(__file__).resolve().parents[2] / "README.md"
#: The documentation's page on marked tests, which repeats the README's examples.
GUIDE = README.parent / "docs" / "guide.md"

EXAMPLE = re.compile(r"<!-- example: (?P<name>[\w.]+) -->\n```python\n(?P<body>.*?)```", re.S)
OUTPUT = re.compile(r"<!-- output: (?P<command>[^>]+?) -->\n```\n(?P<body>.*?)```", re.S)
TRANSCRIPT = re.compile(r"<!-- transcript -->\n```\n(?P<body>.*?)```", re.S)


def readme() -> str:
    return README.read_text()


def examples() -> dict[str, str]:
    """The README's examples by file name, in order."""
    return {match["name"]: match["body"] for match in EXAMPLE.finditer(readme())}


def test_every_python_block_of_the_readme_is_a_named_example() -> None:
    """A block with no name would go unchecked by the tests below."""
    text = readme()
    blocks = text.count("```python\n")
    named = EXAMPLE.findall(text)
    assert blocks == len(named) > 0, "a ```python block without <!-- example: NAME --> above it"
    assert len({name for name, _ in named}) == len(named), "two examples of one name"
    for name, body in named:
        compile(body, name, "exec")
    for match in OUTPUT.finditer(text):
        command = shlex.split(match["command"])
        assert command[0] == "pytest" and command[-1] in examples(), match["command"]


def test_the_guides_examples_and_sample_are_the_readmes() -> None:
    """``docs/guide.md`` repeats the README's examples and sample output; the tests
    below run the README's, so the guide's must be the same text."""
    guide = GUIDE.read_text()
    named = EXAMPLE.findall(guide)
    assert guide.count("```python\n") == len(named) > 0
    ours = examples()
    for name, body in named:
        assert body == ours.get(name), f"docs/guide.md's {name} is not the README's"
    for block in (OUTPUT, TRANSCRIPT):
        assert [m[0] for m in block.finditer(guide)] == [m[0] for m in block.finditer(readme())]


def pattern(line: str) -> str:
    """A README output line as an ``fnmatch`` pattern: what two honest runs print
    differently (the seed, timings, where the baseline is installed, the ``=``
    padding around a timing) is a wildcard, and everything else must match."""
    line = re.sub(r"([*?[])", r"[\1]", line)
    line = re.sub(r"seed([= ])\d+", r"seed\1*", line)
    line = re.sub(r"[\d.]+ programs/s over [\d.]+ s", "* programs/s over * s", line)
    line = re.sub(r" in [\d.]+s ", " in *s ", line)
    line = re.sub(r"^=+ | =+$", "*", line)
    return line.replace("...", "*")


def write_examples(pytester: pytest.Pytester) -> dict[str, str]:
    written = examples()
    for name, body in written.items():
        (pytester.path / name).write_text(body)
    return written


def test_the_readme_examples_run_as_it_says(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """A script prints what its last comment says; a test file without an output
    block passes with ``--cgraph`` (and eagerly without it)."""
    shown = {shlex.split(match["command"])[-1] for match in OUTPUT.finditer(readme())}
    for name, body in write_examples(pytester).items():
        if name in shown:
            continue  # the next test compares its output
        if not name.startswith("test_"):
            capsys.readouterr()
            runpy.run_path(str(pytester.path / name), run_name="__main__")
            printed = capsys.readouterr().out.strip()
            said = body.rstrip().splitlines()[-1]
            assert said.startswith("# ") and printed == said[2:], name
            continue
        pytester.runpytest("-p", "no:cacheprovider", name).assert_outcomes(passed=1)
        checked = pytester.runpytest("--cgraph", "-p", "no:cacheprovider", name)
        checked.assert_outcomes(passed=1)


def sample_applies() -> bool:
    """The README's sample is a torch 2.13 bug on the CPU."""
    import torch

    return torch.__version__.startswith("2.13.") and not torch.cuda.is_available()


@pytest.mark.deep  # a failure's repro written and verified, then replayed twice
@pytest.mark.skipif(not sample_applies(), reason="the README's sample is torch 2.13 on a CPU")
def test_the_readme_sample_prints_what_the_readme_shows(pytester: pytest.Pytester) -> None:
    write_examples(pytester)
    text = readme()
    outputs = list(OUTPUT.finditer(text))
    assert outputs
    for match in outputs:
        result = pytester.runpytest(*shlex.split(match["command"])[1:])
        result.stdout.fnmatch_lines([pattern(line) for line in match["body"].splitlines() if line])
        if "FAILED" in match["body"]:
            assert result.ret == pytest.ExitCode.TESTS_FAILED
    for match in TRANSCRIPT.finditer(text):
        commands: list[str] = []
        expected: list[str] = []
        for line in match["body"].splitlines():
            if line.startswith("$ "):
                command = line[2:]
                if command.startswith("python "):
                    command = shlex.quote(sys.executable) + command[len("python") :]
                commands.append(command)
            else:
                expected.append(line)
        shell = subprocess.run(
            ["bash", "-c", "\n".join(commands)],
            cwd=pytester.path,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            timeout=300,
        )
        assert shell.stdout.splitlines() == expected
