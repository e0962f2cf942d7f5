"""Every exception wm_langgraph raises of its own, under one base: :class:`WorkingMemoryError`.

``except WorkingMemoryError`` catches all of them. Each one also keeps the builtin base it had
before this module existed (``NoStoreError`` is still a ``ValueError``,
``ConflictingMiddlewareError`` a ``RuntimeError``, ``ToolCallingNotSupportedError`` a
``TypeError``), so ``except ValueError`` and the like keep working.

What reaches a user of an agent:

- :class:`NoStoreError`: a run or a read has no store to keep the memory in.
- :class:`NoCheckpointerError`: a read cannot tell a live thread from a deleted one (it knows
  no checkpointer of a thread that runs under one); the message says what to pass.
- :class:`ConflictingMiddlewareError`: another summariser rewrote the thread's messages.

What stays inside Phase 2 (a failed commit keeps the previous Working Memory; the failure is
recorded and counted by the circuit breaker, never raised to the agent), and reaches only a
caller of the writer's functions (``wm_langgraph.writer``): :class:`GenerationError` (with
:class:`ContextLengthError`), :class:`ToolCallingNotSupportedError` (Phase 2 then asks for the
whole document instead), and the call-level :class:`CallTimeoutError` and
:class:`CallRefusedError` that the writer turns into a ``GenerationError``.

:class:`WorkingMemoryDeprecationWarning` (a ``DeprecationWarning``, not an error) is what a
name or module path that moved warns with, for one release, naming its new home.

Plain argument checks (a budget out of range, a config without a ``thread_id``) raise the
builtin ``ValueError`` / ``TypeError`` as Python code does; they are not listed here.

These do not derive from ``langchain_core.exceptions.LangChainException``: they are this
package's, not LangChain's. ``OutputParserException`` means "feed this back to the agent's
model" (``send_to_llm``), and ``ContextOverflowError`` (not in every supported langchain-core)
is what ``SummarizationMiddleware`` reacts to for the *agent's* model; a writer failure must
trigger neither.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "CallRefusedError",
    "CallTimeoutError",
    "ConflictingMiddlewareError",
    "ContextLengthError",
    "ContextOverflow",
    "ErrorKindName",
    "GenerationError",
    "NoCheckpointerError",
    "NoStoreError",
    "ToolCallingNotSupportedError",
    "WorkingMemoryDeprecationWarning",
    "WorkingMemoryError",
]


class WorkingMemoryError(Exception):
    """Base class of every exception wm_langgraph raises of its own."""


class NoStoreError(WorkingMemoryError, ValueError):
    """The memory has no store: none given, and no graph store to use.

    Raised by a hook run (or a read such as ``memory.get_working_memory(config)``) when neither
    ``store=`` was given to the memory nor the graph was compiled with a store. The message
    says how to fix it.
    """


class NoCheckpointerError(WorkingMemoryError, ValueError):
    """A config-only read cannot tell a live thread from a deleted one.

    Raised by a read outside a run (``get_working_memory(config)``, ``list_archives``,
    ``transcript``, ``report``, ...) of a thread that has records and whose hooks ran under a
    checkpointer the memory does not know: only the thread's checkpoints say whether it was
    deleted (a deleted thread reads as nothing, behaviour §6.8), and an empty answer for a live
    thread would look like lost data. The message says what to pass (``checkpointer=``, or the
    async reads on an async checkpointer's own event loop).
    """


class ConflictingMiddlewareError(WorkingMemoryError, RuntimeError):
    """Another middleware conflicts with the memory.

    Raised by a hook run the first time a summary message of LangChain's
    ``SummarizationMiddleware`` is in the thread's messages (the messages it replaced are in
    neither an archive nor the Working Memory: use one of the two), and by ``create_agent`` when
    one agent is given two ``WorkingMemoryMiddleware`` instances (they would share the agent's
    one ``working_memory`` state value).
    """


class ToolCallingNotSupportedError(WorkingMemoryError, TypeError):
    """The chat model cannot call tools, which the Working Memory update protocol needs.

    Raised by ``writer.binding.bind_update_tool`` (so by an update call) when the model has no
    working ``bind_tools``. Phase 2 catches it and asks the model for the whole document
    instead (behaviour §5.4's no-tool-call path).
    """


class CallTimeoutError(WorkingMemoryError):
    """A writer call did not finish within its timeout (it was abandoned).

    Raised by ``writer.calls.call_within``; the writer turns it into a
    :class:`GenerationError` of kind ``"transient"``.
    """


class CallRefusedError(WorkingMemoryError):
    """A writer call was not started: an earlier call of the same key, or too many calls, hang.

    Raised by ``writer.calls.call_within``; the writer turns it into a
    :class:`GenerationError` of kind ``"transient"``.
    """


ErrorKindName = Literal["overflow", "rejected", "transient", "unusable"]
"""What a :class:`GenerationError` says about the call (see :class:`GenerationError`)."""


class GenerationError(WorkingMemoryError):
    """A Working Memory model call failed: the model raised, timed out, or its reply was not
    usable. The previous Working Memory stays in force (behaviour §4.7, §5.7).

    Raised by the writer's create and update calls (``writer.generate``); Phase 2 catches it,
    keeps the previous Working Memory and records the failure.

    Attributes:
        kind: ``"overflow"`` (:class:`ContextLengthError`: the prompt exceeds the writer's
            context — send less, never the same prompt again), ``"rejected"`` (the provider
            refuses this request: 400/413/422, a content filter), ``"unusable"`` (the reply
            cannot be used: refusal, not a WM, cut off) or ``"transient"`` (timeouts, 429,
            5xx, ...).
    """

    kind: ErrorKindName = "transient"

    def __init__(self, message: str, *, kind: ErrorKindName | None = None) -> None:
        """Create the error; ``kind`` defaults to the class's."""
        super().__init__(message)
        if kind is not None:
            self.kind = kind


@dataclass(frozen=True, slots=True)
class ContextOverflow:
    """A provider's context-length error, with the numbers it gave (its own tokens).

    Attributes:
        limit: The context size, when stated.
        requested: What the request came to (prompt, or prompt + completion), when stated.
        prompt: The prompt part of ``requested``, when stated.
        completion: The completion reservation (``max_tokens``) in it, when stated.
    """

    limit: int | None = None
    requested: int | None = None
    prompt: int | None = None
    completion: int | None = None


class ContextLengthError(GenerationError):
    """The prompt exceeded the writer's context (the provider said so).

    Raised by the writer's calls when the provider's error is a context-length one; Phase 2
    then sends a smaller batch.

    Attributes:
        overflow: The numbers the provider gave (its own tokens), for sizing the next batch.
    """

    kind: ErrorKindName = "overflow"

    def __init__(self, message: str, overflow: ContextOverflow) -> None:
        """Create the error with the provider's numbers."""
        super().__init__(message)
        self.overflow = overflow


class WorkingMemoryDeprecationWarning(DeprecationWarning):
    """A name or module path of wm_langgraph moved; the message names its new home.

    Emitted when a deprecated top-level name (``wm_langgraph.merge_working_memory``) or an old
    module path (``wm_langgraph.core.text``) is used. They keep working for this release and
    are removed in a later one. Its own category, as LangChain's and LangGraph's deprecation
    warnings have, so it can be filtered (or made an error) on its own.
    """
