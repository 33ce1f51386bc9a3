"""verify: map every answer sentence to the source lines that support it; re-cite it to them; drop the rest.

Source lines are the sentences of each cited chunk's paragraph (LLM-Ref's fine-grained references). With
a model, one request maps all sentences (or batches sized to its context window, each with the lines of the
chunks its sentences cite); in local mode a sentence is supported, for each chunk it cites, by that chunk's
line sharing the largest part of its content words, if the share reaches Context.local_support
(an uncited sentence: by the best such line of all). A sentence no line supports is unsupported: dropped,
or flagged when Context.drop_unsupported is off. Only citewise's own sentences about missing evidence
(`citewise.core.report.is_own_text`) stand unverified; a writer's sentence about the documents is checked like
any other. When the model cannot map the sentences (a transient provider fault after the retries, or output
malformed after repairs) word overlap decides, and the run's `degraded` output says so. Under the lean
profile (small local models) word overlap decides and the judge may veto a sentence; it may also verify a
paraphrase (a sentence it supports by lines sharing PLAUSIBLE of its words, too few for word overlap) when
it got the control right: a sentence no document supports, verified with the answer's (CONTROL), which a
judge that is not reading the lines calls supported or leaves out.

A supported sentence is re-cited to its supporting lines: it keeps a marker only for evidence one of its
supporting lines comes from, and gains a marker for supporting evidence it does not cite yet (after its
own markers, in the order of its supporting lines). The labels removed this way are listed in the
sentence's `support` entry as `recited_from`, so a marker never names evidence that did not support its
sentence. Citation labels that do not name evidence the writer was given are removed too, so every marker
left resolves to a stored chunk. Markers are then renumbered [1], [2], ... in order of first appearance.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from langgraph.runtime import Runtime

from citewise.context import Context
from citewise.core import llms, questions
from citewise.core.evidence import NO_ANSWER, is_abstention, kept_records, paragraph_texts
from citewise.core.evidence.packing import CONTEXT_NOTE
from citewise.core.indexes import in_thread, open_index
from citewise.core.judge import UNRELIABLE
from citewise.core.judge import ask as judge_ask
from citewise.core.report import LABEL, is_own_text
from citewise.core.text import (
    content_words,
    keeps_polarity,
    opens_mid,
    overlap,
    quotes_of,
    sentences,
    states_figures_of,
    stops_mid,
)
from citewise.core.writing import extractive_answer, local_follow_up, no_answer
from citewise.index.citations import soften_source_markers, without_trailing_source_markers
from citewise.models import degradation
from citewise.prompts.common import DATA_RULE, quote, render
from citewise.state import Citation, Degraded, EvidenceRecord, State, SupportMap

logger = logging.getLogger(__name__)

TRAILING_LABELS = re.compile(r"([.!?])((?:\[\d[\d,\s\u2013-]*\])*)((?:\s*\[(?:S\d+)?E\d+\])+)")
"""Labels after a sentence's full stop, maybe behind the source's own markers ("years.[43] [E2]"): the
sentence splitter would leave them to the next sentence, or cut "[E2]" in two."""
ENDS_WITH_LABEL = re.compile(r"\[(?:S\d+)?E\d+\]$")
LEADING_LABELS = re.compile(r"\s*(?:\[(?:S\d+)?E\d+\]\s*)+")
LABELLED_END = re.compile(r"(?:\[(?:S\d+)?E\d+\])+[.!?]?(?=\s+[A-Z0-9\"\u201c\u2018])")
"""Labels a next sentence follows ("Japan [E1]. 8.2-m Subaru ...", "... (CFHT) [E3] The first ..."): a
writer cites at a sentence's end, and a sentence splitter does not end one before a digit or after a table
row with no full stop."""
SPACED_LABEL = re.compile(r"\s*\[((?:S\d+)?E\d+)\]")
"""A label with the space before it (removed together, so no double space is left)."""
UNVERIFIED = (
    f"{NO_ANSWER} An answer was drafted from the evidence, but none of its sentences could be verified "
    "against the source lines, so it is not shown."
)
NOTHING_VERIFIED = "No sentence of this section could be verified against its sources."
BREAK = ""
"""A paragraph break among the parts of a draft."""
OVERLAP = "sentences verified by word overlap"
"""What decided support when the model could not (recorded in `degraded`)."""
CONTROL = "The lighthouse keeper painted the harbour wall green in the spring of 1911."
"""A sentence no document supports, verified with a lean judge's sentences: a judge that calls it supported
(or leaves it out) is not reading the source lines, and may only veto."""
PLAUSIBLE = 0.15
"""Content-word overlap with a source line a trusted lean judge's supported paraphrase must still reach (a
paraphrase keeps the names it is about; a line sharing none of its words is a mapping at random)."""


def asks(part: str) -> bool:
    """Whether an answer sentence is a question (a small model may echo the one it was asked).

    An echo may end in the subject a follow-up is read with: "Which transceivers were plugged into it?
    (three-node optical testbed)".
    """
    text = TRAILING_BRACKET.sub("", LABEL.sub("", part).strip().rstrip(".").rstrip())
    return text.rstrip().endswith("?")


def broken_off(part: str) -> bool:
    """Whether a writer's sentence is a piece of one (`opens_mid` or `stops_mid`), or leads in to nothing.

    SmolLM2 wrote "and the magnetic transition width is, [1]" from a line it broke off, and "Similarly the
    Wess-Zumino action is described as follows: [1]" from one that went on in a display it left out: its
    words are the line's, so word overlap verified it. (A lower-case name such as "jax-cfd" may open a
    sentence.)
    """
    text = LABEL.sub("", part).strip()
    return opens_mid(text) or stops_mid(text) or text.endswith(":")


TRAILING_BRACKET = re.compile(r"\s*\([^()]*\)$")
"""A bracket closing a sentence."""


def is_structure(part: str) -> bool:
    """A markdown heading or a paragraph break: kept as is, never verified, never merged into a sentence."""
    return part == BREAK or part.startswith("#")


PROMPT_TAGS = re.compile(
    r"</?(?:evidence|draft|question|questions|conversation|passages|section|exemplar|output|problems|queries)"
    r"\b[^>]*>",
    re.I,
)
"""The delimiters citewise's prompts put around data: a small model echoes them ('<evidence id="E1" ...>')."""
ECHOED_NOTE = re.compile(rf"\(\s*{CONTEXT_NOTE}:\s*([^()]*)\)?", re.I)
"""The note that introduces a passage's context in the writer's prompt, copied into an answer (SmolLM2): what
it holds may be a sentence of the source, the note is not."""
NUMBERED_FRAGMENT = re.compile(
    r"(?:^|(?<=[.!?]))[ \t]*\d{1,3}[ \t]*(?:\[(?:S\d+)?E\d+\][ \t]*)+[.!?]?(?=\s|$)", re.M
)
"""A list number with only markers after it ("1 [E1]. ... 2 [E1]."): no sentence, removed before splitting."""


