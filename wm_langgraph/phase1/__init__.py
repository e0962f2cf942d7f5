"""Phase 1: the per-turn work on the thread's state.

- :mod:`.window`: sliding-window token accounting and tool-pair-safe split points.
- :mod:`.archiving`: move the oldest live messages into a new archive record.
- :mod:`.timelines`: which archives a thread's reads see: the checkpoint's timeline, the store's
  pointer, nothing of a thread whose checkpoints were deleted.
- :mod:`.session`: the hooks' state-side work: read the meta and the timeline, account the
  turn, commit past the threshold (Phase 1 inline, Phase 2 scheduled), write the meta back.
"""
