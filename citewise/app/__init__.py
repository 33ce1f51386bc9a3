"""The ways in: the command line, the terminal chat, the chat page, `citewise eval` and the outline tools.

Each builds a run's Context, invokes the query graph (citewise.graph) and shows what comes back; none of the
graph's steps imports anything from here.
"""
