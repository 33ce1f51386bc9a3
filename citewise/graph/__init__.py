"""Graph wiring: the query graph and the index graph (langgraph.json points here)."""
