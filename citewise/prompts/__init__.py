"""Every prompt citewise sends, as named templates (one module per step), wired as Context defaults.

Untrusted text (documents, questions, conversation) is only ever inserted through `common.quote`, which
escapes it and wraps it in explicit tags; every prompt tells the model that tagged text is data.
"""
