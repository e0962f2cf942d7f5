"""The error trail: errors reported by tool results, kept in Errors & Corrections by our code.

Like the artifact trail for paths (SPEC §5), and for the same reason: a small real writer
(Qwen2.5-Coder-0.5B-Instruct) folded a failing test's output into its notes as "the user has
encountered several errors" and the exact error never reached the Working Memory. The commit
appends each error a folded tool result reported that the merged Errors & Corrections does not
mention yet; the append goes through the guards like any operation.

Recognised (tool results only; user and assistant prose is the model's to record): pytest's
``FAILED <test> - <message>`` summary lines and ``E   <Name>Error: ...`` lines, and the final
``<Name>Error: ...`` / ``<Name>Exception: ...`` line of a Python traceback.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from langchain_core.messages import BaseMessage, ToolMessage

from wm_langgraph.engine.render import content_text

__all__ = ["extract_errors_from_messages", "missing_errors"]

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
