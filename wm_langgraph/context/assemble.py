"""Assemble the model input from three layers inside a token budget (behaviour §7.4).

While the whole history fits (the caller read every archived message of the timeline:
``whole_history``), the input is that history, as the agent without a memory sends it: the
system message, the archived messages, the live ones; no system-prompt addition, no summary, no
marker (see :func:`_whole_history`). Everything below is for a history that outgrows ``usable``.

Never more than trimming where the memory repeats what trimming shows: the verbatim fill (turns
the Working Memory already covers) stops where the input reaches what trimming the same history
to ``usable`` sends (LangChain's ``trim_messages(strategy="last", start_on="human",
include_system=True)`` with the same counter: see :func:`_trimmed_size`). Trimming stops at a
message boundary, and the memory's own texts (the addition, the summary, the fill's marker) take
room trimming gives to raw turns, so the fill's oldest turns give it back. The Working Memory,
the pending and the live messages keep their room inside ``usable``: a pending or live turn is
never dropped, nor the WM cut, to come under trimming's size (that would hide what trimming
shows or what no summary holds yet).

Output order: one leading ``SystemMessage`` (the system-prompt addition followed by the
thread's own system text), then one ``[Session History Summary]`` user message holding the
Working Memory, then on a user's turn the recalled layer (one ``[Recalled from the archive]``
user message: the archived messages the search finds for the user's message, quoted; see
:mod:`wm_langgraph.context.recalled`), then the verbatim fill (an ``[Earlier messages,
verbatim]`` user message and the newest messages of archives the WM already covers), then the
messages of archives whose Phase 2 is not done (pending), then the live messages.

The recalled layer and the fill share one room: what the other layers leave under trimming's
size. The room the recall takes is kept before the Working Memory is shown whole (a WM that
does not fit beside it is cut, down to its share); the fill takes what the recall leaves; the
room a cut WM frees goes to both (docs/budgets.md, "The split of the budget").

Budgets: ``reserved = min(T, max(0.15·T, reserve_tokens if it applies else 0))`` is kept free
for the reply (the default ``reserve_tokens`` applies from ``T >= 40,000`` on, one set
explicitly at every ``T``: :func:`wm_langgraph.config.reply_reserve`); everything returned fits
``usable = T - reserved``. The Working Memory layer's share
``archive = min(0.15·usable, archive_memory_tokens)`` is a guaranteed minimum for the WM and a
cap only when the layers compete: when the WM, the pending archives and the live messages
fit ``usable``, the WM is shown whole, whatever its size.

When the layers do not fit, in this order:

1. Whole turns (a user message and every step after it up to the next user message) are
   dropped oldest first — pending-archive messages go before live ones since they are older —
   until the rest fits beside the WM's share (``min(WM, archive)``). A turn boundary never
   separates an AI message's tool calls from their tool results (also for parallel calls);
   such turns are dropped together. The WM then gets all the room the kept messages leave,
   so it is cut (see :func:`fit_working_memory`: evenly across sections, oldest items first,
   the newest items and the title only under a tiny budget, with a pointer to
   ``archive_search``) only as far as needed.
2. The newest turn (the newest user message and the steps after it) is never dropped. When it
   and the WM's share do not fit together, the Working Memory is cut further, down to
   nothing; a WM that finds no room at all takes the system-prompt addition along (the
   addition explains the summary), and the messages get its room.
3. Last resort, when the newest turn alone exceeds the budget: its tool results are cut (each
   keeps its start and end around a visible ``[… N characters truncated …]`` marker), largest
   first, as little as needed. The system message, the user message, and the assistant
   messages are never cut, so if they alone exceed the budget the result is over budget
   (``tokens > budgets.usable``) rather than missing the user's request.

A tool result whose call is not among the messages before it (the call is archived and folded)
is left out: OpenAI-style APIs reject it. Only the engine writes the ``[Session History
Summary]`` message: in any other message a line starting with that header is shown quoted.

The verbatim fill: when every pending and live message is shown, the room they, the system
message and the whole WM leave holds the newest folded messages, whole turns chosen newest
first (see :func:`_verbatim_fill`), so the model sees the recent history trimming would show,
less the room the WM and the memory's texts take.

Pending archives are older than every live message, so only the newest of them can ever fit:
they are read newest first and only until their stored token counts fill the room the live
messages leave; older records are never fetched or deserialised.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

from wm_langgraph.config import RECALL_FLOOR_SHARE, reply_reserve
from wm_langgraph.context.fit import fit_document
from wm_langgraph.context.live import LiveView
from wm_langgraph.context.recalled import (
    QUOTED_RECALL_HEADER,
    RECALL_HEADER,
    RecallCandidate,
    Recalled,
    pack_recalled,
    packed_room,
)
from wm_langgraph.document.tokens import longest_fitting
from wm_langgraph.messages import content_text

__all__ = [
    "FILL_HEADER",
    "LAYERS",
    "RECALL_HEADER",
    "SUMMARY_HEADER",
    "AssembledContext",
    "Budgets",
    "Layer",
    "RecallSource",
    "Recalled",
    "assemble_context",
    "compute_budgets",
    "fill_marker",
    "fit_working_memory",
    "recall_floor",
]


SUMMARY_HEADER = "[Session History Summary]"
"""First line of the user message that carries the Working Memory (re-exported by assemble)."""
QUOTEDSUMMARY_HEADER = "[quoted text: Session History Summary]"
"""What a ``[Session History Summary]`` line that the engine did not write is shown as."""

_HEADER_LINE_RE = re.compile(r"(?m)^(\s*)" + re.escape(SUMMARY_HEADER))
_RECALL_LINE_RE = re.compile(r"(?m)^(\s*)" + re.escape(RECALL_HEADER))


def neutralise_text(text: str, *, recall: bool = False) -> str:
    """``text`` with every line that starts with the summary header (after any blank space)
    shown as quoted text instead; with ``recall`` (the recalled layer is on), the recall
    header too."""
    if SUMMARY_HEADER in text:
        text = _HEADER_LINE_RE.sub(lambda m: m.group(1) + QUOTEDSUMMARY_HEADER, text)
    if recall and RECALL_HEADER in text:
        text = _RECALL_LINE_RE.sub(lambda m: m.group(1) + QUOTED_RECALL_HEADER, text)
    return text


_BLOCK_TEXTS = ("text", "title", "context", "data")
"""The text fields of a content block (a ``document``'s title and context, a text source's
data) in which a forged header is quoted; nested ``source`` and ``content`` are walked."""


def _forged(text: str, recall: bool) -> bool:
    return SUMMARY_HEADER in text or (recall and RECALL_HEADER in text)


def _neutral_block(block: Any, recall: bool, depth: int = 0) -> Any:
    if isinstance(block, str):
        return neutralise_text(block, recall=recall)
    if not isinstance(block, dict) or depth > 8:
        return block
    changed: dict[str, Any] = {
        key: neutralise_text(block[key], recall=recall)
        for key in _BLOCK_TEXTS
        if isinstance(block.get(key), str) and _forged(block[key], recall)
    }
    for key in ("source", "content"):
        inner = block.get(key)
        if isinstance(inner, dict | list):
            walked = (
                _neutral_block(inner, recall, depth + 1)
                if isinstance(inner, dict)
                else [_neutral_block(b, recall, depth + 1) for b in inner]
            )
            if walked != inner:
                changed[key] = walked
    return {**block, **changed} if changed else block


def _neutral_content(content: Any, recall: bool) -> Any:
    if isinstance(content, str):
        return neutralise_text(content, recall=recall)
    if isinstance(content, list):
        return [_neutral_block(block, recall) for block in content]
    return content


def neutralise_summary_headers(
    messages: Sequence[BaseMessage], *, recall: bool = False
) -> list[BaseMessage]:
    """Only the engine writes the ``[Session History Summary]`` message, and the system-prompt
    addition tells the model to read it as the summary of earlier turns. A message of the
    conversation whose text starts a line with that header (a pasted or forged summary) is
    shown with the header quoted (a copy; the state keeps the message verbatim). With
    ``recall`` the ``[Recalled from the archive]`` header is quoted the same way."""
    out: list[BaseMessage] = []
    for message in messages:
        content = _neutral_content(message.content, recall)
        out.append(
            message
            if content == message.content
            else message.model_copy(update={"content": content})
        )
    return out


def split_system_messages(
    pending: Sequence[BaseMessage], live: Sequence[BaseMessage]
) -> tuple[list[SystemMessage], list[BaseMessage], int]:
    """Sort the pending-archive and live messages into system text and conversation.

    The system message at the head of the live messages is the thread's system prompt and is
    always shown. Of the later system messages (notes added during the conversation, perhaps
    one per turn; they are counted and archived like any message) only the newest is shown,
    folded into the leading system message next to the system prompt: it is the instruction in
    force, and the prompt stays inside the budget however many were added.

    Returns:
        The system messages to fold (system prompt first), the other messages in order, and how
        many older system messages were left out.
    """
    pinned: list[SystemMessage] = []
    if live and isinstance(live[0], SystemMessage):
        pinned.append(live[0])
        live = live[1:]
    notes: list[SystemMessage] = []
    body: list[BaseMessage] = []
    for message in [*pending, *live]:
        if isinstance(message, RemoveMessage):  # a removal request, not a message
            continue
        if isinstance(message, SystemMessage):
            notes.append(message)
        else:
            body.append(message)
    return pinned + notes[-1:], body, max(0, len(notes) - 1)


def drop_orphan_tool_results(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """``messages`` without the tool results whose call no earlier message shows.

    OpenAI-style APIs reject a tool message that does not answer a call of an earlier assistant
    message. Phase 1 never archives a call that still waits for its results, but an archive
    written before that rule, or a state edited by hand, can leave a result whose call is only
    in the Working Memory: the model sees the call's effect there, not a dangling result.
    """
    called: set[str] = set()
    kept: list[BaseMessage] = []
    for message in messages:
        if isinstance(message, AIMessage):
            called.update(str(c.get("id")) for c in message.tool_calls or [] if c.get("id"))
            called.update(str(c.get("id")) for c in message.invalid_tool_calls or [] if c.get("id"))
        elif isinstance(message, ToolMessage) and message.tool_call_id not in called:
            continue
        kept.append(message)
    return kept


MessageCounter = Callable[[BaseMessage], int]

Layer = Literal[
    "system", "working memory", "recalled", "verbatim fill", "pending archives", "live messages"
]
"""What a message of the assembled input is, as assemble placed it (never read from its text)."""
LAYERS: tuple[Layer, ...] = (
    "system",
    "working memory",
    "recalled",
    "verbatim fill",
    "pending archives",
    "live messages",
)
"""The layers of a model input, in the order assemble puts them."""


@dataclass(frozen=True)
class Budgets:
    """Token budgets of one assemble call.

    Attributes:
        reserved: Tokens left free for the model's reply.
        usable: ``token_budget - reserved``: the most the assembled input may count.
        archive: The most the Working Memory message may count.
    """

    reserved: int
    usable: int
    archive: int


@dataclass(frozen=True)
class AssembledContext:
    """The assembled model input.

    Attributes:
        system_message: The leading system message, or ``None`` when there is none.
        messages: The non-system messages in order: the ``[Session History Summary]`` message
            (when a WM exists and fits), the verbatim fill (its marker and folded messages, when
            any fit), pending-archive messages, live messages.
        tokens: Total of all returned messages (system message included) by the counter.
        dropped: How many pending/live messages were left out (folded system messages are
            not counted; they are merged into ``system_message``; older system notes are).
        budgets: The budgets used.
        wm_omitted: How many Working Memory items the summary message leaves out (0: the
            whole document is shown).
        whole_history: The input is the thread's whole history (it fits ``usable``): no
            Working Memory, no addition, no fill.
        layers: The layer of each of ``messages``, in order (:data:`LAYERS`): recorded where
            assemble places the message, so a message whose text imitates the engine's headers
            is never taken for the Working Memory or the fill. In a whole-history input the
            archived messages a Working Memory covers are ``"verbatim fill"``.
        recalled: The hits the recalled layer shows (one ``"recalled"`` message holds them),
            in the order shown; ``()`` when it shows none.
    """

    system_message: SystemMessage | None
    messages: list[BaseMessage]
    tokens: int
    dropped: int
    budgets: Budgets
    wm_omitted: int = 0
    whole_history: bool = False
    layers: tuple[Layer, ...] = ()
    recalled: tuple[Recalled, ...] = ()

    @property
    def all_messages(self) -> list[BaseMessage]:
        """The model input: the system message (if any) followed by ``messages``."""
        head: list[BaseMessage] = [self.system_message] if self.system_message else []
        return head + list(self.messages)

    @property
    def all_layers(self) -> tuple[Layer, ...]:
        """The layer of each of :attr:`all_messages`."""
        head: tuple[Layer, ...] = ("system",) if self.system_message else ()
        return head + self.layers


def _check_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def compute_budgets(token_budget: int, reserve_tokens: int, archive_memory_tokens: int) -> Budgets:
    """Behaviour §7.4 budgets (reserve rounded up, so usable never exceeds the reference's).

    Args:
        token_budget: The model's context window ``T`` in tokens.
        reserve_tokens: Tokens to keep free for the reply (see
            :func:`wm_langgraph.config.reply_reserve`: the default 20,000 from ``T >= 40,000``
            on, any other value at every ``T``).
        archive_memory_tokens: Cap of the Working Memory layer.

    Raises:
        ValueError: A value is not an integer in range (``token_budget >= 1``, others ``>= 0``).
    """
    total = _check_int("token_budget", token_budget, 1)
    reserve = _check_int("reserve_tokens", reserve_tokens, 0)
    cap = _check_int("archive_memory_tokens", archive_memory_tokens, 0)
    reserved = reply_reserve(total, reserve)
    usable = total - reserved
    return Budgets(reserved=reserved, usable=usable, archive=min(15 * usable // 100, cap))


def _summary_message(document: str) -> HumanMessage:
    # The header opens the engine's message only: a header line inside the document is quoted.
    return HumanMessage(content=f"{SUMMARY_HEADER}\n\n{neutralise_text(document.strip())}")


def fit_working_memory(
    working_memory: str, budget: int, count: MessageCounter
) -> tuple[HumanMessage | None, int]:
    """The ``[Session History Summary]`` message for ``working_memory``, cut to ``budget``.

    Whole items (non-blank lines) are removed evenly across sections: each section loses about the
    same share of its items, oldest first, and keeps its newest item (the Session Title too); only a
    budget too small for those takes them as well, the title last. Each cut section shows how many
    older items it omits, and the message says how to recall them (``archive_search``). The stored
    Working Memory is not changed.

    Args:
        working_memory: The current document (``""`` for none).
        budget: The most the message may count.
        count: Message token counter.

    Returns:
        The message (``None`` when there is no WM or not even its reduced form fits) and the
        number of items omitted.
    """
    message, omitted, _ = _fit_working_memory(working_memory, budget, count)
    return message, omitted


def _fit_working_memory(
    working_memory: str, budget: int, count: MessageCounter, whole_size: int | None = None
) -> tuple[HumanMessage | None, int, int]:
    """:func:`fit_working_memory` plus the message's size (0 without a message)."""
    text, omitted, size = fit_document(
        working_memory, budget, lambda doc: count(_summary_message(doc)), whole_size
    )
    if text is None:
        return None, 0, 0
    return _summary_message(text), omitted, size


def _system_blocks(content: object) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content) if isinstance(content, list) else [{"type": "text", "text": str(content)}]


