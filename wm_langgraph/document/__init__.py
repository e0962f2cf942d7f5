"""The Working Memory document and its rules: pure functions, no LangGraph, no I/O, no models.

- :mod:`.sections`: the seven sections; parsing, rendering, normalisation.
- :mod:`.protocol`: the ``update_working_memory`` tool and the size warnings of the update
  prompt; :mod:`.arguments` (with :mod:`.json_repair`) reads a model's arguments tolerantly.
- :mod:`.ops`: section ops and guard outcomes; :mod:`.items`: what a written item may be.
- :mod:`.guards`: one guard per section; :mod:`.merge` applies ops through them.
- :mod:`.compaction`: the hard size contract of the stored document.
- :mod:`.create_repair`: a create reply repaired before it is normalised.
- :mod:`.text`: text analysis (meaningful words, anchors, paths, matching), CJK-aware.
- :mod:`.tokens`: token counting (offline cl100k counts).
"""
