"""The live messages as assemble uses them, kept per memory key and extended by the new messages
(behaviour §7.4, docs/budgets.md "Assemble").

Assemble runs before every model call on the whole list of live messages: it counts them,
leaves out the system notes and tool results without their call, quotes forged summary headers
and finds the turn boundaries. A :class:`LiveView` holds all of that for one list of messages:
the shown messages, their running token totals and the turn starts. It depends on nothing but
the messages, so a view of a list extends to any longer list that begins with the same message
objects: only the new messages are counted and looked at.

LangGraph's messages reducer (``state.archive_aware_add_messages``) is where edits and removals
enter the state, and it never changes a message in place: an edit puts a new message object at
the old one's position, a removal takes the object out, a fork or a checkpoint reload gives
other objects. So "the previous list's objects, in order, at the head of this one" is the
signal that nothing before the new messages changed; anything else builds the view afresh (the
token counts still come from the engine's per-message cache). :class:`LiveViews` keeps the
newest view per memory key.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
)

__all__ = ["MAX_VIEWS", "LiveView", "LiveViews"]

MAX_VIEWS = 256
"""Memory keys whose newest view is kept (least recently used out)."""

MessageCounter = Callable[[BaseMessage], int]
Neutralise = Callable[[BaseMessage], BaseMessage]


@dataclass(frozen=True, slots=True, eq=False)
class LiveView:
    """One list of messages prepared for assemble. Never changed once built (extending makes
    a new view), so a view in use by one call is safe from another.

    Attributes:
        source: The messages as given (converted to messages), in order.
        total: Tokens of all of ``source``.
        pinned: The system message at the head (the thread's system prompt), when pinning.
        notes: How many later system messages there are.
        last_note: The newest of them.
        removals: Ids of the removal requests (``RemoveMessage``) among ``source``.
        marked: Messages another component marked as its own (``additional_kwargs`` with an
            ``lc_source``), for the caller's checks.
        body: The shown messages: no system message, no removal request, no tool result whose
            call no earlier message of ``source`` shows, forged summary headers quoted.
        prefix: ``prefix[i]`` is the tokens of ``body[:i]`` (as shown).
        starts: Indexes of ``body`` where a turn starts: a user message that no tool call and
            its results enclose (index 0 included when ``body`` opens with a user message).
        called: Ids of the tool calls (valid or not) of the assistant messages of ``body``.
        owner: The newest assistant message of ``body`` making each (valid) tool call.
        results: ``tool_call_id`` of every tool result of ``body``.
        loose: ``tool_call_id`` of the tool results left out (no call before them) or without
            a valid call before them: a list of messages placed before this one may answer
            them (see :meth:`answers_any`).
    """

    source: list[BaseMessage] = field(default_factory=list)
    total: int = 0
    pin_head: bool = True
    pinned: SystemMessage | None = None
    notes: int = 0
    last_note: SystemMessage | None = None
    removals: frozenset[str] = frozenset()
    marked: tuple[BaseMessage, ...] = ()
    body: list[BaseMessage] = field(default_factory=list)
    prefix: list[int] = field(default_factory=lambda: [0])
    starts: list[int] = field(default_factory=list)
    called: frozenset[str] = frozenset()
    owner: Mapping[str, int] = field(default_factory=dict)
    results: frozenset[str] = frozenset()
    loose: tuple[str, ...] = ()
    left_out_results: int = 0

    @classmethod
    def build(
        cls,
        messages: Iterable[Any],
        count: MessageCounter,
        neutralise: Neutralise,
        *,
        pin_head: bool = True,
        pinned: SystemMessage | None = None,
    ) -> LiveView:
        """The view of ``messages``.

        Args:
            messages: Messages (or anything ``convert_to_messages`` reads).
            count: Message token counter.
            neutralise: The shown form of a message (forged summary headers quoted).
            pin_head: Whether a system message at the head is the pinned system prompt (live
                messages) or a note like any later one (archived messages).
            pinned: A pinned system message given from elsewhere (then nothing is pinned here).
        """
        start = cls(pin_head=pin_head and pinned is None, pinned=pinned)
        return start.extended(list(messages), count, neutralise)

    def extends_to(self, messages: Sequence[Any]) -> bool:
        """Whether ``messages`` begins with this view's messages: the same objects, or equal
        ones (a list compares its items by identity first, so an unchanged list costs a pass
        at C speed; a message re-created with the same fields, as a checkpoint reload does,
        is compared field by field)."""
        size = len(self.source)
        if len(messages) < size:
            return False
        head = messages if len(messages) == size else messages[:size]
        try:
            return self.source == (head if isinstance(head, list) else list(head))
        except Exception:  # e.g. circular content: read the list afresh
            return False

    def extended(
        self,
        new: Sequence[Any],
        count: MessageCounter,
        neutralise: Neutralise,
        *,
        head: Sequence[BaseMessage] | None = None,
    ) -> LiveView:
        """The view of ``self.source + new``: only ``new`` is counted and looked at.

        ``head``: messages equal to ``self.source`` to keep as the new view's first messages
        (the caller's objects, so the next call finds them identical).
        """
        if not new:
            return self
        added = convert_to_messages(list(new))
        source = [*(self.source if head is None else head), *added]
        total = self.total
        pinned, notes, last_note = self.pinned, self.notes, self.last_note
        removals = set(self.removals)
        marked = list(self.marked)
        body = list(self.body)
        prefix = list(self.prefix)
        starts = list(self.starts)
        called = set(self.called)
        owner = dict(self.owner)
        results = set(self.results)
        loose = list(self.loose)
        left_out_results = self.left_out_results
        for position, message in enumerate(added, start=len(self.source)):
            size = count(message)
            total += size
            extra = message.additional_kwargs
            if isinstance(extra, Mapping) and extra.get("lc_source") is not None:
                marked.append(message)
            if isinstance(message, RemoveMessage):  # a removal request, not a message
                if message.id:
                    removals.add(str(message.id))
                continue
            if isinstance(message, SystemMessage):
                if position == 0 and self.pin_head:
                    pinned = message
                else:
                    notes += 1
                    last_note = message
                continue
            if isinstance(message, AIMessage):
                called.update(str(c.get("id")) for c in message.tool_calls or [] if c.get("id"))
                called.update(
                    str(c.get("id")) for c in message.invalid_tool_calls or [] if c.get("id")
                )
            elif isinstance(message, ToolMessage) and message.tool_call_id not in called:
                loose.append(message.tool_call_id)
                left_out_results += 1
                continue
            shown = neutralise(message)
            index = len(body)
            body.append(shown)
            prefix.append(prefix[-1] + (size if shown is message else count(shown)))
            if isinstance(shown, HumanMessage):
                starts.append(index)
            if isinstance(shown, AIMessage):
                for call in shown.tool_calls or []:
                    if call.get("id"):
                        owner[str(call["id"])] = index
            elif isinstance(shown, ToolMessage):
                results.add(shown.tool_call_id)
                caller = owner.get(shown.tool_call_id)
                if caller is None:
                    loose.append(shown.tool_call_id)
                else:  # no turn starts between a call and its result
                    while starts and starts[-1] > caller:
                        starts.pop()
        return LiveView(
            source=source,
            total=total,
            pin_head=self.pin_head,
            pinned=pinned,
            notes=notes,
            last_note=last_note,
            removals=frozenset(removals),
            marked=tuple(marked),
            body=body,
            prefix=prefix,
            starts=starts,
            called=frozenset(called),
            owner=owner,
            results=frozenset(results),
            loose=tuple(loose),
            left_out_results=left_out_results,
        )

    @property
    def tokens(self) -> int:
        """Tokens of ``body``."""
        return self.prefix[-1]

    def answers_any(self, earlier: LiveView) -> bool:
        """Whether a tool call of ``earlier`` (messages placed before these) could own a tool
        result of this view: then the two are to be read as one list."""
        return bool(self.loose) and not earlier.called.isdisjoint(self.loose)


class LiveViews:
    """The newest :class:`LiveView` per memory key (see the module docstring). Thread-safe."""

    def __init__(self, count: MessageCounter, neutralise: Neutralise) -> None:
        """Count messages with ``count``; show them as ``neutralise`` makes them."""
        self._count = count
        self._neutralise = neutralise
        self._views: OrderedDict[Hashable, LiveView] = OrderedDict()
        self._lock = threading.Lock()
        self.rebuilds = 0
        """How many views were built afresh (for tests and measurements)."""

    def view(self, key: Hashable, messages: Sequence[Any]) -> LiveView:
        """The view of ``messages``, extending the key's newest view when it is a prefix."""
        with self._lock:
            previous = self._views.get(key)
        if previous is not None and previous.extends_to(messages):
            size = len(previous.source)
            view = previous.extended(
                messages[size:], self._count, self._neutralise, head=messages[:size]
            )
        else:
            view = LiveView.build(messages, self._count, self._neutralise)
            self.rebuilds += 1
        with self._lock:
            self._views[key] = view
            self._views.move_to_end(key)
            while len(self._views) > MAX_VIEWS:
                self._views.popitem(last=False)
        return view

    def forget(self, key: Hashable) -> None:
        """Drop the key's view."""
        with self._lock:
            self._views.pop(key, None)
