"""A campaign's JSON report as one static HTML page: ``python -m pytest_cgraph.report``.

The JSON report (``--cgraph-report``) is complete but hard to take in at a
glance; this page shows the same run as a picture: what ran, when each
distinct failure was first found, how fast each worker checked programs,
which ops the programs exercised, and every signature with its severity
(silent first: a wrong value that nothing warns of matters most) and a link
to its repro file.

The page is self-contained (inline CSS and SVG, no JavaScript, nothing
fetched), so it can be opened from disk, attached to a CI run or mailed.
Every string that comes from the report is escaped: signatures, messages
and programs are produced by fuzzed code and may hold anything.

Standard library only, and no torch or hypothesis: rendering a report must
be cheap and possible where torch is not installed.

    python -m pytest_cgraph.report cgraph-report.json [-o cgraph-report.html]

Reports written before the run recorded ``timeline``, ``progress``,
``workers`` and ``cwd`` still render; their sections say so. A report
rewritten while its run goes on (``complete`` false) says so at the top.
"""

from __future__ import annotations

import argparse
import functools
import html
import json
import math
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import quote

from pytest_cgraph.errors import CgraphError

#: Keys every report has had since the first version: what makes a JSON file a report.
REQUIRED_KEYS = ("programs", "failures")

#: The JSON type of each top-level key the page reads, when present.
KEY_TYPES: dict[str, str] = {
    "programs": "number",
    "drawn": "number",
    "invalid": "number",
    "seconds": "number",
    "failures": "array",
    "known": "array",
    "families": "object",
    "backends": "object",
    "features": "object",
    "skipped": "object",
    "invalid_reasons": "object",
    "timeline": "array",
    "progress": "array",
    "workers": "object",
    "cwd": "string",
}

NOT_RECORDED = "not recorded in this report"

#: The features table is split into at most this many side-by-side columns ...
FEATURE_COLUMNS = 3
#: ... of at least this many rows.
FEATURE_ROWS = 20

#: How many of the least used features are highlighted (ties with the last included).
LEAST_USED = 5

#: The severities of a finding, worst first: the order a bug list is read in. The
#: words of ``pytest_cgraph.registry.severity``, spelt here so that rendering stays free of
#: the package's other modules.
SEVERITIES = ("silent", "metadata", "crash", "unsupported")

#: What each severity means, as a badge's tooltip.
SEVERITY_NOTES = {
    "silent": "wrong values, mutations or gradients, and nothing warns",
    "metadata": "wrong metadata, aliasing or identity only; the values agree",
    "crash": "the compiled program raises, hangs or dies where eager runs",
    "unsupported": "torch says it does not support this yet: a stated limitation, not a bug",
}

NEW_COLOR = "#c62828"
KNOWN_COLOR = "#607d8b"
WORKER_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf")


class ReportError(CgraphError, ValueError):
    """The input is not a report this module can render; the message says why and what to do."""


# --- reading -------------------------------------------------------------------------------


def load_report(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and check a JSON report; :class:`ReportError` says, in one line, what is wrong."""
    where = Path(path)
    hint = "give a report written by pytest --cgraph --cgraph-report PATH"
    try:
        text = where.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReportError(f"{where}: no such file; {hint}") from None
    except IsADirectoryError:
        raise ReportError(f"{where} is a directory; {hint}") from None
    except UnicodeDecodeError:
        raise ReportError(f"{where} is not JSON (not UTF-8 text); {hint}") from None
    except OSError as error:
        raise ReportError(f"{where} cannot be read ({error.strerror or error}); {hint}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ReportError(
            f"{where} is not JSON ({error.msg} at line {error.lineno}, column {error.colno}); "
            f"{hint}"
        ) from None
    check_report(data, str(where))
    report: dict[str, Any] = data
    return report


def check_report(data: Any, name: str = "the report") -> None:
    """Refuse what is not a report, before rendering, so that the page never half-renders.

    Only the shape the page relies on is checked: an object with the keys
    every report has, and the right JSON type for each key it reads.
    """
    hint = "give a report written by pytest --cgraph --cgraph-report PATH"
    if not isinstance(data, dict):
        raise ReportError(
            f"{name} is not a pytest-cgraph report (a JSON {_json_type(data)}, "
            f"not an object); {hint}"
        )
    missing = [key for key in REQUIRED_KEYS if key not in data]
    if missing:
        raise ReportError(
            f"{name} is not a pytest-cgraph report (no {' or '.join(map(repr, missing))} "
            f"key); {hint}"
        )
    for key, expected in KEY_TYPES.items():
        value = data.get(key)
        if value is None or _json_type(value) == expected:
            continue
        raise ReportError(
            f"{name} is not a pytest-cgraph report ({key!r} is a JSON {_json_type(value)}, "
            f"expected {'an' if expected[0] in 'aeiou' else 'a'} {expected}); {hint}"
        )
    for key in ("failures", "known", "timeline", "progress"):
        for index, entry in enumerate(data.get(key) or ()):
            if not isinstance(entry, dict):
                raise ReportError(
                    f"{name} is not a pytest-cgraph report ({key!r} entry {index} is a JSON "
                    f"{_json_type(entry)}, expected an object); {hint}"
                )


def _json_type(value: Any) -> str:
    """The JSON name of a decoded value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _number(value: Any) -> float | None:
    """A finite number, or ``None``: the report is read defensively, field by field."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _text(value: Any, missing: str = "—") -> str:
    """A value as escaped text; ``missing`` for an absent one."""
    return html.escape(missing if value is None or value == "" else str(value))


def _iterations(data: Mapping[str, Any]) -> Any:
    """The iterations the run's checks ran (``4``, or ``4-5`` where marked tests or
    fixture checks ran their own ``iters``), as the terminal summary says them;
    the session's ``iters`` for a report without the counts."""
    counts = data.get("iterations")
    used = (
        sorted(int(key) for key, count in counts.items() if str(key).isdigit() and count)
        if isinstance(counts, dict)
        else []
    )
    if not used:
        return data.get("iters")
    return str(used[0]) if used[0] == used[-1] else f"{used[0]}-{used[-1]}"


