"""The HTML picture of a campaign report: sections, charts, links, escaping, and its command.

``data/cgraph-report.json`` is the report of a real three-program mutation
campaign (a new ``set_`` crash and a known baseline difference), with its
traceback shortened, and a ``timeline``, ``progress`` of two workers,
``workers`` and ``cwd`` added by hand.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

import pytest_cgraph
from pytest_cgraph.reporting.report import (
    NOT_RECORDED,
    ReportError,
    check_report,
    nice_ticks,
    render_html,
    repro_href,
    write_html,
)

SAMPLE = Path(__file__).parent / "data" / "cgraph-report.json"
NEW_KEYS = ("timeline", "progress", "workers", "cwd")
HOSTILE = "</td><script>alert('x')</script><img src=x onerror=\"alert(1)\">&amp;"


def sample() -> dict[str, Any]:
    return json.loads(SAMPLE.read_text())


class Page(HTMLParser):
    """What a browser's parser would build: every tag with its attributes, and the text."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def ids(self) -> set[str]:
        return {attrs["id"] or "" for _, attrs in self.tags if "id" in attrs}

    def of(self, tag: str) -> list[dict[str, str | None]]:
        return [attrs for name, attrs in self.tags if name == tag]


def test_the_page_shows_the_run_its_charts_and_its_tables() -> None:
    page = render_html(sample())
    parsed = Page(page)
    assert {
        "findings-chart",
        "throughput-chart",
        "signatures",
        "known",
        "workers-table",
        "families-table",
        "features",
    } <= parsed.ids()
    text = " ".join(parsed.text)
    for shown in ("cudagraphs", "2.13.0+cpu", "1119378749", "22.4 s", "220", "gw0", "gw1"):
        assert shown in text
    assert NOT_RECORDED not in page
    # The workers' programs per second: 112 programs over 22.1 s, 108 over 22.1 s.
    rows = page.split('id="workers-table"', 1)[1].split("</table>", 1)[0]
    assert "<td class='n'>5.1</td>" in rows and "<td class='n'>4.9</td>" in rows
    assert not parsed.of("script")


def test_the_page_gives_the_iterations_the_checks_ran_not_the_sessions_option() -> None:
    data = sample()
    data["iters"] = 5
    data["iterations"] = {"4": 3, "6": 1}

    def shown(data: dict[str, Any]) -> str:
        text = " ".join(Page(render_html(data)).text)
        return re.sub(r"\s+", " ", text.split("iterations", 1)[1])[:8]

    assert shown(data).startswith(" 4-6 ")
    data["iterations"] = {"4": 3}
    assert shown(data).startswith(" 4 ")
    del data["iterations"]  # a report of a version without the counts
    assert shown(data).startswith(" 5 ")


def test_known_bugs_a_marked_test_met_are_not_said_to_be_no_failures() -> None:
    data = sample()
    assert "Known, seen again (not failures)" in render_html(data)
    data["families"] = {**data["families"], "marker": 1}
    assert (
        "Known, seen again (not new; a marked test or fixture check that meets one fails "
        "all the same)" in render_html(data)
    )


def test_the_findings_chart_steps_up_once_per_signature_and_runs_to_the_end() -> None:
    data = sample()
    data["timeline"].append(
        {"seconds": 12.5, "programs": 150, "signature": "value-output", "new": True}
    )
    page = render_html(data)
    chart = page.split('id="findings-chart"', 1)[1].split("</svg>", 1)[0]
    paths = {
        attrs["data-series"]: attrs["d"]
        for attrs in Page(f"<svg {chart}").of("path")
        if attrs.get("data-series")
    }
    # Two new signatures (at 1.71 s and 12.5 s), one known; each line ends at the run's end.
    assert paths["new"].count("V") == 2 and paths["known"].count("V") == 1
    assert paths["new"].rsplit("H", 1)[1] == paths["known"].rsplit("H", 1)[1]
    assert "new at 12.5 s, after 150 programs: value-output" in chart
    assert "known at 0.9 s, after 2 programs: crash-compiled_call-" in chart


def test_the_throughput_chart_has_a_line_per_worker_of_rates_between_samples() -> None:
    page = render_html(sample())
    chart = page.split('id="throughput-chart"', 1)[1].split("</svg>", 1)[0]
    series = [attrs["data-series"] for attrs in Page(f"<svg {chart}").of("path")]
    assert series == ["gw0", "gw1", "all workers"]
    # gw0 checked 27 programs by 5 s and 53 by 10 s: 5.2 a second in between.
    assert "gw0: 5.2 programs/s from 5.0 s to 10.0 s" in chart
    assert "all workers: 10.2 programs/s from 5.0 s to 10.0 s" in chart
    # Four intervals between five samples, per line.
    assert chart.count("<circle") == 12


