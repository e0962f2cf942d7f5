"""Context: what the agent's model sees before each call.

- :mod:`.assemble`: the budgets and the layers (system addition, the Working Memory, pending
  archives, live messages), trimmed whole turns at a time and tool-pair-safe.
- :mod:`.fit`: a Working Memory cut to a token budget for one call (the stored one unchanged).
"""
