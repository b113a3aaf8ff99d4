"""A backend of one's own (``pytest_cgraph.registry.own_backend``): one fault, one file.

A failure that only the user's backend shows (no torch layer of the ladder
does) is filed by what it is about, not by the hazards of the calls the
program happens to make: a backend that loses its inputs' writes also
returns them as copies, and that is one bug to its author.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_cgraph.oracle.difference import Difference, Kind, Place, Role
from pytest_cgraph.registry.entries import Registry
from pytest_cgraph.registry.own_backend import face, is_own_backend, own_key
from pytest_cgraph.registry.repro_files import BASE_SIGNATURE, LAYER, MARKER_LINE


@pytest.mark.parametrize(
    ("signature", "expected"),
    [
        ("mutation-argument", "inputs"),
        ("value-output_argument", "inputs"),
        ("aliasing-aliasing-shares_argument_to_none", "inputs"),
        ("metadata-output_argument-requires_grad", "inputs"),
        ("value-output", "outputs"),
        ("metadata-output-requires_grad", "outputs"),
        ("stale_output-output", "outputs"),
        ("grad-grad", "gradients"),
        (
            "crash-compiled_call-RuntimeError-boom_1234ab",
            "crash-compiled_call-RuntimeError-boom_1234ab",
        ),
    ],
)
def test_a_failure_is_filed_by_what_it_is_about(signature: str, expected: str) -> None:
    assert face(signature) == expected
    assert own_key(signature).endswith(expected)


def test_only_a_backend_torch_does_not_ship_is_ones_own() -> None:
    for torch_backend in ("eager", "aot_eager", "inductor", "cudagraphs", "reduce-overhead"):
        assert not is_own_backend(torch_backend)
    assert is_own_backend("faulty_two_faults") and is_own_backend("my_pkg:compile")
    assert not is_own_backend(None) and not is_own_backend("")


def _own_file(directory: Path, signature: str, backend: str) -> Path:
    """A repro file of ``backend`` that no torch layer showed (its layer: none)."""
    path = directory / f"{signature}.py"
    path.write_text(
        f"{MARKER_LINE}\n{BASE_SIGNATURE}{signature}\n{LAYER}none\n"
        f'BACKEND = "{backend}"\n'
        "PROGRAM_SOURCE = r'''\ndef program(a0):\n    a0.add_(1)\n    return (a0,)\n'''[1:]\n"
    )
    return path


ALIASING_LOST = Difference(
    Kind.ALIASING, 3, Place(Role.ALIASING, index=0), facet="is_argument_to_none"
)


def test_a_file_of_ones_backend_claims_its_face_whatever_the_signature_and_calls(
    tmp_path: Path,
) -> None:
    _own_file(tmp_path, "mutation-argument", "faulty_x")
    registry = Registry.load([tmp_path])
    [entry] = registry.entries()
    assert entry.backend == "faulty_x"
    other_calls = frozenset({"cpu"})  # none of the file's program's calls
    assert face(ALIASING_LOST.signature) == "inputs"
    known = registry.match(ALIASING_LOST, lambda: None, other_calls, "faulty_x")
    assert known is entry
    # A torch layer shows it: a torch bug met through this backend, not the backend's.
    assert registry.match(ALIASING_LOST, lambda: "aot_eager", other_calls, "faulty_x") is None
    # Another backend, or one of torch's, is never claimed by this backend's file.
    assert registry.match(ALIASING_LOST, lambda: None, other_calls, "faulty_y") is None
    assert registry.match(ALIASING_LOST, lambda: None, other_calls, "aot_eager") is None
    # Another face is another bug.
    wrong_output = Difference(Kind.VALUE, 3, Place(Role.OUTPUT, index=0))
    assert registry.match(wrong_output, lambda: None, other_calls, "faulty_x") is None