def split_answer(draft: str) -> list[str]:
    """Answer sentences, headings and paragraph breaks as parts of their own; a list item ends a sentence.

    Prompt delimiters a model echoed are removed first: they are citewise's markup, never part of an answer.
    """
    parts: list[str] = []
    draft = NUMBERED_FRAGMENT.sub("", ECHOED_NOTE.sub(r"\1", PROMPT_TAGS.sub(" ", draft)))
    draft = TRAILING_LABELS.sub(r"\2\3\1", draft)  # "claim. [E1]" -> "claim [E1]." so the label stays with it
    for line in draft.splitlines():
        stripped = line.strip()
        if not stripped:
            if parts and parts[-1] != BREAK:
                parts.append(BREAK)
            continue
        if stripped.startswith("#"):
            if parts and parts[-1] != BREAK:
                parts.append(BREAK)
            parts += [stripped, BREAK]
            continue
        for part in labelled_sentences(line) if not line.lstrip().startswith("- ") else [stripped]:
            lead = LEADING_LABELS.match(part)
            if lead and parts and not is_structure(parts[-1]):  # 'said "X." [E1] Next' splits after the quote
                parts[-1] = f"{parts[-1]} {lead.group(0).strip()}"
                part = part[lead.end() :]
                if not part.strip():
                    continue
            if parts and not is_structure(parts[-1]) and not LABEL.sub("", part).strip(" .,;"):
                parts[-1] = f"{parts[-1]} {part.strip()}"  # a lone "[E2]" belongs to the sentence before it
            else:
                parts.append(part)
    while parts and parts[-1] == BREAK:
        parts.pop()
    return parts


