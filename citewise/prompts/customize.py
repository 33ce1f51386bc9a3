"""Customized answer (SynthRAG): merge the sections, condense, and follow the style of exemplar answers."""

PROMPT = """Turn the drafted sections below into the final report that answers the question. Write, in
markdown:
1. an introduction of one or two sentences that answers the question directly (no heading);
2. every section, in the order given, under a heading `## <title>` with exactly the title given; keep what
   each section says and its citations, but remove anything another section already says;
3. a conclusion under `## Conclusion` of two or three sentences that draws the sections together.
Keep every citation label exactly as written (like [S2E1]) on the sentences it supports, cite only labels
that appear in the drafts, and add no fact the drafts do not state. Stay under {words} words. Follow the
tone, structure and concision of the exemplar answers (their content is irrelevant here). When a
<problems> list is given, the previous draft failed those checks: fix every one.

{data_rule}

{question}
{problems}

{exemplars}

{sections}"""
