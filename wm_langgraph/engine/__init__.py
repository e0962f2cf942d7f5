"""The session engine: LangGraph state, accounting, archives, the commit subgraph, assemble."""
