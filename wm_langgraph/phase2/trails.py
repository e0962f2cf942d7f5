"""The code trails: paths and errors the folded messages' tools report, kept by our code.

The **artifact trail** (:func:`extract_paths_from_messages`) lists the file paths in tool-call
arguments and tool results, for Files & Context (behaviour §5.8: every summariser measured scores
worst on "which files were touched"). The **error trail** (:func:`extract_errors_from_messages`)
does the same for errors, for Errors & Corrections, and for the same reason: a small real writer
(Qwen2.5-Coder-0.5B-Instruct) folded a failing test's output into its notes as "the user has
encountered several errors" and the exact error never reached the Working Memory. The commit
appends each error a folded tool result reported that the merged Errors & Corrections does not
mention yet; the append goes through the guards like any operation.

Recognised (tool results only; user and assistant prose is the model's to record): pytest's
``FAILED <test> - <message>`` summary lines and ``E   <Name>Error: ...`` lines, and the final
``<Name>Error: ...`` / ``<Name>Exception: ...`` line of a Python traceback.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping

from langchain_core.messages import AIMessage, BaseMessage, FunctionMessage, ToolMessage

from wm_langgraph.document.text import extract_paths
from wm_langgraph.messages import content_text, safe_str

__all__ = ["extract_errors_from_messages", "extract_paths_from_messages", "missing_errors"]

_FAILED_RE = re.compile(r"^FAILED[ \t]+(?P<test>\S+)[ \t]+-[ \t]+(?P<error>.+)$")
_ERROR_RE = re.compile(
    r"^(?:E[ \t]+)?(?P<error>(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception)(?::[ \t]*.*)?)$"
)
_FAILED_PREFIX = re.compile(r"^\S+::\S+: ")
_MAX_ERRORS = 8
_MAX_CHARS = 300


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def extract_errors_from_messages(messages: Iterable[BaseMessage]) -> list[str]:
    """Errors in tool results, in order, unique; ``<test>: <error>`` for a pytest failure."""
    found: list[str] = []
    for message in messages:
        if not isinstance(message, ToolMessage):
            continue
        for raw in content_text(message.content).splitlines():
            line = raw.strip()
            failed = _FAILED_RE.match(line)
            if failed:
                item = f"{failed.group('test')}: {failed.group('error').strip()}"
            else:
                error = _ERROR_RE.match(line)
                if not error:
                    continue
                item = error.group("error").strip()
            item = item[:_MAX_CHARS]
            # One item per error: a summary line repeats the E line's message, and vice versa.
            if any(_norm(item) in _norm(old) or _norm(old) in _norm(item) for old in found):
                found = [old if _norm(item) in _norm(old) else item for old in found]
                continue
            found.append(item)
    return list(dict.fromkeys(found))[:_MAX_ERRORS]


def missing_errors(errors: Iterable[str], body: str) -> list[str]:
    """The errors whose message the section body does not contain (case and spacing ignored).

    For ``<test>: <error>`` items the error message alone is enough to count as present.
    """
    text = _norm(body)
    missing: list[str] = []
    for item in errors:
        message = item.split(": ", 1)[1] if _FAILED_PREFIX.match(item) else item
        if _norm(message) not in text:
            missing.append(item)
    return missing


def _string_leaves(value: object) -> Iterable[str]:
    """Every string inside a JSON-like value (keys excluded), depth first, in order."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _string_leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _string_leaves(item)


def _trail_texts(message: BaseMessage) -> Iterable[str]:
    if isinstance(message, AIMessage):
        for call in message.tool_calls or []:
            yield from _string_leaves(call.get("args", {}))
        for bad in message.invalid_tool_calls or []:
            yield safe_str(bad.get("args") or "")
        legacy = (message.additional_kwargs or {}).get("function_call")
        if isinstance(legacy, Mapping):
            raw = legacy.get("arguments", "")
            try:
                yield from _string_leaves(json.loads(raw))
            except (TypeError, ValueError):
                yield safe_str(raw)
    elif isinstance(message, (ToolMessage, FunctionMessage)):
        yield content_text(message.content)


def extract_paths_from_messages(messages: Iterable[BaseMessage]) -> list[str]:
    """The artifact trail: file paths in tool-call arguments and tool results, in order, unique.

    Tool-call arguments are scanned value by value (so JSON escaping cannot mangle a path);
    tool results are scanned as text. Path detection is
    :func:`wm_langgraph.document.text.extract_paths`. User and assistant prose is not scanned
    (the model sees it and records what matters).

    Args:
        messages: The messages being folded into the Working Memory.
    """
    seen: set[str] = set()
    paths: list[str] = []
    for message in messages:
        for text in _trail_texts(message):
            if not text:
                continue
            for path in extract_paths(text):
                if path not in seen:
                    seen.add(path)
                    paths.append(path)
    return paths
