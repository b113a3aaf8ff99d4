"""``--cgraph-report-html``: the run's HTML page, written beside or instead of the JSON."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote

import pytest

import cgraph_doubles.inprocess  # noqa: F401  (kept loaded across in-process runs)
from pytest_cgraph.reporting.report import render_html

pytest_plugins = "pytester"

CAMPAIGN = (
    "--cgraph",
    "-p",
    "no:cacheprovider",
    "--cgraph-backend=aot_eager",
    "--cgraph-families=views",
    "--cgraph-examples=2",
    "--cgraph-seed=7",
)

# A marked test whose compiled side is wrong: a new failure with a repro file.
DIFFERS = """
import pytest
import torch


@pytest.mark.cgraph_equivalent(backend="relu_accuracy_error_TESTING_ONLY")
def test_differs():
    return torch.relu(torch.tensor([-1.0, 2.0]))
"""


def test_the_html_page_alone_links_the_repro_of_a_new_failure(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(DIFFERS)
    result = pytester.runpytest_subprocess(
        *CAMPAIGN, "--cgraph-repro-dir=repros", "--cgraph-report-html=out/page.html"
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*cgraph summary*", "HTML report: out/page.html"])
    assert "JSON report" not in result.stdout.str()
    assert not list(pytester.path.glob("*.json"))
    page = (pytester.path / "out" / "page.html").read_text()
    assert "aot_eager" in page and 'id="findings"' in page and 'id="signatures"' in page
    links = [
        unquote(href.split('"', 1)[0])
        for href in page.split('href="')[1:]
        if href.split('"', 1)[0].endswith(".py")
    ]
    assert links == ["../repros/value-output.py"]
    assert (pytester.path / "out" / links[0]).resolve() == pytester.path / "repros" / (
        "value-output.py"
    )
    assert (pytester.path / "repros" / "value-output.py").is_file()


def test_the_html_page_is_drawn_from_the_data_of_the_json_report(
    pytester: pytest.Pytester,
) -> None:
    result = pytester.runpytest(*CAMPAIGN, "--cgraph-report=r.json", "--cgraph-report-html=r.html")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["JSON report: r.json", "HTML report: r.html"])
    data = json.loads((pytester.path / "r.json").read_text())
    expected = render_html(data, run_dir=pytester.path, html_dir=pytester.path)
    assert (pytester.path / "r.html").read_text() == expected


def test_an_html_path_that_cannot_be_written_stops_the_run_at_start(
    pytester: pytest.Pytester,
) -> None:
    (pytester.path / "notes.txt").write_text("a file, not a directory")
    result = pytester.runpytest("--cgraph", "--cgraph-report-html=notes.txt/r.html")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --cgraph-report-html: 'notes.txt/r.html' cannot be written (*); "
            "give a writable path"
        ]
    )


def test_the_ini_key_gives_the_html_path_too(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ncgraph_report_html = from-ini.html\n")
    result = pytester.runpytest(*CAMPAIGN)
    result.assert_outcomes(passed=1)
    assert Path(pytester.path / "from-ini.html").read_text().startswith("<!DOCTYPE html>")


def test_a_new_failure_is_counted_and_shown_by_its_severity(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(DIFFERS)
    result = pytester.runpytest_subprocess(
        *CAMPAIGN, "--cgraph-report=r.json", "--cgraph-report-html=r.html"
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "failures: 1 new signature(s) (1 silent), 1 with a verified repro",
            "  silent: value-output (value, marker, iteration 1, * failing programs): *",
        ]
    )
    data = json.loads((pytester.path / "r.json").read_text())
    assert [failure["severity"] for failure in data["failures"]] == ["silent"]
    assert data["new_by_severity"] == {"silent": 1, "metadata": 0, "crash": 0, "unsupported": 0}
    page = (pytester.path / "r.html").read_text()
    row = page.split('id="signatures"', 1)[1].split("<tbody><tr>", 1)[1].split("</tr>", 1)[0]
    assert row.startswith('<td><span class="badge silent"')
    # kind, family, then the backend that failed: the marker's own
    assert "<td>value</td><td>marker</td><td>relu_accuracy_error_TESTING_ONLY</td>" in row
    assert 'id="new-severities"' in page
