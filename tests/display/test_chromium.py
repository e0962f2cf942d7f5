"""The report and a display as a person sees them: rendered by headless Chromium to a PNG, which
must have the window's size, content where the parts are and their colours; and the DOM Chromium
built, which must hold the parts and no element a hostile text tried to plant."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.display._chromium import chromium, dump_dom, page_width, read_png, screenshot
from tests.display._inert import ATTRIBUTES, HOSTILE, TAGS, parse
from tests.display._sessions import REPORT_HEADINGS, run_session
from wm_langgraph.display.markup import page

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        chromium() is None,
        reason="headless Chromium is not installed (Debian: apt-get install chromium; "
        ".ci/run installs it)",
    ),
]

TURNS = [
    f"note {i}: the build server build-{i}.example.com runs release v1.{i}.0" for i in range(12)
]
HOSTILE_TEXT = " | ".join(h for h in HOSTILE if "surrogate" not in h)
INDIGO = (99, 102, 241)  # the Working Memory layer, folded archives
GREEN = (16, 185, 129)  # the live messages
BLUE = (96, 165, 250)  # a section's size gauge


@pytest.fixture(scope="module")
def report_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    session = run_session([*TURNS, HOSTILE_TEXT], search="build-3.example.com")
    folder = tmp_path_factory.mktemp("chromium")
    report = session.memory.report(session.config)
    report.save(folder / "report.html")
    display = folder / "display.html"
    display.write_text(page("display", report.working_memory._repr_html_()), encoding="utf-8")
    return folder


def test_the_report_renders_with_its_parts_and_colours(report_page: Path):
    png = screenshot(
        report_page / "report.html", report_page / "report.png", width=1200, height=1800
    )
    image = read_png(png)
    assert (image.width, image.height) == (1200, 1800)
    assert image.distinct((0, 0, 1200, 300)) > 20  # heading, cards, timeline: not blank
    assert image.distinct((0, 1500, 1200, 1800)) > 5
    assert image.count(INDIGO) > 1_000  # the Working Memory layer of the chart, the archives
    assert image.count(GREEN) > 1_000  # the live messages
    dom = dump_dom(report_page / "report.html")
    for part in (
        *REPORT_HEADINGS,
        'class="chart"',
        'class="l-wm"',
        "build-3.example.com",
    ):
        assert part in dom, part
    _no_planted_element(dom)


def test_a_display_renders_as_the_notebook_shows_it(report_page: Path):
    png = screenshot(
        report_page / "display.html", report_page / "display.png", width=1000, height=900
    )
    image = read_png(png)
    assert (image.width, image.height) == (1000, 900)
    assert image.distinct((0, 0, 1000, 200)) > 20
    assert image.count(BLUE) > 100  # the size gauges of the sections
    assert image.count(INDIGO) > 1_000  # the document against its target
    dom = dump_dom(report_page / "display.html")
    assert "Session Title" in dom
    assert "Open Issues" in dom
    _no_planted_element(dom)


def _no_planted_element(dom: str) -> None:
    """Chromium's DOM holds only the display's own elements: the hostile texts stayed text."""
    parsed = parse(dom)
    tags = {tag for tag, _ in parsed.tags}
    assert tags <= TAGS | {"tbody"}, tags - TAGS  # the parser adds a table body
    attributes = {name for _, attrs in parsed.tags for name, _ in attrs}
    assert attributes <= ATTRIBUTES, attributes - ATTRIBUTES


LONG_WORD = "x" * 400
LONG_TOOL = "fetch_" + "very_long_tool_name_" * 12


def test_the_report_wraps_inside_a_1300_px_window(tmp_path: Path):
    """Long words, a long tool name, long tool arguments and a long thread id all wrap: the
    page is no wider than the window (it was 6,075 px)."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    session = run_session(
        [f"{LONG_WORD} note {i}: build-{i}.example.com\r\nsecond line" for i in range(10)],
        tool_output="y" * 600,
        thread_id="thread-" + "z" * 300,
    )
    calls = [
        {"name": LONG_TOOL, "args": {"url": "https://example.invalid/" + "q" * 500}, "id": "c1"}
    ]
    session.agent.update_state(
        session.config,
        {
            "messages": [
                HumanMessage(LONG_WORD, id="lw-h"),
                AIMessage("", tool_calls=calls, id="lw-a"),
                ToolMessage(LONG_WORD, tool_call_id="c1", name=LONG_TOOL, id="lw-t"),
            ]
        },
    )
    session.agent.invoke({"messages": [{"role": "user", "content": LONG_WORD}]}, session.config)
    report = session.memory.report(session.config)
    target = report.save(tmp_path / "wide.html")
    assert "\\x0d" not in report.html  # CRLF renders as a line break
    assert page_width(target, width=1300) <= 1300
