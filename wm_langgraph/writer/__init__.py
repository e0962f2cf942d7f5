"""The writer: the model calls that write the Working Memory.

- :mod:`.binding`: which chat model writes (the default when none is given) and how the update
  tool is bound to it; :mod:`.openai` for OpenAI and OpenAI-compatible servers.
- :mod:`.prompts`: the create, update and system prompts (package data), loaded and rendered.
- :mod:`.generate`: the create and update calls and how their replies are read.
- :mod:`.calls`: how one call is made (timeouts, output limits, errors of the right kind);
  :mod:`.provider`: what a provider's errors and replies say besides the reply.
- :mod:`.offline`: the offline model, a deterministic heuristic writer (no LLM, no network).
"""
