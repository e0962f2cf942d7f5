"""An archive as a picture: its messages, verbatim, and its abstract where it has one.

The messages are shown as they were archived (escaped, each cut to a bound; an archive of
thousands of messages shows its first :data:`MAX_SHOWN` and says how many more it holds). The
abstract is the one line the archive record carries; it is data like the messages.
"""

from __future__ import annotations

from dataclasses import dataclass

from wm_langgraph.display.markup import badge, details, fragment, number, text
from wm_langgraph.display.model_input import message_html
from wm_langgraph.storage.archives import ArchiveRecord

__all__ = ["MAX_SHOWN", "ArchiveView", "status_badge"]

MAX_SHOWN = 200
"""The most messages of one archive a display shows."""


def status_badge(status: str) -> str:
    """``done`` / ``pending`` / ``failed`` as a coloured badge."""
    labels = {"done": "folded", "pending": "pending", "failed": "failed"}
    return badge(labels.get(status, status), status if status in labels else "")


@dataclass(frozen=True, slots=True)
class ArchiveView:
    """One archive record as a picture.

    Attributes:
        record: The archive (messages verbatim, abstract, status, metadata).
    """

    record: ArchiveRecord

    def __repr__(self) -> str:
        """``<ArchiveView archive_002: 14 messages, 1,203 tokens, done>``."""
        r = self.record
        return (
            f"<ArchiveView {r.id}: {r.message_count} messages, {r.token_count:,} tokens, "
            f"{r.status}>"
        )

    def body(self) -> str:
        """The display's markup (without the stylesheet)."""
        r = self.record
        meta = r.metadata
        when = (
            f" · written {text(r.created_at[:19].replace('T', ' '), 40)} UTC"
            if r.created_at
            else ""
        )
        head = (
            f"<h3>{text(r.id, 200)} {status_badge(r.status)}</h3>"
            f'<p class="sub">#{r.seq} · {r.message_count} messages · {number(r.token_count)} tokens'
            f"{when}</p>"
        )
        abstract = (
            f"<p><b>Abstract:</b> {text(r.abstract, 2_000)}</p>"
            if r.abstract.strip()
            else '<p class="muted">No abstract.</p>'
        )
        error = ""
        if r.status == "failed" and meta.get("error"):
            deferred = " (deferred)" if meta.get("deferred") else ""
            failed = badge("Phase 2 failed" + deferred, "failed")
            error = f"<p>{failed} {text(meta['error'], 1_000)}</p>"
        shown = r.messages[:MAX_SHOWN]
        more = len(r.messages) - len(shown)
        blocks = "".join(message_html(m) for m in shown)
        if more > 0:
            blocks += f'<p class="note">… and {more:,} more messages not shown.</p>'
        hidden = "" if r.messages else '<p class="muted">(no messages)</p>'
        listing = details(f"the {len(r.messages)} messages", blocks, open_=True)
        return head + abstract + error + (listing if r.messages else hidden)

    def _repr_html_(self) -> str:
        return fragment(self.body())
