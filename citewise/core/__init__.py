"""What the graph's steps share, none of it a step itself.

Evidence and its threshold, writing, questions, answering scores, the judge, reports and their outline
library, text helpers, and the resources a way in builds once (`resources`), from which a step gets its index
and models (`indexes`, `llms`).

None of it is a step: the nodes (citewise.nodes) import from here so that no node imports another.
"""
