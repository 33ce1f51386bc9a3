"""One module per step of the query graph; each node is a small async function returning partial state."""
