"""The README's integration snippets run as written (the agent's ChatOpenAI swapped for the
scripted fake, no key: the Working Memory writer is the offline model)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import langchain_openai
import pytest

from tests.fakes import ScriptedChatModel

README = Path(__file__).resolve().parents[2] / "README.md"
SECTIONS = ("## Use it with create_agent (middleware)", "## create_react_agent hooks")


def _section_code(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(title)
    end = text.find("\n## ", start + len(title))
    body = text[start : end if end != -1 else None]
    return "\n".join(re.findall(r"```python\n(.*?)```", body, re.S))


def test_middleware_and_react_snippets_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    agent_model = ScriptedChatModel(replies=["Done."], repeat_last=True)

    def fake_chat_openai(**_: Any) -> ScriptedChatModel:
        return agent_model

    monkeypatch.setattr(langchain_openai, "ChatOpenAI", fake_chat_openai)
    namespace: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent is deprecated
        for title in SECTIONS:
            code = _section_code(title)
            assert code, f"no python snippet under {title!r}"
            exec(compile(code, f"README {title}", "exec"), namespace)
    agent, config = namespace["agent"], namespace["config"]
    out = agent.invoke({"messages": [{"role": "user", "content": "hello"}]}, config)
    assert out["messages"][-1].content == "Done."
    assert namespace["wm"].memory.get_working_memory(config) == ""
