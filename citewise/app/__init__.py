"""The ways in: the command line, the terminal chat, the chat page, the served graphs, eval, outline tools.

Each builds its resources once (citewise.core.resources) and a run's Context that carries them, invokes the
query graph (citewise.graph) and shows what comes back; none of the graph's steps imports anything from here.
"""
