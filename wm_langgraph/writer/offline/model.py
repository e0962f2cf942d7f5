"""The offline model: a deterministic heuristic extractive summariser for the Working Memory.

It is *not* a language model. It is a real LangChain ``BaseChatModel`` (so the engine drives it
exactly like ChatOpenAI: plain completion for create, ``bind_tools`` + forced ``tool_choice``
for update) that reads its own prompt back — the tagged inputs of the create and update
prompts and the transcript rendered by ``messages`` — and extracts, with fixed rules:

- a stable session title from the first request;
- the current state from the latest exchange;
- the user's goals, decisions with their reasons, constraints and preferences;
- the files touched (from tool-call arguments and tool results) and how;
- errors with the fix that followed, and user corrections;
- open questions / TODOs, marked ``[resolved]`` when a later message settles them;
- for each archive the folded messages mark, an extractive abstract (:mod:`._abstract`): who,
  when and the most salient statements, in the archive's own words.

With the ``update_working_memory`` tool bound it answers with exactly one tool call choosing
KEEP / UPDATE / APPEND per section as a careful model would; without tools it writes the whole
seven-section document (carrying forward a prior summary). English and Chinese are handled.
Same input, same output: no randomness, no clock, no network. Use it to run everything without
an API key; use a real model for abstractive quality.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from pydantic import ConfigDict

from wm_langgraph.document.abstracts import ABSTRACTS_TAG
from wm_langgraph.document.protocol import UPDATE_TOOL_NAME
from wm_langgraph.document.sections import (
    is_working_memory,
    normalise_working_memory,
    parse_working_memory,
    render_working_memory,
)
from wm_langgraph.writer.capture import CAPTURE_TOOL_NAME
from wm_langgraph.writer.offline._abstract import archive_abstracts
from wm_langgraph.writer.offline._chat import read_context
from wm_langgraph.writer.offline._extract import Findings, extract_findings
from wm_langgraph.writer.offline._plan import apply_ops, plan_ops
from wm_langgraph.writer.offline._transcript import parse_transcript
from wm_langgraph.writer.offline.tools import asks_for_update, bind_openai_tools, tool_name
from wm_langgraph.writer.prompts import extract_block

__all__ = ["OfflineWorkingMemoryModel"]

logger = logging.getLogger(__name__)

_LLM_TYPE = "wm-offline-extractive"
_EMPTY_PRIOR = {"", "(none)", "none", "n/a", "(empty)", "无", "（无）"}


def _message_text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "\n".join(parts)


def _abstracts(prompt: str, state: str) -> dict[str, str]:
    """The extractive abstract of each archive the ``<messages>`` block marks."""
    block = extract_block(prompt, "messages") or ""
    return archive_abstracts(parse_transcript(block), read_context(state)) if block else {}


def _findings(messages: list[BaseMessage], prompt: str, old: Mapping[str, str]) -> Findings:
    """Parse the ``<messages>`` block (or, without one, the last user message); ``old`` is the
    current document (a chat round records its speakers and date in Current State; the names
    its items write are names when a sentence opens with one)."""
    block = extract_block(prompt, "messages")
    if block is None:
        humans = [m for m in messages if isinstance(m, HumanMessage)]
        block = _message_text(humans[-1]) if humans else ""
    known = "\n".join(body for name, body in old.items() if name != "Current State")
    state = old.get("Current State", "")
    return extract_findings(parse_transcript(block), read_context(state), known=known)


class OfflineWorkingMemoryModel(BaseChatModel):
    """A deterministic heuristic extractive summariser posing as a chat model (no LLM inside).

    Create call (no tools bound): returns the full seven-section Working Memory document as
    the message text, built from the ``<messages>`` block and carrying forward the
    ``<prior_summary>``. Update call (``update_working_memory`` bound): returns an
    ``AIMessage`` with exactly one ``update_working_memory`` tool call whose arguments hold
    a KEEP / UPDATE / APPEND decision for each of the seven sections, based on the
    ``<working_memory>``, ``<messages>`` and ``<section_size_warnings>`` blocks.

    Every reply is a fresh message; the tool call id is derived from the prompt, so the same
    prompt always gives the same reply. Takes no constructor arguments besides LangChain's
    standard ones (``callbacks``, ``tags``, ``metadata``…); unknown keywords raise.

    Example:
        >>> model = OfflineWorkingMemoryModel()
        >>> reply = model.invoke("<prior_summary>(none)</prior_summary>\\n"
        ...                      "<messages>[user]\\nPlease add retries to fetch.py</messages>")
        >>> reply.text.startswith("# Working Memory")
        True
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    def model_post_init(self, context: Any, /) -> None:
        """Log, once per instance, what this model is (an honest heuristic summariser)."""
        super().model_post_init(context)
        logger.info(
            "wm_langgraph: using OfflineWorkingMemoryModel, a deterministic heuristic extractive "
            "summariser (rule-based, no LLM, no network); set OPENAI_API_KEY for a real model"
        )

    @property
    def _llm_type(self) -> str:
        return _LLM_TYPE

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": _LLM_TYPE}

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | dict[str, Any] | bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools (OpenAI format) and ``tool_choice`` for the following calls.

        Args:
            tools: The tools; only ``update_working_memory`` changes the behaviour.
            tool_choice: Accepted in every provider spelling (a tool name, ``"any"``,
                ``"required"``, ``True``, an OpenAI-style dict); ``"none"`` disables tools.
            **kwargs: Further call options (``parallel_tool_calls``…), accepted and ignored.
        """
        return bind_openai_tools(self, tools, tool_choice, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        prompt = "\n\n".join(_message_text(m) for m in messages)
        tools = kwargs.get("tools") or []
        if any(tool_name(t) == CAPTURE_TOOL_NAME for t in tools):
            # The capture check's follow-up: this model already wrote what its extractors
            # find, so it declines (no call); code then adds what still carries an anchor.
            message = AIMessage(
                content="", response_metadata={"model_name": _LLM_TYPE, "finish_reason": "stop"}
            )
            return ChatResult(generations=[ChatGeneration(message=message)])
        update = asks_for_update(tools, kwargs.get("tool_choice"))
        message = self._update(messages, prompt) if update else self._create(messages, prompt)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _create(self, messages: list[BaseMessage], prompt: str) -> AIMessage:
        prior = (extract_block(prompt, "prior_summary") or "").strip()
        if prior.casefold() in _EMPTY_PRIOR:
            prior = ""
        if prior and not is_working_memory(prior):
            prior = normalise_working_memory(prior)  # a legacy summary lands in Key Facts
        old = parse_working_memory(prior)
        found = _findings(messages, prompt, old)
        document = render_working_memory(apply_ops(old, plan_ops(old, found)))
        abstracts = _abstracts(prompt, old.get("Current State", ""))
        if abstracts and f"<{ABSTRACTS_TAG}>" in prompt:  # asked for, after the document
            lines = "\n".join(f"{key}: {text}" for key, text in abstracts.items())
            document += f"\n\n<{ABSTRACTS_TAG}>\n{lines}\n</{ABSTRACTS_TAG}>\n"
        return AIMessage(
            content=document,
            response_metadata={"model_name": _LLM_TYPE, "finish_reason": "stop"},
        )

    def _update(self, messages: list[BaseMessage], prompt: str) -> AIMessage:
        old = parse_working_memory(extract_block(prompt, "working_memory") or "")
        warnings = extract_block(prompt, "section_size_warnings") or ""
        found = _findings(messages, prompt, old)
        ops = plan_ops(old, found, warnings)
        args: dict[str, Any] = {"sections": ops}
        abstracts = _abstracts(prompt, old.get("Current State", ""))
        if abstracts:
            args["abstracts"] = [{"archive_id": k, "abstract": v} for k, v in abstracts.items()]
        digest = hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()[:20]
        call = ToolCall(name=UPDATE_TOOL_NAME, args=args, id=f"call_wm_{digest}", type="tool_call")
        logger.debug("offline update ops: %s", json.dumps(args, ensure_ascii=False)[:500])
        return AIMessage(
            content="",
            tool_calls=[call],
            response_metadata={"model_name": _LLM_TYPE, "finish_reason": "tool_calls"},
        )
