"""The thread report: what the memory did in one thread, as one self-contained HTML file.

``WorkingMemory.report(config)`` and ``wm-langgraph report THREAD`` build a :class:`ThreadReport`
from what the store and the checkpointer keep (:class:`ReportSource`); nothing is recorded for
it on the turn's path. It shows:

- the timeline of the conversation: its messages, the archives that hold them, the Working
  Memory versions that fold them and the user turns, then every event in time order;
- the model input of every call split into its layers against the budget (a chart, then a
  table), rebuilt from the checkpoint each call started from (:mod:`.history` says how and what
  cannot be known), under the settings the thread recorded for that moment
  (:mod:`wm_langgraph.storage.settings`; where none is recorded the report says so and uses only
  settings its caller names);
- the current Working Memory (:class:`~.working_memory.WorkingMemoryView`);
- every Working Memory version with its diff and guard decisions (:class:`~.commit.CommitView`);
- every archive with its messages and abstract (:class:`~.archive.ArchiveView`);
- the agent's searches of its archives: ``archive_search`` and ``archive_expand`` calls and what
  they returned, read from the conversation (a search made outside the agent's tool calls
  leaves no record).

In Jupyter the report and each of its parts display themselves; :meth:`ThreadReport.save` writes
the file.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore

from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.context.assemble import AssembledContext, Budgets, compute_budgets
from wm_langgraph.display.archive import ArchiveView, status_badge
from wm_langgraph.display.chart import CallBar, calls_chart
from wm_langgraph.display.commit import CommitView
from wm_langgraph.display.history import CallStart, History, parse_time, read_history
from wm_langgraph.display.marks import NO_MARKS, VersionRecord, marks_by_version
from wm_langgraph.display.markup import (
    LAYER_CLASSES,
    badge,
    details,
    fragment,
    number,
    page,
    text,
)
from wm_langgraph.display.model_input import LAYERS, ModelInputView, split_layers
from wm_langgraph.display.working_memory import WorkingMemoryView, working_memory_view
from wm_langgraph.messages import content_text
from wm_langgraph.recall.tools import ARCHIVE_EXPAND, ARCHIVE_SEARCH
from wm_langgraph.state import META_KEY
from wm_langgraph.storage.archives import LATEST_KEY, ArchiveRecord, ArchiveStore
from wm_langgraph.storage.settings import SettingsRecord, settings_at

__all__ = [
    "IN_SUBGRAPH",
    "NO_CHECKPOINTER",
    "SYSTEM_NOTE",
    "Rebuild",
    "ReportSource",
    "SearchCall",
    "ThreadReport",
]

Rebuild = Callable[
    [Sequence[BaseMessage], Mapping[str, Any], datetime | None, WorkingMemoryConfig],
    AssembledContext,
]
"""``rebuild(messages, state, as_of, settings)``: the model input the memory assembles under
``settings`` for a call that started from ``state`` (its live ``messages``), with the store as
it was at ``as_of``."""

SYSTEM_NOTE = (
    "Rebuilt from the checkpoint the call started from, with the memory's own code. The "
    "agent's own system prompt is not kept in the graph state: the system layer shows the "
    "memory's addition only."
)
NO_CHECKPOINTER = (
    "No checkpointer was given: the user turns and the model calls are not shown, nor anything "
    "of a thread that runs under one, which could have been deleted (pass the checkpointer, or "
    "run the report where the agent ran)."
)
IN_SUBGRAPH = (
    "This memory belongs to an agent inside a subgraph: its model calls are in the subgraph's "
    "checkpoints, which the report does not read, so the user turns and the calls are not shown."
)
_PAGE = 500
logger = logging.getLogger("wm_langgraph")
_OPEN_EVENTS = 12
"""A timeline of up to this many events is shown unfolded."""
_STRIP_WIDTH = 1040
_STATUS_COLOURS = {"done": "#6366f1", "pending": "#f59e0b", "failed": "#ef4444"}


@dataclass(frozen=True)
class ReportSource:
    """What a report reads (``WorkingMemory.report`` and the CLI gather it).

    Attributes:
        thread_id: The thread, as the user names it.
        key: The memory's key in the store (thread, name, graph namespace).
        store: The store holding the memory's records.
        archives: The archives of the thread's timeline, in order, with their status.
        conversation: The whole conversation in order (archived, then live; removed ones left
            out), as ``WorkingMemory.transcript`` gives it.
        config: The memory's settings (budgets and limits).
        count_text: The memory's text counter.
        count_message: The memory's message counter.
        checkpointer: The graph's checkpointer (None: no per-call sizes).
        rebuild: Assembles a call's input again (None: no per-call sizes).
        where: Where the thread is kept (shown in the heading), e.g. the database.
        no_calls: Why the turns and the calls are not shown, when there is no checkpointer.
        settings: The settings records of the thread, oldest first (``storage.settings``).
        assumed: The settings of the calls no record covers (None: those are not rebuilt).
        assumed_from: Where ``assumed`` comes from, as the report says it.
    """

    thread_id: str
    key: str
    store: BaseStore
    archives: Sequence[ArchiveRecord]
    conversation: Sequence[BaseMessage]
    config: WorkingMemoryConfig
    count_text: Callable[[str], int]
    count_message: Callable[[BaseMessage], int]
    checkpointer: BaseCheckpointSaver[Any] | None = None
    rebuild: Rebuild | None = None
    where: str = ""
    no_calls: str = NO_CHECKPOINTER
    settings: Sequence[SettingsRecord] = ()
    assumed: WorkingMemoryConfig | None = None
    assumed_from: str = ""


@dataclass(frozen=True, slots=True)
class SearchCall:
    """One recall tool call of the agent and what it returned.

    Attributes:
        turn: The user turn it was made in (1-based).
        tool: ``archive_search`` or ``archive_expand``.
        args: Its arguments.
        result: What the tool returned (``""`` when no result follows it).
    """

    turn: int
    tool: str
    args: Mapping[str, Any]
    result: str


@dataclass(frozen=True, slots=True)
class _Version:
    key: str
    covers: tuple[str, ...]
    text: str
    info: dict[str, Any]
    created_at: str


def _versions(archives: ArchiveStore, key: str, timeline: Sequence[str]) -> list[_Version]:
    """The Working Memory versions on ``timeline`` (coverage a prefix of it), oldest first."""
    namespace = archives.namespace(key, "wm")
    store = archives.io(key)
    found: list[_Version] = []
    offset = 0
    while page_ := store.search(namespace, limit=_PAGE, offset=offset):
        offset += len(page_)
        for item in page_:
            if item.key == LATEST_KEY or tuple(item.namespace) != namespace:
                continue
            covers = tuple(str(a) for a in item.value.get("covers") or [])
            if not covers or list(covers) != list(timeline[: len(covers)]):
                continue
            info = {k: v for k, v in item.value.items() if k not in ("text", "covers")}
            found.append(
                _Version(
                    item.key,
                    covers,
                    str(item.value.get("text", "")),
                    info,
                    str(item.value.get("created_at", "")),
                )
            )
        if len(page_) < _PAGE:
            break
    return sorted(found, key=lambda v: len(v.covers))


def _searches(conversation: Sequence[BaseMessage]) -> list[SearchCall]:
    results = {
        m.tool_call_id: content_text(m.content) for m in conversation if isinstance(m, ToolMessage)
    }
    out: list[SearchCall] = []
    turn = 0
    for message in conversation:
        if isinstance(message, HumanMessage):
            turn += 1
        if not isinstance(message, AIMessage):
            continue
        for call in message.tool_calls or []:
            if call.get("name") in (ARCHIVE_SEARCH, ARCHIVE_EXPAND):
                args = call.get("args")
                out.append(
                    SearchCall(
                        max(1, turn),
                        str(call.get("name")),
                        dict(args) if isinstance(args, Mapping) else {},
                        results.get(str(call.get("id")), ""),
                    )
                )
    return out


def _budget(config: WorkingMemoryConfig) -> str:
    budgets = compute_budgets(config.tokens, config.reserve_tokens, config.archive_memory_tokens)
    fill = "" if config.verbatim_fill else ", no verbatim fill"
    return (
        f"budget {config.tokens:,} tokens, usable {budgets.usable:,}, reply reserve "
        f"{budgets.reserved:,}, Working Memory share {budgets.archive:,}{fill}"
    )


def _decisions(info: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    raw = info.get("decisions")
    return [d for d in raw if isinstance(d, Mapping)] if isinstance(raw, list) else []


def _when(value: datetime | None) -> str:
    return value.astimezone(UTC).strftime("%H:%M:%S") if value else ""


class ThreadReport:
    """What the memory did in one thread (module docstring); displays itself in Jupyter.

    Attributes:
        thread_id: The thread.
        config: The settings the thread ran with last, as it recorded them (else the
            assumed ones, else the memory's): the heading's budgets and the limits shown.
        budgets: The budgets of ``config``.
        settings: The thread's settings records, oldest first: each call is rebuilt with the
            one in force when it started.
        settings_known: The thread recorded its settings.
        unknown_settings: Calls not rebuilt because no record covers them and no settings
            were assumed (counted once :attr:`calls` is read).
        working_memory: The current Working Memory.
        commits: Every Working Memory version on the thread's timeline, oldest first.
        archives: Every archive of the timeline, in order.
        searches: The agent's archive searches and expansions, in order.
        history: The calls and turns the checkpoints show (None without a checkpointer).
        calls: The input of every call, rebuilt (``[]`` without a checkpointer).
        unreadable: Calls found in the checkpoints whose input could not be assembled again
            (an error of the store, a state the engine refuses); they are left out of
            :attr:`calls` and counted here.
    """

    def __init__(self, source: ReportSource) -> None:
        """Read what ``source`` names (the per-call inputs are rebuilt on first use)."""
        self._source = source
        self.thread_id = source.thread_id
        self.settings: list[SettingsRecord] = list(source.settings)
        newest = self.settings[-1].config() if self.settings else None
        self.settings_known = newest is not None
        self.config = newest or source.assumed or source.config
        self.budgets: Budgets = compute_budgets(
            self.config.tokens, self.config.reserve_tokens, self.config.archive_memory_tokens
        )
        self.unknown_settings = 0
        self._records = list(source.archives)
        timeline = [r.id for r in self._records]
        store = ArchiveStore(source.store)
        self._versions = _versions(store, source.key, timeline)
        moved = dict(store.moved_items(source.key, [v.key for v in self._versions]))
        marks = marks_by_version(
            [
                VersionRecord(v.text, _decisions(v.info), len(moved.get(v.key, [])))
                for v in self._versions
            ]
        )
        self.commits: list[CommitView] = []
        before: str = ""
        covered: tuple[str, ...] = ()
        for number_, (version, vouched) in enumerate(
            zip(self._versions, marks, strict=True), start=1
        ):
            self.commits.append(
                CommitView(
                    number=number_,
                    covers=version.covers,
                    folded=tuple(a for a in version.covers if a not in covered),
                    before=before,
                    after=version.text,
                    info=version.info,
                    moved=tuple(
                        (str(i.get("section", "")), str(i.get("text", "")))
                        for i in moved.get(version.key, [])
                    ),
                    created_at=version.created_at,
                    marks=vouched,
                )
            )
            before, covered = version.text, version.covers
        current = self._versions[-1] if self._versions else None
        self.working_memory: WorkingMemoryView = working_memory_view(
            current.text if current else "",
            config=self.config,
            count=source.count_text,
            covers=current.covers if current else (),
            code_items=current.info.get("code_items") if current else None,
            title="Working Memory now",
            marks=marks[-1] if marks else NO_MARKS,
        )
        self.archives: list[ArchiveView] = [ArchiveView(r) for r in self._records]
        self.searches: list[SearchCall] = _searches(source.conversation)
        self.unreadable = 0

    # -- the model calls (rebuilt on first use) ----------------------------------------------
    @cached_property
    def history(self) -> History | None:
        """The checkpoint lineage's calls and turns (None without a checkpointer)."""
        if self._source.checkpointer is None:
            return None
        return read_history(self._source.checkpointer, self._source.thread_id)

    @cached_property
    def calls(self) -> list[ModelInputView]:
        """The model input of every call the checkpoints show, rebuilt (module docstring)."""
        history, rebuild = self.history, self._source.rebuild
        if history is None or rebuild is None:
            return []
        out: list[ModelInputView] = []
        for start in history.calls:
            record = settings_at(self.settings, start.at)
            settings = record.config() if record is not None else None
            note = ""
            if settings is None:
                settings = self._source.assumed
                if settings is None:
                    self.unknown_settings += 1
                    continue
                note = f"Settings not recorded for this call: rebuilt with {self._assumed()}."
            try:
                out.append(self._call(start, rebuild, settings, note))
            except Exception as exc:  # a report shows what it can
                self.unreadable += 1
                logger.info("wm_langgraph: call %d not rebuilt: %s", start.number, exc)
        return out

    def _call(
        self, start: CallStart, rebuild: Rebuild, settings: WorkingMemoryConfig, note: str
    ) -> ModelInputView:
        messages = list(start.state.get("messages") or [])
        meta = start.state.get(META_KEY)
        # Inside a run a state without the meta reads as an empty one (no archive yet).
        meta = dict(meta) if isinstance(meta, Mapping) else {"archives": []}
        context = rebuild(messages, {**start.state, META_KEY: meta}, start.at, settings)
        entries = split_layers(
            context.all_messages, context.all_layers, count=self._source.count_message
        )
        return ModelInputView(
            entries=tuple(entries),
            budgets=context.budgets,
            token_budget=settings.tokens,
            label=f"call {start.number} · turn {start.turn}",
            note=f"{note} {SYSTEM_NOTE}" if note else SYSTEM_NOTE,
            turn=start.turn,
        )

    def _assumed(self) -> str:
        assumed = self._source.assumed
        if assumed is None:
            return "nothing"
        return f"{self._source.assumed_from or 'settings given to the report'} ({_budget(assumed)})"

    # -- output --------------------------------------------------------------------------------
    def __repr__(self) -> str:
        """``<ThreadReport 'demo': 5 archives, 5 versions, 1,234-token Working Memory>``."""
        return (
            f"<ThreadReport {self.thread_id!r}: {len(self.archives)} archives, "
            f"{len(self.commits)} versions, {self.working_memory.tokens:,}-token Working Memory>"
        )

    def _repr_html_(self) -> str:
        return fragment(self.body())

    @property
    def html(self) -> str:
        """The report as a self-contained HTML file (inline CSS and SVG, no script)."""
        return page(f"wm_langgraph: thread {self.thread_id}", self.body())

    def save(self, path: str | Path) -> Path:
        """Write :attr:`html` to ``path`` (UTF-8); returns the path."""
        target = Path(path)
        target.write_text(self.html, encoding="utf-8")
        return target

    def body(self) -> str:
        """The report's markup (without the stylesheet)."""
        source = self._source
        where = f" · {text(source.where, 300)}" if source.where else ""
        head = (
            f"<h1>Thread {text(self.thread_id, 300)}</h1>"
            f'<p class="sub">What the Working Memory did{where}</p>{self._settings_note()}'
        )
        return (
            head
            + self._cards()
            + self._timeline()
            + self._calls_section()
            + "<h2>The Working Memory now</h2>"
            + self.working_memory.body()
            + self._commits_section()
            + self._archives_section()
            + self._searches_section()
        )

    def _settings_note(self) -> str:
        """What the thread ran with, from its records, or that they are unknown."""
        if self.settings_known:
            changes = len(self.settings) - 1
            more = (
                f" Its settings changed {changes} time(s): each call is rebuilt with the ones it "
                "ran with."
                if changes
                else ""
            )
            return f'<p class="sub">Ran with (recorded): {text(_budget(self.config))}.{more}</p>'
        if self._source.assumed is None:
            rebuilt = (
                "The model calls are not rebuilt: pass the agent's settings (wm-langgraph report "
                "--budget …, or memory.report from the memory it ran with)."
            )
        else:
            rebuilt = f"The calls are rebuilt with {self._assumed()}, an assumption."
        return (
            '<p class="sub"><b>The settings this thread ran with are not recorded</b> (it ran '
            f"before wm_langgraph recorded them). {text(rebuilt)}</p>"
        )

    def _cards(self) -> str:
        statuses = [r.status for r in self._records]
        interventions = sum(len(c.interventions) for c in self.commits)
        calls = self.calls
        last = calls[-1].tokens if calls else None
        history = self.history
        turns = (
            len(history.turn_times)
            if history is not None
            else sum(1 for m in self._source.conversation if isinstance(m, HumanMessage))
        )
        cards = [
            ("user turns", number(turns)),
            ("model calls", number(len(calls)) if history is not None else "n/a"),
            (
                "archives",
                f"{len(statuses)}"
                + (f" ({statuses.count('pending')} pending)" if "pending" in statuses else "")
                + (f" ({statuses.count('failed')} failed)" if "failed" in statuses else ""),
            ),
            ("Working Memory versions", number(len(self.commits))),
            ("guard interventions", number(interventions)),
            ("last input", f"{number(last)} tokens" if last is not None else "n/a"),
        ]
        return (
            '<div class="grid">'
            + "".join(
                f'<div class="card"><span class="muted">{text(k)}</span><b>{text(v)}</b></div>'
                for k, v in cards
            )
            + "</div>"
        )

    # -- timeline ------------------------------------------------------------------------------
    def _timeline(self) -> str:
        return "<h2>Timeline</h2>" + self._strip() + self._events()

    def _strip(self) -> str:
        """The conversation as a strip: archives, the live tail, turns, version markers."""
        conversation = list(self._source.conversation)
        total = max(1, len(conversation))
        unit = (_STRIP_WIDTH - 20) / total
        position = {str(m.id): i for i, m in enumerate(conversation) if m.id}
        shapes: list[str] = []
        ends: dict[str, float] = {}
        archived = 0
        for record in self._records:
            spots = [position[str(m.id)] for m in record.messages if str(m.id) in position]
            if not spots:
                continue
            start, end = min(spots), max(spots) + 1
            archived = max(archived, end)
            x, w = 10 + start * unit, max(1.0, (end - start) * unit - 1)
            tip = (
                f"{text(record.id, 60)}: {record.message_count} messages, "
                f"{number(record.token_count)} tokens, {text(record.status, 20)}"
            )
            shapes.append(_block(x, w, _STATUS_COLOURS[record.status], record.id, tip))
            ends[record.id] = x + w
        if archived < total:
            x, w = 10 + archived * unit, max(1.0, (total - archived) * unit)
            shapes.append(_block(x, w, "#10b981", "live", f"live: {total - archived} messages"))
        humans = [i for i, m in enumerate(conversation) if isinstance(m, HumanMessage)]
        every = max(1, round(len(humans) / 24))
        for turn, index in enumerate(humans, start=1):
            x = 10 + index * unit
            shapes.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="48" y2="56" stroke="#374151"/>')
            if turn % every == 0 or turn == 1:
                shapes.append(f'<text x="{x:.1f}" y="68" text-anchor="middle">{turn}</text>')
        for commit in self.commits:
            at = ends.get(commit.covers[-1]) if commit.covers else None
            if at is not None:
                shapes.append(
                    f"<g><title>{text(commit.label, 100)}</title><path "
                    f'd="M{at - 5:.1f},8 L{at + 5:.1f},8 L{at:.1f},20 Z" fill="#111827"/></g>'
                )
        return (
            f'<div class="strip"><svg viewBox="0 0 {_STRIP_WIDTH} 76" width="100%" role="img" '
            'aria-label="the conversation: archives, live messages, turns, versions" '
            f'xmlns="http://www.w3.org/2000/svg">{"".join(shapes)}</svg></div>'
            '<div class="key"><span><i style="background:#6366f1"></i>archive, folded</span>'
            '<span><i style="background:#f59e0b"></i>archive, pending</span>'
            '<span><i style="background:#ef4444"></i>archive, failed</span>'
            '<span><i style="background:#10b981"></i>live messages</span>'
            "<span>▼ a Working Memory version (after the archive below it)</span>"
            "<span>| a user turn (numbered)</span></div>"
        )

    def _events(self) -> str:
        events = self._turn_events()
        events.extend(
            (
                parse_time(record.created_at),
                1,
                f"{badge('archive', 'moved')} <b>{text(record.id, 60)}</b> written: "
                f"{record.message_count} messages, {number(record.token_count)} tokens "
                f"{status_badge(record.status)}{_failure(record)}",
            )
            for record in self._records
        )
        events.extend(
            (
                parse_time(commit.created_at),
                2,
                f"{badge('commit', 'done')} <b>{text(commit.label, 100)}</b>: {commit.summary()}",
            )
            for commit in self.commits
        )
        far = datetime.max.replace(tzinfo=UTC)
        events.sort(key=lambda e: (e[0] or far, e[1]))
        rows = "".join(
            f'<tr><td class="n muted">{_when(at)}</td><td>{body}</td></tr>'
            for at, _, body in events
        )
        note = (
            "" if self.history is not None else f'<p class="note">{text(self._source.no_calls)}</p>'
        )
        table = f'<table><tr><th class="n">UTC</th><th>event</th></tr>{rows}</table>'
        summary = f"{len(events)} events in time order"
        return note + details(summary, table, open_=len(events) <= _OPEN_EVENTS)

    def _turn_events(self) -> list[tuple[datetime | None, int, str]]:
        history = self.history
        if history is None:
            return []
        by_id = {str(m.id): m for m in self._source.conversation if m.id}
        out: list[tuple[datetime | None, int, str]] = []
        for number_, (message_id, at) in enumerate(history.turn_times.items(), start=1):
            said = content_text(by_id[message_id].content) if message_id in by_id else ""
            sizes = [number(c.tokens) for c in self.calls if c.turn == number_]
            detail = f" · {len(sizes)} model call(s): {', '.join(sizes)} tokens" if sizes else ""
            out.append(
                (
                    at,
                    0,
                    f"{badge(f'turn {number_}', 'user')} {text(said, 160)}"
                    f'<span class="muted">{detail}</span>',
                )
            )
        return out

    # -- calls ---------------------------------------------------------------------------------
    def _calls_section(self) -> str:
        head = "<h2>The model input of every call</h2>"
        history = self.history
        if history is None or self._source.rebuild is None:
            return head + f'<p class="muted">{text(self._source.no_calls)}</p>'
        calls = self.calls
        bars = [CallBar(c.label, c.layers, c.budgets.usable) for c in calls]
        chart = calls_chart(bars, usable=self.budgets.usable, budget=self.config.tokens)
        key = (
            '<div class="key">'
            + "".join(f'<span><i class="{LAYER_CLASSES[n]}"></i>{text(n)}</span>' for n in LAYERS)
            + "<span>- - usable budget</span></div>"
        )
        rows = "".join(
            "<tr><td>"
            + text(c.label, 60)
            + "</td>"
            + "".join(f'<td class="n">{number(c.layers[n])}</td>' for n in LAYERS)
            + f'<td class="n"><b>{number(c.tokens)}</b></td>'
            + f'<td class="n">{number(c.budgets.usable)}</td>'
            + f'<td class="n">{c.tokens / max(1, c.budgets.usable):.0%}</td></tr>'
            for c in calls
        )
        table = (
            "<table><tr><th>call</th>"
            + "".join(f'<th class="n">{text(n)}</th>' for n in LAYERS)
            + '<th class="n">total</th><th class="n">usable</th><th class="n">of usable</th>'
            + f"</tr>{rows}</table>"
        )
        missing = (
            f'<p class="note">{history.not_rebuilt} answer(s) could not be rebuilt: the '
            "checkpointer did not keep the step before them.</p>"
            if history.not_rebuilt
            else ""
        )
        if self.unknown_settings:
            missing += (
                f'<p class="note">{self.unknown_settings} call(s) are not rebuilt: the settings '
                "they ran with are not recorded.</p>"
            )
        if self.unreadable:
            missing += (
                f'<p class="note">{self.unreadable} call(s) could not be assembled again from '
                "their checkpoint (see the log at INFO).</p>"
            )
        last = (
            details(f"the messages of the last call ({calls[-1].label})", calls[-1].body())
            if calls
            else ""
        )
        return (
            head
            + f'<p class="note">{text(SYSTEM_NOTE)}</p>'
            + chart
            + key
            + missing
            + details(f"per call: tokens by layer ({len(calls)} calls)", table)
            + last
        )

    # -- versions, archives, searches -----------------------------------------------------------
    def _commits_section(self) -> str:
        head = "<h2>Every Working Memory version</h2>"
        if not self.commits:
            return head + '<p class="muted">No version yet: nothing has been folded.</p>'
        blocks = []
        for index, commit in enumerate(self.commits):
            changed = len(commit.interventions)
            flag = f" {badge(f'{changed} guard intervention(s)', 'guard')}" if changed else ""
            blocks.append(
                details(
                    f"<b>{text(commit.label, 100)}</b>{flag} "
                    f'<span class="muted">{commit.summary()}</span>',
                    commit.body(),
                    open_=index == len(self.commits) - 1,
                )
            )
        return head + "".join(blocks)

    def _archives_section(self) -> str:
        head = "<h2>Archives</h2>"
        if not self.archives:
            return head + '<p class="muted">No archive yet.</p>'
        blocks = [
            details(
                f"<b>{text(v.record.id, 60)}</b> {status_badge(v.record.status)} "
                f'<span class="muted">{v.record.message_count} messages, '
                f"{number(v.record.token_count)} tokens"
                + (f" · {text(v.record.abstract, 160)}" if v.record.abstract else "")
                + "</span>",
                v.body(),
            )
            for v in self.archives
        ]
        return head + "".join(blocks)

    def _searches_section(self) -> str:
        head = "<h2>Searches of the archives</h2>"
        note = (
            '<p class="note">Read from the agent\'s own <code>archive_search</code> and '
            "<code>archive_expand</code> calls in the conversation; a search made outside the "
            "agent's tool calls leaves no record.</p>"
        )
        if not self.searches:
            return head + note + '<p class="muted">The agent searched nothing.</p>'
        rows = "".join(_search_row(s) for s in self.searches)
        return (
            head
            + note
            + '<table><tr><th class="n">turn</th><th>tool</th><th>asked</th>'
            + f"<th>returned</th></tr>{rows}</table>"
        )


def _search_row(search: SearchCall) -> str:
    result = (
        details(text(search.result, 160), f"<pre>{text(search.result, 6_000)}</pre>")
        if search.result
        else '<span class="muted">no result</span>'
    )
    return (
        f'<tr><td class="n">{search.turn}</td><td><code>{text(search.tool, 40)}</code></td>'
        f"<td>{text(_args(search.args), 400)}</td><td>{result}</td></tr>"
    )


def _block(x: float, width: float, colour: str, label: str, tip: str) -> str:
    """One coloured block of the strip (``tip``: markup; ``label`` shown when it fits)."""
    shown = text(label, 60) if width > 7 * len(label) + 8 else ""
    return (
        f'<g><title>{tip}</title><rect x="{x:.1f}" y="24" width="{width:.1f}" height="22" rx="3" '
        f'fill="{colour}"/><text x="{x + 4:.1f}" y="39" style="fill:#fff">{shown}</text></g>'
    )


def _failure(record: ArchiveRecord) -> str:
    error = record.metadata.get("error")
    if record.status != "failed" or not error:
        return ""
    return f' <span class="muted">{text(error, 200)}</span>'


def _args(args: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in args.items())
