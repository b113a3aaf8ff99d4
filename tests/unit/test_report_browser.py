"""The report page in a real browser: headless Chromium builds the charts and tables, and
paints them in the first screen.

The unit tests of ``test_report.py`` read the page as text; these check what a
browser makes of it: that the SVG is valid enough to become SVG elements,
that a hostile signature stays text, and that the screenshot shows the two
charts in their colours near the top. Skipped where Chromium is not installed.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

from pytest_cgraph.reporting.report import KNOWN_COLOR, NEW_COLOR, WORKER_COLORS, write_html

CHROMIUM = Path("/usr/bin/chromium")
SAMPLE = Path(__file__).parent / "data" / "cgraph-report.json"
HOSTILE = "</td><script>document.title='owned'</script><img src=x onerror=alert(1)>"
WIDTH, HEIGHT = 1280, 2000
#: Device pixels of the first screen of a laptop: the charts must be painted within it.
FIRST_SCREEN = 900

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"no headless browser: {CHROMIUM} is not installed"
)


def chromium(profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Headless Chromium as root in a container: no sandbox, no GPU, no network chatter."""
    return subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def page(tmp_path: Path) -> Path:
    data = json.loads(SAMPLE.read_text())
    data["known"][0]["signature"] = HOSTILE
    return write_html(data, tmp_path / "report.html")


def test_the_browser_builds_the_svg_charts_and_the_signature_table(
    page: Path, tmp_path: Path
) -> None:
    done = chromium(tmp_path / "profile", "--dump-dom", page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    # Parsed as SVG: the browser serialises what it built, with the SVG namespace.
    for chart in ("findings-chart", "throughput-chart"):
        assert f'<svg id="{chart}" class="chart"' in dom, chart
        chart_dom = dom.split(f'<svg id="{chart}"', 1)[1].split("</svg>", 1)[0]
        assert chart_dom.count("<path") >= 2 and chart_dom.count("<circle") >= 2
    assert '<table id="signatures">' in dom and '<table id="known">' in dom
    signatures = dom.split('<table id="signatures">', 1)[1].split("</table>", 1)[0]
    assert "crash-compiled_call-BackendCompilerFailed_AssertionError" in signatures
    repros = os.path.relpath("/home/user/project/cgraph-repros", page.parent)
    assert f'href="{repros}/crash-compiled_call-' in signatures
    # The hostile signature is text in a cell, not elements.
    assert "<script" not in dom and "<img" not in dom
    assert "&lt;/td&gt;&lt;script&gt;document.title='owned'&lt;/script&gt;" in dom
    assert "<title>cgraph campaign: cudagraphs, 220 programs, 1 new</title>" in dom


def test_the_screenshot_shows_both_charts_in_the_first_screen(page: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    done = chromium(
        tmp_path / "profile",
        f"--screenshot={shot}",
        f"--window-size={WIDTH},{HEIGHT}",
        page.as_uri(),
    )
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    pixels = read_png(shot.read_bytes())
    assert pixels.shape == (HEIGHT, WIDTH, 3)
    white = int((pixels == 255).all(axis=2).sum())
    assert white < 0.95 * WIDTH * HEIGHT  # not blank
    for colour in (NEW_COLOR, KNOWN_COLOR, WORKER_COLORS[0], WORKER_COLORS[1]):
        rows = rows_with(pixels, colour)
        assert rows, f"{colour} is painted nowhere"
        assert min(rows) < FIRST_SCREEN, f"{colour} first painted at y={min(rows)}"


def rows_with(pixels: np.ndarray, colour: str) -> list[int]:
    """The rows where ``colour`` (``#rrggbb``) is painted, give or take anti-aliasing."""
    want = np.array([int(colour[index : index + 2], 16) for index in (1, 3, 5)])
    near = (np.abs(pixels.astype(int) - want).max(axis=2) <= 12).sum(axis=1) >= 2
    return [int(y) for y in np.flatnonzero(near)]


def read_png(data: bytes) -> np.ndarray:
    """The pixels (height x width x RGB) of an 8-bit RGB or RGBA PNG, as Chromium writes it."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    position, chunks, header = 8, [], b""
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        position += 12 + length
    width, height, depth, colour_type = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour_type in (2, 6), (depth, colour_type)
    channels = 3 if colour_type == 2 else 4
    raw = np.frombuffer(zlib.decompress(b"".join(chunks)), dtype=np.uint8)
    filtered = raw.reshape(height, width * channels + 1)
    rows = np.zeros((height, width * channels), dtype=np.uint8)
    previous = np.zeros(width * channels, dtype=np.uint8)
    for y in range(height):
        rows[y] = unfilter(int(filtered[y, 0]), filtered[y, 1:], previous, channels)
        previous = rows[y]
    return rows.reshape(height, width, channels)[:, :, :3]


def unfilter(kind: int, line: np.ndarray, previous: np.ndarray, channels: int) -> np.ndarray:
    """One row with its PNG filter undone (None, Sub, Up, Average, Paeth)."""
    if kind == 0:
        return line
    if kind == 1:  # each byte adds the one to its left: a running sum per channel
        return (line.reshape(-1, channels).cumsum(axis=0, dtype=np.uint8)).reshape(-1)
    if kind == 2:
        return line + previous
    out = bytearray(line.tobytes())
    up = previous.tobytes()
    for index in range(len(out)):
        left = out[index - channels] if index >= channels else 0
        if kind == 3:
            out[index] = (out[index] + (left + up[index]) // 2) & 0xFF
            continue
        up_left = up[index - channels] if index >= channels else 0
        estimate = left + up[index] - up_left
        to_left, to_up = abs(estimate - left), abs(estimate - up[index])
        to_up_left = abs(estimate - up_left)
        if to_left <= to_up and to_left <= to_up_left:
            nearest = left
        elif to_up <= to_up_left:
            nearest = up[index]
        else:
            nearest = up_left
        out[index] = (out[index] + nearest) & 0xFF
    return np.frombuffer(bytes(out), dtype=np.uint8)
