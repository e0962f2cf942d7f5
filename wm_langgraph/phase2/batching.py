"""How much one Phase 2 round sends to the writer: batches of archives, slices of one archive,
and the writer's limits learned from its context-length errors (without
them the same too-large prompt was sent every round, and the archives behind it were never
folded).

- Each archive's messages start with its marker line (``[archive archive_003]``,
  ``document.abstracts.archive_marker``), so that the writer can give each archive its
  abstract; every slice of an archive starts with it too.
- Every message is rendered capped (tool outputs at ``max_tool_output_tokens``, any other text
  at ``max_message_tokens``, both at most the messages budget), so one message always fits.
- A batch is the longest run of pending archives (at most ``max_archives``) whose rendered
  messages fit the messages budget; an archive larger than the budget alone is folded in
  *slices* — consecutive runs of its messages that fit — one writer call each, in one round
  that stores one WM version covering the archive.
- :class:`WriterLimits` holds what the writer's provider said: after a context-length error the
  prompt limit is lowered below the prompt that failed (by the provider's own ratio when it
  gave numbers, else by half), so the next round sends less — never the same prompt again.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage

from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.document.abstracts import archive_marker
from wm_langgraph.document.tokens import TokenCounter
from wm_langgraph.messages import render_message_blocks
from wm_langgraph.phase2.trails import trail_paths
from wm_langgraph.storage.archives import ArchiveRecord
from wm_langgraph.writer.provider import ContextOverflow

__all__ = ["MIN_MESSAGES_BUDGET", "Batch", "Slice", "WriterLimits", "plan_batch"]

MIN_MESSAGES_BUDGET = 256
"""Below this many tokens for the messages, a prompt cannot show the writer anything useful."""

_SEPARATOR_TOKENS = 2  # the blank line between two message blocks
_MARGIN = 0.9  # safety against tokenizer differences after an overflow
_MIN_REPLY_TOKENS = 512


@dataclass(frozen=True, slots=True)
class Slice:
    """The messages of one writer call: rendered text, token count, artifact-trail paths and
    where each came from (``user``, ``<tool> arguments``, ``<tool> output``)."""

    text: str
    tokens: int
    paths: list[str]
    sources: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Batch:
    """What one round folds: the archives and the slices their messages are sent in."""

    archives: list[ArchiveRecord]
    slices: list[Slice]

    @property
    def ids(self) -> list[str]:
        """The archive ids."""
        return [record.id for record in self.archives]


@dataclass
class WriterLimits:
    """The writer's prompt and reply limits as far as known (declared, or learned from errors).

    Thread-safe; one per :class:`~wm_langgraph.WorkingMemory` (one writer model).
    """

    prompt_tokens: int | None = None
    reply_tokens: int | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def from_config(cls, config: WorkingMemoryConfig) -> WriterLimits:
        """Limits from ``writer_context_tokens`` (reply: at most half of it), or unknown."""
        context = config.writer_context_tokens
        if context is None:
            return cls()
        reply = min(config.writer_max_tokens, context // 2)
        return cls(prompt_tokens=context - reply, reply_tokens=reply)

    def max_tokens(self, configured: int) -> int:
        """The ``max_tokens`` to send: the configured one, or less when the writer needs it."""
        with self._lock:
            return min(configured, self.reply_tokens or configured)

    def messages_budget(self, overhead: int, configured: int) -> int:
        """Tokens left for the messages in a prompt whose other parts take ``overhead``."""
        with self._lock:
            if self.prompt_tokens is None:
                return configured
            return min(configured, self.prompt_tokens - overhead)

    def learn_output_limit(self, allowed: int) -> None:
        """The provider accepts at most ``allowed`` output tokens."""
        with self._lock:
            self.reply_tokens = min(self.reply_tokens or allowed, allowed)

    def learn_overflow(self, prompt_tokens: int, overflow: ContextOverflow) -> None:
        """A prompt of ``prompt_tokens`` (our count) exceeded the writer's context."""
        limit, completion = overflow.limit, overflow.completion
        their_prompt = overflow.prompt
        if their_prompt is None and overflow.requested is not None:
            their_prompt = overflow.requested - (completion or 0)
        with self._lock:
            shrunk_reply = False
            if limit and completion and completion * 2 >= limit:
                # The reply reservation alone fills half the context (vLLM counts max_tokens
                # in it): ask for a smaller reply rather than starve the prompt.
                reply = max(_MIN_REPLY_TOKENS, limit // 4)
                shrunk_reply = reply < (self.reply_tokens or completion)
                self.reply_tokens = min(self.reply_tokens or reply, reply)
                completion = self.reply_tokens
            if limit and their_prompt and their_prompt > 0:
                room = limit - (completion or 0)
                if shrunk_reply and room >= their_prompt:
                    return  # the prompt was fine; the smaller reply makes it fit
                target = math.floor(prompt_tokens * max(0, room) / their_prompt * _MARGIN)
            else:
                target = prompt_tokens // 2
            target = min(target, prompt_tokens - 1)  # always strictly less than what failed
            self.prompt_tokens = min(self.prompt_tokens or target, target)


def _blocks(
    messages: Sequence[BaseMessage], config: WorkingMemoryConfig, counter: TokenCounter, cap: int
) -> list[tuple[str, int]]:
    blocks = render_message_blocks(
        messages,
        counter=counter,
        max_tool_output_tokens=min(config.max_tool_output_tokens, cap),
        max_message_tokens=min(config.max_message_tokens, cap),
    )
    return [(block, counter(block) + _SEPARATOR_TOKENS) for block in blocks]


def _slice(
    messages: Sequence[BaseMessage],
    blocks: list[tuple[str, int]],
    before: Sequence[BaseMessage] = (),
) -> Slice:
    """One writer call's slice (``before``: the archive's messages in earlier slices, whose
    tool calls this slice's tool results may answer)."""
    trail = trail_paths(messages, context=before)
    return Slice(
        text="\n\n".join(text for text, _ in blocks),
        tokens=sum(tokens for _, tokens in blocks),
        paths=[p.path for p in trail],
        sources={p.path: p.source for p in trail},
    )


def _marker(record: ArchiveRecord, counter: TokenCounter) -> tuple[str, int]:
    text = archive_marker(record.id)
    return text, counter(text) + _SEPARATOR_TOKENS


def plan_batch(
    records: Sequence[ArchiveRecord],
    *,
    budget: int,
    config: WorkingMemoryConfig,
    counter: TokenCounter,
    max_archives: int | None = None,
) -> Batch:
    """The archives one round folds (at least one) and the slices their messages go in.

    Args:
        records: The pending archives, oldest first (not empty).
        budget: Tokens for the rendered messages of one writer call.
        config: Caps for tool outputs and message text.
        counter: Token counter.
        max_archives: At most this many archives (a batch being split to isolate a failure).
    """
    # Leave room for a block's header line and the truncation marker of a capped body.
    cap = max(16, budget - 64)
    chosen: list[ArchiveRecord] = []
    blocks: list[tuple[str, int]] = []
    total = 0
    for record in records:
        if max_archives is not None and len(chosen) >= max_archives:
            break
        marker = _marker(record, counter)
        own = _blocks(record.messages, config, counter, cap)
        size = marker[1] + sum(tokens for _, tokens in own)
        if chosen and total + size > budget:
            break
        chosen.append(record)
        blocks.extend([marker, *own])
        total += size
        if total > budget:  # a single archive larger than the budget: folded in slices
            pieces = _slices(record.messages, own, max(1, budget - marker[1]))
            return Batch([record], [_marked(piece, marker) for piece in pieces])
    messages = [m for record in chosen for m in record.messages]
    return Batch(chosen, [_slice(messages, blocks)])


def _marked(piece: Slice, marker: tuple[str, int]) -> Slice:
    """``piece`` starting with its archive's marker line."""
    return Slice(f"{marker[0]}\n\n{piece.text}", piece.tokens + marker[1], piece.paths)


def _slices(
    messages: Sequence[BaseMessage], blocks: list[tuple[str, int]], budget: int
) -> list[Slice]:
    """Consecutive runs of an archive's messages, each within the budget (one message at least)."""
    shown = [m for m in messages if m.type != "remove"]
    slices: list[Slice] = []
    start, total = 0, 0
    for index, (_, tokens) in enumerate(blocks):
        if index > start and total + tokens > budget:
            slices.append(_slice(shown[start:index], blocks[start:index], shown[:start]))
            start, total = index, 0
        total += tokens
    slices.append(_slice(shown[start:], blocks[start:], shown[:start]))
    return slices