def labelled_sentences(line: str) -> list[str]:
    """A line's sentences, ending one after every group of labels another sentence follows."""
    found: list[str] = []
    for sentence in sentences(line):
        start = 0
        for end in LABELLED_END.finditer(sentence):
            found.append(sentence[start : end.end()].strip())
            start = end.end()
        found.append(sentence[start:].strip())
    joined: list[str] = []
    for sentence in filter(None, found):
        if joined and not LABEL.sub("", sentence).strip(" .,;"):  # 'said "X." [E1]': the label is the quote's
            joined[-1] = f"{joined[-1]} {sentence}"
        else:
            joined.append(sentence)
    return joined


def split_unmarked(part: str) -> tuple[str, list[str]]:
    """A verified part without the sentences in it that carry no label, and those sentences.

    A sentence splitter may leave two sentences in one part (a table row has no full stop): verification
    then checked the labelled one only, and the other must not be shown as though it were checked.
    """
    item = part.startswith("- ")
    pieces = labelled_sentences(part[2:] if item else part)
    bare = [p for p in pieces if not LABEL.search(p) and content_words(p)]
    if len(pieces) < 2 or not bare:
        return part, []
    shown = " ".join(p for p in pieces if p not in bare)
    return (f"- {shown}" if item and shown else shown), [tidy(p) for p in bare]


def source_lines(labels: dict[str, str], paragraphs: dict[str, str]) -> dict[str, tuple[str, str]]:
    """Line label (E2.3) -> (chunk id, sentence) over each labelled chunk's paragraph (its first label)."""
    lines = {}
    first: dict[str, str] = {}
    for label, chunk_id in labels.items():
        first.setdefault(chunk_id, label)
    for chunk_id, label in first.items():
        for n, line in enumerate(sentences(paragraphs.get(chunk_id, "")), start=1):
            lines[f"{label}.{n}"] = (chunk_id, line)
    return lines


def seen_lines(
    lines: dict[str, tuple[str, str]], records: dict[str, EvidenceRecord], summaries: dict[str, str]
) -> dict[str, tuple[str, str]]:
    """The lines the writer was shown: a chunk's own and its context's (all its lines, where none match).

    A small judge is shown no line the writer could not have read (on a CPU the prompt is most of the wait).
    """
    seen: dict[str, tuple[str, str]] = {}
    for chunk_id in dict.fromkeys(chunk for chunk, _ in lines.values()):
        record = records.get(chunk_id, {})
        shown = " ".join(f"{record.get('text', '')} {summaries.get(chunk_id, '')}".split())
        own = {key: line for key, line in lines.items() if line[0] == chunk_id}
        matched = {key: line for key, line in own.items() if " ".join(line[1].split()) in shown}
        seen |= matched or own
    return seen


def tidy(sentence: str) -> str:
    """The sentence without the space a removed label left before its punctuation."""
    return re.sub(r"\s+([.!?,;:])", r"\1", sentence).strip()


def add_label(sentence: str, label: str) -> str:
    """Cite `label` at the end of a sentence, before its closing punctuation, next to a label it ends with."""
    body, end = (sentence[:-1], sentence[-1]) if sentence and sentence[-1] in ".!?" else (sentence, "")
    gap = "" if ENDS_WITH_LABEL.search(body) else " "
    return f"{body}{gap}[{label}]{end}"


def local_support(
    sentence: str, cited: set[str], lines: dict[str, tuple[str, str]], minimum: float
) -> list[str]:
    """Each cited chunk's best-overlapping line label whose overlap reaches `minimum`, best first.

    A sentence that cites no chunk with lines gets the single best line of all, if it reaches `minimum`. A
    sentence with no content word ("1 [1].", a fragment a small model leaves) asserts nothing: no support;
    nor does a line that lacks a phrase the sentence puts in quotation marks (`quotes_of`) or denies what the
    sentence asserts (`keeps_polarity`: "forbid any excited states except ..." is no support for "all states
    except ... exist").
    """
    claim = LABEL.sub("", sentence)
    if not content_words(claim):
        return []
    pool = [key for key in lines if lines[key][0] in cited]
    scored = sorted(
        (
            (overlap(claim, lines[key][1]), key)
            for key in (pool or list(lines))
            if quotes_of(claim, lines[key][1]) and keeps_polarity(claim, lines[key][1])
        ),
        reverse=True,
    )
    best: dict[str, str] = {}
    for value, key in scored:
        if value < minimum:
            break
        best.setdefault(lines[key][0], key)
    found = list(best.values())
    return found if pool else found[:1]


