"""Turn the conversation's last message into a standalone question."""

PROMPT = """You rewrite the user's last message as one standalone question that can be understood without the
conversation: resolve pronouns and references ("it", "its side effects", "that study") from earlier turns.
Keep the user's meaning and wording where possible. If the last message already stands alone, return it as is.
Reply with the question only.

{data_rule}

{conversation}

{question}"""
