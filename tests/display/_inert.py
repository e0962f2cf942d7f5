"""Checks that a display's HTML is inert: only our own tags and attributes, hostile text shown
as text (helpers of the display tests)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

__all__ = ["HOSTILE", "Parsed", "assert_inert", "parse"]

HOSTILE = (
    '<script>alert("x")</script>',
    "</style><script>alert(1)</script><style>",
    '" onmouseover="alert(1)" x="',
    "' onfocus='alert(2)' autofocus='",
    "<img src=x onerror=alert(3)>",
    "]]><!-- --><svg onload=alert(4)></svg>",
    "\x1b[2J\x1b]0;pwned\x07 terminal escapes",
    "nul\x00byte and \x7f del and \x9b csi",
    "\u202eexe.txt bidi override",
    "lone \ud800 surrogate",
    "&lt;already escaped&gt; &amp;",
)
"""Texts that would act if a display let them through."""

TAGS = frozenset(
    {
        "html", "head", "meta", "title", "body", "style", "div", "span", "p", "b", "i", "br",
        "h1", "h2", "h3", "ul", "li", "table", "tr", "th", "td", "details", "summary", "pre",
        "code", "svg", "g", "rect", "line", "path", "text",
    }
)  # fmt: skip
"""The only tags a display writes."""
ATTRIBUTES = frozenset(
    {
        "class", "style", "title", "open", "viewbox", "width", "height", "role", "aria-label",
        "xmlns", "x", "y", "x1", "x2", "y1", "y2", "rx", "fill", "stroke", "d", "text-anchor",
        "lang", "charset", "http-equiv", "content", "name",
    }
)  # fmt: skip
"""The only attributes a display writes."""
_STYLE = re.compile(r"^(?:(?:width|left|background|fill):[#0-9a-f.%]+;?)$")
_CLASS = re.compile(r"^[a-z0-9 _-]+$")
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


class Parsed(HTMLParser):
    """The tags, attributes and text of an HTML document."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.data: list[str] = []
        self.comments: list[str] = []
        self.other: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_data(self, data: str) -> None:
        self.data.append(data)

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)

    def handle_pi(self, data: str) -> None:
        self.other.append(data)

    def unknown_decl(self, data: str) -> None:
        self.other.append(data)

    @property
    def text(self) -> str:
        """Every text node, joined."""
        return "".join(self.data)


def parse(html: str) -> Parsed:
    """``html`` parsed."""
    parsed = Parsed()
    parsed.feed(html)
    parsed.close()
    return parsed


def assert_inert(html: str) -> Parsed:
    """Assert ``html`` holds only our tags and attributes, with no control character, no
    comment or declaration, one stylesheet, and encodes as UTF-8; returns it parsed."""
    html.encode("utf-8")  # no lone surrogate reaches the output
    assert not _CONTROLS.search(html), repr(_CONTROLS.search(html))
    assert "<script" not in html.lower()
    assert html.count("<style>") == 1
    assert html.count("</style>") == 1
    parsed = parse(html)
    assert not parsed.comments
    assert not parsed.other
    for tag, attrs in parsed.tags:
        assert tag in TAGS, tag
        for name, value in attrs:
            assert name in ATTRIBUTES, (tag, name, value)
            if name == "style" and tag != "style":
                assert _STYLE.match(value or ""), value
            if name == "class":
                assert _CLASS.match(value or ""), value
    return parsed
