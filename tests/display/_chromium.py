"""Headless Chromium for the display tests and the screenshot script: render an HTML file to a
PNG, dump its DOM, and read a PNG back (8-bit RGB or RGBA, non-interlaced: what Chromium
writes) with the standard library only."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Image", "chromium", "dump_dom", "page_width", "read_png", "screenshot"]

_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
)
_TIMEOUT = 120


def chromium() -> str | None:
    """The Chromium (or Chrome) executable on the PATH, or None."""
    return next((found for name in _NAMES if (found := shutil.which(name))), None)


def _run(args: list[str]) -> subprocess.CompletedProcess[bytes]:
    binary = chromium()
    if binary is None:
        raise RuntimeError("no chromium on the PATH")
    with tempfile.TemporaryDirectory(prefix="wm-chromium-") as profile:
        return subprocess.run(
            [binary, *_FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True,
            timeout=_TIMEOUT,
            check=False,
        )


def screenshot(page: Path, png: Path, *, width: int, height: int) -> Path:
    """Render ``page`` (an HTML file) in a ``width`` x ``height`` window to ``png``."""
    done = _run([f"--window-size={width},{height}", f"--screenshot={png}", page.resolve().as_uri()])
    if not png.is_file():
        raise RuntimeError(f"chromium wrote no screenshot: {done.stderr.decode()[-2000:]}")
    return png


def dump_dom(page: Path) -> str:
    """The DOM of ``page`` after Chromium parsed and laid it out, serialised."""
    done = _run(["--dump-dom", page.resolve().as_uri()])
    return done.stdout.decode("utf-8")


def page_width(page: Path, *, width: int, height: int = 900) -> int:
    """How wide ``page`` lays out in a ``width`` x ``height`` window (its scroll width, in CSS
    pixels): a copy of it, without its Content-Security-Policy, runs one script that writes
    the figure into the DOM Chromium dumps."""
    html = page.read_text(encoding="utf-8")
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html, count=1)
    probe = (
        "<script>document.body.setAttribute('data-width', "
        "String(document.documentElement.scrollWidth));</script>"
    )
    html = html.replace("</body>", probe + "</body>", 1)
    copy = page.with_name(f"{page.stem}-probe.html")
    copy.write_text(html, encoding="utf-8")
    done = _run([f"--window-size={width},{height}", "--dump-dom", copy.resolve().as_uri()])
    found = re.search(r'data-width="(\d+)"', done.stdout.decode("utf-8"))
    if found is None:
        raise RuntimeError(f"chromium gave no width: {done.stderr.decode()[-2000:]}")
    return int(found.group(1))


@dataclass(frozen=True)
class Image:
    """A decoded image: its size and its rows of RGB pixels."""

    width: int
    height: int
    rows: list[bytes]
    channels: int

    def pixel(self, x: int, y: int) -> tuple[int, int, int]:
        """The RGB colour at ``(x, y)``."""
        start = x * self.channels
        r, g, b = self.rows[y][start : start + 3]
        return r, g, b

    def count(
        self, colour: tuple[int, int, int], box: tuple[int, int, int, int] | None = None
    ) -> int:
        """How many pixels of ``box`` (left, top, right, bottom; default the whole image) have
        exactly ``colour``."""
        left, top, right, bottom = box or (0, 0, self.width, self.height)
        return sum(
            1 for y in range(top, bottom) for x in range(left, right) if self.pixel(x, y) == colour
        )

    def distinct(self, box: tuple[int, int, int, int]) -> int:
        """How many different colours ``box`` holds."""
        left, top, right, bottom = box
        return len({self.pixel(x, y) for y in range(top, bottom) for x in range(left, right)})


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def _unfilter(kind: int, line: bytearray, previous: bytearray, channels: int) -> None:
    """Undo the sub (1), average (3) or Paeth (4) filter of one row, in place."""
    for i in range(len(line)):
        left = line[i - channels] if i >= channels else 0
        up = previous[i]
        if kind == 1:
            line[i] = (line[i] + left) & 0xFF
        elif kind == 3:
            line[i] = (line[i] + (left + up) // 2) & 0xFF
        else:
            corner = previous[i - channels] if i >= channels else 0
            line[i] = (line[i] + _paeth(left, up, corner)) & 0xFF


def read_png(path: Path) -> Image:
    """Decode an 8-bit RGB or RGBA non-interlaced PNG."""
    data = path.read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    offset, chunks, header = 8, [], b""
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        body = data[offset + 8 : offset + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        offset += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    if depth != 8 or colour not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {colour}")
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        if kind == 2:  # up: no dependency along the row
            line = bytearray((a + b) & 0xFF for a, b in zip(line, previous, strict=True))
        elif kind:
            _unfilter(kind, line, previous, channels)
        rows.append(bytes(line))
        previous = line
    return Image(width, height, rows, channels)
