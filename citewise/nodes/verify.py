"""verify: map every answer sentence to the source lines that support it; drop or flag the rest.

Source lines are the sentences of each cited chunk's paragraph (LLM-Ref's fine-grained references). With
a model, one request maps all sentences; in local mode a sentence is supported by the cited line that shares
the largest part of its content words (at least Context.local_support). Citation labels that do not name
evidence the writer was given are removed, so every marker left resolves to a stored chunk. Markers are
then renumbered [1], [2], ... in order of first appearance.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from langgraph.runtime import Runtime

from citewise.context import Context
from citewise.index.citations import soften_source_markers
from citewise.nodes import llms
from citewise.nodes.answer import NO_ANSWER
from citewise.nodes.expand import paragraph_texts
from citewise.nodes.shared import in_thread, open_index, overlap, sentences
from citewise.prompts.common import DATA_RULE, as_messages, quote, render
from citewise.state import Citation, State, SupportMap

logger = logging.getLogger(__name__)

LABEL = re.compile(r"\[(E\d+)\]")
TRAILING_LABELS = re.compile(r"([.!?])((?:\s*\[E\d+\])+)")
NO_CLAIM = re.compile(r"\b(do not|does not|don't|doesn't|cannot|no|not (?:enough|sufficient))\b", re.I)
ABOUT_EVIDENCE = re.compile(r"\b(documents?|evidence|sources?|passages?|context|excerpts?)\b", re.I)
UNVERIFIED = (
    f"{NO_ANSWER} An answer was drafted from the evidence, but none of its sentences could be verified "
    "against the source lines, so it is not shown."
)


def split_answer(draft: str) -> list[str]:
    """Answer sentences; a list item or line break also ends one."""
    parts: list[str] = []
    draft = TRAILING_LABELS.sub(r"\2\1", draft)  # "claim. [E1]" -> "claim [E1]." so the label stays with it
    for line in draft.splitlines():
        if not line.strip():
            continue
        for part in sentences(line) if not line.lstrip().startswith("- ") else [line.strip()]:
            if parts and not LABEL.sub("", part).strip(" .,;"):
                parts[-1] = f"{parts[-1]} {part.strip()}"  # a lone "[E2]" belongs to the sentence before it
            else:
                parts.append(part)
    return parts


def source_lines(labels: dict[str, str], paragraphs: dict[str, str]) -> dict[str, tuple[str, str]]:
    """Line label (E2.3) -> (chunk id, sentence) over each labelled chunk's paragraph."""
    lines = {}
    for label, chunk_id in labels.items():
        for n, line in enumerate(sentences(paragraphs.get(chunk_id, "")), start=1):
            lines[f"{label}.{n}"] = (chunk_id, line)
    return lines


def add_label(sentence: str, label: str) -> str:
    """Cite `label` at the end of a sentence, before its closing punctuation."""
    if sentence and sentence[-1] in ".!?":
        return f"{sentence[:-1]} [{label}]{sentence[-1]}"
    return f"{sentence} [{label}]"


def local_support(
    sentence: str, cited: list[str], lines: dict[str, tuple[str, str]], minimum: float
) -> list[str]:
    """The cited evidence's best-overlapping line label, if its overlap reaches `minimum`."""
    claim = LABEL.sub("", sentence)
    pool = [key for key in lines if key.split(".")[0] in cited] or list(lines)
    scored = sorted(((overlap(claim, lines[key][1]), key) for key in pool), reverse=True)
    return [scored[0][1]] if scored and scored[0][0] >= minimum else []


