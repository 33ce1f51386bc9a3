"""Citation support for `citewise eval`: do the cited passages, read alone, entail the answer sentence."""

PROMPT = """Decide whether the passages support the claim. The claim is supported only if a careful reader of
the passages alone, with no other knowledge, would conclude that the claim is true: everything it states must
be stated or directly implied by the passages. A claim that is only related to the passages, that they
support in part, or that they contradict is not supported.

{data_rule}

{passages}

{claim}"""
