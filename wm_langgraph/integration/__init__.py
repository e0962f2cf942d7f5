"""How the memory meets LangGraph: the hooks as graph nodes, and the run they belong to.

- :mod:`.hooks`: a hook that is both a plain callable and a Runnable node (sync and async).
- :mod:`.binding`: the graph's store, the caller's callbacks and streams, foreign summaries.
- :mod:`.scoping`: which memory a call addresses (thread, name, graph namespace), bound to
  which store.
"""
