"""Plain-text progress and commit reports for the CLI (``demo`` and ``replay``).

Private helper. Prints a progress bar line per turn, then every archive that appeared since
the previous turn: its size, how the Working Memory was produced (create / update branch), the
guard interventions recorded for it, the paths the engine's artifact trail added, and the WM
after it. ASCII decoration only, so any terminal encoding can show it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.storage.archives import ArchiveRecord

__all__ = ["ReportSummary", "Reporter", "interventions", "progress_bar"]

_BAR_WIDTH = 24


def progress_bar(done: int, total: int, width: int = _BAR_WIDTH) -> str:
    """``[#########.......]`` for ``done`` of ``total``."""
    filled = 0 if total <= 0 else min(width, round(width * done / total))
    return "[" + "#" * filled + "." * (width - filled) + "]"


def _changed(record: ArchiveRecord) -> list[dict[str, Any]]:
    """The guard decisions of one archive's Phase 2 that changed something or gave a reason."""
    found: list[dict[str, Any]] = []
    for decision in record.metadata.get("decisions") or []:
        if not isinstance(decision, dict):
            continue
        requested, applied = decision.get("requested", ""), decision.get("applied", "")
        if requested != applied or decision.get("reason", ""):
            found.append(decision)
    return found


def interventions(record: ArchiveRecord) -> list[str]:
    """Human-readable guard interventions of one archive's Phase 2 (empty when none).

    Each reads ``section: requested -> applied (reason)``.
    """
    lines: list[str] = []
    for decision in _changed(record):
        requested, applied = decision.get("requested", ""), decision.get("applied", "")
        reason = decision.get("reason", "")
        change = requested if requested == applied else f"{requested} -> {applied}"
        lines.append(
            f"{decision.get('section', '?')}: {change}" + (f" ({reason})" if reason else "")
        )
    return lines


@dataclass(slots=True)
class ReportSummary:
    """What the report saw: archives in order, the final WM, interventions (also by section)."""

    archive_ids: list[str] = field(default_factory=list)
    final_wm: str = ""
    folded: int = 0
    interventions: int = 0
    by_section: Counter[str] = field(default_factory=Counter)


def _indent(text: str, prefix: str = "    | ") -> str:
    return "\n".join(prefix + line if line else prefix.rstrip() for line in text.splitlines())


class Reporter:
    """Writes the per-turn progress and per-commit details of one thread to ``out``."""

    def __init__(
        self,
        out: TextIO,
        memory: WorkingMemory,
        config: RunnableConfig,
        *,
        show_each_wm: bool = True,
        damage: Callable[[], list[str]] | None = None,
    ) -> None:
        """Report on the thread of ``config`` in ``memory``.

        Args:
            out: The text stream to write to.
            memory: The engine that owns the thread.
            config: The thread's run config.
            show_each_wm: Print the WM after every commit, not only at the end.
            damage: For a fault-injecting WM writer: returns what it broke in its oldest not yet
                reported update call; printed with each commit of the update branch.
        """
        self._out = out
        self._memory = memory
        self._config = config
        self._show_each_wm = show_each_wm
        self._damage = damage
        self._summary = ReportSummary()
        self._reported: set[str] = set()

    def _print(self, text: str = "") -> None:
        print(text, file=self._out, flush=True)

    def header(
        self,
        session: Sequence[BaseMessage],
        config: WorkingMemoryConfig,
        thread_id: str,
        db: str | None,
        *,
        model_label: str | None = None,
    ) -> None:
        """The opening lines: what is played, with which settings, where it is kept.

        Args:
            session: The messages played.
            config: The engine settings.
            thread_id: The thread.
            db: The SQLite file, or None (in memory).
            model_label: What the WM model is, when its class name does not say it.
        """
        tokens = self._memory.count_tokens(list(session))
        self._print(
            f"wm-langgraph demo: a recorded coding-agent session, {len(session)} messages, "
            f"{tokens:,} tokens"
        )
        self._print(
            "agent: langchain create_agent + WorkingMemoryMiddleware; agent model: scripted "
            "replay of the session; tools: return the recorded results"
        )
        model = type(self._memory.model).__name__
        kind = (
            " (heuristic extractive summariser, no LLM)"
            if model == "OfflineWorkingMemoryModel"
            else ""
        )
        if model_label:
            kind = f" ({model_label})"
        self._print(f"working-memory model: {model}{kind}")
        self._print(
            f"settings: token_budget={config.tokens:,}, commit at "
            f"{config.commit_token_threshold_ratio:.0%} ({config.commit_threshold_tokens:,.0f} "
            f"pending tokens), keep {config.commit_keep_recent_count} recent messages"
        )
        where = f"SQLite {db}" if db else "in memory"
        self._print(f"thread: {thread_id} ({where})")
        self._print()

    def turn(self, number: int, total: int, detail: str = "") -> None:
        """One progress line, then any archive that appeared since the previous call."""
        self._print(f"{progress_bar(number, total)} turn {number:>2}/{total}  {detail}".rstrip())
        self._report_archives()

    def line(self, text: str = "") -> None:
        """A free-form line."""
        self._print(text)

    def note(self, text: str) -> None:
        """A free-form line, then any archive that appeared since the last report."""
        self._print(text)
        self._report_archives()

    def _report_archives(self) -> None:
        for record in self._memory.list_archives(self._config):
            if record.id in self._reported:
                continue
            self._reported.add(record.id)
            self._summary.archive_ids.append(record.id)
            meta = record.metadata
            branch = meta.get("branch") or "?"
            fallback = f", fallback {meta['fallback']}" if meta.get("fallback") else ""
            self._print(
                f"  commit {record.id}: {record.message_count} messages, "
                f"{record.token_count:,} tokens archived; Phase 2 {record.status} "
                f"(branch {branch}{fallback})"
            )
            if self._damage is not None and branch == "update":
                broke = self._damage()
                self._print("    careless writer: " + ("; ".join(broke) if broke else "no damage"))
            found = interventions(record)
            self._summary.interventions += len(found)
            self._summary.by_section.update(str(d.get("section", "?")) for d in _changed(record))
            if len(found) <= 1:
                self._print("    guard interventions: " + (found[0] if found else "none"))
            else:
                self._print(f"    guard interventions: {len(found)}")
                for line in found:
                    self._print(f"      - {line}")
            trail: list[Any] = meta.get("artifact_trail") or []
            if trail:
                added = ", ".join(str(p) for p in trail)
                self._print(f"    artifact trail: the engine added paths the model missed: {added}")
            if self._show_each_wm and record.overview:
                self._print(f"    Working Memory after {record.id}:")
                self._print(_indent(record.overview.rstrip()))

    def finish(self, *, show_wm: bool = True) -> ReportSummary:
        """Wait for Phase 2, report the last archives, print the final WM; return the summary.

        Args:
            show_wm: Print the final Working Memory (the ``replay`` command writes it itself).
        """
        self._memory.wait(self._config)
        self._report_archives()
        wm = self._memory.get_working_memory(self._config)
        self._summary.final_wm = wm
        records = self._memory.list_archives(self._config)
        self._summary.folded = folded = sum(1 for r in records if r.status == "done")
        failed = bool(records) and not folded
        if show_wm:
            self._print()
            self._print("== final Working Memory ==")
            if wm:
                self._print(wm.rstrip())
            elif failed:
                self._print("(none: every commit failed, see the Phase 2 warnings for the cause)")
            else:
                self._print("(none yet: nothing was committed)")
            self._print()
        self._print(
            f"done: {len(self._summary.archive_ids)} commits, {folded} folded into the Working "
            f"Memory, {self._summary.interventions} guard interventions"
        )
        return self._summary
