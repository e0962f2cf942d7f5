"""The create and update model calls: prompts, validation, tool-call extraction, tracing,
failures and timeouts."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tracers.base import BaseTracer
from langchain_core.tracers.schemas import Run

from wm_langgraph.document.protocol import section_size_warnings
from wm_langgraph.document.sections import SECTIONS, parse_working_memory, render_working_memory
from wm_langgraph.testing import ScriptedChatModel
from wm_langgraph.writer.generate import (
    GenerationError,
    generate_create,
    generate_update,
)

GOOD_WM = """# Working Memory

## Session Title
Fix the login crash in the billing app

## Current State
The KeyError in src/app.py is fixed; tests are pending.

## Task & Goals
- Make login work again

## Key Facts & Decisions
- The session store is Redis 7

## Files & Context
- src/app.py: login handler

## Errors & Corrections
- KeyError 'user' when the session expired

## Open Issues
- [new] run the integration tests
"""

PRIOR = render_working_memory(
    {"Session Title": "Fix the login crash", "Key Facts & Decisions": "- Redis 7"}
)


class RunCollector(BaseTracer):
    """Captures the run tree offline."""

    def __init__(self) -> None:
        super().__init__()
        self.runs: list[Run] = []

    def _persist_run(self, run: Run) -> None:
        pass

    def _on_run_create(self, run: Run) -> None:
        self.runs.append(run)

    def named(self, name: str) -> Run:
        return next(r for r in self.runs if r.name == name)


def _prompt(model: ScriptedChatModel, call: int = 0) -> str:
    return model.calls[call].prompt_text


# ---------------------------------------------------------------------------- create


def test_create_returns_the_normalised_document_and_shows_prior_and_messages() -> None:
    model = ScriptedChatModel(replies=[GOOD_WM])
    out = generate_create(model, prior=PRIOR, messages_text="[user]\nthe login crashes")
    assert out == render_working_memory(parse_working_memory(GOOD_WM))
    assert list(parse_working_memory(out)) == list(SECTIONS)
    prompt = _prompt(model)
    assert "the login crashes" in prompt
    assert "- Redis 7" in prompt
    assert model.bound == []  # a plain completion, no tools


def test_create_without_prior_says_none() -> None:
    model = ScriptedChatModel(replies=[GOOD_WM])
    generate_create(model, prior="  ", messages_text="[user]\nhello")
    assert "(none)" in _prompt(model)


def test_create_uses_an_overriding_prompt_template() -> None:
    model = ScriptedChatModel(replies=[GOOD_WM])
    template = "PRIOR<<{{prior_summary}}>> MSGS<<{{messages}}>>"
    generate_create(model, prior="old notes", messages_text="m1", prompt=template)
    assert _prompt(model) == "PRIOR<<old notes>> MSGS<<m1>>"


@pytest.mark.parametrize(
    "reply",
    [
        f"```markdown\n{GOOD_WM}```",
        f"```\n{GOOD_WM}\n```",
        f"```markdown\n{GOOD_WM.rstrip()}```",
        f"Here is the updated memory:\n\n```md\n{GOOD_WM}```\nLet me know!",
    ],
)
def test_create_unwraps_a_code_fence(reply: str) -> None:
    out = generate_create(ScriptedChatModel(replies=[reply]), prior="", messages_text="x")
    assert out == render_working_memory(parse_working_memory(GOOD_WM))
    assert "```" not in out
    assert "Let me know" not in out


def test_create_keeps_code_blocks_inside_the_document() -> None:
    inner = GOOD_WM.replace(
        "- The session store is Redis 7",
        "- The session store is Redis 7:\n```python\nredis.Redis(port=6380)\n```",
    )
    plain = generate_create(ScriptedChatModel(replies=[inner]), prior="", messages_text="x")
    fenced = generate_create(
        ScriptedChatModel(replies=[f"```markdown\n{inner}```"]), prior="", messages_text="x"
    )
    assert plain == fenced
    assert "```python\nredis.Redis(port=6380)\n```" in plain


def test_create_keeps_orphan_text_of_a_real_document() -> None:
    reply = "Extra note before the headers: port 8443\n\n" + GOOD_WM
    out = generate_create(ScriptedChatModel(replies=[reply]), prior="", messages_text="x")
    assert "port 8443" in parse_working_memory(out)["Key Facts & Decisions"]


def test_create_accepts_a_long_headerless_summary_by_normalising_it() -> None:
    prose = "The user is migrating billing to Postgres 16. " * 10
    out = generate_create(ScriptedChatModel(replies=[prose]), prior="", messages_text="x")
    assert prose.strip() in parse_working_memory(out)["Key Facts & Decisions"]


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", "empty"),
        ("   \n ", "empty"),
        ("```\n```", "empty"),
        ("```markdown\n\n```", "empty"),
        ("I'm sorry, but I can't help with that request.", "refused"),
        ("Sorry, I cannot summarise this conversation " + "x" * 300, "refused"),
        ("Done.", "no section headers"),
        (render_working_memory({}), "no content"),
        ({"content": "", "tool_calls": [{"name": "x", "args": {}}]}, "empty"),
        ({"content": "ok", "additional_kwargs": {"refusal": "policy"}}, "refused"),
    ],
)
def test_create_rejects_a_reply_that_is_not_a_working_memory(reply: Any, reason: str) -> None:
    with pytest.raises(GenerationError, match=reason):
        generate_create(ScriptedChatModel(replies=[reply]), prior=PRIOR, messages_text="x")


def test_create_wraps_model_errors() -> None:
    boom = RuntimeError("rate limited")
    with pytest.raises(GenerationError, match="rate limited") as info:
        generate_create(ScriptedChatModel(replies=[boom]), prior="", messages_text="x")
    assert info.value.__cause__ is boom


def test_create_is_traced_with_run_name_tags_and_metadata() -> None:
    tracer = RunCollector()
    model = ScriptedChatModel(replies=[GOOD_WM])
    generate_create(
        model,
        prior="",
        messages_text="x",
        config={"callbacks": [tracer], "tags": ["caller"]},
        metadata={"thread": "t-1", "archives": ["archive_001"]},
    )
    run = tracer.named("wm.create")
    assert {"wm_langgraph", "nostream", "caller"} <= set(run.tags or [])
    assert run.extra["metadata"]["thread"] == "t-1"
    assert run.extra["metadata"]["archives"] == ["archive_001"]


# ---------------------------------------------------------------------------- update

UPDATE_ARGS: dict[str, Any] = {
    "sections": {
        "Session Title": {"op": "KEEP"},
        "Current State": {"op": "UPDATE", "content": "Fixed; tests green."},
        "Task & Goals": {"op": "KEEP"},
        "Key Facts & Decisions": {"op": "APPEND", "items": ["Tests use pytest 8"]},
        "Files & Context": {"op": "KEEP"},
        "Errors & Corrections": {"op": "KEEP"},
        "Open Issues": {"op": "KEEP"},
    }
}


def _update_reply(args: Any) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"name": "update_working_memory", "args": args}]}


def test_update_forces_the_tool_and_returns_parsed_operations() -> None:
    model = ScriptedChatModel(replies=[_update_reply(UPDATE_ARGS)])
    ops = generate_update(model, working_memory=GOOD_WM, messages_text="[user]\ntests pass now")
    assert ops is not None
    assert ops["Current State"] == {"op": "UPDATE", "content": "Fixed; tests green."}
    assert ops["Key Facts & Decisions"] == {"op": "APPEND", "items": ["Tests use pytest 8"]}
    assert ops["Session Title"] == {"op": "KEEP"}
    (binding,) = model.bound
    assert [t["function"]["name"] for t in binding["tools"]] == ["update_working_memory"]
    assert binding["tool_choice"] == "update_working_memory"
    prompt = _prompt(model)
    assert "tests pass now" in prompt
    assert "KeyError 'user' when the session expired" in prompt


def test_update_prompt_carries_section_size_warnings() -> None:
    bloated = render_working_memory(
        {"Session Title": "t", "Key Facts & Decisions": "\n".join(f"- fact {i}" for i in range(40))}
    )
    warnings = section_size_warnings(bloated)
    assert warnings.strip()
    model = ScriptedChatModel(replies=[_update_reply(UPDATE_ARGS)])
    generate_update(model, working_memory=bloated, messages_text="x")
    assert warnings.strip() in _prompt(model)


def test_update_prompt_shows_an_empty_warnings_block_when_nothing_is_oversized() -> None:
    model = ScriptedChatModel(replies=[_update_reply(UPDATE_ARGS)])
    generate_update(model, working_memory=GOOD_WM, messages_text="x")
    assert "<section_size_warnings></section_size_warnings>" in _prompt(model)


def test_update_uses_an_overriding_prompt_template() -> None:
    model = ScriptedChatModel(replies=[_update_reply(UPDATE_ARGS)])
    template = "{{working_memory}}|{{messages}}|{{section_size_warnings}}"
    generate_update(model, working_memory="WM", messages_text="MSGS", prompt=template)
    assert _prompt(model) == "WM|MSGS|<section_size_warnings></section_size_warnings>"


def test_update_repairs_raw_arguments_from_invalid_tool_calls() -> None:
    raw = json.dumps(UPDATE_ARGS)[:-2]  # truncated JSON the provider could not parse
    reply = AIMessage(
        content="",
        invalid_tool_calls=[
            {"name": "update_working_memory", "args": raw, "id": "c1", "error": "bad json"}
        ],
    )
    ops = generate_update(
        ScriptedChatModel(replies=[reply]), working_memory=GOOD_WM, messages_text="x"
    )
    assert ops is not None
    assert ops["Current State"] == {"op": "UPDATE", "content": "Fixed; tests green."}


def test_update_reads_a_legacy_function_call() -> None:
    reply = {
        "content": "",
        "additional_kwargs": {
            "function_call": {"name": "update_working_memory", "arguments": json.dumps(UPDATE_ARGS)}
        },
    }
    ops = generate_update(
        ScriptedChatModel(replies=[reply]), working_memory=GOOD_WM, messages_text="x"
    )
    assert ops is not None
    assert ops["Key Facts & Decisions"]["op"] == "APPEND"


@pytest.mark.parametrize(
    "reply",
    [
        "I think everything stays the same.",
        {"content": "", "tool_calls": [{"name": "some_other_tool", "args": {}}]},
    ],
)
def test_update_without_the_tool_call_returns_none(reply: Any) -> None:
    model = ScriptedChatModel(replies=[reply])
    assert generate_update(model, working_memory=GOOD_WM, messages_text="x") is None


def test_update_wraps_model_errors_and_is_traced() -> None:
    with pytest.raises(GenerationError, match="overloaded"):
        generate_update(
            ScriptedChatModel(replies=[RuntimeError("overloaded")]),
            working_memory=GOOD_WM,
            messages_text="x",
        )
    tracer = RunCollector()
    generate_update(
        ScriptedChatModel(replies=[_update_reply(UPDATE_ARGS)]),
        working_memory=GOOD_WM,
        messages_text="x",
        config={"callbacks": [tracer]},
        metadata={"archive": "archive_002"},
    )
    run = tracer.named("wm.update")
    assert {"wm_langgraph", "nostream"} <= set(run.tags or [])
    assert run.extra["metadata"]["archive"] == "archive_002"


# ---------------------------------------------------------------------------------------- timeouts


def _blocking_model(release: threading.Event, reply: Any) -> ScriptedChatModel:
    def script(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        release.wait(30)
        return reply

    return ScriptedChatModel(respond=script)


def test_sync_timeout_raises_generation_error() -> None:
    release = threading.Event()
    try:
        with pytest.raises(GenerationError, match="did not answer"):
            generate_create(
                _blocking_model(release, GOOD_WM), prior="", messages_text="x", timeout=0.05
            )
        with pytest.raises(GenerationError, match="did not answer"):
            generate_update(
                _blocking_model(release, _update_reply(UPDATE_ARGS)),
                working_memory=GOOD_WM,
                messages_text="x",
                timeout=0.05,
            )
    finally:
        release.set()  # let the abandoned calls finish


def test_sync_call_with_a_generous_timeout_returns_normally() -> None:
    tracer = RunCollector()
    out = generate_create(
        ScriptedChatModel(replies=[GOOD_WM]),
        prior="",
        messages_text="x",
        timeout=30,
        config={"callbacks": [tracer]},
    )
    assert "Redis 7" in out
    assert tracer.named("wm.create").error is None
    unbounded = generate_create(
        ScriptedChatModel(replies=[GOOD_WM]), prior="", messages_text="x", timeout=float("inf")
    )
    assert unbounded == out
    with pytest.raises(GenerationError, match="boom"):
        generate_create(
            ScriptedChatModel(replies=[RuntimeError("boom")]),
            prior="",
            messages_text="x",
            timeout=30,
        )


@pytest.mark.parametrize("timeout", [0, -1.0, float("nan")])
def test_bad_timeout_is_rejected(timeout: float) -> None:
    with pytest.raises(ValueError, match="timeout"):
        generate_create(
            ScriptedChatModel(replies=[GOOD_WM]), prior="", messages_text="x", timeout=timeout
        )