def test_the_least_used_features_are_listed_first_and_highlighted() -> None:
    data = sample()
    data["features"] = {"add": 9, "mul": 1, "t_": 4, "sin": 2, "cos": 3, "exp": 7, "log": 8}
    features = render_html(data).split('id="features"', 1)[1].split("</div>", 1)[0]
    rows = re.findall(r"<tr class='(least|)'><td>([^<]*)</td>", features)
    assert [name for _, name in rows] == ["mul", "sin", "cos", "t_", "exp", "log", "add"]
    assert [name for least, name in rows if least] == ["mul", "sin", "cos", "t_", "exp"]


def test_strings_from_the_report_are_escaped_everywhere() -> None:
    data = sample()
    failure = data["failures"][0]
    failure["signature"] = failure["kind"] = failure["place"] = HOSTILE
    failure["case"]["source"] = f"def program():\n    return '{HOSTILE}'\n"
    failure["difference"]["message"] = HOSTILE
    failure["repro"] = f"cgraph-repros/{HOSTILE}.py"
    data["known"][0]["signature"] = HOSTILE
    data["timeline"][1]["signature"] = HOSTILE
    data["features"][HOSTILE] = 1
    data["families"][HOSTILE] = 1
    data["backend"] = HOSTILE
    data["skipped"][HOSTILE] = 1
    data["workers"][HOSTILE] = data["workers"].pop("gw1")
    for entry in data["progress"]:
        entry["workers"][HOSTILE] = entry["workers"].pop("gw1")
    page = render_html(data)
    parsed = Page(page)
    assert HOSTILE not in page
    assert not parsed.of("script") and not parsed.of("img")
    assert not [attrs for _, attrs in parsed.tags if any(name.startswith("on") for name in attrs)]
    # What was escaped reads back as the original text.
    assert HOSTILE in "".join(parsed.text)
    assert any(attrs.get("data-series") == HOSTILE for attrs in parsed.of("path"))


def test_repro_links_are_relative_to_the_page_and_absolute_ones_stay_absolute(
    tmp_path: Path,
) -> None:
    data = sample()
    data["cwd"] = str(tmp_path / "project")
    html_dir = tmp_path / "reports" / "html"
    page = render_html(data, html_dir=html_dir)
    links = {attrs["title"]: attrs["href"] for attrs in Page(page).of("a")}
    new, known = data["failures"][0]["repro"], data["known"][0]["repro"]
    assert links[new] == f"../../project/{new}"
    assert (html_dir / links[new]).resolve() == (tmp_path / "project" / new).resolve()
    assert links[known] == f"file://{known}"


def test_a_repro_link_is_a_url_whatever_the_file_is_called() -> None:
    assert repro_href("repros/a #1?.py", "/run", Path("/run")) == "repros/a%20%231%3F.py"
    assert repro_href("/abs/a b.py", "/run", Path("/elsewhere")) == "file:///abs/a%20b.py"
    # Without the run's directory the page is taken to sit in it.
    assert repro_href("repros/x.py", None, Path("/elsewhere")) == "repros/x.py"


def test_without_cwd_relative_repros_are_rooted_at_the_given_run_directory(
    tmp_path: Path,
) -> None:
    data = sample()
    del data["cwd"]
    page = render_html(data, run_dir=tmp_path / "run", html_dir=tmp_path / "run" / "out")
    new = data["failures"][0]["repro"]
    assert f'href="../{new}"' in page


def test_a_report_written_before_the_new_keys_still_renders_and_says_what_is_missing() -> None:
    data = sample()
    for key in NEW_KEYS:
        del data[key]
    page = render_html(data)
    ids = Page(page).ids()
    assert {"findings-chart", "throughput-chart", "workers-table"}.isdisjoint(ids)
    assert page.count(NOT_RECORDED) == 3
    for section in ("findings", "throughput", "workers"):
        body = page.split(f'id="{section}"', 1)[1].split("</figure>", 1)[0].split("</section>")[0]
        assert NOT_RECORDED in body, section
    # The rest is there, the repro link as written in the report.
    assert {"signatures", "known", "families-table", "features"} <= ids
    assert f'href="{data["failures"][0]["repro"]}"' in page


