"""The outline library of the report path: one outline instruction per question type (SynthRAG 3.2.1).

A report is planned from the instruction of the question's type, and `nearest_type` picks that type: the one
whose example questions lie closest to the question (cosine to their normalised mean vector). The library is
editable JSON; `citewise/data/outlines.json` ships with seven hand-written types.

`learn` builds a library from rated example answers the way SynthRAG does: embed and cluster the questions
with k-means, score every answer's effectiveness E = 0.3 cos(question, answer) + 0.1 length + 0.6 rating,
take the top and bottom 5% of each cluster, and have an LLM contrast them into the cluster's outline
instruction. Without an LLM (or when its reply is malformed) the instruction is written from the answers'
structure (`answer_structure`): the headings the best answers share, and what the worst ones lack or overdo.
"""

from __future__ import annotations

from citewise.core.outlines.learning import (
    EVIDENCE_RULE,
    MAX_EXAMPLES,
    MIN_EXAMPLES,
    SAMPLE_SHARE,
    WEIGHTS,
    Example,
    default_k,
    distinctive_words,
    draft_instruction,
    effectiveness,
    learn,
    learn_messages,
    read_examples,
    shared_headings,
    split_samples,
)
from citewise.core.outlines.library import (
    DATA_DIR,
    DEFAULT_LIBRARY,
    EXAMPLE_ANSWERS,
    LIBRARY_VERSION,
    OutlineLibraryError,
    OutlineType,
    as_library,
    describe,
    load_library,
    nearest_type,
    save_library,
    type_centroids,
)
from citewise.core.outlines.structure import answer_structure

__all__ = [
    "DATA_DIR",
    "EVIDENCE_RULE",
    "LIBRARY_VERSION",
    "MAX_EXAMPLES",
    "MIN_EXAMPLES",
    "SAMPLE_SHARE",
    "WEIGHTS",
    "DEFAULT_LIBRARY",
    "EXAMPLE_ANSWERS",
    "Example",
    "OutlineLibraryError",
    "OutlineType",
    "answer_structure",
    "as_library",
    "default_k",
    "describe",
    "distinctive_words",
    "draft_instruction",
    "effectiveness",
    "learn",
    "learn_messages",
    "load_library",
    "nearest_type",
    "read_examples",
    "save_library",
    "shared_headings",
    "split_samples",
    "type_centroids",
]