def _known_verdict(data: Mapping[str, Any]) -> str:
    """What the known bugs seen again cost the run, as the terminal summary says it:
    a campaign passes over them, a marked test or fixture check fails on one."""
    families = data.get("families")
    if isinstance(families, dict) and (families.get("marker") or families.get("fixture")):
        return "not new; a marked test or fixture check that meets one fails all the same"
    return "not failures"


def _backend_of(failure: dict[str, Any]) -> Any:
    """The backend a failure was found on; reports before the ``backend`` key hold it
    in the case alone."""
    case = failure.get("case")
    return failure.get("backend") or (case.get("backend") if isinstance(case, dict) else None)


def _plain_count(value: Any) -> str:
    """A count or an amount: integers whole, others to 3 significant digits (not escaped)."""
    number = _number(value)
    if number is None:
        return "—" if value is None or value == "" else str(value)
    return f"{int(number):,}" if number.is_integer() else f"{number:,.3g}"


def _count(value: Any) -> str:
    """:func:`_plain_count`, escaped for the page."""
    return html.escape(_plain_count(value))


def _seconds(value: Any) -> str:
    number = _number(value)
    return "—" if number is None else f"{number:,.1f} s"


# --- links to repro files ------------------------------------------------------------------


def repro_href(repro: str, run_dir: str | None, html_dir: Path | None) -> str:
    """The ``href`` of a repro file, for a page opened from disk.

    Repro paths in a report are relative to the run's working directory
    (``run_dir``) unless absolute. A relative path is rewritten relative to
    the directory the page is written to, so that the link survives moving
    the run's directory and the page together; an absolute path becomes a
    ``file://`` URL. Without both directories the path is left as it is,
    i.e. the page is assumed to sit in the run's directory.
    """
    path = Path(repro)
    if path.is_absolute():
        return path.as_uri()
    if run_dir is None or html_dir is None:
        return quote(path.as_posix())
    target = Path(run_dir) / path
    try:
        relative = os.path.relpath(target, html_dir)
    except ValueError:  # another drive: no relative path exists
        return target.as_uri() if target.is_absolute() else quote(target.as_posix())
    return quote(Path(relative).as_posix())


# --- SVG charts ----------------------------------------------------------------------------


@dataclass
class Series:
    """One line of a chart: points in data units, drawn as steps or as a polyline.

    ``notes`` are the tooltips (SVG ``<title>``) of the points, one per point
    or none.
    """

    label: str
    color: str
    points: list[tuple[float, float]]
    notes: list[str] = field(default_factory=list)
    steps: bool = False
    dashed: bool = False


WIDTH, HEIGHT = 600, 260
LEFT, RIGHT, BOTTOM = 52, 16, 40
#: Height of one row of the legend, above the plot.
LEGEND_ROW = 18


def nice_ticks(high: float, count: int = 5, whole: bool = False) -> list[float]:
    """Round tick values from 0 to at least ``high``: steps of 1, 2 or 5 times a power of 10.

    ``whole`` keeps the step a whole number (counts of signatures).
    """
    if high <= 0:
        return [0.0, 1.0]
    raw = high / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    if whole:
        step = max(1.0, math.ceil(step))
    ticks = [0.0]
    while ticks[-1] < high - 1e-9 * step:
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def _legend(series: Sequence[Series]) -> tuple[str, int]:
    """The legend's SVG, in as many rows as the labels need, and its height."""
    parts = []
    x, row = LEFT, 0
    for line in series:
        width = 34 + 7 * len(line.label)
        if x > LEFT and x + width > WIDTH - RIGHT:
            x, row = LEFT, row + 1
        y = 12 + row * LEGEND_ROW
        dash = ' stroke-dasharray="5 3"' if line.dashed else ""
        parts.append(
            f'<line x1="{x}" x2="{x + 18}" y1="{y}" y2="{y}" '
            f'stroke="{line.color}" stroke-width="2.5"{dash}/>'
            f'<text class="legend" x="{x + 22}" y="{y + 4}">{html.escape(line.label)}</text>'
        )
        x += width
    return "".join(parts), (row + 1) * LEGEND_ROW + 12