def recite(
    sentence: str, labels: dict[str, str], lines: dict[str, tuple[str, str]], supporting: list[str]
) -> tuple[str, list[str]]:
    """The sentence citing exactly the evidence its supporting lines come from, and the labels it lost.

    Labels the writer was not given go; so do labels of chunks no supporting line comes from. A supporting
    chunk the sentence does not cite yet is added (under its lines' label), after the markers it keeps.
    """
    chunks = {lines[key][0] for key in supporting}
    cited = dict.fromkeys(label for label in LABEL.findall(sentence) if label in labels)
    removed = [label for label in cited if labels[label] not in chunks] if supporting else []
    sentence = SPACED_LABEL.sub(
        lambda m: m.group(0) if m.group(1) in labels and m.group(1) not in removed else "", sentence
    )
    sentence = tidy(sentence)
    carried = cited_chunks(sentence, labels)
    for key in supporting:
        if lines[key][0] not in carried:
            carried.add(lines[key][0])
            sentence = add_label(sentence, key.rsplit(".", 1)[0])
    return sentence, removed


async def verify(state: State, runtime: Runtime[Context]) -> dict:
    """Decide which answer sentences stand, which source lines support them, and the final markers.

    Never worse than no model: when none of a model's sentences can be verified but evidence was kept (or,
    under lean, the model only said the documents do not answer, or its verified sentences do not rest on
    every line local mode's answer quotes), the answer is local mode's extractive one from the same
    evidence (verified locally), read as local mode reads a follow-up; a follow-up local mode finds no
    answer to in the kept passages gets the honest no-answer under lean; a report keeps its own
    sentences, checked by word overlap as local mode checks them. Both listed in `degraded`.
    """
    context = runtime.context
    judge, _ = llms.models(context)
    kept = kept_records(state)
    # an answer that kept nothing is the honest no-answer, whose quotes of the closest passages are theirs
    # word for word and claim nothing (a judge's request would only cost its prompt)
    abstained = not kept and not state.get("outline") and is_abstention(state.get("draft", ""))
    checker = None if abstained else judge
    result = await _verified(state, context, state.get("draft", ""), state.get("labels", {}), checker)
    if judge is None:
        return result
    if state.get("outline"):  # a report: its own sentences, checked by word overlap as local mode checks them
        if result["support"]:  # some sentence stands: the model verified the report
            return result
        local = await _verified(state, context, state.get("draft", ""), state.get("labels", {}), None)
        if not local["support"]:
            return result
        reason = "the model verified none of the report's sentences: they were checked by word overlap"
        logger.warning("verify: %s", reason)
        entry = degradation("verify", reason, list(dict.fromkeys(state.get("labels", {}).values())))
        return {
            **local,
            "unsupported": result["unsupported"],
            "degraded": [*result.get("degraded", []), *local.get("degraded", []), entry],
        }
    # a lean answer that says only that the documents do not answer, though local mode's rule found a
    # passage that does (evidence was kept), is no answer either (Qwen2.5-1.5B wrote only "Your documents do
    # not answer this part of the question: ..." on 10 of 21 held-out turns, 3 of which local mode got right)
    refused = context.lean and not result["support"]
    unverified = result["answer"] == UNVERIFIED
    if not kept or not (unverified or refused or context.lean):
        return result
    index = await open_index(context)
    follow = local_follow_up(state) if context.lean else None  # read as local mode's answer reads it
    question, earlier = (follow[0], follow[1:]) if follow else (state["question"], None)
    draft, labels = await in_thread(extractive_answer, index, question, kept, earlier)
    if draft == NO_ANSWER:
        if unverified or refused or follow is None:
            return result
        # a follow-up no kept sentence answers by local mode's reading: a small model's answer to it was no
        # answer either (SmolLM2 told where a table lists the sources, for "the total ALMA observing time")
        draft, labels = no_answer(state)
        reason = (
            "local mode found nothing in the kept passages that answers this follow-up: no answer is shown"
        )
        entry = degradation("verify", reason, list(dict.fromkeys(labels.values())))
        logger.warning("verify: %s", reason)
        declined = await _verified(state, context, draft, labels, None)
        return {
            **declined,
            "unsupported": result["unsupported"],
            "draft": draft,
            "labels": labels,
            "degraded": [*result.get("degraded", []), entry],
        }
    local = await _verified(state, context, draft, labels, None)
    if local["answer"] == UNVERIFIED or not local["support"]:
        return result
    if unverified:
        reason = "none of the model's sentences could be verified: local mode's extractive answer is shown"
    elif refused:
        reason = (
            "the model said the documents do not answer, though passages that answer were kept: local mode's "
            "extractive answer is shown"
        )
    elif misses_kind(question, result["answer"], local["answer"]):
        # on local mode's lines or others, it left out the thing asked for (Qwen2.5-1.5B: the paper's aim
        # for "how many protostars", verified on the line that also counts them)
        reason = (
            "the model's answer holds none of what the question asks for (a number, a date, a name) and "
            "local mode's does: local mode's extractive answer is shown"
        )
    elif supporting_lines(local) <= supporting_lines(result):  # it says at least what local mode's says
        if not padded(result, local, kept, context):
            return result
        reason = (
            "the model's answer adds sentences from passages in which local mode's rule finds no answer: "
            "local mode's extractive answer is shown"
        )
    elif not result["unsupported"] and not _judge_unreliable(state):
        # a judge that read the passages (the control scored low, scores neither flat nor malformed) and
        # every sentence checked against its lines: a capable model may find what local mode's sentence
        # choice misses (Qwen2.5-1.5B: "GNPy" as the physical layer digital twin, where local mode quoted
        # a sentence on the twin's functioning)
        return result
    else:
        # a small model's verified sentences on other lines than local answering picked were the wrong
        # sentence more often than the right one (SmolLM2: 1 of 15 held-out turns against local mode's 7;
        # resting on local mode's first line only: 5, where local mode's second line held the answer)
        reason = (
            "the model's answer does not rest on every line local mode's answer quotes: local mode's "
            "extractive answer is shown"
        )
    entry = degradation("verify", reason, list(dict.fromkeys(labels.values())))
    logger.warning("verify: %s", reason)
    return {
        **local,
        "unsupported": result["unsupported"],
        "draft": draft,
        "labels": labels,
        "degraded": [*result.get("degraded", []), *local.get("degraded", []), entry],
    }


