"""The pure core: the Working Memory document and its rules. No LangGraph, no I/O, no models."""
