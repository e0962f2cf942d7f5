"""Validated, immutable settings of the session engine (behaviour §6-§8; all in docs/budgets.md)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Literal

__all__ = [
    "DEFAULT_ARCHIVE_MEMORY_TOKENS",
    "DEFAULT_MODEL_TIMEOUT_SECONDS",
    "DEFAULT_RECALL_MIN_SCORE",
    "DEFAULT_RECALL_TOKENS",
    "DEFAULT_RESERVE_TOKENS",
    "DEFAULT_WRITER_MAX_TOKENS",
    "MAX_KEEP_RECENT_COUNT",
    "RECALL_FLOOR_SHARE",
    "RECALL_SHARE",
    "BudgetFraction",
    "WorkingMemoryConfig",
    "model_input_window",
    "recall_room",
    "reply_reserve",
]

BudgetFraction = tuple[Literal["fraction"], float]
"""``token_budget=("fraction", 0.8)``: that share of the agent model's input window (its
``profile["max_input_tokens"]``), LangChain's ``SummarizationMiddleware`` convention."""

DEFAULT_ARCHIVE_MEMORY_TOKENS = 8_000
"""Default cap of the Working Memory layer; scales down with small budgets (15% of usable)."""

DEFAULT_RESERVE_TOKENS = 20_000
"""Default reply reserve of budgets of 40,000 tokens and more."""

RESERVE_FROM = 40_000
"""The default ``reserve_tokens`` applies from this budget on (below it the reserve is 15%);
an explicitly set one applies at every budget."""


def reply_reserve(token_budget: int, reserve_tokens: int) -> int:
    """Tokens kept free for the reply (behaviour §7.4, docs/budgets.md): at least 15% of the
    budget (rounded up), and at least ``reserve_tokens`` when it applies: from 40,000 tokens on
    for the default 20,000, at every budget when the user set another value (a reserve set
    explicitly is honoured; the default is not forced on a small window). Never more than the
    budget."""
    fifteen_percent = (15 * token_budget + 99) // 100
    applies = token_budget >= RESERVE_FROM or reserve_tokens != DEFAULT_RESERVE_TOKENS
    return min(token_budget, max(fifteen_percent, reserve_tokens if applies else 0))


DEFAULT_RECALL_TOKENS = 2_000
"""Default cap of the recalled layer (docs/budgets.md, "The split of the budget")."""

RECALL_SHARE = 0.3
"""The recalled layer is at most this share of the usable budget."""

RECALL_FLOOR_SHARE = 0.15
"""The recalled layer's guaranteed room, as a share of the usable budget (at most its cap): the
Working Memory is shown whole first and the recall takes the room it leaves, but a WM that
would leave the recall less than this is cut (docs/budgets.md, "The split of the budget") —
the same share as the WM's own guaranteed minimum, so neither crowds the other out."""

DEFAULT_RECALL_MIN_SCORE = 2.0
"""Default lowest search score a recalled hit may have (docs/budgets.md)."""


def recall_room(usable: int, recall_tokens: int) -> int:
    """The most the recalled layer counts at ``usable``: ``recall_tokens``, at most
    :data:`RECALL_SHARE` of ``usable``."""
    return min(recall_tokens, int(RECALL_SHARE * usable))


MAX_KEEP_RECENT_COUNT = 10_000
"""Upper bound of ``keep_recent_count`` (behaviour §6.1)."""

DEFAULT_MODEL_TIMEOUT_SECONDS = 120.0
"""Default bound of one Working Memory writer call and of one inline Phase 2 run: long enough
for a hosted model to rewrite a full document, short enough that a hung writer never holds a
turn or a worker for long. Raise it for slow local writers (CPU-only llama.cpp, Ollama)."""

DEFAULT_WRITER_MAX_TOKENS = 14_000
"""Default ``max_tokens`` of a writer call: the document budget (about 12,000 tokens, behaviour
§2.6) plus room for the tool call's JSON, so a whole rewritten document fits and a looping model
stops there instead of at the end of its context."""


def _check_int(name: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}, got {value}")


def _check_float(name: str, value: object, low: float, high: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if math.isnan(value) or not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}, got {value}")


def model_input_window(model: object) -> int | None:
    """A chat model's input window from its ``profile`` (``max_input_tokens``), else None."""
    try:
        profile = getattr(model, "profile", None)
    except Exception:  # a profile property that fails to load its data
        return None
    if not isinstance(profile, Mapping):
        return None
    window = profile.get("max_input_tokens")
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        return None
    return window


