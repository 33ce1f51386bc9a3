"""Citation support as ALCE measures it (Gao et al., 2023), with a pluggable judge of "supports".

Citation recall is the share of an answer's sentences that the concatenation of their cited passages
supports (a sentence citing nothing counts as unsupported); a citation is precise when its sentence is
supported and either the citation alone supports it or removing it breaks the support. The judge is the
run's model asked whether the passages entail the claim (`LLMJudge`), or with no model the word-overlap
proxy named WORD_OVERLAP wherever it shows (`WordOverlapJudge`). `citewise eval` (citewise.app.evaluate)
uses it.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, Field

from citewise.core.evidence import MARKER
from citewise.core.report import is_own_text
from citewise.core.text import overlap
from citewise.prompts import judge as judge_prompt
from citewise.prompts.common import DATA_RULE, as_messages, quote, render

WORD_OVERLAP = "word-overlap (not entailment)"
"""The fallback judge's name, everywhere it shows (table, JSON): it measures shared words, not entailment."""
WORD_OVERLAP_CUT = 0.6
"""Share of a claim's distinct content words the passages must contain for the word-overlap judge."""


# judges ----------------------------------------------------------------------------------------------------


class Judge(Protocol):
    """Decides whether a passage (or passages joined) supports a claim."""

    name: str

    async def supports(self, passage: str, claim: str) -> bool:
        """Whether `passage` supports `claim`."""
        ...


class WordOverlapJudge:
    """No model: supported when enough of the claim's content words occur in the passage. Not entailment."""

    name = WORD_OVERLAP

    def __init__(self, cut: float = WORD_OVERLAP_CUT) -> None:
        self.cut = cut

    async def supports(self, passage: str, claim: str) -> bool:
        """Whether at least `cut` of the claim's distinct content words are in the passage."""
        return overlap(claim, passage) >= self.cut


class Entailment(BaseModel):
    """The judge's verdict on one claim."""

    supported: bool = Field(description="True only if the passages alone entail the whole claim.")


class LLMJudge:
    """The configured judge model asked whether the passages entail the claim (malformed output: not)."""

    def __init__(self, llm: Any, prompt: str = judge_prompt.PROMPT) -> None:
        self.llm = llm
        self.prompt = prompt
        self.name = f"LLM {llm.spec}"
        self.malformed = 0

    async def supports(self, passage: str, claim: str) -> bool:
        """Whether the model says the passage entails the claim."""
        prompt = render(
            self.prompt, data_rule=DATA_RULE, passages=quote("evidence", passage), claim=quote("draft", claim)
        )
        (verdict,) = await self.llm.structured(Entailment, as_messages(prompt), stage="eval judge")
        if verdict is None:
            self.malformed += 1
            return False
        return verdict.supported


class _Memo:
    """A judge's verdicts remembered per (passage, claim) within one answer."""

    def __init__(self, judge: Judge) -> None:
        self.judge = judge
        self.cache: dict[tuple[str, str], Awaitable[bool]] = {}

    async def supports(self, passages: Sequence[str], claim: str) -> bool:
        key = ("\n\n".join(passages), claim)
        if key not in self.cache:
            self.cache[key] = asyncio.ensure_future(self.judge.supports(key[0], claim))
        return await self.cache[key]


# ALCE citation recall and precision ------------------------------------------------------------------------


@dataclass
class CitationScores:
    """ALCE counts of one answer."""

    sentences: int = 0
    supported: int = 0
    citations: int = 0
    precise: int = 0

    @property
    def recall(self) -> float:
        """Supported sentences / sentences (0 with no sentences)."""
        return self.supported / self.sentences if self.sentences else 0.0

    @property
    def precision(self) -> float:
        """Precise citations / citations (0 with no citations, as ALCE)."""
        return self.precise / self.citations if self.citations else 0.0


async def citation_scores(claims: Sequence[tuple[str, Sequence[str]]], judge: Judge) -> CitationScores:
    """ALCE citation recall and precision of (sentence, its cited passages in order) pairs.

    A sentence is supported when its passages joined support it (none cited: unsupported). Each citation of
    a supported sentence with one citation is precise; with several, a citation is imprecise only if it
    does not support the sentence alone and the others without it still do. Citations of an unsupported
    sentence are all imprecise.
    """
    memo = _Memo(judge)

    async def one(sentence: str, passages: Sequence[str]) -> tuple[bool, int, int]:
        if not passages:
            return False, 0, 0
        if not await memo.supports(passages, sentence):
            return False, len(passages), 0
        if len(passages) == 1:
            return True, 1, 1
        precise = 0
        for n, passage in enumerate(passages):
            alone = await memo.supports([passage], sentence)
            rest = [p for m, p in enumerate(passages) if m != n]
            precise += alone or not await memo.supports(rest, sentence)
        return True, len(passages), precise

    scores = CitationScores(sentences=len(claims))
    for supported, citations, precise in await asyncio.gather(*(one(s, p) for s, p in claims)):
        scores.supported += supported
        scores.citations += citations
        scores.precise += precise
    return scores


# reading an answer ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    """One claim sentence of a final answer."""

    sentence: str
    """The sentence without its markers."""
    markers: tuple[int, ...]
    """Its [n] markers, in order."""
    flagged: bool = False
    """Marked "(unsupported)" by verification (when unsupported sentences are flagged, not dropped)."""


def answer_claims(answer: str, question: str) -> list[Claim]:
    """The answer's claim sentences with their markers (not citewise's own words, headings or breaks)."""
    from citewise.nodes.verify import is_structure, split_answer

    claims = []
    for part in split_answer(answer):
        bare = re.sub(r"\s+([.!?,;:])", r"\1", MARKER.sub("", part)).strip()
        if is_structure(part) or not bare or is_own_text(bare, question):
            continue
        flagged = "(unsupported)" in bare
        sentence = bare.replace(" (unsupported)", "").replace("(unsupported)", "").strip()
        markers = tuple(dict.fromkeys(int(m) for m in MARKER.findall(part)))
        claims.append(Claim(sentence, markers, flagged))
    return claims


def unresolved_markers(answer: str, citations: Sequence[dict], evidence: Iterable[dict]) -> list[int]:
    """Markers of the answer with no citation, or whose citation names no stored evidence record."""
    stored = {record.get("chunk_id") for record in evidence}
    resolved = {c["marker"] for c in citations if c.get("chunk_id") in stored}
    return sorted({int(m) for m in MARKER.findall(answer)} - resolved)


def all_evidence(result: dict) -> list[dict]:
    """Every evidence record of a result: the question's own, and each report section's."""
    records = list(result.get("evidence", []))
    for section in (result.get("sections") or {}).values():
        records += section.get("evidence", [])
    return records


def document_rankings(evidence: Sequence[dict], key_of: Callable[[str], str]) -> dict[str, list[str]]:
    """Document keys in retrieval order (best chunk's retrieval score) and in evidence order (best first)."""
    order = {id(record): n for n, record in enumerate(evidence)}
    by_retrieval = sorted(evidence, key=lambda r: (-float(r.get("retrieval") or 0.0), order[id(r)]))
    rankings = {}
    for name, records in (("retrieval", by_retrieval), ("evidence", list(evidence))):
        rankings[name] = list(dict.fromkeys(key_of(r["doc_id"]) for r in records if r.get("doc_id")))
    return rankings
