"""The guards of Session Title, Files & Context, Errors & Corrections and Open Issues (SPEC §4.1,
§4.4-§4.6). Re-exported by ``core.guards``, which holds the Key Facts guard and the entry point
:func:`~wm_langgraph.core.guards.guard_section`."""

from __future__ import annotations

from wm_langgraph.core._facts import clauses
from wm_langgraph.core._match import path_listed, paths_listed
from wm_langgraph.core._open_issues import restore_open_issues
from wm_langgraph.core._ops import KEEP, GuardOutcome, SectionOp, count, new_items
from wm_langgraph.core._title import judge_title
from wm_langgraph.core.sections import section_items
from wm_langgraph.core.text import extract_paths

__all__ = [
    "guard_errors_corrections",
    "guard_files_context",
    "guard_open_issues",
    "guard_session_title",
]


def guard_session_title(
    old_body: str, op: SectionOp, *, conversation: str | None = None, old_document: str = ""
) -> GuardOutcome:
    """SPEC §4.1 with issues 14/15: title stability, one line, grounded in the conversation.

    An UPDATE sharing no meaningful word (CJK: no bigram) with the old title is rejected; an
    old title without meaningful words accepts any UPDATE. The old title is read by its words
    even when written as a heading. APPEND is refused when there is a title (an empty title
    takes the first appended line). With ``conversation`` (the folded messages), a new title
    must also share a meaningful word with the conversation or ``old_document``.
    """
    if op.kind not in {"UPDATE", "APPEND"}:
        return GuardOutcome(op)
    new, reason = judge_title(
        old_body,
        op.kind,
        op.content,
        op.items,
        conversation=conversation,
        old_document=old_document,
    )
    if new is None:
        return GuardOutcome(KEEP, reason)
    if op.kind == "UPDATE" and new == op.content.strip():
        return GuardOutcome(op, reason)
    return GuardOutcome(SectionOp("UPDATE", content=new), reason or "title written as one line")


def guard_files_context(old_body: str, op: SectionOp) -> GuardOutcome:
    """SPEC §4.4: an UPDATE that loses an old path is rejected; KEEP the old body and APPEND
    the paths the UPDATE introduced (its own entry for each — the clause of a consolidated line
    that lists it — else ``<path> (newly referenced)``).

    Paths are compared at path boundaries (``src/a.py`` keeps ``a.py``; ``src/data.py`` does
    not). Only real paths are protected: an entry that is not a path (a base64 blob, a digest,
    a route) is not, so an UPDATE may drop it.
    """
    if op.kind != "UPDATE":
        return GuardOutcome(op)
    old_paths = extract_paths(old_body)
    kept = paths_listed(old_paths, op.content)
    lost = [path for path, ok in zip(old_paths, kept, strict=True) if not ok]
    if not lost:
        return GuardOutcome(op)
    new_paths = extract_paths(op.content)
    introduced = [
        path
        for path, ok in zip(new_paths, paths_listed(new_paths, old_body), strict=True)
        if not ok
    ]
    lines: list[str] = []
    new_lines = section_items(op.content)
    for path in introduced:
        own = next((line for line in new_lines if path_listed(path, line)), None)
        if own is None:
            lines.append(f"{path} (newly referenced)")
            continue
        # a consolidated line ("a.py — x; b.py — y") gives only the entry of the new path: the
        # old entries beside it are still in the kept body (issue 11: no entry twice)
        parts = [part for part in clauses(own) if path_listed(path, part)]
        lines.append(parts[0] if len(parts) == 1 else own)
    fresh = new_items(old_body, list(dict.fromkeys(lines)))
    why = f"rejected UPDATE: it drops {count(len(lost), 'path')} ({', '.join(lost[:5])})"
    if not fresh:
        return GuardOutcome(KEEP, why)
    reason = f"{why}; appended {count(len(fresh), 'newly referenced path line')}"
    return GuardOutcome(SectionOp("APPEND", items=tuple(fresh)), reason)


def guard_errors_corrections(old_body: str, op: SectionOp) -> GuardOutcome:
    """SPEC §4.5: append-only. UPDATE becomes an APPEND of its new items; none new -> KEEP."""
    if op.kind != "UPDATE":
        return GuardOutcome(op)
    fresh = new_items(old_body, section_items(op.content))
    if not fresh:
        return GuardOutcome(KEEP, "append-only section: UPDATE has no new items")
    reason = f"append-only section: UPDATE demoted to APPEND of {count(len(fresh), 'new item')}"
    return GuardOutcome(SectionOp("APPEND", items=tuple(fresh)), reason)


def guard_open_issues(old_body: str, op: SectionOp, *, errors: str = "") -> GuardOutcome:
    """SPEC §4.6 (owner decision): an open item leaves only by resolution.

    An old item the UPDATE no longer holds (whole-item match) is restored as
    ``- [silently dropped, restored] <item>``, every time, with the marker written once. It may
    leave when it was marked ``[resolved]`` (or ``[done]``, ``[fixed]`` …) in the old body, or
    when the new Errors & Corrections (``errors``) holds it (moved there as a fix). A restore
    marker the model wrote itself is removed. See ``core._open_issues``.
    """
    if op.kind != "UPDATE":
        return GuardOutcome(op)
    content, reason = restore_open_issues(old_body, op.content, errors)
    if content == op.content:
        return GuardOutcome(op, reason)
    return GuardOutcome(SectionOp("UPDATE", content=content), reason)
