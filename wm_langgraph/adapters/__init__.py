"""Adapters: how users plug the engine in (middleware, react-agent hooks, tools, CLI, models)."""
