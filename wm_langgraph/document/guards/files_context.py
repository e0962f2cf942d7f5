"""The Files & Context guard (behaviour §4.4): no path regression."""

from __future__ import annotations

from collections.abc import Collection

from wm_langgraph.document.guards.key_facts import clauses
from wm_langgraph.document.ops import KEEP, GuardOutcome, SectionOp, count, new_items
from wm_langgraph.document.sections import item_key, section_items
from wm_langgraph.document.text import extract_paths
from wm_langgraph.document.text.match import path_listed, paths_listed

__all__ = ["guard_files_context"]


def guard_files_context(
    old_body: str, op: SectionOp, *, removable: Collection[str] = ()
) -> GuardOutcome:
    """Behaviour §4.4: an UPDATE that loses an old path is rejected; KEEP the old body and APPEND
    the paths the UPDATE introduced (its own entry for each — the clause of a consolidated line
    that lists it — else ``<path> (newly referenced)``).

    Paths are compared at path boundaries (``src/a.py`` keeps ``a.py``; ``src/data.py`` does
    not). Only real paths are protected: an entry that is not a path (a base64 blob, a digest,
    a route) is not, so an UPDATE may drop it. Nor is a path only code added (``removable``:
    the item keys of the artifact trail's lines): an UPDATE may drop it, and the decision says
    so.
    """
    if op.kind != "UPDATE":
        return GuardOutcome(op)
    old_paths = extract_paths(old_body)
    kept = paths_listed(old_paths, op.content)
    lost = [path for path, ok in zip(old_paths, kept, strict=True) if not ok]
    if lost and removable:
        keys = set(removable)
        writers = "\n".join(i for i in section_items(old_body) if item_key(i) not in keys)
        by_code = [p for p, ok in zip(lost, paths_listed(lost, writers), strict=True) if not ok]
        lost = [path for path in lost if path not in by_code]
        if by_code and not lost:
            why = f"dropped {count(len(by_code), 'path')} code had added ({', '.join(by_code[:5])})"
            return GuardOutcome(op, why)
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
        # old entries beside it are still in the kept body (appending the whole consolidated line
        # listed the old entries beside it a second time)
        parts = [part for part in clauses(own) if path_listed(path, part)]
        lines.append(parts[0] if len(parts) == 1 else own)
    fresh = new_items(old_body, list(dict.fromkeys(lines)))
    why = f"rejected UPDATE: it drops {count(len(lost), 'path')} ({', '.join(lost[:5])})"
    if not fresh:
        return GuardOutcome(KEEP, why)
    reason = f"{why}; appended {count(len(fresh), 'newly referenced path line')}"
    return GuardOutcome(SectionOp("APPEND", items=tuple(fresh)), reason)