def misses_kind(question: str, answer: str, local_answer: str) -> bool:
    """Whether local mode's answer holds the kind of thing the question asks for and the model's holds none.

    Qwen2.5-1.5B answered "How many Class 0 protostars were studied ...?" with the paper's aim ("... in the
    inner envelopes of Class 0 protostars"), every sentence verified, where local mode quoted "observations
    of six Class 0 protostars".
    """
    asked = questions.read(question)
    if asked.kind == "description":
        return False

    def holds(text: str) -> bool:
        return any(questions.has_kind(sentence, asked) for sentence in sentences(LABEL.sub("", text)))

    return holds(local_answer) and not holds(answer)


def padded(result: dict, local: dict, kept: list[EvidenceRecord], context: Context) -> bool:
    """Whether a lean answer adds sentences from passages local mode's rule finds no answer in.

    SmolLM2 answered "How much compute time did all their simulations take?" with local mode's sentence
    ("approximately 600 hours") and one from another paper's kept passage ("For a diabatic
    population-population correlation, this gives rise to nine separate terms ..."): its words are a line's,
    its passage's answering score under local mode's cut.
    """
    answering = {r["chunk_id"]: r.get("answering", 1.0) for r in kept}
    quoted = {chunk for chunk, _ in supporting_lines(local)}
    added = {chunk for chunk, _ in supporting_lines(result)} - quoted
    return any(answering.get(chunk, 1.0) < context.local_answerable for chunk in added)


def supporting_lines(verified: dict) -> set[tuple[str, str]]:
    """The (chunk, line) pairs that support a verified answer's sentences."""
    return {
        (line["chunk_id"], line["text"]) for item in verified.get("support", []) for line in item["lines"]
    }