def test_an_empty_timeline_draws_flat_lines_and_one_sample_draws_no_rate() -> None:
    data = sample()
    data["timeline"] = []
    data["progress"] = data["progress"][:1]
    page = render_html(data)
    assert 'id="findings-chart"' in page and "No failing program in this run." in page
    assert 'id="throughput-chart"' not in page and "no rate to draw" in page


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ([1, 2], "a JSON array, not an object"),
        ({"programs": 3}, "no 'failures' key"),
        ({"tests": 1}, "no 'programs' or 'failures' key"),
        ({"programs": 3, "failures": {}}, "'failures' is a JSON object, expected an array"),
        ({"programs": "3", "failures": []}, "'programs' is a JSON string, expected a number"),
        ({"programs": 3, "failures": [1]}, "'failures' entry 0 is a JSON number"),
        ({"programs": 3, "failures": [], "workers": []}, "'workers' is a JSON array"),
    ],
)
def test_what_is_not_a_report_is_refused_in_one_line(data: Any, says: str) -> None:
    with pytest.raises(ReportError, match="give a report written by pytest --cgraph") as error:
        check_report(data)
    assert says in str(error.value) and "\n" not in str(error.value)


def test_a_report_written_while_the_run_goes_on_says_so() -> None:
    data = sample()
    assert 'id="running"' not in render_html(data)
    data["complete"] = False
    assert 'id="running"' in render_html(data)
    data["complete"] = True
    assert 'id="running"' not in render_html(data)


def test_a_minimal_report_renders() -> None:
    page = render_html({"programs": 0, "failures": []})
    assert "No new failure." in page and page.count(NOT_RECORDED) >= 3


def test_ticks_are_round_and_cover_the_highest_value() -> None:
    assert nice_ticks(22.4) == [0, 5, 10, 15, 20, 25]
    assert nice_ticks(2, whole=True) == [0, 1, 2]
    assert nice_ticks(0.37) == [0, 0.1, 0.2, 0.3, 0.4]
    assert nice_ticks(0) == [0, 1]


def test_write_html_replaces_the_page_whole_or_not_at_all(tmp_path: Path) -> None:
    target = tmp_path / "out" / "page.html"
    assert write_html(SAMPLE, target) == target
    written = target.read_text()
    assert written.startswith("<!DOCTYPE html>") and str(SAMPLE) in written
    with pytest.raises(ReportError):
        write_html({"programs": 1}, target)
    assert target.read_text() == written
    assert sorted(path.name for path in target.parent.iterdir()) == ["page.html"]
    # Readable by others as any file the user writes (umask permitting), not owner-only.
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask


def test_write_html_of_a_json_path_roots_relative_repros_at_its_directory(tmp_path: Path) -> None:
    data = sample()
    del data["cwd"]
    report = tmp_path / "run" / "r.json"
    report.parent.mkdir()
    report.write_text(json.dumps(data))
    write_html(report, tmp_path / "html" / "r.html")
    new = data["failures"][0]["repro"]
    assert f'href="../run/{new}"' in (tmp_path / "html" / "r.html").read_text()


# --- python -m pytest_cgraph.report --------------------------------------------------------


