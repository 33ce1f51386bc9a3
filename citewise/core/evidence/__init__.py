"""Evidence as the steps share it, one module per concern; every name is importable from here too.

None of this is a step of the graph: the scoring, writing and verifying steps of the query graph and of every
report section use it alike, so no node has to import another.

- `labels`: labels and shown scores in prompts, batches, edges-first order, the abstention wording;
- `threshold`: final scores and the threshold rule with the verdict every chunk records;
- `bridges`: the local bridge rule of two-hop questions;
- `packing`: evidence packed into the writer's context window;
- `notes`: what the steps read of a run's evidence and the notes they write.
"""

from __future__ import annotations

from citewise.core.evidence.bridges import (
    BRIDGE_FLAG as BRIDGE_FLAG,
)
from citewise.core.evidence.bridges import (
    BRIDGE_SOURCES as BRIDGE_SOURCES,
)
from citewise.core.evidence.bridges import (
    bridges as bridges,
)
from citewise.core.evidence.bridges import (
    may_bridge as may_bridge,
)
from citewise.core.evidence.bridges import (
    names_title as names_title,
)
from citewise.core.evidence.bridges import (
    title_core as title_core,
)
from citewise.core.evidence.labels import (
    CLOSEST as CLOSEST,
)
from citewise.core.evidence.labels import (
    CLOSEST_HEADING as CLOSEST_HEADING,
)
from citewise.core.evidence.labels import (
    MARKER as MARKER,
)
from citewise.core.evidence.labels import (
    NO_ANSWER as NO_ANSWER,
)
from citewise.core.evidence.labels import (
    NOTHING_MATCHED as NOTHING_MATCHED,
)
from citewise.core.evidence.labels import (
    Block as Block,
)
from citewise.core.evidence.labels import (
    batches as batches,
)
from citewise.core.evidence.labels import (
    edges_first as edges_first,
)
from citewise.core.evidence.labels import (
    is_abstention as is_abstention,
)
from citewise.core.evidence.labels import (
    labelled as labelled,
)
from citewise.core.evidence.labels import (
    shown_score as shown_score,
)
from citewise.core.evidence.notes import (
    CONTRADICTS as CONTRADICTS,
)
from citewise.core.evidence.notes import (
    NO_SECTION_EVIDENCE as NO_SECTION_EVIDENCE,
)
from citewise.core.evidence.notes import (
    PART_UNANSWERED as PART_UNANSWERED,
)
from citewise.core.evidence.notes import (
    SECTION_FAILED as SECTION_FAILED,
)
from citewise.core.evidence.notes import (
    contradiction_note as contradiction_note,
)
from citewise.core.evidence.notes import (
    failed_note as failed_note,
)
from citewise.core.evidence.notes import (
    kept_records as kept_records,
)
from citewise.core.evidence.notes import (
    overview as overview,
)
from citewise.core.evidence.notes import (
    paragraph_texts as paragraph_texts,
)
from citewise.core.evidence.packing import (
    estimate_tokens as estimate_tokens,
)
from citewise.core.evidence.packing import (
    evidence_blocks as evidence_blocks,
)
from citewise.core.evidence.packing import (
    pack as pack,
)
from citewise.core.evidence.threshold import (
    context_threshold as context_threshold,
)
from citewise.core.evidence.threshold import (
    dynamic_threshold as dynamic_threshold,
)
from citewise.core.evidence.threshold import (
    final_score as final_score,
)
from citewise.core.evidence.threshold import (
    judge_all as judge_all,
)
from citewise.core.evidence.threshold import (
    shared_threshold as shared_threshold,
)
from citewise.core.evidence.threshold import (
    threshold_text as threshold_text,
)