@llms.metered
async def verify(state: State, runtime: Runtime[Context]) -> dict:
    """Decide which answer sentences stand, which source lines support them, and the final markers."""
    context = runtime.context
    labels = state.get("labels", {})
    draft = state.get("draft", "")
    index = await open_index(context)
    by_id = {r["chunk_id"]: r for r in state.get("evidence", [])}
    records = [by_id[c] for c in labels.values() if c in by_id]
    paragraphs = await in_thread(paragraph_texts, index, records)
    lines = source_lines(labels, paragraphs)
    parts = split_answer(draft)
    support: dict[int, list[str]] = {}
    usage: dict[str, Any] = {}
    judge, _ = llms.models(context)
    if judge is not None and lines and parts:
        support, usage = await _llm_support(judge, parts, lines, context)
    else:
        for i, part in enumerate(parts):
            cited = [c for c in LABEL.findall(part) if c in labels]
            support[i] = local_support(part, cited, lines, context.local_support)
    kept_parts, unsupported, fine = [], [], []
    for i, part in enumerate(parts):
        cited = [c for c in LABEL.findall(part) if c in labels]
        lines_for = [key for key in support.get(i, []) if key in lines]
        about_evidence = NO_CLAIM.search(part) is not None and ABOUT_EVIDENCE.search(part) is not None
        honest = not cited and (part.startswith(NO_ANSWER) or about_evidence)
        if not lines_for and not honest:
            unsupported.append(LABEL.sub("", part).strip())
            if context.drop_unsupported:
                continue
            part = f"{part} (unsupported)"
        part = LABEL.sub(lambda m: m.group(0) if m.group(1) in labels else "", part)
        part = re.sub(r"\s+([.!?,;:])", r"\1", part).strip()
        if not cited and lines_for:
            part = add_label(part, lines_for[0].split(".")[0])
        kept_parts.append(soften_source_markers(part))
        fine.append({"sentence": LABEL.sub("", part).strip(), "lines": lines_for})
    if not kept_parts:
        kept_parts = [UNVERIFIED]
    text, citations, numbering = renumber(kept_parts, labels, by_id, lines, fine)
    for item in fine:
        item["markers"] = sorted(
            {numbering[key.split(".")[0]] for key in item["lines"] if key.split(".")[0] in numbering}
        )
        item["lines"] = [{"chunk_id": lines[key][0], "text": lines[key][1]} for key in item["lines"]]
    result = {"answer": text, "citations": citations, "unsupported": unsupported, "support": fine}
    if usage:
        result["usage"] = usage
    return result


def renumber(
    parts: list[str],
    labels: dict[str, str],
    by_id: dict[str, Any],
    lines: dict[str, tuple[str, str]],
    fine: list[dict[str, Any]],
) -> tuple[str, list[Citation], dict[str, int]]:
    """Replace [E#] labels by [1], [2], ... in order of first use; build the citation list."""
    numbering: dict[str, int] = {}
    for part in parts:
        for label in LABEL.findall(part):
            numbering.setdefault(label, len(numbering) + 1)
    text = _join(parts)
    text = LABEL.sub(lambda m: f"[{numbering[m.group(1)]}]", text)
    supporting: dict[str, list[str]] = {}
    for item in fine:
        for key in item["lines"]:
            supporting.setdefault(key.split(".")[0], []).append(lines[key][1])
    citations: list[Citation] = []
    for label, marker in numbering.items():
        record = by_id.get(labels[label], {})
        cited = " … ".join(dict.fromkeys(supporting.get(label, []))) or record.get("text", "")
        citations.append(
            {
                "marker": marker,
                "chunk_id": labels[label],
                "doc_id": record.get("doc_id", ""),
                "title": record.get("title", ""),
                "text": cited,
            }
        )
    return text, citations, numbering


def _join(parts: list[str]) -> str:
    """Sentences joined with spaces; list items ("- ...") keep lines of their own."""
    text = ""
    for n, part in enumerate(parts):
        if n == 0:
            text = part
        elif part.startswith("- ") or parts[n - 1].startswith("- "):
            text += "\n" + part
        else:
            text += " " + part
    return text


async def _llm_support(
    judge, parts: list[str], lines: dict[str, tuple[str, str]], context: Context
) -> tuple[dict[int, list[str]], dict[str, Any]]:  # noqa: ANN001
    numbered = "\n".join(f"{n}. {LABEL.sub('', part).strip()}" for n, part in enumerate(parts, start=1))
    evidence = "\n".join(quote("evidence", text, id=key) for key, (_, text) in lines.items())
    prompt = render(
        context.verify_prompt,
        count=str(len(parts)),
        data_rule=DATA_RULE,
        sentences=quote("draft", numbered),
        evidence=evidence,
    )
    support: dict[int, list[str]] = {}
    try:
        samples = await judge.structured(SupportMap, as_messages(prompt), stage="verify")
        result = samples[0] if samples else None
    except Exception as error:  # noqa: BLE001 - fall back to local verification below
        logger.warning("verification failed, using word overlap: %s", error)
        result = None
    if result is None:
        for i, part in enumerate(parts):
            cited = LABEL.findall(part)
            support[i] = local_support(part, cited, lines, context.local_support)
    else:
        for item in result.sentences:
            if item.supported and 1 <= item.sentence <= len(parts):
                support[item.sentence - 1] = [s.strip() for s in item.sources if s.strip() in lines]
    return support, judge.take_usage()