def svg_chart(
    chart_id: str,
    title: str,
    series: Sequence[Series],
    *,
    x_label: str,
    y_label: str,
    x_end: float,
    whole_y: bool = False,
) -> str:
    """A line or step chart as inline SVG, with axes, grid, legend and point tooltips.

    ``x_end`` is where the x axis (and every step series) ends: the run's end,
    so that a flat tail shows the time nothing new was found.
    """
    legend, top = _legend(series)
    height = HEIGHT + top
    xs = [x for line in series for x, _ in line.points]
    ys = [y for line in series for _, y in line.points]
    x_ticks = nice_ticks(max([x_end, *xs], default=0.0))
    y_ticks = nice_ticks(max(ys, default=0.0), whole=whole_y)
    x_max, y_max = x_ticks[-1], y_ticks[-1]
    plot_width, plot_height = WIDTH - LEFT - RIGHT, HEIGHT - BOTTOM
    bottom = height - BOTTOM

    def sx(x: float) -> float:
        return round(LEFT + plot_width * x / x_max, 1)

    def sy(y: float) -> float:
        return round(top + plot_height * (1 - y / y_max), 1)

    parts = [
        f'<svg id="{chart_id}" class="chart" viewBox="0 0 {WIDTH} {height}" '
        f'xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{html.escape(title)}">',
        f"<title>{html.escape(title)}</title>",
    ]
    for tick in y_ticks:
        parts.append(
            f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{sy(tick)}" y2="{sy(tick)}"/>'
            f'<text class="tick" x="{LEFT - 6}" y="{sy(tick) + 4}" text-anchor="end">'
            f"{tick:g}</text>"
        )
    for tick in x_ticks:
        parts.append(
            f'<line class="grid" x1="{sx(tick)}" x2="{sx(tick)}" y1="{top}" y2="{bottom}"/>'
            f'<text class="tick" x="{sx(tick)}" y="{bottom + 16}" '
            f'text-anchor="middle">{tick:g}</text>'
        )
    parts.append(
        f'<line class="axis" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{bottom}" y2="{bottom}"/>'
        f'<line class="axis" x1="{LEFT}" x2="{LEFT}" y1="{top}" y2="{bottom}"/>'
        f'<text class="label" x="{LEFT + plot_width / 2}" y="{height - 6}" '
        f'text-anchor="middle">{html.escape(x_label)}</text>'
        f'<text class="label" transform="translate(14 {top + plot_height / 2}) rotate(-90)" '
        f'text-anchor="middle">{html.escape(y_label)}</text>'
    )
    parts.append(legend)
    for line in series:
        parts.append(_series_svg(line, sx, sy, x_end))
    parts.append("</svg>")
    return "".join(parts)


def _series_svg(
    line: Series, sx: Callable[[float], float], sy: Callable[[float], float], x_end: float
) -> str:
    """One series: its path, then a dot with a tooltip per point."""
    dash = ' stroke-dasharray="5 3"' if line.dashed else ""
    if line.steps:
        # A running count: flat until each point, then up; flat to the run's end.
        commands = [f"M{sx(0)} {sy(0)}"]
        for x, y in line.points:
            commands.append(f"H{sx(x)} V{sy(y)}")
        commands.append(f"H{sx(max(x_end, *(x for x, _ in line.points), 0.0))}")
    else:
        commands = [
            f"{'M' if index == 0 else 'L'}{sx(x)} {sy(y)}"
            for index, (x, y) in enumerate(line.points)
        ]
    parts = []
    if commands:
        parts.append(
            f'<path class="series" data-series="{html.escape(line.label)}" '
            f'd="{" ".join(commands)}" fill="none" stroke="{line.color}" '
            f'stroke-width="2.5"{dash}/>'
        )
    for index, (x, y) in enumerate(line.points):
        note = line.notes[index] if index < len(line.notes) else ""
        parts.append(
            f'<circle cx="{sx(x)}" cy="{sy(y)}" r="3.5" fill="{line.color}">'
            f"<title>{html.escape(note)}</title></circle>"
        )
    return "".join(parts)


# --- sections ------------------------------------------------------------------------------


def _section(section_id: str, title: str, body: str) -> str:
    return f'<section id="{section_id}"><h2>{html.escape(title)}</h2>{body}</section>'


def _not_recorded(what: str) -> str:
    return f'<p class="missing">{html.escape(what)}: {NOT_RECORDED}.</p>'


