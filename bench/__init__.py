"""Benchmarks of wm_langgraph against its in-ecosystem peers (see bench/README.md)."""
