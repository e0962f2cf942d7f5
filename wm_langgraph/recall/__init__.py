"""Recall: how the agent finds what the Working Memory could not hold.

- :mod:`.tools`: the ``archive_expand`` and ``archive_search`` tools over the thread's archives.
"""