async def _verified(
    state: State, context: Context, draft: str, labels: dict[str, str], judge: Any
) -> dict[str, Any]:
    """`draft`'s sentences that stand, re-cited to their supporting lines (by `judge`, or locally)."""
    index = await open_index(context)
    by_id = {r["chunk_id"]: r for r in state.get("evidence", [])}
    records = [by_id[c] for c in dict.fromkeys(labels.values()) if c in by_id]
    paragraphs = await in_thread(paragraph_texts, index, records)
    lines = source_lines(labels, paragraphs)
    parts = split_answer(draft)
    question = state.get("question", "")
    claims = [i for i, p in enumerate(parts) if not is_structure(p) and not is_own_text(p, question)]
    support: dict[int, list[str]] = {}
    degraded: list[Degraded] = []
    if judge is not None and lines and claims:
        shown = seen_lines(lines, by_id, state.get("summaries", {})) if context.lean else lines
        found, fallback = await _llm_support(judge, [parts[i] for i in claims], labels, shown, context)
        support = {claims[n]: keys for n, keys in found.items()}
        if fallback:
            degraded = [degradation("verify", f"{fallback}: {OVERLAP}", list(dict.fromkeys(labels.values())))]
        elif context.lean:  # a small judge may map sentences to lines at random: it may veto, and add only
            vetoed = {claims[n] for n in found.rejected}  # when it got the control right here and was
            trusted = found.trusted and not _judge_unreliable(state)  # reliable when it scored the passages
            for n, i in enumerate(claims):
                cited = cited_chunks(parts[i], labels)
                lexical = [] if i in vetoed else local_support(parts[i], cited, lines, context.local_support)
                if not lexical and trusted and found.get(n):  # a paraphrase the judge checked
                    lexical = [key for key in found[n] if overlap(parts[i], lines[key][1]) >= PLAUSIBLE]
                support[i] = lexical
    else:
        for i in claims:
            support[i] = local_support(parts[i], cited_chunks(parts[i], labels), lines, context.local_support)
    for i in claims:  # a question is no answer, however many of its words the sources share ("How many ...?")
        if asks(parts[i]) or not content_words(LABEL.sub("", parts[i])):  # nor is a fragment ("1 [1].")
            support[i] = []
        elif judge is not None and broken_off(parts[i]):  # nor a model's piece of a line ("and the ... is,")
            support[i] = []
    kept_parts: list[str] = []
    unsupported: list[str] = []
    fine: list[dict[str, Any]] = []
    for i, part in enumerate(parts):
        own = is_own_text(part, question)
        if is_structure(part) or own:  # citewise's own words stand as written, never cited
            kept_parts.append(LABEL.sub("", part).replace(" .", ".").strip() if own else part)
            continue
        lines_for = list(dict.fromkeys(key for key in support.get(i, []) if key in lines))
        if not lines_for:
            unsupported.append(tidy(LABEL.sub("", part)))
            if context.drop_unsupported:
                continue
            part = f"{part} (unsupported)"
        part, recited_from = recite(part, labels, lines, lines_for)
        part, bare = split_unmarked(part)
        unsupported += bare  # a sentence shown needs a marker its lines were checked for
        if not part:
            continue
        kept_parts.append(without_trailing_source_markers(soften_source_markers(part)))
        sentence = tidy(LABEL.sub("", part))
        fine.append({"sentence": sentence, "lines": lines_for, "recited_from": recited_from})
    kept_parts = noted_empty_sections(kept_parts)
    if not any(not is_structure(p) for p in kept_parts):
        kept_parts = [UNVERIFIED]
    text, citations, numbering = renumber(kept_parts, labels, by_id, lines, fine)
    by_chunk = {labels[label]: marker for label, marker in numbering.items()}
    for item in fine:
        item["markers"] = sorted(
            {by_chunk[lines[key][0]] for key in item["lines"] if lines[key][0] in by_chunk}
        )
        item["lines"] = [{"chunk_id": lines[key][0], "text": lines[key][1]} for key in item["lines"]]
    result: dict[str, Any] = {
        "answer": text,
        "citations": citations,
        "unsupported": unsupported,
        "support": fine,
    }
    if state.get("outline"):
        result["sections"] = section_markers(text, state)
    if degraded:
        result["degraded"] = degraded
    return result


def _judge_unreliable(state: State) -> bool:
    """Whether scoring took the judge as unreliable on this question (its flag, or its entry in `degraded`).

    A judge not reading the passages there is not trusted to say a paraphrase is supported here either.
    """
    flagged = any(
        flag.startswith(UNRELIABLE) for record in kept_records(state) for flag in record.get("flags", [])
    )  # a judge whose every reply was malformed flags no passage: its scoring's entry in `degraded` says so
    return flagged or any(
        entry["stage"] == "score" and entry["reason"].startswith(UNRELIABLE)
        for entry in state.get("degraded", [])
    )


