"""The settings a thread ran with, kept in its own records (design §2.2, SPEC §11).

What a model call got depends on the memory's settings (the budget, the reply reserve, the
Working Memory's share, the verbatim fill, …), and the agent's settings live in its code, not
in the database. A report that assumed the library's defaults would show inputs the model never
got. So the memory records them: every ``WorkingMemoryConfig`` field whose value is JSON-plain
(numbers, strings, booleans, None, tuples of those), read generically from the dataclass, so a
setting added to the config is recorded without more code.

A record is written under the memory's ``meta`` namespace, key ``settings:<time>:<digest>``,
with ``at`` (when this process first ran the thread with them), ``digest`` and ``settings``.
:class:`SettingsRecorder` writes at most once per thread and process: on the first hook it runs
for a thread it reads the thread's newest record and writes one only when the settings differ,
so the records are the thread's changes of settings. The settings in force for a model call are
those of the newest record written before the checkpoint the call started from
(:func:`settings_at`); a call before every record (a thread from before they were kept) has no
known settings, and a reader says so.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Any

from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.storage.archives import ArchiveStore

__all__ = [
    "SETTINGS_PREFIX",
    "SettingsRecord",
    "SettingsRecorder",
    "read_settings",
    "settings_at",
    "settings_values",
]

SETTINGS_PREFIX = "settings:"
"""Key prefix of the settings records in a memory's ``meta`` namespace."""
_VERSION = 1
_PAGE = 500
_MAX_NOTED = 4_096
logger = logging.getLogger("wm_langgraph")


def _plain(value: object) -> object | None:
    """``value`` as JSON-plain data, or None when it is not (a callable, an object)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, list | tuple):
        items = [_plain(v) for v in value]
        lost = any(i is None and v is not None for i, v in zip(items, value, strict=True))
        return None if lost else items
    return None


def settings_values(config: WorkingMemoryConfig) -> dict[str, Any]:
    """Every field of ``config`` whose value is JSON-plain, by name (tuples as lists)."""
    out: dict[str, Any] = {}
    for field in fields(config):
        value = getattr(config, field.name)
        plain = _plain(value)
        if plain is not None or value is None:
            out[field.name] = plain
    return out


def _digest(values: Mapping[str, Any]) -> str:
    text = json.dumps(values, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        found = datetime.fromisoformat(value)
    except ValueError:
        return None
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class SettingsRecord:
    """The settings one thread ran with from a moment on.

    Attributes:
        at: When a process first ran the thread with them.
        values: The recorded settings (field name -> JSON-plain value).
        digest: A digest of ``values``.
    """

    at: datetime | None
    values: Mapping[str, Any]
    digest: str

    @property
    def missing(self) -> tuple[str, ...]:
        """Fields of today's ``WorkingMemoryConfig`` this record does not hold (written before
        they existed): :meth:`config` gives them their defaults."""
        recorded = set(self.values)
        return tuple(f.name for f in fields(WorkingMemoryConfig) if f.name not in recorded)

    def config(self) -> WorkingMemoryConfig | None:
        """The recorded settings as a config (None when they are no longer valid ones)."""
        known = {f.name: f for f in fields(WorkingMemoryConfig)}
        values: dict[str, Any] = {}
        for name, value in self.values.items():
            if name not in known:
                continue
            values[name] = tuple(value) if isinstance(value, list) else value
        try:
            return WorkingMemoryConfig(**values)
        except (TypeError, ValueError):
            return None


def read_settings(archives: ArchiveStore, key: str) -> list[SettingsRecord]:
    """The settings records of the memory ``key``, oldest first."""
    namespace = archives.namespace(key, "meta")
    store = archives.io(key)
    found: list[SettingsRecord] = []
    offset = 0
    while page := store.search(namespace, limit=_PAGE, offset=offset):
        offset += len(page)
        for item in page:
            if tuple(item.namespace) != namespace or not item.key.startswith(SETTINGS_PREFIX):
                continue
            values = item.value.get("settings")
            if not isinstance(values, Mapping):
                continue
            found.append(
                SettingsRecord(_time(item.value.get("at")), dict(values), str(item.value["digest"]))
            )
        if len(page) < _PAGE:
            break
    far = datetime.min.replace(tzinfo=UTC)
    return sorted(found, key=lambda r: r.at or far)


def settings_at(records: Sequence[SettingsRecord], at: datetime | None) -> SettingsRecord | None:
    """The record in force at ``at`` (the newest written at or before it); None when ``at``
    is before every record. With no time known, the newest record."""
    if at is None:
        return records[-1] if records else None
    found = None
    for record in records:
        if record.at is not None and record.at <= at:
            found = record
    return found


class SettingsRecorder:
    """Writes a thread's settings record at its first hook in this process (module docstring).

    Thread-safe; remembers up to 4,096 (memory key, store) pairs, then starts over (a thread
    seen again reads its newest record once more and writes nothing when it matches).
    """

    def __init__(self, archives: ArchiveStore, config: WorkingMemoryConfig) -> None:
        """Record ``config`` for the memories of ``archives``."""
        self._archives = archives
        self._values = settings_values(config)
        self._digest = _digest(self._values)
        self._noted: set[tuple[str, int]] = set()
        self._lock = threading.Lock()

    def note(self, key: str) -> None:
        """Make sure the memory ``key`` has a record of these settings (cheap after the first
        call: one set lookup). A store error is logged, never raised: the turn goes on."""
        store = self._archives.store_for(key)
        marker = (key, id(store))
        if marker in self._noted:
            return
        with self._lock:
            if marker in self._noted:
                return
            if len(self._noted) >= _MAX_NOTED:
                self._noted.clear()
            self._noted.add(marker)
        try:
            records = read_settings(self._archives, key)
            if records and records[-1].digest == self._digest:
                return
            at = datetime.now(UTC).isoformat()
            self._archives.put_meta(
                key,
                f"{SETTINGS_PREFIX}{at}:{self._digest}",
                {"version": _VERSION, "at": at, "digest": self._digest, "settings": self._values},
            )
        except Exception as exc:  # the record helps a report; a turn never fails for it
            logger.warning(
                "wm_langgraph: the settings of thread %r could not be recorded (%s): its report "
                "will not know them",
                key,
                type(exc).__qualname__,
            )
