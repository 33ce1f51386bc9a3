"""Graph wiring: the query graph and the index graph (served as they are by citewise.app.served)."""