def noted_empty_sections(parts: list[str]) -> list[str]:
    """Parts with a note under every heading whose sentences all failed verification (the heading stays)."""
    noted: list[str] = []
    for n, part in enumerate(parts):
        noted.append(part)
        if part.startswith("#"):
            following = next((p for p in parts[n + 1 :] if p != BREAK), "#")
            if following.startswith("#"):
                noted += [BREAK, NOTHING_VERIFIED]
    return noted


def section_markers(text: str, state: State) -> dict[str, dict[str, list[int]]]:
    """Per outline section, the final markers its verified text cites."""
    titles = {s["title"]: s["id"] for s in state.get("outline", [])}
    markers: dict[str, list[int]] = {section_id: [] for section_id in titles.values()}
    current = None
    for line in text.splitlines():
        if line.startswith("#"):
            current = titles.get(line.lstrip("#").strip())
        elif current is not None:
            markers[current] += [int(m) for m in re.findall(r"\[(\d+)\]", line)]
    return {section_id: {"markers": sorted(set(found))} for section_id, found in markers.items()}


def renumber(
    parts: list[str],
    labels: dict[str, str],
    by_id: dict[str, Any],
    lines: dict[str, tuple[str, str]],
    fine: list[dict[str, Any]],
) -> tuple[str, list[Citation], dict[str, int]]:
    """Labels -> [1], [2], ... in order of first use, one number per chunk; build the citation list."""
    by_chunk: dict[str, int] = {}
    numbering: dict[str, int] = {}
    for part in parts:
        for label in LABEL.findall(part):
            numbering[label] = by_chunk.setdefault(labels[label], len(by_chunk) + 1)
    text = _join(parts)
    text = LABEL.sub(lambda m: f"[{numbering[m.group(1)]}]", text)
    text = re.sub(r"(\[\d+\])(\1)+", r"\1", text)  # two labels of one chunk on a sentence: cite it once
    supporting: dict[str, list[str]] = {}
    for item in fine:
        for key in item["lines"]:
            supporting.setdefault(lines[key][0], []).append(lines[key][1])
    citations: list[Citation] = []
    for chunk_id, marker in by_chunk.items():
        record = by_id.get(chunk_id, {})
        cited = " … ".join(dict.fromkeys(supporting.get(chunk_id, []))) or record.get("text", "")
        citations.append(
            {
                "marker": marker,
                "chunk_id": chunk_id,
                "doc_id": record.get("doc_id", ""),
                "title": record.get("title", ""),
                "text": cited,
            }
        )
    return text, citations, numbering


def _join(parts: list[str]) -> str:
    """Sentences joined with spaces; list items and headings keep lines of their own, breaks blank lines."""
    text = ""
    for n, part in enumerate(parts):
        if n == 0:
            text = part
        elif part == BREAK:
            text += "\n"
        elif part.startswith(("- ", "#")) or parts[n - 1].startswith(("- ", "#")) or parts[n - 1] == BREAK:
            text += "\n" + part
        else:
            text += " " + part
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def cited_chunks(sentence: str, labels: dict[str, str]) -> set[str]:
    """The chunks a sentence's labels name."""
    return {labels[label] for label in LABEL.findall(sentence) if label in labels}


