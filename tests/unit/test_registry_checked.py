"""A registry file is read whole or refused, and says what a machine needs to show it.

A file that is ours (its first line says so) but is cut short, hand-edited
into something else or of the wrong types used to be read leniently: an
entry whose TOML did not parse had no program, so it called nothing, and so
claimed every failing program of its signature. Each such file is now one
clear error naming the file. And an entry that only shows on some machines
(an AVX-512 CPU, a GPU) says so, and is skipped elsewhere, never called fixed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_cgraph.errors import ConfigurationError
from pytest_cgraph.oracle.difference import Difference, Kind, Place, Role
from pytest_cgraph.registry import requirements
from pytest_cgraph.registry.entries import BUGS_FILE, KnownBug, Registry, read_bugs, read_entry
from pytest_cgraph.registry.repro_files import ENTRY_LINE
from pytest_cgraph.registry.requirements import check_requirements, unmet

PROGRAM = "import torch\n\n\ndef program(a0):\n    return (a0.sin_(),)\n"
WRONG = Difference(Kind.VALUE, 1, Place(Role.OUTPUT, index=0))


def entry(
    directory: Path,
    name: str = "value-output-inductor",
    *,
    header: str = "# base signature: value-output\n# layer: inductor\n",
    keys: str = 'signature = "value-output"\nbackend = "inductor"\ndevice = "cpu"\n',
    program: str = PROGRAM,
) -> Path:
    """An entry as the recorder writes one: header comments, keys, the program."""
    path = directory / f"{name}.toml"
    path.write_text(f"{ENTRY_LINE}\n{header}\n{keys}program = '''\n{program}'''\n")
    return path


def test_a_whole_entry_is_read(tmp_path: Path) -> None:
    known = read_entry(entry(tmp_path))
    assert known is not None
    assert (known.signature, known.layer, known.ops, known.requires) == (
        "value-output",
        "inductor",
        frozenset({"sin_"}),
        (),
    )
    assert Registry.load([tmp_path]).match(WRONG, lambda: "inductor", frozenset({"sin_"}))


def test_a_truncated_entry_is_refused_not_read_as_claiming_every_program(
    tmp_path: Path,
) -> None:
    whole = entry(tmp_path).read_text()
    cut = tmp_path / "value-output-inductor.toml"
    cut.write_text(whole[: whole.index("program = '''") + 30])  # the copy stopped mid-program
    with pytest.raises(ConfigurationError) as refused:
        Registry.load([tmp_path])
    line = str(refused.value)
    assert "\n" not in line
    assert line.startswith(f"{cut}: a pytest-cgraph registry file, but it does not parse as TOML")
    assert line.endswith(
        "restore it (or record it again with python -m pytest_cgraph.record) or remove it"
    )


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (dict(keys='signature = "value-output"\ndevice = "cpu"\n'), "it has no backend key"),
        (
            dict(keys='signature = "value-output"\nbackend = "inductor"\ndevice = 3\n'),
            "its device is 3, not a str",
        ),
        (
            dict(
                keys='signature = "value-output"\nbackend = "x"\ndevice = "cpu"\nops = ["a", 1]\n'
            ),
            "its ops holds something other than strings",
        ),
        (
            dict(
                keys='signature = "value-output"\nbackend = "x"\ndevice = "cpu"\nthreads = true\n'
            ),
            "its threads is True, not a int",
        ),
        (
            dict(keys='signature = "grad-grad"\nbackend = "inductor"\ndevice = "cpu"\n'),
            "its signature key 'grad-grad' is not its header's base signature 'value-output'",
        ),
        (dict(program="def program(a0):\n    return (a0.sin_(,)\n"), "its program is not Python"),
        (dict(program="import torch\n"), "its program defines no program() function"),
        (
            dict(header="# base signature: value-output\n# requires: avx-512\n"),
            "unknown requirement",
        ),
    ],
    ids=[
        "no backend",
        "device type",
        "ops items",
        "threads type",
        "signature mismatch",
        "program syntax",
        "no program",
        "unknown requirement",
    ],
)
def test_an_entry_that_is_not_whole_is_refused_in_one_line(
    tmp_path: Path, change: dict[str, str], said: str
) -> None:
    path = entry(tmp_path, **change)
    with pytest.raises(ConfigurationError) as refused:
        read_entry(path)
    line = str(refused.value)
    assert line.startswith(f"{path}: a pytest-cgraph registry file, but ") and said in line
    assert "\n" not in line


def test_a_repro_file_without_its_program_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "value-output.py"
    path.write_text("# pytest-cgraph repro\n# base signature: value-output\nprint('hi')\n")
    with pytest.raises(ConfigurationError, match="it has no PROGRAM_SOURCE"):
        read_entry(path)


def test_a_foreign_file_is_still_no_entry(tmp_path: Path) -> None:
    (tmp_path / "notes.toml").write_text("[[not ours]\n")
    (tmp_path / "helper.py").write_text("print('hi')\n")
    assert len(Registry.load([tmp_path])) == 0


def test_a_bugs_file_error_is_a_configuration_error(tmp_path: Path) -> None:
    (tmp_path / BUGS_FILE).write_text("[[bug]\n")
    with pytest.raises(ConfigurationError, match="not a bugs file"):
        read_bugs(tmp_path)


def test_what_a_machine_needs_comes_from_the_header_the_bug_and_the_device(
    tmp_path: Path,
) -> None:
    own = entry(tmp_path, "a", header="# base signature: value-output\n# requires: avx512\n")
    on_gpu = entry(
        tmp_path, "b", keys='signature = "value-output"\nbackend = "x"\ndevice = "cuda:0"\n'
    )
    by_bug = entry(tmp_path, "c")
    plain = entry(tmp_path, "d")
    (tmp_path / BUGS_FILE).write_text(
        '[[bug]]\nid = "x"\ntitle = "t"\nseverity = "silent"\nmechanism = "m"\n'
        'essential = ["sin_"]\nforms = ["c.toml"]\nrequires = ["avx512", "cuda"]\n'
    )
    needs = {path.stem: read_entry(path) for path in (own, on_gpu, by_bug, plain)}
    assert {name: known.requires for name, known in needs.items() if known} == {
        "a": ("avx512",),
        "b": ("cuda",),
        "c": ("avx512", "cuda"),
        "d": (),
    }
    # Across processes too: a worker skips what the controller's entry needs.
    assert KnownBug.from_json(needs["c"].to_json()) == needs["c"]  # type: ignore[union-attr]


def test_a_bug_that_names_an_unknown_requirement_is_refused(tmp_path: Path) -> None:
    (tmp_path / BUGS_FILE).write_text(
        '[[bug]]\nid = "x"\ntitle = "t"\nseverity = "silent"\nmechanism = "m"\n'
        'essential = []\nforms = []\nrequires = ["gpu"]\n'
    )
    with pytest.raises(ConfigurationError, match="unknown requirement 'gpu'"):
        read_bugs(tmp_path)


def test_requirements_are_a_closed_list() -> None:
    assert check_requirements(["avx512", "cuda"]) == ("avx512", "cuda")
    with pytest.raises(ValueError, match="known: 'avx512', 'cuda'"):
        check_requirements(["AVX512"])


def test_avx512_is_unmet_where_inductor_picks_another_vector_isa(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(requirements, "inductor_vector_isa", lambda: "avx2")
    assert unmet(["avx512"]) == (
        "needs a CPU whose Inductor kernels are vectorised with AVX-512 (AVX2 kernels hide "
        "it); Inductor vectorises this CPU's kernels with avx2"
    )
    monkeypatch.setattr(requirements, "inductor_vector_isa", lambda: "avx512")
    assert unmet(["avx512"]) is None
    assert unmet([]) is None


def test_this_machine_is_described_by_inductor_itself() -> None:
    import torch._inductor.cpu_vec_isa as vec_isa

    picked = vec_isa.pick_vec_isa()
    assert requirements.inductor_vector_isa() == (str(picked) if picked else "none")


def test_cuda_is_unmet_on_a_cpu_build_or_without_a_device() -> None:
    import torch

    reason = unmet(["cuda"])
    if torch.version.cuda is None:
        assert reason == (
            f"needs a CUDA device and a CUDA build of torch; torch {torch.__version__} is "
            "not a CUDA build"
        )
    elif not torch.cuda.is_available():
        assert reason is not None and reason.endswith("this machine has no CUDA device")
    else:
        assert reason is None