def _table(table_id: str | None, headers: Sequence[str], rows: Iterable[str]) -> str:
    head = "".join(f"<th>{html.escape(header)}</th>" for header in headers)
    body = "".join(rows)
    ident = f' id="{table_id}"' if table_id else ""
    return f"<table{ident}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _header(data: Mapping[str, Any], source: str | None) -> str:
    """The run at a glance: settings on one line, then the counts that matter most."""
    settings = [
        ("backend", _text(data.get("backend"))),
        ("device", _text(data.get("device"))),
        ("torch", _text(data.get("torch"))),
        ("seed", _text(data.get("seed"))),
        ("iterations", _text(_iterations(data))),
        ("wall", _seconds(data.get("seconds"))),
    ]
    new = _number(data.get("new_signatures"))
    if new is None:
        new = float(len({entry.get("signature") for entry in data.get("failures") or ()}))
    cards = [
        ("programs checked", _count(data.get("programs")), ""),
        ("drawn", _count(data.get("drawn")), ""),
        ("invalid (eager raised)", _count(data.get("invalid")), ""),
        ("new signatures", _count(new), " alarm" if new else ""),
        ("verified repros", _count(data.get("verified_repros")), ""),
        ("known seen again", _count(len(data.get("known") or ())), ""),
    ]
    origin = f'<p class="source">from {html.escape(source)}</p>' if source else ""
    if data.get("complete") is False:
        # A report rewritten during the run: a reader must not take it for the result.
        origin += '<p class="missing" id="running">Written while the run was going on: '
        origin += "these are the counts so far.</p>"
    return (
        "<header><h1>pytest-cgraph campaign</h1>"
        + '<p class="settings">'
        + " · ".join(f"{name} <b>{value}</b>" for name, value in settings)
        + "</p>"
        + '<div class="cards">'
        + "".join(
            f'<div class="card{extra}"><span class="value">{value}</span>'
            f'<span class="name">{html.escape(name)}</span></div>'
            for name, value, extra in cards
        )
        + "</div>"
        + origin
        + "</header>"
    )


def _findings_chart(data: Mapping[str, Any]) -> str:
    """Distinct signatures found against time: a flattening curve says the search is dry."""
    title = "Findings over time"
    timeline = data.get("timeline")
    if timeline is None:
        return _figure("findings", title, _not_recorded("the time each signature was found"))
    found: dict[bool, Series] = {
        True: Series("new", NEW_COLOR, [], steps=True),
        False: Series("known", KNOWN_COLOR, [], steps=True, dashed=True),
    }
    events = sorted(
        (entry for entry in timeline if _number(entry.get("seconds")) is not None),
        key=lambda entry: entry["seconds"],
    )
    plotted: set[tuple[Any, Any]] = set()
    for entry in events:
        # A shared campaign tells when each backend first met a known entry:
        # the chart counts the entry once, at its first meeting.
        if entry.get("new") is not True:
            key = (entry.get("signature"), entry.get("repro"))
            if key in plotted:
                continue
            plotted.add(key)
        line = found[entry.get("new") is True]
        seconds = float(entry["seconds"])
        line.points.append((seconds, float(len(line.points) + 1)))
        line.notes.append(
            f"{line.label} at {seconds:.1f} s, after "
            f"{_plain_count(entry.get('programs'))} programs: {entry.get('signature', '')}"
        )
    end = _number(data.get("seconds")) or 0.0
    chart = svg_chart(
        "findings-chart",
        "Distinct signatures found over time, new and known",
        [found[True], found[False]],
        x_label="seconds since the run started",
        y_label="distinct signatures",
        x_end=end,
        whole_y=True,
    )
    note = "" if events else '<p class="note">No failing program in this run.</p>'
    return _figure("findings", title, chart + note)


def _worker_order(name: str) -> tuple[str, int, str]:
    """gw2 before gw10: workers sorted by their number, not their text."""
    prefix = name.rstrip("0123456789")
    digits = name[len(prefix) :]
    return (prefix, int(digits) if digits else -1, name)


def _throughput_chart(data: Mapping[str, Any]) -> str:
    """Programs per second per worker between consecutive samples: a falling line shows a
    worker slowed (shrinking, memory, a long program)."""
    title = "Programs per second per worker"
    progress = data.get("progress")
    if progress is None:
        return _figure("throughput", title, _not_recorded("progress samples"))
    samples = sorted(
        (sample for sample in progress if _number(sample.get("seconds")) is not None),
        key=lambda sample: sample["seconds"],
    )
    names = sorted(
        {
            str(name)
            for sample in samples
            if isinstance(sample.get("workers"), dict)
            for name in sample["workers"]
        },
        key=_worker_order,
    )
    lines = [
        Series(name, WORKER_COLORS[index % len(WORKER_COLORS)], [])
        for index, name in enumerate(names)
    ]
    for line in lines:
        _add_rates(line, samples, functools.partial(_worker_programs, name=line.label))
    if len(lines) > 1:
        total = Series("all workers", "#333333", [], dashed=True)
        _add_rates(total, samples, lambda sample: _number(sample.get("programs")))
        lines.append(total)
    drawn = [line for line in lines if line.points]
    if not drawn:
        return _figure(
            "throughput",
            title,
            '<p class="note">Fewer than two progress samples: no rate to draw.</p>',
        )
    chart = svg_chart(
        "throughput-chart",
        "Programs checked per second, per worker, between progress samples",
        drawn,
        x_label="seconds since the run started",
        y_label="programs per second",
        x_end=_number(data.get("seconds")) or 0.0,
    )
    return _figure("throughput", title, chart)


