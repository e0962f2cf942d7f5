"""Regenerate the screenshots of the displays in docs/images/.

Plays the demo session with the careless writer (so the guards have something to repair) into a
SQLite file, builds the thread report with ``WorkingMemory.report``, and renders with headless
Chromium (Debian: ``apt-get install chromium``):

- ``report.png``: the top of the thread report (heading, timeline, the per-call chart);
- ``working-memory.png``, ``commit.png``, ``archive.png``, ``model-input.png``: the four
  notebook displays, as ``report.working_memory``, the commit with the most guard
  interventions, ``report.archives[0]`` and ``report.calls[-1]`` show in Jupyter.

Each image is cut below its last row of content. Offline and deterministic but for the times
the report prints. Run from the repository root::

    python scripts/screenshots.py [--out docs/images]
"""

from __future__ import annotations

import argparse
import io
import struct
import sys
import tempfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.display._chromium import Image, chromium, read_png, screenshot  # noqa: E402
from wm_langgraph.cli.demo import DEMO_CONFIG, run_demo  # noqa: E402
from wm_langgraph.display.markup import page  # noqa: E402
from wm_langgraph.memory import WorkingMemory  # noqa: E402
from wm_langgraph.storage.sqlite import open_sqlite  # noqa: E402

BACKGROUND = (243, 244, 246)  # the page's background around a display
WIDTH = 1200


def _write_png(image: Image, height: int, path: Path) -> None:
    """Write the first ``height`` rows of ``image`` as an 8-bit RGB PNG (each row "up"-filtered)."""
    raw = bytearray()
    previous = bytes(image.width * 3)
    for y in range(height):
        row = bytes(b for x in range(image.width) for b in image.pixel(x, y))
        raw.append(2)
        raw.extend((a - b) & 0xFF for a, b in zip(row, previous, strict=True))
        previous = row

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", image.width, height, 8, 2, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(bytes(raw), 9))
        + chunk(b"IEND", b"")
    )


def _content_height(image: Image) -> int:
    """The rows down to the last one that is not all page background, plus a margin."""
    for y in range(image.height - 1, -1, -1):
        if any(image.pixel(x, y) != BACKGROUND for x in range(0, image.width, 2)):
            return min(image.height, y + 16)
    return image.height


def _shoot(html: str, name: str, out: Path, work: Path, *, height: int, crop: bool = True) -> None:
    source = work / f"{name}.html"
    source.write_text(html, encoding="utf-8")
    image = read_png(screenshot(source, work / f"{name}.png", width=WIDTH, height=height))
    _write_png(image, _content_height(image) if crop else image.height, out / f"{name}.png")
    print(f"wrote {out / name}.png")


def main() -> int:
    """Regenerate the screenshots; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "images"), help="where to write")
    args = parser.parse_args()
    if chromium() is None:
        print("headless Chromium is needed: apt-get install chromium", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="wm-shots-") as folder:
        work = Path(folder)
        db = str(work / "demo.sqlite")
        run_demo(out=io.StringIO(), db=db, careless=True)
        with open_sqlite(db) as (checkpointer, store):
            memory = WorkingMemory(config=DEMO_CONFIG, store=store, checkpointer=checkpointer)
            report = memory.report(
                {"configurable": {"thread_id": "demo"}}, where="wm-langgraph demo --careless"
            )
            whole = report.html
            commit = max(report.commits, key=lambda c: len(c.interventions))
            parts = {
                "working-memory": report.working_memory.body(),
                "commit": commit.body(),
                "archive": report.archives[0].body(),
                "model-input": report.calls[-1].body(),
            }
        _shoot(whole, "report", out, work, height=1500, crop=False)
        for name, body in parts.items():
            _shoot(page(name, body), name, out, work, height=2400)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
