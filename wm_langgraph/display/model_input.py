"""The model input of one call, split into its layers and set against the budget.

Assemble (``wm_langgraph.context.assemble``) builds the input as: one system message (the
memory's addition and the thread's own system text), the ``[Session History Summary]`` message
holding the Working Memory, the recalled messages (the archives' best hits for the user's
turn), the verbatim fill (its ``[Earlier messages, verbatim]`` marker and the newest messages
the Working Memory already covers), the messages of the archives not yet folded (pending), and
the live messages. It records each message's layer where it places it
(``AssembledContext.all_layers``); :func:`split_layers` takes the layers from there, never from
a message's text, so a user's message that opens with the summary's header (in a text block, a
document's title, anywhere) is a live message, as it is. Each message is counted with the
memory's own counter.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage

from wm_langgraph.context.assemble import LAYERS, Budgets
from wm_langgraph.display.markup import (
    LAYER_CLASSES,
    Part,
    badge,
    details,
    fragment,
    number,
    stacked_bar,
    text,
)
from wm_langgraph.messages import content_text, safe_str

__all__ = ["LAYERS", "InputEntry", "ModelInputView", "layer_parts", "message_html", "split_layers"]

_ROLES = {"human": "user", "ai": "ai", "tool": "tool", "system": "system"}


@dataclass(frozen=True, slots=True)
class InputEntry:
    """One message of a model input: its layer and its size."""

    layer: str
    message: BaseMessage
    tokens: int


def split_layers(
    messages: Sequence[BaseMessage],
    layers: Sequence[str],
    *,
    count: Callable[[BaseMessage], int],
) -> list[InputEntry]:
    """Each message of a model input with its layer (:data:`LAYERS`) and its tokens.

    Args:
        messages: The model input, in order (``AssembledContext.all_messages``).
        layers: The layer assemble placed each message in (``AssembledContext.all_layers``).
        count: The memory's message counter.

    Raises:
        ValueError: ``layers`` does not name one known layer per message.
    """
    if len(layers) != len(messages) or any(layer not in LAYERS for layer in layers):
        raise ValueError(
            f"split_layers needs one of {LAYERS} per message: {len(messages)} messages, "
            f"layers {list(layers)[:8]!r}"
        )
    return [
        InputEntry(layer, message, count(message))
        for message, layer in zip(messages, layers, strict=True)
    ]


def layer_parts(sizes: dict[str, int], budgets: Budgets) -> list[Part]:
    """The stacked-bar parts of a model input: its layers, the room left inside ``usable``, and
    the reserve kept for the reply."""
    parts = [
        Part(LAYER_CLASSES[name], sizes.get(name, 0), f"{name}: {number(sizes.get(name, 0))}")
        for name in LAYERS
    ]
    free = budgets.usable - sum(sizes.values())
    if free > 0:
        parts.append(Part(LAYER_CLASSES["free"], free, f"room left: {number(free)}"))
    parts.append(
        Part(
            LAYER_CLASSES["reserve"], budgets.reserved, f"reply reserve: {number(budgets.reserved)}"
        )
    )
    return parts


def message_html(message: BaseMessage, *, limit: int = 4_000, extra: str = "") -> str:
    """One message as a block: its role, its tool calls, its text (escaped, cut to ``limit``)."""
    role = _ROLES.get(message.type, message.type)
    kind = {"user": "user", "ai": "ai", "tool": "tool", "system": "system"}.get(role, "")
    head = [badge(role, kind)]
    name = getattr(message, "name", None)
    if message.type == "tool" and name:
        head.append(f'<span class="muted">{text(name, 200)}</span>')
    head.append(extra)
    calls = getattr(message, "tool_calls", None) or []
    call_lines = "".join(
        f"<div>→ <code>{text(c.get('name'), 200)}</code>"
        f' <span class="muted">{text(_json(c.get("args")), 600)}</span></div>'
        for c in calls
    )
    body = content_text(message.content)
    shown = f"<pre>{text(body, limit)}</pre>" if body.strip() else ""
    css = {"human": "human", "ai": "ai", "tool": "tool", "system": "system"}.get(message.type, "")
    return f'<div class="msg {css}"><div>{" ".join(head)}</div>{call_lines}{shown}</div>'


def _json(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=safe_str)
    except (TypeError, ValueError):  # a circular structure
        return safe_str(value)


@dataclass(frozen=True, slots=True)
class ModelInputView:
    """What the model saw on one call: each message with its layer, against the budget.

    Attributes:
        entries: The messages in order, each with its layer and tokens.
        budgets: The budgets the input was assembled under.
        token_budget: The model's context window the budgets come from.
        label: What call this is (``call 7 · turn 3``).
        note: What the picture cannot show (e.g. the agent's own system prompt), or ``""``.
        turn: The user turn of the call (None when not known).
    """

    entries: tuple[InputEntry, ...]
    budgets: Budgets
    token_budget: int
    label: str = "model input"
    note: str = ""
    turn: int | None = None

    @property
    def tokens(self) -> int:
        """The input's tokens, by the memory's counter."""
        return sum(e.tokens for e in self.entries)

    @property
    def layers(self) -> dict[str, int]:
        """Tokens per layer (every layer of :data:`LAYERS`, 0 when absent)."""
        sizes: dict[str, int] = dict.fromkeys(LAYERS, 0)
        for entry in self.entries:
            sizes[entry.layer] += entry.tokens
        return sizes

    def __repr__(self) -> str:
        """``<ModelInputView call 7: 3,412 of 5,100 usable tokens>``."""
        return (
            f"<ModelInputView {self.label}: {self.tokens:,} of {self.budgets.usable:,} usable "
            "tokens>"
        )

    def body(self, *, messages: bool = True) -> str:
        """The display's markup (without the stylesheet)."""
        sizes = self.layers
        over = self.tokens > self.budgets.usable
        share = self.tokens / self.budgets.usable if self.budgets.usable else 0.0
        head = (
            f"<h3>{text(self.label, 200)}: {number(self.tokens)} tokens "
            f'<span class="muted">({share:.0%} of {number(self.budgets.usable)} usable; '
            f"budget {number(self.token_budget)}, reply reserve {number(self.budgets.reserved)})"
            f"</span>{' ' + badge('over usable', 'failed') if over else ''}</h3>"
        )
        bar = stacked_bar(
            layer_parts(sizes, self.budgets),
            self.token_budget,
            marks=[(self.budgets.usable, f"usable: {number(self.budgets.usable)}")],
        )
        rows = "".join(
            f'<tr><td><i class="{LAYER_CLASSES[name]}"></i>{text(name)}</td>'
            f'<td class="n">{number(sizes[name])}</td>'
            f'<td class="n">{sum(1 for e in self.entries if e.layer == name)}</td></tr>'
            for name in LAYERS
        )
        table = (
            '<table class="layers"><tr><th>layer</th><th class="n">tokens</th>'
            f'<th class="n">messages</th></tr>{rows}</table>'
        )
        note = f'<p class="note">{text(self.note)}</p>' if self.note else ""
        listing = ""
        if messages and self.entries:
            blocks = "".join(
                message_html(
                    e.message,
                    limit=1_500,
                    extra=f'{badge(e.layer)}<span class="muted">{number(e.tokens)} tokens</span>',
                )
                for e in self.entries
            )
            listing = details(f"the {len(self.entries)} messages", blocks)
        key = _key()
        return f'<div class="input">{head}{bar}{key}{table}{note}{listing}</div>'

    def _repr_html_(self) -> str:
        return fragment(self.body())


def _key() -> str:
    names = [*LAYERS, "free", "reserve"]
    labels = {"free": "room left", "reserve": "reply reserve"}
    items = "".join(
        f'<span><i class="{LAYER_CLASSES[n]}"></i>{text(labels.get(n, n))}</span>' for n in names
    )
    return f'<div class="key">{items}</div>'