def _fmt(n: float) -> str:
    return f"{n:,}"


def _check_bool(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")


@dataclass(frozen=True, kw_only=True, slots=True)
class WorkingMemoryConfig:
    """Settings of a :class:`~wm_langgraph.WorkingMemory`. Keyword-only, validated at once.

    Attributes:
        token_budget: The model's context window in tokens (the assemble budget), or
            ``("fraction", f)`` (0 < f <= 1): that share of the agent model's input window
            (``profile["max_input_tokens"]``), resolved when the memory meets the agent's model
            (``create_agent`` with the middleware, or ``WorkingMemory(agent_model=...)``).
        commit_token_threshold_ratio: Commit when the tokens outside the recent window reach
            ``token_budget * ratio``; 0 commits every turn.
        commit_keep_recent_count: Messages kept live by an automatic commit (0..10,000).
        archive_memory_tokens: Cap of assemble's layer 1 (the Working Memory message).
        reserve_tokens: Tokens kept free for the reply, at least 15% of the budget. The default
            (20,000) applies from 40,000 tokens on; a value set explicitly applies at every
            budget.
        background: Run Phase 2 (the model call) off the turn's path.
        max_consecutive_failures: Consecutive Phase 2 failures after which a thread's Phase 2
            pauses (circuit breaker) until ``resume()`` or the cool-down.
        failure_cooldown_seconds: After this long a paused thread may probe the model once.
        max_tool_output_tokens: Cap of one tool output (and one tool call's arguments) in the
            writer's prompt (the archive keeps the whole output).
        max_message_tokens: Cap of the text of any other message (user, assistant, system) in
            the writer's prompt: a pasted 40k-token log is shown by its start and end around a
            ``[… N tokens truncated …]`` marker (the archive keeps it whole).
        max_prompt_messages_tokens: Phase 2 folds pending archives in batches whose rendered
            messages stay under this many tokens; an archive larger than that is folded in
            slices (several writer calls, one WM version). When the writer reports that a
            prompt exceeded its context, the limit is lowered for this process and the batch
            is retried smaller — never the same prompt again.
        writer_context_tokens: The writer's context window, when known (e.g. 32768 for a local
            model). Batches are then sized to fit it with the reply (``writer_max_tokens``, at
            most half of it) from the first call on; None learns the limit from the
            provider's context-length errors.
        writer_max_tokens: ``max_tokens`` sent with every writer call (see
            :data:`DEFAULT_WRITER_MAX_TOKENS`); a reply that stops at it is treated as cut off
            (its complete part is salvaged, the rest retried), never as a silent KEEP. A model
            that sets its own ``max_tokens`` keeps it.
        long_term_memory: After each completed Working Memory, write its Key Facts & Decisions
            items to a per-user store namespace that the user's other threads can search.
        long_term_namespace: Prefix of that namespace; the user id and ``"facts"`` follow.
        phase2_workers: Background Phase 2 rounds (one writer call or one sliced archive
            each) that run at once across threads. Threads take turns round by round, and a
            round running longer than ``phase2_stall_seconds`` (a hung writer) stops counting,
            so a hung or backlogged thread cannot starve the others; at most
            ``4 * phase2_workers`` rounds run at once in all. The default, 8, lets one process
            serving 50 threads with a 2.5 s writer drain its backlog in about half a minute
            after the load ends (4 took about 75 s: ``bench/LOAD.md``); the calls wait on the
            network, so more of them cost little CPU.
        phase2_stall_seconds: After this long a background round no longer holds one of the
            ``phase2_workers`` slots.
        model_timeout_seconds: Give up on one writer call after this long (default
            :data:`DEFAULT_MODEL_TIMEOUT_SECONDS` = 120 s; a failure: the old WM stays, the
            archives stay pending). It also bounds an inline Phase 2 as a whole (a mid-turn
            overflow commit, ``compact()``, ``background=False``): waiting for a running job
            of the thread and every writer call of the run together take at most this long,
            so the worst case a turn waits for the writer is one timeout. None waits as long
            as the model client does (not recommended).
        guards: False disables the per-section guards — for ablation/benchmarks only; the
            document stays seven sections and header-safe.
        verbatim_fill: True (default): once the history outgrows the usable budget, the room
            the layers leave inside it holds the newest already-folded messages verbatim (whole
            turns), up to what trimming the history to the same budget would send in all.
            The other layers keep the usable budget.
            False leaves that room empty (smaller, cheaper model calls). While the whole
            history fits, it is the input either way.
        recall: True (default): on a user's turn, once the history outgrows the usable
            budget, the memory searches the thread's archives with the user's message (the
            search of ``archive_search``) and shows the best hits the input does not show
            already, quoted and marked as recalled, in a layer of their own; its room comes
            out of the verbatim fill's, never on top. False: no recall, the input is what it
            was without it.
        recall_tokens: The most the recalled layer may count (it is also at most
            ``RECALL_SHARE`` of the usable budget, so a small window keeps its recent turns).
        recall_min_score: Hits the search scores below this are not recalled (0: every hit
            that matches a word of the message may be).
    """

    token_budget: int | BudgetFraction = 128_000
    commit_token_threshold_ratio: float = 0.5
    commit_keep_recent_count: int = 10
    archive_memory_tokens: int = DEFAULT_ARCHIVE_MEMORY_TOKENS
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS
    background: bool = True
    max_consecutive_failures: int = 3
    failure_cooldown_seconds: float = 300.0
    max_tool_output_tokens: int = 2_000
    max_message_tokens: int = 4_000
    max_prompt_messages_tokens: int = 100_000
    writer_context_tokens: int | None = None
    writer_max_tokens: int = DEFAULT_WRITER_MAX_TOKENS
    long_term_memory: bool = False
    long_term_namespace: tuple[str, ...] = ("wm_langgraph", "long_term")
    phase2_workers: int = 8
    phase2_stall_seconds: float = 10.0
    model_timeout_seconds: float | None = DEFAULT_MODEL_TIMEOUT_SECONDS
    guards: bool = True
    verbatim_fill: bool = True
    recall: bool = True
    recall_tokens: int = DEFAULT_RECALL_TOKENS
    recall_min_score: float = DEFAULT_RECALL_MIN_SCORE

    def __post_init__(self) -> None:
        budget = self.token_budget
        if isinstance(budget, tuple):
            if (
                len(budget) != 2
                or budget[0] != "fraction"
                or isinstance(budget[1], bool)
                or not isinstance(budget[1], int | float)
                or math.isnan(budget[1])
                or not 0 < budget[1] <= 1
            ):
                raise ValueError(
                    "token_budget as a fraction is ('fraction', f) with 0 < f <= 1 (a share of "
                    f"the agent model's input window), got {budget!r}"
                )
        else:
            _check_int("token_budget", budget, 256, 100_000_000)
        _check_float("commit_token_threshold_ratio", self.commit_token_threshold_ratio, 0.0, 1.0)
        _check_int(
            "commit_keep_recent_count", self.commit_keep_recent_count, 0, MAX_KEEP_RECENT_COUNT
        )
        _check_int("archive_memory_tokens", self.archive_memory_tokens, 0, 100_000_000)
        _check_int("reserve_tokens", self.reserve_tokens, 0, 100_000_000)
        _check_bool("background", self.background)
        _check_int("max_consecutive_failures", self.max_consecutive_failures, 1, 1_000)
        _check_float("failure_cooldown_seconds", self.failure_cooldown_seconds, 0.0, 1e9)
        _check_int("max_tool_output_tokens", self.max_tool_output_tokens, 1, 1_000_000)
        _check_int("max_message_tokens", self.max_message_tokens, 1, 1_000_000)
        _check_int("max_prompt_messages_tokens", self.max_prompt_messages_tokens, 1, 100_000_000)
        if self.writer_context_tokens is not None:
            _check_int("writer_context_tokens", self.writer_context_tokens, 1_024, 100_000_000)
        _check_int("writer_max_tokens", self.writer_max_tokens, 256, 10_000_000)
        _check_bool("long_term_memory", self.long_term_memory)
        _check_int("phase2_workers", self.phase2_workers, 1, 256)
        _check_float("phase2_stall_seconds", self.phase2_stall_seconds, 0.001, 1e6)
        _check_bool("guards", self.guards)
        _check_bool("verbatim_fill", self.verbatim_fill)
        _check_bool("recall", self.recall)
        _check_int("recall_tokens", self.recall_tokens, 0, 100_000_000)
        _check_float("recall_min_score", self.recall_min_score, 0.0, 1e6)
        if self.model_timeout_seconds is not None:
            _check_float("model_timeout_seconds", self.model_timeout_seconds, 0.001, 1e6)
        ns = self.long_term_namespace
        if (
            not isinstance(ns, tuple)
            or not ns
            or not all(isinstance(x, str) and x and "." not in x for x in ns)
        ):
            raise ValueError(
                "long_term_namespace must be a non-empty tuple of non-empty strings without "
                f"'.', got {ns!r}"
            )
        if ns[0] == "langgraph":
            raise ValueError("long_term_namespace must not start with 'langgraph' (reserved)")
        if isinstance(self.token_budget, int):
            self._check_budgets(self.token_budget, "")

    def _check_budgets(self, budget: int, source: str) -> None:
        """Refuse budgets that leave the model (almost) nothing: a reply reserve of the whole
        window, or a Working Memory layer set larger than what is left for the prompt.

        Raises:
            ValueError: Saying which settings collide and how to fix the call.
        """
        reserve = self.reserve_tokens
        explicit_reserve = reserve != DEFAULT_RESERVE_TOKENS
        if reserve >= budget and (budget >= RESERVE_FROM or explicit_reserve):
            raise ValueError(
                f"reserve_tokens={_fmt(reserve)} leaves nothing of token_budget="
                f"{_fmt(budget)}{source} for the prompt: the reply reserve must be smaller than "
                f"the budget. Lower reserve_tokens (e.g. {_fmt(budget // 5)}, 20%) or raise "
                f"token_budget to the model's real context window"
            )
        reserved = reply_reserve(budget, reserve)
        usable = budget - reserved
        layer = self.archive_memory_tokens
        if layer > usable and layer != DEFAULT_ARCHIVE_MEMORY_TOKENS:
            raise ValueError(
                f"archive_memory_tokens={_fmt(layer)} is larger than the prompt's usable budget "
                f"({_fmt(usable)} = token_budget {_fmt(budget)}{source} minus the reply reserve "
                f"{_fmt(reserved)}): lower archive_memory_tokens to at most {_fmt(usable)} "
                f"(e.g. {_fmt(usable * 15 // 100)}, 15%) or raise token_budget"
            )

    @property
    def budget_fraction(self) -> float | None:
        """The fraction of the agent model's input window ``token_budget`` asks for, or None
        when it is a number of tokens."""
        budget = self.token_budget
        return float(budget[1]) if isinstance(budget, tuple) else None

    def for_model(self, model: object) -> WorkingMemoryConfig:
        """This config with a fractional ``token_budget`` resolved against ``model``'s input
        window (``profile["max_input_tokens"]``, or an int window); unchanged when the budget
        is already a number of tokens.

        Raises:
            ValueError: The model has no profile with ``max_input_tokens``, or the resolved
                budget collides with ``reserve_tokens`` / ``archive_memory_tokens``.
        """
        fraction = self.budget_fraction
        if fraction is None:
            return self
        if isinstance(model, int) and not isinstance(model, bool):
            window: int | None = model
        else:
            window = model_input_window(model)
        if window is None:
            raise ValueError(
                f"token_budget=('fraction', {fraction}) needs the agent model's input window, "
                f"and {type(model).__name__} has no profile['max_input_tokens']: give "
                "token_budget as a number of tokens, or build the model with "
                "profile={'max_input_tokens': ...}"
            )
        budget = max(256, int(window * fraction))
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values["token_budget"] = budget
        try:
            return WorkingMemoryConfig(**values)
        except ValueError as exc:
            raise ValueError(
                f"{exc} (token_budget=('fraction', {fraction}) of the model's "
                f"{_fmt(window)}-token input window is {_fmt(budget)})"
            ) from None

    @property
    def commit_threshold_tokens(self) -> float:
        """``token_budget * commit_token_threshold_ratio``.

        Raises:
            ValueError: The budget is a fraction not resolved yet (see :meth:`for_model`).
        """
        return self.tokens * self.commit_token_threshold_ratio

    @property
    def tokens(self) -> int:
        """``token_budget`` as a number of tokens.

        Raises:
            ValueError: The budget is a fraction not resolved yet (see :meth:`for_model`).
        """
        budget = self.token_budget
        if isinstance(budget, tuple):
            raise ValueError(
                f"token_budget={budget!r} is not resolved: the memory resolves it against the "
                "agent model (create_agent with WorkingMemoryMiddleware, or "
                "WorkingMemory(agent_model=...)); config.for_model(model) does it by hand"
            )
        return budget

    def replace(self, **changes: object) -> WorkingMemoryConfig:
        """A copy with some fields changed (validated again; unknown names raise TypeError)."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise TypeError(f"unknown WorkingMemoryConfig field(s): {', '.join(unknown)}")
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return WorkingMemoryConfig(**values)