def _worker_programs(sample: Mapping[str, Any], name: str) -> float | None:
    """The programs one worker had checked by the time of ``sample``."""
    workers = sample.get("workers")
    entry = workers.get(name) if isinstance(workers, dict) else None
    return _number(entry.get("programs")) if isinstance(entry, dict) else None


def _add_rates(
    line: Series,
    samples: Sequence[Mapping[str, Any]],
    programs_of: Callable[[Mapping[str, Any]], float | None],
) -> None:
    """Points of ``line``: programs per second between consecutive samples that count some.

    The rate is plotted at the end of its interval. Samples are cumulative,
    so a count that goes down (a replaced worker starting again from 0)
    gives no point rather than a negative rate.
    """
    previous: tuple[float, float] | None = None
    for sample in samples:
        programs = programs_of(sample)
        if programs is None:
            continue
        at = float(sample["seconds"])
        if previous is not None and at > previous[0] and programs >= previous[1]:
            rate = (programs - previous[1]) / (at - previous[0])
            line.points.append((at, rate))
            line.notes.append(
                f"{line.label}: {rate:.1f} programs/s from {previous[0]:.1f} s to {at:.1f} s"
            )
        previous = (at, programs)


def _figure(figure_id: str, title: str, body: str) -> str:
    return f'<figure id="{figure_id}"><figcaption>{html.escape(title)}</figcaption>{body}</figure>'


def _workers_table(data: Mapping[str, Any]) -> str:
    workers = data.get("workers")
    if workers is None:
        return _section("workers", "Workers", _not_recorded("per-worker totals"))
    if not workers:
        return _section("workers", "Workers", '<p class="note">No worker recorded.</p>')
    rows = []
    for name in sorted(workers, key=lambda name: _worker_order(str(name))):
        entry = workers[name] if isinstance(workers[name], dict) else {}
        programs, seconds = _number(entry.get("programs")), _number(entry.get("seconds"))
        rate = programs / seconds if programs is not None and seconds else None
        rows.append(
            f"<tr><td>{_text(name)}</td><td class='n'>{_count(programs)}</td>"
            f"<td class='n'>{_seconds(seconds)}</td>"
            f"<td class='n'>{'—' if rate is None else f'{rate:.1f}'}</td>"
            f"<td class='n'>{_megabytes(entry.get('rss_mb'))}</td>"
            f"<td class='n'>{_megabytes(entry.get('peak_rss_mb'))}</td></tr>"
        )
    table = _table(
        "workers-table",
        ("worker", "programs", "seconds", "programs/s", "RSS MB", "peak RSS MB"),
        rows,
    )
    return _section("workers", "Workers", table)


def _megabytes(value: Any) -> str:
    number = _number(value)
    return "—" if number is None else f"{number:,.0f}"


def _coverage(data: Mapping[str, Any]) -> str:
    """Which families and ops the programs exercised; the least used ops are highlighted,
    since a feature the generator rarely draws is a place bugs stay hidden."""
    families = {
        str(name): _number(count) or 0.0 for name, count in (data.get("families") or {}).items()
    }
    features = {
        str(name): _number(count) or 0.0 for name, count in (data.get("features") or {}).items()
    }
    total = sum(families.values())
    family_rows = [
        f"<tr><td>{_text(name)}</td><td class='n'>{_count(count)}</td>"
        f"<td class='n'>{100 * count / total if total else 0:.0f}%</td></tr>"
        for name, count in sorted(families.items(), key=lambda item: (-item[1], item[0]))
    ]
    family_part = (
        _table("families-table", ("family", "programs", "share"), family_rows)
        if families
        else _not_recorded("programs per family")
    )
    ordered = sorted(features.items(), key=lambda item: (item[1], item[0]))
    threshold = ordered[min(LEAST_USED, len(ordered)) - 1][1] if ordered else 0.0
    most = max(features.values(), default=0.0) or 1.0
    feature_rows = [
        f"<tr class='{'least' if count <= threshold else ''}'><td>{_text(name)}</td>"
        f"<td class='n'>{_count(count)}</td>"
        f"<td class='bar'><span style='width:{100 * count / most:.0f}%'></span></td></tr>"
        for name, count in ordered
    ]
    # Side by side rather than one long column: the page stays a few screens long.
    per_column = max(FEATURE_ROWS, math.ceil(len(feature_rows) / FEATURE_COLUMNS))
    feature_tables = "".join(
        _table(None, ("op or feature", "programs", ""), feature_rows[start : start + per_column])
        for start in range(0, len(feature_rows), per_column)
    )
    feature_part = (
        f'<div id="features">{feature_tables}</div>'
        + '<p class="note">Least used first; the least used are highlighted. Ops the '
        "programs never used are not in the report.</p>"
        if features
        else _not_recorded("op and feature counts")
    )
    return _section(
        "coverage",
        "Op and feature coverage",
        f"<h3>Families</h3>{family_part}<h3>Ops and features</h3>{feature_part}",
    )