def _merge_system(
    system_message: SystemMessage | None,
    folded: Sequence[SystemMessage],
    addition: str | None,
) -> SystemMessage | None:
    sources: list[SystemMessage] = [system_message] if system_message is not None else []
    for message in folded:
        if all(message.content != seen.content for seen in sources):
            sources.append(message)
    if not addition:
        if len(sources) <= 1:
            return sources[0] if sources else None
    elif not sources:
        return SystemMessage(content=addition)
    first = sources[0]
    if all(isinstance(s.content, str) for s in sources):
        texts = [addition or "", *(str(s.content) for s in sources)]
        content: Any = "\n\n".join(t.strip() for t in texts if t.strip())
    else:
        content = _system_blocks(addition or "")
        for source in sources:
            content.extend(_system_blocks(source.content))
    return SystemMessage(
        content=content, id=first.id, additional_kwargs=dict(first.additional_kwargs)
    )


def _cut_tool_message(message: ToolMessage, limit: int, count: MessageCounter) -> ToolMessage:
    """A copy of ``message`` whose output keeps its start and end so that it counts <= limit
    (or as close as a bare marker allows)."""
    size = count(message)
    if size <= limit:
        return message
    text = content_text(message.content)

    def cut(keep: int) -> ToolMessage:
        head = keep * 2 // 3
        tail = keep - head
        end = text[len(text) - tail :] if tail else ""
        marker = f"[… {len(text) - keep} characters truncated to fit the context window …]"
        return message.model_copy(update={"content": f"{text[:head]}\n{marker}\n{end}"})

    # Search near the proportional guess so that each probe counts a string of about the
    # target size, not the whole output.
    guess = max(64, 2 * limit * len(text) // max(1, size))
    return cut(longest_fitting(len(text), guess, lambda keep: count(cut(keep)) <= limit))


def _water_level(sizes: Sequence[int], room: int) -> int:
    """The largest cap C with ``sum(min(s, C) for s in sizes) <= room``."""
    remaining = room
    ordered = sorted(sizes)
    for index, size in enumerate(ordered):
        share = len(ordered) - index
        if size * share > remaining:
            return max(0, remaining // share)
        remaining -= size
    return ordered[-1] if ordered else 0


def _shrink_tool_outputs(
    messages: list[BaseMessage], target: int, count: MessageCounter
) -> list[BaseMessage]:
    """Cut the largest tool results of ``messages`` to a common cap so the list fits ``target``
    (as far as cutting tool results can)."""
    sizes = [count(m) for m in messages]
    tools = [i for i, m in enumerate(messages) if isinstance(m, ToolMessage)]
    if not tools or sum(sizes) <= target:
        return messages
    room = target - (sum(sizes) - sum(sizes[i] for i in tools))
    out = list(messages)
    for _ in range(8):  # markers and tokenisation make the first cap overshoot slightly
        cap = _water_level([sizes[i] for i in tools], room)
        out = list(messages)
        for i in tools:
            message = messages[i]
            if isinstance(message, ToolMessage) and sizes[i] > cap:
                out[i] = _cut_tool_message(message, cap, count)
        over = sum(count(m) for m in out) - target
        if over <= 0 or cap == 0:
            break
        room -= over
    return out


def recall_floor(usable: int, recall_tokens: int) -> int:
    """The recalled layer's guaranteed room: :data:`~wm_langgraph.config.RECALL_FLOOR_SHARE`
    of ``usable``, at most the layer's cap ``recall_tokens``. It is kept before the Working
    Memory (a WM that would leave the recall less is cut, down to its own share); the rest of
    the layer's room is what the WM shown whole leaves (docs/budgets.md, "The split of the
    budget")."""
    return min(recall_tokens, int(RECALL_FLOOR_SHARE * usable))


RecallSource = Callable[[], Sequence[RecallCandidate]]
"""Runs the recall for the user's newest message: the hits best first (assemble calls it only
when the layer has room, so a call that shows the whole history or no fill searches nothing)."""


def assemble_context(
    *,
    system_message: SystemMessage | None,
    working_memory: str,
    pending_messages: Sequence[BaseMessage],
    live_messages: Sequence[BaseMessage],
    token_budget: int,
    reserve_tokens: int,
    archive_memory_tokens: int,
    count: MessageCounter,
    system_addition: str | None = None,
    folded_messages: Sequence[BaseMessage] = (),
    folded_sizes: Sequence[int] | None = None,
    live_view: LiveView | None = None,
    whole_history: bool = False,
    verbatim_fill: bool = True,
    recall: RecallSource | None = None,
    recall_tokens: int = 0,
) -> AssembledContext:
    """Build the model input from the layers, inside the budget (see the module docstring).

    Args:
        system_message: The thread's own system message, if any.
        working_memory: The current WM document, ``""`` when there is none yet.
        pending_messages: Messages of archives whose Phase 2 is not done, in archive order.
        live_messages: The live (not archived) messages. A ``SystemMessage`` at their head
            (the thread's system prompt) and the newest later one are folded into the leading
            system message; older later ones are left out (see ``_model_input``).
        token_budget: The model's context window ``T``.
        reserve_tokens: Reply reserve for large windows (behaviour §7.4).
        archive_memory_tokens: Cap of the WM layer.
        count: Message token counter (e.g. ``message_tokens``); never negative.
        system_addition: The system-prompt addition; ``None`` loads ``prompts/system.md``.
            Added only while a WM or pending archive exists.
        folded_messages: The newest messages of archives the WM already covers, in archive
            order (older than every pending message): the verbatim fill, shown in the room the
            other layers leave (see the module docstring).
        folded_sizes: Their token counts (``None``: counted with ``count``).
        live_view: The :class:`~wm_langgraph.context.live.LiveView` of ``live_messages`` built
            with ``count`` and :func:`neutraliser` (kept per thread, so a call after one new
            message looks at that message only); ``None`` builds it here.
        whole_history: ``folded_messages`` and ``pending_messages`` are every archived message
            of the thread's timeline (none left unread): when they and the live messages fit
            ``usable``, that history is the input, without the Working Memory.
        verbatim_fill: Whether ``folded_messages`` fill the room the layers leave once the
            history outgrows ``usable`` (``False``: they serve only the whole-history check).
        recall: The recalled layer is on: runs the recall (see :data:`RecallSource`); ``None``
            switches the layer off (and the recall header is then not quoted: the input is
            what it was without the layer).
        recall_tokens: The most the recalled layer may count; its room comes out of the
            verbatim fill's.

    Returns:
        The assembled context; the inputs are not modified.

    Raises:
        ValueError: A budget value is out of range.
    """
    budgets = compute_budgets(token_budget, reserve_tokens, archive_memory_tokens)
    shown = neutraliser(recall is not None)
    if recall is not None:
        recall = functools.cache(recall)
    live = live_view or LiveView.build(live_messages, count, shown)
    if whole_history:
        history = _whole_history(
            system_message, folded_messages, pending_messages, live, count, shown=shown
        )
        if history.tokens <= budgets.usable:
            return replace(history, budgets=budgets, whole_history=True)
    frame = _frame(
        system_message,
        working_memory,
        pending_messages,
        live,
        folded=(folded_messages, folded_sizes),
        usable=budgets.usable,
        count=count,
        shown=shown,
        system_addition=system_addition,
    )
    head, tail, system_addition = frame.head, frame.tail, frame.addition
    available = budgets.usable - frame.system_size
    above_trimming = frame.above_trimming

    body = _Body(head, tail)
    whole_size = count(_summary_message(working_memory)) if working_memory.strip() else 0
    # The WM's guaranteed minimum: raw messages other than the newest turn never take it.
    floor = min(whole_size, budgets.archive)
    start, kept, kept_size = _kept_turns(body, floor, available, count)
    # The recall runs when every pending and live message is shown and the WM's floor leaves
    # room under trimming's size; the recall's own floor (under trimming's size too) is kept
    # from the WM, down to the WM's floor.
    free = available - kept_size - floor - above_trimming
    candidates, reserve = _recall_reserve(
        recall if start == 0 else None,
        min(recall_tokens, free),
        min(recall_floor(budgets.usable, recall_tokens), free),
        kept,
        count,
    )
    # The WM takes what the raw messages and the recall's floor leave: whole when it fits, else
    # cut (whole items) only as far as that needs; the recall and the fill take what it leaves.
    wm_room = available - kept_size - (reserve + above_trimming if reserve else 0)
    summary, omitted, summary_size = _fit_working_memory(working_memory, wm_room, count, whole_size)
    if summary is None and whole_size and system_addition:
        # The addition explains the summary: a Working Memory that found no room takes it
        # along, and the messages get its room (in a tight budget, what lets the newest turn
        # keep more of its tool output).
        return assemble_context(  # the same call without the WM and the addition
            system_message=system_message,
            working_memory="",
            pending_messages=pending_messages,
            live_messages=live_messages,
            token_budget=token_budget,
            reserve_tokens=reserve_tokens,
            archive_memory_tokens=archive_memory_tokens,
            count=count,
            system_addition="",
            folded_messages=folded_messages,
            folded_sizes=folded_sizes,
            live_view=live,
            verbatim_fill=verbatim_fill,
            recall=recall,  # (cached: the search runs once)
            recall_tokens=recall_tokens,
        )
    extra = _Extra()
    room = available - kept_size - summary_size - above_trimming
    if start == 0 and room > 0:
        # every pending and live message is shown: the room left holds the recalled layer
        # and the verbatim fill, both below trimming's size
        extra = _recall_and_fill(
            room,
            fill=(folded_messages, folded_sizes) if verbatim_fill else ((), None),
            answered=set(head.results | tail.results),
            candidates=candidates,
            recall_room=min(recall_tokens, room),
            shown_ids={m.id for m in kept if m.id is not None},
            shown_text=content_text(summary.content) if summary is not None else "",
            count=count,
            shown=shown,
        )
    return _composed(
        frame,
        summary=(summary, omitted, summary_size),
        extra=extra,
        kept=(kept, kept_size),
        pending=pending_messages,
        dropped=body.size - len(kept) + _left_out(head, tail),
        budgets=budgets,
    )


@dataclass(frozen=True)
class _Frame:
    """What every layout of an outgrown history starts from."""

    head: LiveView
    tail: LiveView
    system: SystemMessage | None
    system_size: int
    above_trimming: int
    addition: str | None


def _frame(
    system_message: SystemMessage | None,
    working_memory: str,
    pending: Sequence[BaseMessage],
    live: LiveView,
    *,
    folded: tuple[Sequence[BaseMessage], Sequence[int] | None],
    usable: int,
    count: MessageCounter,
    shown: Callable[[BaseMessage], BaseMessage],
    system_addition: str | None,
) -> _Frame:
    """The pending and live views, the leading system message (with the addition while a WM
    or pending archive exists) and how far ``usable`` is above trimming's size."""
    head, tail = _joined(LiveView.build(pending, count, shown, pin_head=False), live, count, shown)
    notes = _system_notes(head, tail)
    plain = _merge_system(system_message, notes, None)
    plain_size = count(plain) if plain is not None else 0
    # Never more than trimming: the verbatim fill (and the recalled layer, whose room is the
    # fill's), which repeat turns the Working Memory already covers, stop where the input
    # reaches what trimming this history to ``usable`` sends (see :func:`_trimmed_size`).
    trimmed = _trimmed_size(
        plain_size,
        folded=folded[0],
        folded_sizes=folded[1],
        head=head,
        tail=tail,
        usable=usable,
        count=count,
    )
    has_memory = bool(working_memory.strip()) or bool(pending)
    if has_memory and system_addition is None:
        from wm_langgraph.writer.prompts import load_prompt

        system_addition = load_prompt("system")
    system = _merge_system(system_message, notes, system_addition if has_memory else None)
    return _Frame(
        head=head,
        tail=tail,
        system=system,
        system_size=count(system) if system is not None else 0,
        above_trimming=0 if trimmed is None else max(0, usable - trimmed),
        addition=system_addition,
    )


def _recall_reserve(
    recall: RecallSource | None,
    room: int,
    floor: int,
    kept: Sequence[BaseMessage],
    count: MessageCounter,
) -> tuple[Sequence[RecallCandidate], int]:
    """The recall's candidates (the search runs only when the layer has ``room``) and the room
    kept for its layer before the WM: what its hits take of its ``floor`` (the hits the kept
    messages show left out; before the fill and the WM's text leave out theirs)."""
    if recall is None or room <= 0:
        return (), 0
    candidates = recall()
    if not candidates or floor <= 0:
        return candidates, 0
    shown_ids = {m.id for m in kept if m.id is not None}
    return candidates, packed_room(candidates, floor, count, shown_ids=shown_ids)


def _composed(
    frame: _Frame,
    *,
    summary: tuple[HumanMessage | None, int, int],
    extra: _Extra,
    kept: tuple[list[BaseMessage], int],
    pending: Sequence[BaseMessage],
    dropped: int,
    budgets: Budgets,
) -> AssembledContext:
    """The input in the layers' order, each message's layer recorded."""
    message, omitted, summary_size = summary
    shown, kept_size = kept
    recalled_layer: tuple[Layer, ...] = ("recalled",) if extra.recalled is not None else ()
    summary_layer: tuple[Layer, ...] = ("working memory",) if message is not None else ()
    fill_layer: Layer = "verbatim fill"
    layers = (
        summary_layer
        + recalled_layer
        + (fill_layer,) * len(extra.fill)
        + _message_layers(shown, pending)
    )
    # ``shown`` is a new list: the layers go in front of it (no second copy).
    messages: list[BaseMessage] = shown
    messages[:0] = [
        *([message] if message is not None else []),
        *([extra.recalled] if extra.recalled is not None else []),
        *extra.fill,
    ]
    return AssembledContext(
        system_message=frame.system,
        messages=messages,
        tokens=summary_size + extra.size + kept_size + frame.system_size,
        dropped=dropped,
        budgets=budgets,
        wm_omitted=omitted if message is not None else 0,
        layers=layers,
        recalled=extra.records,
    )


def _kept_turns(
    body: _Body, floor: int, available: int, count: MessageCounter
) -> tuple[int, list[BaseMessage], int]:
    """The pending and live messages shown: whole turns, newest first, while they fit beside
    the WM's ``floor``; the newest turn always (its tool outputs cut when it alone is over).

    Returns:
        Where the shown messages start in ``body`` (``body.size`` when it is empty), the
        messages, and their tokens.
    """
    if not body.size:
        return body.size, [], 0
    starts = body.starts()
    newest_start = starts[-1]
    newest = body.suffix(newest_start)
    if floor + newest <= available:
        # Whole turns, newest first, while they fit beside the floor: the oldest turn start
        # whose suffix fits (the suffix only grows as the start moves back).
        start = starts[
            bisect.bisect_left(starts, True, key=lambda s: body.suffix(s) + floor <= available)
        ]
        return start, body.since(start), body.suffix(start)
    if newest <= available:
        return newest_start, body.since(newest_start), newest
    kept = _shrink_tool_outputs(body.since(newest_start), available, count)
    return newest_start, kept, sum(count(m) for m in kept)


_SETTLE_ROUNDS = 4
"""Rounds in which the fill and the recall settle who shows a message (see _recall_and_fill)."""


@dataclass(frozen=True)
class _Extra:
    """The layers placed in the room the others leave: the recalled layer and the fill."""

    recalled: HumanMessage | None = None
    records: tuple[Recalled, ...] = ()
    fill: tuple[BaseMessage, ...] = ()
    size: int = 0


def _recall_and_fill(
    room: int,
    *,
    fill: tuple[Sequence[BaseMessage], Sequence[int] | None],
    answered: set[str],
    candidates: Sequence[RecallCandidate],
    recall_room: int,
    shown_ids: set[str],
    shown_text: str,
    count: MessageCounter,
    shown: Callable[[BaseMessage], BaseMessage],
) -> _Extra:
    """The recalled layer (at most ``recall_room``) and the verbatim fill in ``room``.

    The fill takes what the recall leaves. A hit the fill shows is not recalled: the recall
    is packed leaving out the fill's messages, the fill then takes the room the recall left,
    and while the grown fill shows a recalled hit after all, the recall is packed again without
    the fill's messages and the fill takes the room that frees (at most
    :data:`_SETTLE_ROUNDS` times; then the last fill that shows none of the recall's hits
    stays, its room short of what the recall freed: never shown twice, never over ``room``).
    """
    source, sizes = fill
    sizes_in = list(sizes) if sizes is not None else None

    def fill_in(space: int) -> tuple[list[BaseMessage], int]:
        if not source:
            return [], 0
        return _verbatim_fill(source, sizes_in, set(answered), space, count, shown=shown)

    if not candidates or recall_room <= 0:
        messages, size = fill_in(room)
        return _Extra(fill=tuple(messages), size=size)
    filled, _ = fill_in(room - recall_room)
    excluded = shown_ids | {m.id for m in filled if m.id is not None}
    recalled, records, recalled_size = pack_recalled(
        candidates, recall_room, count, shown_ids=excluded, shown_text=shown_text
    )
    for _ in range(_SETTLE_ROUNDS):
        filled, fill_size = fill_in(room - recalled_size)
        fill_ids = {m.id for m in filled if m.id is not None}
        if not any(r.message_id in fill_ids for r in records):
            break
        # the fill grew over a recalled message: the recall is packed again in its own room
        # without the fill's messages (it only gets smaller), and the fill takes what it frees
        recalled, records, recalled_size = pack_recalled(
            candidates,
            recalled_size,
            count,
            shown_ids=shown_ids | fill_ids,
            shown_text=shown_text,
        )
    return _Extra(
        recalled=recalled,
        records=records,
        fill=tuple(filled),
        size=recalled_size + fill_size,
    )


def _message_layers(
    messages: Sequence[BaseMessage],
    pending: Sequence[BaseMessage],
    folded: Sequence[BaseMessage] = (),
) -> tuple[Layer, ...]:
    """The layer of each conversation message shown: a pending archive's, a folded archive's
    (the fill), else live. Told by message id (a shown copy keeps its original's id)."""
    pending_ids = {m.id for m in pending if m.id is not None}
    folded_ids = {m.id for m in folded if m.id is not None}
    if not pending_ids and not folded_ids:
        # no archived message shown (a history that fits whole, before any commit): the
        # input is what the agent sends without a memory, so its cost must not grow with it
        live: Layer = "live messages"
        return (live,) * len(messages)

    def layer(message: BaseMessage) -> Layer:
        if message.id is not None and message.id in pending_ids:
            return "pending archives"
        if message.id is not None and message.id in folded_ids:
            return "verbatim fill"
        return "live messages"

    return tuple(layer(m) for m in messages)


def _trimmed_size(
    plain_size: int,
    *,
    folded: Sequence[BaseMessage],
    folded_sizes: Sequence[int] | None,
    head: LiveView,
    tail: LiveView,
    usable: int,
    count: MessageCounter,
) -> int | None:
    """What trimming this history to ``usable`` sends, by ``count``: LangChain's
    ``trim_messages(strategy="last", max_tokens=usable, start_on="human",
    include_system=True)`` over the system message (``plain_size``: the thread's own, no
    addition) and the messages as shown (the folded ones read, then the pending and the live
    ones): the longest suffix that fits beside the system message, cut to start on a user
    message. ``None`` when that keeps no user message (trimming would drop the request, and
    the memory's rules for the newest turn apply), or when the read messages hold no older
    message to leave out (the history fits).

    Only the messages the caller read are looked at: they reach past ``usable`` whenever the
    history does (the archives are read newest first up to that room), so the suffix trimming
    keeps lies among them."""
    room = usable - plain_size
    total = 0
    best: int | None = None
    for view in (tail, head):
        prefix = view.prefix
        for index in range(len(view.body) - 1, -1, -1):
            total += prefix[index + 1] - prefix[index]
            if total > room:
                return None if best is None else plain_size + best
            if isinstance(view.body[index], HumanMessage):
                best = total
    for index in range(len(folded) - 1, -1, -1):
        message = folded[index]
        if isinstance(message, SystemMessage | RemoveMessage):
            continue
        total += folded_sizes[index] if folded_sizes is not None else count(message)
        if total > room:
            return None if best is None else plain_size + best
        if isinstance(message, HumanMessage):
            best = total
    return None


def _joined(
    head: LiveView,
    tail: LiveView,
    count: MessageCounter,
    shown: Callable[[BaseMessage], BaseMessage] | None = None,
) -> tuple[LiveView, LiveView]:
    """The archived messages' view and the live one; one list when a live tool result answers
    a call among the archived messages (then ``head`` is empty)."""
    if not (head.body and tail.answers_any(head)):
        return head, tail
    rest = tail.source[1:] if tail.pinned is not None else tail.source
    joined = LiveView.build(
        [*head.source, *rest],
        count,
        shown or neutralise_message,
        pin_head=False,
        pinned=tail.pinned,
    )
    return LiveView(pin_head=False), joined


def _system_notes(head: LiveView, tail: LiveView) -> list[SystemMessage]:
    """The system messages shown in the leading one: the pinned prompt and the newest note."""
    return [m for m in (tail.pinned, tail.last_note or head.last_note) if m is not None]


def _left_out(head: LiveView, tail: LiveView) -> int:
    """Older system notes and tool results without their call: never shown."""
    return max(0, head.notes + tail.notes - 1) + head.left_out_results + tail.left_out_results


def _whole_history(
    system_message: SystemMessage | None,
    folded: Sequence[BaseMessage],
    pending: Sequence[BaseMessage],
    live: LiveView,
    count: MessageCounter,
    *,
    shown: Callable[[BaseMessage], BaseMessage] | None = None,
) -> AssembledContext:
    """The whole history as the input: the system message, every archived message, every live
    one, as the same agent without a memory sends them (no system-prompt addition, no summary,
    no marker). What is shaped the same way with or without the memory stays so: the newest
    later system note joins the leading system message, tool results without their call are
    left out, forged engine headers are quoted (``shown``). Its ``budgets`` are the caller's to
    set."""
    shown = shown or neutralise_message
    head, tail = _joined(
        LiveView.build([*folded, *pending], count, shown, pin_head=False), live, count, shown
    )
    system = _merge_system(system_message, _system_notes(head, tail), None)
    tokens = (count(system) if system is not None else 0) + head.tokens + tail.tokens
    messages = [*head.body, *tail.body]
    return AssembledContext(
        system_message=system,
        messages=messages,
        tokens=tokens,
        dropped=_left_out(head, tail),
        budgets=Budgets(0, 0, 0),
        layers=_message_layers(messages, pending, folded),
    )


def neutralise_message(message: BaseMessage) -> BaseMessage:
    """``message`` as shown: a line starting with the summary header quoted (a copy)."""
    return neutralise_summary_headers([message])[0]


def neutralise_with_recall(message: BaseMessage) -> BaseMessage:
    """``message`` as shown while the recalled layer is on: a line starting with the summary
    header or the recall header quoted (a copy)."""
    return neutralise_summary_headers([message], recall=True)[0]


def neutraliser(recall: bool) -> Callable[[BaseMessage], BaseMessage]:
    """How a conversation message is shown: :func:`neutralise_with_recall` while the recalled
    layer is on, else :func:`neutralise_message` (the input without it is what it was)."""
    return neutralise_with_recall if recall else neutralise_message


class _Body:
    """The shown pending-archive messages (``head``) followed by the shown live ones."""

    def __init__(self, head: LiveView, tail: LiveView) -> None:
        self.head = head
        self.tail = tail
        self.split = len(head.body)
        self.size = self.split + len(tail.body)

    def starts(self) -> list[int]:
        """The turn starts, 0 first (a turn starts at each user message, except where that
        would separate tool calls from their results)."""
        tail = self.tail.starts
        shifted = [*self.head.starts, *map(self.split.__add__, tail)] if self.split else tail
        return shifted if shifted and shifted[0] == 0 else [0, *shifted]

    def suffix(self, start: int) -> int:
        """Tokens of the messages from ``start`` on."""
        head, tail = self.head.prefix, self.tail.prefix
        if start >= self.split:
            return tail[-1] - tail[start - self.split]
        return head[-1] - head[start] + tail[-1]

    def since(self, start: int) -> list[BaseMessage]:
        """The messages from ``start`` on."""
        if start >= self.split:
            return self.tail.body[start - self.split :]
        return self.head.body[start:] + self.tail.body


FILL_HEADER = "[Earlier messages, verbatim]"
"""First line of the marker message that opens the verbatim fill."""

_FILL_NOTE = (
    f"{FILL_HEADER}\n\nThe messages that follow, up to the next note or the end, are older turns "
    "of this conversation shown word for word. They are already folded into the Session History "
    "Summary above; the newer messages come after them."
)


def fill_marker() -> HumanMessage:
    """The user message that opens the verbatim fill (a user message: every provider accepts
    it between the summary and the older turns, and it is never folded as a system note)."""
    return HumanMessage(content=_FILL_NOTE)


def _verbatim_fill(
    folded: Sequence[BaseMessage],
    sizes: list[int] | None,
    answered: set[str],
    room: int,
    count: MessageCounter,
    *,
    shown: Callable[[BaseMessage], BaseMessage] | None = None,
) -> tuple[list[BaseMessage], int]:
    """The newest whole turns of ``folded`` that fit ``room`` with the marker, oldest first.

    A candidate start is a user message; the messages from it to the end of ``folded`` are
    taken only when every tool call among them is answered (by a result among them or among the
    shown messages that follow, whose ``tool_call_id`` are ``answered``; the set is extended
    here) and every tool result among them answers a call among them.
    So the fill never holds a tool result without its call, nor a call without its results, and
    it ends where the shown messages begin (a turn that continues there is shown whole). System
    messages (older notes) and removal requests are left out.

    Returns:
        The marker followed by the chosen messages, and their tokens (``[]`` and 0 when no
        turn fits).
    """
    if room <= 0:
        return [], 0
    pairs = [
        (m, sizes[i] if sizes is not None else count(m))
        for i, m in enumerate(folded)
        if not isinstance(m, SystemMessage | RemoveMessage)
    ]
    marker = fill_marker()
    budget = room - count(marker)
    if budget <= 0 or not pairs:
        return [], 0
    open_results: set[str] = set()  # results whose call is older than the candidate start
    total = 0
    best: int | None = None
    best_total = 0
    texts: dict[int, BaseMessage] = {}
    for index in range(len(pairs) - 1, -1, -1):
        message, size = pairs[index]
        shown_copy = (shown or neutralise_message)(message)
        if shown_copy is not message:  # a quoted header counts a little more
            texts[index] = shown_copy
            size = count(shown_copy)
        total += max(0, size)
        if total > budget:
            break
        if isinstance(message, ToolMessage):
            open_results.add(message.tool_call_id)
            answered.add(message.tool_call_id)
        elif isinstance(message, AIMessage):
            calls = [str(c.get("id")) for c in message.tool_calls or [] if c.get("id")]
            if any(c not in answered for c in calls):
                break  # a call without its result: nothing older can be shown either
            open_results.difference_update(calls)
        if isinstance(message, HumanMessage) and not open_results:
            best, best_total = index, total
    if best is None:
        return [], 0
    chosen = [texts.get(i, pairs[i][0]) for i in range(best, len(pairs))]
    return [marker, *chosen], best_total + count(marker)