async def _llm_support(
    judge, parts: list[str], labels: dict[str, str], lines: dict[str, tuple[str, str]], context: Context
) -> tuple[Support, str]:
    """Supporting line labels per sentence, and why word overlap decided instead ("": it did not).

    All sentences go in one request with every source line when that fits the judge's context window;
    otherwise in batches, each with the lines of the chunks its sentences cite, sized to the window (a
    server that does not say its window teaches it by refusing a request: the rest is batched again, once).
    A batch that meets a transient provider fault after the retries, output malformed after repairs, or a
    prompt that cannot fit falls back to word overlap; a refused key or a rejected request propagates and
    ends the run.
    """
    support = Support()
    failures: list[str] = []
    pending = list(range(len(parts)))
    rebatched = False
    while pending:
        batch, keys = _support_batch(judge, parts, pending, labels, lines, context)
        shown = _with_control(context, [parts[i] for i in batch])
        prompt = _support_prompt(context, shown, [(key, lines[key][1]) for key in keys])
        verdicts = await judge_ask(judge, SupportMap, prompt, stage="verify")
        if verdicts.error == "PromptTooLong" and not rebatched and judge.context_window():
            rebatched = True  # the refusal taught the window: batch what is left to it
            continue
        pending = pending[len(batch) :]
        result = verdicts.first
        if result is None:
            failures.append(verdicts.failure)
            for i in batch:
                cited = cited_chunks(parts[i], labels)
                support[i] = local_support(parts[i], cited, lines, context.local_support)
            continue
        if len(shown) > len(batch):  # the control, last: supported or left out, the judge is not reading
            control = [item for item in result.sentences if item.sentence == len(shown)]
            support.trusted = support.trusted and bool(control) and not control[0].supported
        for item in result.sentences:
            if not 1 <= item.sentence <= len(batch):
                continue
            i = batch[item.sentence - 1]
            # (a line supports a number only as it stands there: Qwen2.5-1.5B wrote "CASA 5" from "the CASA
            # software version 5.8" and judged it supported)
            claim = LABEL.sub("", parts[i])
            listed = [s.strip() for s in item.sources if s.strip() in lines]
            stated = [s for s in listed if _stands_in(claim, lines[s][1])]
            if item.supported and (stated or not listed):
                support[i] = stated
            else:
                support.rejected.add(i)
    return support, failures[0] if failures else ""


def _stands_in(claim: str, line: str) -> bool:
    """Whether a judge's supporting line can support the claim.

    Its numbers and quoted phrases stand there, and it does not deny what the claim asserts or the other way
    round.
    """
    return states_figures_of(claim, line) and quotes_of(claim, line) and keeps_polarity(claim, line)


def _with_control(context: Context, sentences: list[str]) -> list[str]:
    """The sentences to verify, with the control sentence last under the lean profile."""
    return [*sentences, CONTROL] if context.lean else sentences


def _support_prompt(context: Context, sentences: list[str], evidence_lines: list[tuple[str, str]]) -> str:
    """The verification prompt: the sentences numbered (labels taken off) and the labelled source lines."""
    numbered = "\n".join(f"{n}. {LABEL.sub('', part).strip()}" for n, part in enumerate(sentences, start=1))
    evidence = "\n".join(quote("evidence", text, id=key) for key, text in evidence_lines)
    return render(
        context.verify_prompt,
        count=str(len(sentences)),
        data_rule=DATA_RULE,
        sentences=quote("draft", numbered),
        evidence=evidence,
    )


def _support_batch(
    judge,
    parts: list[str],
    pending: list[int],
    labels: dict[str, str],
    lines: dict[str, tuple[str, str]],
    context: Context,
) -> tuple[list[int], list[str]]:
    """The next sentences to verify together, and the source lines shown with them.

    All pending sentences with every line when that prompt fits the judge's window (or the window is not
    known); else the longest run of pending sentences whose cited chunks' lines fit (an uncited sentence
    brings every line), at least one sentence. Under the lean profile "every line" is every line of the
    chunks the sentences cite: a small judge reads no further (on a CPU the prompt is most of the wait; the
    lines of every passage shown to the writer were 1,442-2,791 prompt tokens of an answer).
    """

    def prompt_of(batch: list[int], keys: list[str]) -> str:
        shown = _with_control(context, [parts[i] for i in batch])
        return _support_prompt(context, shown, [(key, lines[key][1]) for key in keys])

    everything = list(lines)
    if context.lean:
        each = [cited_chunks(parts[i], labels) for i in pending]
        if all(each):
            named = set().union(*each)
            everything = [key for key, (chunk, _) in lines.items() if chunk in named]
    if judge.fits(prompt_of(pending, everything), "verify"):
        return pending, everything
    batch: list[int] = []
    keys: list[str] = []
    for i in pending:
        cited = cited_chunks(parts[i], labels)
        own = [key for key, (chunk, _) in lines.items() if not cited or chunk in cited]
        more = [*keys, *(key for key in own if key not in keys)]
        if batch and not judge.fits(prompt_of([*batch, i], more), "verify"):
            break
        batch.append(i)
        keys = more
    return batch, keys


class Support(dict[int, list[str]]):
    """Supporting line labels per sentence (by position), and what the judge said beside them.

    `rejected`: the sentences it called unsupported; `trusted`: whether it got every control sentence right.
    """

    def __init__(self) -> None:
        super().__init__()
        self.rejected: set[int] = set()
        self.trusted = True