def _severity_rank(severity: Any) -> int:
    """Where a record's severity sorts: silent first; none (an older report's) last."""
    return SEVERITIES.index(severity) if severity in SEVERITIES else len(SEVERITIES)


def _badge(severity: Any) -> str:
    """A severity as a coloured badge that says what it means; "—" where a report
    written before severities were recorded has none."""
    if severity not in SEVERITIES:
        return "—"
    note = html.escape(SEVERITY_NOTES[severity])
    return f'<span class="badge {severity}" title="{note}">{severity}</span>'


def _severity_counts(severities: Iterable[Any], element_id: str, what: str) -> str:
    """One line counting ``what`` per severity, worst first; nothing without a severity."""
    seen = list(severities)
    counted = [(severity, seen.count(severity)) for severity in SEVERITIES if severity in seen]
    if not counted:
        return ""
    parts = " · ".join(f"{_badge(severity)} {_count(count)}" for severity, count in counted)
    return f'<p class="severities" id="{element_id}">{html.escape(what)}: {parts}</p>'


def _known_groups(entries: Iterable[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """The known records, one group per bug of one registry (a record in no bug is a
    group of its own), silent first, then by bug id and signature."""
    groups: dict[tuple[str, ...], list[Mapping[str, Any]]] = {}
    for index, entry in enumerate(entries):
        bug, repro = entry.get("bug"), entry.get("repro")
        where = str(Path(repro).parent) if isinstance(repro, str) else ""
        key = ("bug", str(bug), where) if bug else ("signature", str(index))
        groups.setdefault(key, []).append(entry)
    return sorted(
        groups.values(),
        key=lambda group: (
            _severity_rank(group[0].get("severity")),
            not group[0].get("bug"),
            str(group[0].get("bug") or ""),
            str(group[0].get("signature")),
        ),
    )


def _known_row(
    group: Sequence[Mapping[str, Any]],
    run_dir: str | None,
    html_dir: Path | None,
    several_backends: bool = False,
) -> str:
    """One known bug seen again: its severity, id and title, its signatures, their hits
    summed (and, in a campaign of several backends, per backend) and their registry
    files."""
    first = group[0]
    bug = (
        f"<b>{_text(first.get('bug'))}</b><br>{_text(first.get('title'))}"
        if first.get("bug")
        else "—"
    )
    if first.get("standing"):  # not a bug to file: outside the contract, or fixed
        bug += f"<br><small class='standing'>{_text(first.get('standing'))}</small>"

    counts = [count for entry in group if (count := _number(entry.get("hits"))) is not None]
    hits = sum(counts) if counts else None
    # A campaign shared by several backends: how many of them each backend met.
    by_backend: Counter[str] = Counter()
    for entry in group:
        backends = entry.get("backends")
        if isinstance(backends, dict):
            by_backend.update(
                {str(name): int(n) for name, n in backends.items() if _number(n) is not None}
            )
    told = (
        "<br><small>"
        + ", ".join(f"{_text(name)} {n}" for name, n in sorted(by_backend.items()))
        + "</small>"
        if several_backends and by_backend
        else ""
    )
    return (
        f"<tr><td>{_badge(first.get('severity'))}</td><td>{bug}</td>"
        f"<td class='signature'>{'<br>'.join(_text(entry.get('signature')) for entry in group)}"
        f"</td><td class='n'>{_count(hits)}{told}</td>"
        f"<td>{'<br>'.join(_link(entry.get('repro'), run_dir, html_dir) for entry in group)}"
        "</td></tr>"
    )


def _signatures(data: Mapping[str, Any], run_dir: str | None, html_dir: Path | None) -> str:
    """Every new failure and every known bug seen again, silent first, each with its
    severity and repro files."""
    # A stable sort: each severity's failures stay in the order the report holds.
    failures = sorted(
        data.get("failures") or [], key=lambda failure: _severity_rank(failure.get("severity"))
    )
    hits: dict[str, Any] = data["hits"] if isinstance(data.get("hits"), dict) else {}
    rows = []
    for failure in failures:
        signature = failure.get("signature")
        count = failure.get("hits", hits.get(signature))
        rows.append(
            f"<tr><td>{_badge(failure.get('severity'))}</td>"
            f"<td class='signature'>{_text(signature)}{_program(failure)}</td>"
            f"<td>{_text(failure.get('kind'))}</td><td>{_text(failure.get('family'))}</td>"
            f"<td>{_text(_backend_of(failure))}</td>"
            f"<td class='n'>{_text(failure.get('iteration'))}</td>"
            f"<td>{_text(failure.get('place'))}</td><td>{_text(failure.get('layer'))}</td>"
            f"<td>{'yes' if failure.get('verified') else 'no'}</td>"
            f"<td class='n'>{_count(count)}</td>"
            f"<td>{_repro_cell(failure, run_dir, html_dir)}</td></tr>"
        )
    new = (
        _table(
            "signatures",
            (
                "severity",
                "signature",
                "kind",
                "family",
                "backend",
                "iteration",
                "place",
                "layer",
                "verified",
                "hits",
                "repro",
            ),
            rows,
        )
        if rows
        else '<p class="note" id="signatures">No new failure.</p>'
    )
    groups = _known_groups(data.get("known") or [])
    if "known" not in data:
        known = _not_recorded("known signatures seen again")
    elif groups:
        known = _table(
            "known",
            ("severity", "bug", "signature", "hits", "repro"),
            (
                _known_row(group, run_dir, html_dir, len(data.get("backends") or {}) > 1)
                for group in groups
            ),
        )
    else:
        known = '<p class="note" id="known">No known signature seen again.</p>'
    new_counts = _severity_counts(
        {failure.get("signature"): failure.get("severity") for failure in failures}.values(),
        "new-severities",
        "New signatures by severity",
    )
    known_counts = _severity_counts(
        [group[0].get("severity") for group in groups],
        "known-severities",
        "Known bugs by severity",
    )
    return _section(
        "failures",
        "Signatures",
        f"<h3>New</h3>{new_counts}{new}"
        f"<h3>Known, seen again ({_known_verdict(data)})</h3>{known_counts}{known}",
    )


def _program(failure: Mapping[str, Any]) -> str:
    """The shrunk program and the difference's message, folded away under the signature."""
    case: dict[str, Any] = failure["case"] if isinstance(failure.get("case"), dict) else {}
    difference: dict[str, Any] = (
        failure["difference"] if isinstance(failure.get("difference"), dict) else {}
    )
    source, message = case.get("source"), difference.get("message") or difference.get("detail")
    if not source and not message:
        return ""
    body = f"<p>{_text(message)}</p>" if message else ""
    body += f"<pre>{_text(source)}</pre>" if source else ""
    return f"<details><summary>program</summary>{body}</details>"


def _repro_cell(failure: Mapping[str, Any], run_dir: str | None, html_dir: Path | None) -> str:
    result: dict[str, Any] = (
        failure["repro_result"] if isinstance(failure.get("repro_result"), dict) else {}
    )
    status = result.get("status")
    if failure.get("repro"):
        suffix = f" <span class='status'>({_text(status)})</span>" if status else ""
        return _link(failure["repro"], run_dir, html_dir) + suffix
    detail = result.get("detail")
    title = f' title="{_text(detail)}"' if detail else ""
    return f"<span class='status'{title}>no repro file ({_text(status, 'none')})</span>"


def _link(repro: Any, run_dir: str | None, html_dir: Path | None) -> str:
    if not isinstance(repro, str) or not repro:
        return "—"
    href = repro_href(repro, run_dir, html_dir)
    name = html.escape(Path(repro).name)
    return f'<a href="{html.escape(href)}" title="{html.escape(repro)}">{name}</a>'


def _checks(data: Mapping[str, Any]) -> str:
    """Compiles, CUDA graph captures and torch's skip reasons, and why programs were invalid."""
    skipped = data.get("skipped") or {}
    invalid = data.get("invalid_reasons") or {}
    lines = [
        f"<p>compiles <b>{_count(data.get('compiles'))}</b> · programs captured as CUDA graphs "
        f"<b>{_count(data.get('captured'))}</b> · graphs skipped "
        f"<b>{_count(sum(_number(count) or 0 for count in skipped.values()))}</b> · "
        f"time checking <b>{_seconds(data.get('check_seconds'))}</b></p>"
    ]
    reasons = [
        f"<tr><td>skipped</td><td>{_text(reason)}</td><td class='n'>{_count(count)}</td></tr>"
        for reason, count in sorted(skipped.items(), key=lambda item: -(_number(item[1]) or 0))
    ] + [
        f"<tr><td>invalid</td><td>{_text(reason)}</td><td class='n'>{_count(count)}</td></tr>"
        for reason, count in sorted(invalid.items(), key=lambda item: -(_number(item[1]) or 0))
    ]
    if reasons:
        lines.append(_table("reasons", ("what", "reason", "count"), reasons))
    return _section("checks", "Compiles, captures and invalid programs", "".join(lines))


STYLE = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:16px 24px;color:#222}
h1{font-size:20px;margin:0 0 4px}h2{font-size:17px;margin:24px 0 8px;border-bottom:1px solid #ddd}
h3{font-size:14px;margin:12px 0 6px}
.settings{margin:0 0 10px;color:#444}.source{color:#777;font-size:12px;margin:6px 0 0}
.cards{display:flex;flex-wrap:wrap;gap:8px}
.card{border:1px solid #ddd;border-radius:6px;padding:6px 12px;min-width:110px;background:#fafafa}
.card .value{display:block;font-size:22px;font-weight:600}.card .name{color:#555;font-size:12px}
.card.alarm{border-color:#c62828;background:#fdecea}.card.alarm .value{color:#c62828}
.charts{display:flex;flex-wrap:wrap;gap:16px;margin-top:14px}
figure{margin:0;flex:1 1 560px;max-width:640px;border:1px solid #eee;border-radius:6px;padding:8px}
figcaption{font-weight:600;margin-bottom:4px}
svg.chart{width:100%;height:auto;display:block}
svg .grid{stroke:#eee}svg .axis{stroke:#888}svg text{font-size:11px;fill:#555}
svg .label{font-size:12px;fill:#333}svg .legend{font-size:12px;fill:#222}
table{border-collapse:collapse;margin:4px 0}
th,td{border-bottom:1px solid #eee;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums}
td.signature{min-width:300px;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;
word-break:break-all;max-width:520px}
td.bar{width:30%}td.bar span{display:block;height:10px;background:#90a4ae;border-radius:2px}
tr.least td{background:#fff3cd}tr.least td.bar span{background:#f0ad4e}
.badge{display:inline-block;padding:0 6px;border-radius:8px;font-size:12px;font-weight:600;
color:#fff;background:#90a4ae;white-space:nowrap}
.badge.silent{background:#c62828}.badge.metadata{background:#ef6c00}
.badge.crash{background:#546e7a}.badge.unsupported{background:#b0bec5;color:#263238}
.status{color:#666}.missing{color:#8a6d3b;font-style:italic}.note{color:#666}
details pre{background:#f6f6f6;padding:6px;overflow-x:auto;font-size:12px;white-space:pre}
#features{display:grid;grid-template-columns:repeat(auto-fill,minmax(340px,1fr));gap:0 24px}
#features table{width:100%}
"""


def render_html(
    data: dict[str, Any],
    *,
    run_dir: str | os.PathLike[str] | None = None,
    html_dir: str | os.PathLike[str] | None = None,
    source: str | None = None,
) -> str:
    """The report as one HTML page.

    Relative repro paths are rooted at the report's ``cwd`` when it has one,
    else at ``run_dir``; links are written relative to ``html_dir``, the
    directory the page will be saved in (see :func:`repro_href`).
    ``source`` names the JSON file the page was made from. Raises
    :class:`ReportError` if ``data`` is not a report.
    """
    check_report(data)
    root = data.get("cwd") or (os.fspath(run_dir) if run_dir is not None else None)
    page_dir = Path(html_dir) if html_dir is not None else None
    title = (
        f"cgraph campaign: {data.get('backend', 'backend?')}, "
        f"{data.get('programs')} programs, {data.get('new_signatures', 0)} new"
    )
    body = [
        _header(data, source),
        f'<div class="charts">{_findings_chart(data)}{_throughput_chart(data)}</div>',
        _signatures(data, root, page_dir),
        _workers_table(data),
        _coverage(data),
        _checks(data),
    ]
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        # Nothing is ever loaded or run: defence in depth beside the escaping.
        '<meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def write_html(
    data_or_json_path: dict[str, Any] | str | os.PathLike[str],
    html_path: str | os.PathLike[str],
    *,
    run_dir: str | os.PathLike[str] | None = None,
) -> Path:
    """Render a report (a dict, or the path of its JSON) to ``html_path``, atomically.

    A reader never sees half a page: the page is written to a temporary file
    beside ``html_path`` and moved over it. Relative repro paths are rooted
    at the report's ``cwd``, else ``run_dir``, else (for a JSON path) the
    JSON file's directory, where a run usually writes its report.
    """
    target = Path(html_path)
    if isinstance(data_or_json_path, dict):
        data, source = data_or_json_path, None
    else:
        data = load_report(data_or_json_path)
        source = os.fspath(data_or_json_path)
        if run_dir is None:
            run_dir = Path(data_or_json_path).resolve().parent
    page = render_html(data, run_dir=run_dir, html_dir=target.resolve().parent, source=source)
    target.parent.mkdir(parents=True, exist_ok=True)
    # Named per process, and created like any file (the umask's mode, not
    # mkstemp's owner-only one): the page is meant to be shared.
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(page, encoding="utf-8")
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return target


# --- command line --------------------------------------------------------------------------


class _OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit code 2, like bad input."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message}; see {self.prog} --help\n")


def main(argv: list[str] | None = None) -> int:
    parser = _OneLineParser(
        prog="python -m pytest_cgraph.report",
        description="Render a pytest-cgraph JSON report (--cgraph-report) as one static HTML page.",
    )
    parser.add_argument("report", type=Path, help="the JSON report of a pytest --cgraph run")
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        help="the HTML file to write (default: the report's path with .html)",
    )
    arguments = parser.parse_args(argv)
    output = arguments.output or arguments.report.with_suffix(".html")
    if output.resolve() == arguments.report.resolve():
        print(
            f"error: {output} is the report itself; give another HTML path with -o",
            file=sys.stderr,
        )
        return 2
    try:
        write_html(arguments.report, output)
    except ReportError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(
            f"error: cannot write {output} ({error.strerror or error}); "
            "give a writable HTML path with -o",
            file=sys.stderr,
        )
        return 2
    print(f"HTML report: {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
