"""Storage: where the memory's records live, over a LangGraph ``BaseStore``.

- :mod:`.keys`: the memory key (thread, name, graph namespace) and its store namespaces.
- :mod:`.archives`: archive records (messages verbatim) and Working Memory versions.
- :mod:`.longterm`: a user's durable facts, shared across that user's threads.
- :mod:`.sqlite` and :mod:`.versioned_sqlite`: the embedded persistent default, one SQLite file.
"""