def run_command(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    package_root = str(Path(pytest_cgraph.__file__).resolve().parents[1])
    inherited = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, inherited]))}
    return subprocess.run(
        [sys.executable, "-m", "pytest_cgraph.report", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=60,
    )


def test_the_command_writes_the_page_beside_the_report(tmp_path: Path) -> None:
    report = tmp_path / "cgraph-report.json"
    report.write_text(SAMPLE.read_text())
    done = run_command("cgraph-report.json", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout == "HTML report: cgraph-report.html\n"
    assert 'id="findings-chart"' in (tmp_path / "cgraph-report.html").read_text()
    done = run_command("cgraph-report.json", "-o", "site/index.html", cwd=tmp_path)
    assert done.returncode == 0 and (tmp_path / "site" / "index.html").is_file()


BAD_INPUT = [
    pytest.param(None, "nope.json", "nope.json: no such file; give a report", id="missing"),
    pytest.param("{not json", "r.json", "r.json is not JSON (Expecting property name", id="json"),
    pytest.param(b"\xff\xfe{", "r.json", "r.json is not JSON (not UTF-8 text)", id="binary"),
    pytest.param('{"tests": 3}', "r.json", "r.json is not a pytest-cgraph report", id="foreign"),
    pytest.param("[]", "r.json", "r.json is not a pytest-cgraph report (a JSON array", id="array"),
]


@pytest.mark.parametrize(("content", "name", "says"), BAD_INPUT)
def test_bad_input_is_one_line_on_stderr_and_exit_code_2(
    tmp_path: Path, content: str | bytes | None, name: str, says: str
) -> None:
    if isinstance(content, bytes):
        (tmp_path / name).write_bytes(content)
    elif content is not None:
        (tmp_path / name).write_text(content)
    done = run_command(name, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: {says}"), done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stdout == "" and not list(tmp_path.glob("*.html"))


def test_an_output_that_cannot_be_written_is_one_line_too(tmp_path: Path) -> None:
    (tmp_path / "r.json").write_text(SAMPLE.read_text())
    (tmp_path / "taken").mkdir()
    done = run_command("r.json", "-o", "taken", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("error: cannot write taken (")
    assert done.stderr.endswith("give a writable HTML path with -o\n")
    assert done.stderr.count("\n") == 1
    same = run_command("r.json", "-o", "r.json", cwd=tmp_path)
    assert (same.returncode, same.stderr.count("\n")) == (2, 1)
    assert "is the report itself" in same.stderr


def test_a_usage_error_is_one_line_too(tmp_path: Path) -> None:
    done = run_command(cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("error: the following arguments are required: report")
    assert done.stderr.count("\n") == 1


def test_rendering_needs_neither_torch_nor_hypothesis(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, pytest_cgraph.reporting.report as r; "
            f"r.write_html({str(SAMPLE)!r}, {str(tmp_path / 'p.html')!r}); "
            "print(sorted(m for m in ('torch', 'hypothesis') if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.strip() == "[]", done.stderr


def test_rendering_leaves_the_report_unchanged() -> None:
    data = sample()
    before = copy.deepcopy(data)
    render_html(data)
    assert data == before


def cells(page: str, table_id: str) -> list[list[str]]:
    """The text of each cell of each body row of the table ``table_id``."""
    body = page.split(f'id="{table_id}"', 1)[1].split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [
        [" ".join(Page(cell).text).strip() for cell in row.split("</td>")[:-1]]
        for row in body.split("<tr>")[1:]
    ]


def test_findings_show_their_severity_silent_first_and_known_ones_by_bug() -> None:
    data = sample()
    crash = data["failures"][0]
    crash["severity"] = "crash"
    data["failures"].append(
        {**copy.deepcopy(crash), "signature": "value-output", "severity": "silent"}
    )
    known = data["known"][0]
    title = "AOTAutograd: <a no-op> returns an alias"
    data["known"] = [
        {**known, "bug": None, "title": None, "severity": "crash"},
        {
            **known,
            "signature": "aliasing-a",
            "hits": 2,
            "bug": "alias",
            "severity": "metadata",
            "title": title,
        },
        {
            **known,
            "signature": "aliasing-b",
            "hits": 3,
            "bug": "alias",
            "severity": "metadata",
            "title": title,
        },
    ]
    page = render_html(data)
    assert "<th>severity</th>" in page.split('id="signatures"', 1)[1]
    assert [(row[0], row[1].split()[0]) for row in cells(page, "signatures")] == [
        ("silent", "value-output"),
        ("crash", crash["signature"]),
    ]
    counts = page.split('id="new-severities"', 1)[1].split("</p>", 1)[0]
    assert " ".join(Page(counts).text).split() == [
        ">New",
        "signatures",
        "by",
        "severity:",
        "silent",
        "1",
        "·",
        "crash",
        "1",
    ]
    # One row per bug, metadata before crash, the bug's hits summed over its signatures.
    name = Path(known["repro"]).name
    assert cells(page, "known") == [
        ["metadata", f"alias {title}", "aliasing-a aliasing-b", "5", f"{name} {name}"],
        ["crash", "—", known["signature"], "1", name],
    ]
    assert "&lt;a no-op&gt;" in page
    known_counts = page.split('id="known-severities"', 1)[1].split("</p>", 1)[0]
    assert " ".join(Page(known_counts).text).split()[-5:] == ["metadata", "1", "·", "crash", "1"]


def test_a_report_without_severities_still_lists_its_findings() -> None:
    data = sample()
    for record in (*data["failures"], *data["known"]):
        record.pop("severity", None)
    page = render_html(data)
    assert data["failures"][0]["signature"] in page and data["known"][0]["signature"] in page
    assert 'class="badge' not in page and 'id="new-severities"' not in page


def test_a_known_bug_of_a_shared_campaign_shows_its_hits_per_backend() -> None:
    data = sample()
    data["backends"] = {"cudagraphs": 10, "inductor": 6}
    data["known"][0]["backends"] = {"inductor": 4, "cudagraphs": 1}
    assert "cudagraphs 1, inductor 4" in render_html(data)
    # One backend: nothing to tell apart.
    data["backends"] = {"cudagraphs": 10}
    assert "cudagraphs 1, inductor 4" not in render_html(data)


def test_a_known_bug_not_to_file_says_why_on_the_page() -> None:
    data = sample()
    known = data["known"][0]
    standing = "outside torch.compile's contract: a documented <limitation>"
    data["known"] = [
        {**known, "bug": "alias", "title": "t", "severity": "metadata", "standing": standing}
    ]
    page = render_html(data)
    name = Path(known["repro"]).name
    assert cells(page, "known") == [
        ["metadata", f"alias t {standing}", known["signature"], str(known["hits"]), name]
    ]
    assert "documented &lt;limitation&gt;" in page
