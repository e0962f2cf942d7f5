"""Phase 2: fold pending archives into the Working Memory, off the turn's path.

- :mod:`.graph`: the commit subgraph (prepare -> create | update -> guard_merge -> save), wiring
  :mod:`.nodes` (its nodes and routers) over :mod:`.state` (the round's typed state).
- :mod:`.batching`: how much one round sends to the writer (batches, slices, learned limits).
- :mod:`.size`: the document's size contract as the commit applies it.
- :mod:`.trails`: the paths and errors our code keeps from the folded tool results.
- :mod:`.runner`: ordered per thread, fair between threads, bounded, with a circuit breaker;
  :mod:`.pool` is its fair worker pool.
"""
