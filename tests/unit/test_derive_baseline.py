"""scripts/derive_baseline.py: a baseline for another torch, from what reproduced there."""

from __future__ import annotations

import shutil
from pathlib import Path

from cgraph_doubles.scripts import load_script
from pytest_cgraph.registry import BASELINE_ROOT, BUGS_FILE, read_bugs, registry_files
from pytest_cgraph.severity import Severity, severity_of_entry, worst

derive_baseline = load_script("derive_baseline")
SOURCE = BASELINE_ROOT / "torch-2.13"


def test_only_reproducing_forms_are_kept_and_each_bug_is_as_bad_as_what_is_left(
    tmp_path: Path,
) -> None:
    bugs = {bug.id: bug for bug in read_bugs(SOURCE)}
    # noop-identity-leaf: a crash form and a metadata form, filed under the worse
    # (metadata: a quiet difference); only the crash reproduced.
    leaf = bugs["noop-identity-leaf"]
    assert leaf.severity is Severity.METADATA
    kept = [f for f in leaf.forms if f.startswith("crash-")]
    dropped_bug = bugs["module-buffer-grad-ahead"]  # none of its forms reproduced
    rechecked = tmp_path / "rechecked"
    rechecked.mkdir()
    for form in kept:
        shutil.copyfile(SOURCE / form, rechecked / form)

    entries, count = derive_baseline.derive(SOURCE, rechecked, tmp_path / "out", "2.11.0")

    out = tmp_path / "out"
    assert (entries, count) == (len(kept), 1)
    (derived,) = read_bugs(out)
    assert derived.id == leaf.id and list(derived.forms) == kept
    assert derived.severity is Severity.CRASH
    assert derived.severity == worst([severity_of_entry((out / f).read_text()) for f in kept])
    assert dropped_bug.id not in (out / BUGS_FILE).read_text()
    assert [path.name for path in registry_files(out)] == sorted(kept)
    # The hand-written preamble is kept, under a line saying where it came from.
    text = (out / BUGS_FILE).read_text()
    assert text.startswith("# Derived from torch-2.13: its entries that reproduced on torch 2.11.0")
    assert "A bug is one mechanism" in text
