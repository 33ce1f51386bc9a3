"""Scripted conversations: each turn a question and the answering sentence expected (or no answer).

A conversation is one line of JSON Lines: `{"id", "papers", "turns": [{"question", "expect": [...]} or
{"question", "unanswerable": true}]}`. Every turn is asked in one thread, so a follow-up ("And its
radius?") is read with the turns before it; a turn is right when its answer holds one of the expected
substrings (copied from the answering sentence), or, for an unanswerable turn, when citewise says the
documents do not answer it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from citewise.context import Context
from citewise.core.evidence import NO_ANSWER
from citewise.graph.query import builder


@dataclass(frozen=True)
class TurnResult:
    """One turn as asked: whether it was answered right, and what was searched for and said."""

    conversation: str
    turn: int
    question: str
    standalone: str
    right: bool
    answer: str
    passages: tuple[str, ...] = ()
    """The paragraph ids of the first ten passages by final score (did search find the answering one?)."""
    cited: tuple[str, ...] = ()
    """The paragraph ids the answer's citations point at (did it cite the answering one, in any words?)."""


def load(path: Path) -> list[dict[str, Any]]:
    """The conversations of a JSON Lines file."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def is_right(turn: dict[str, Any], answer: str) -> bool:
    """Whether an answer is right for a turn: an expected sentence in it, or no answer when none exists."""
    if turn.get("unanswerable"):
        return answer.startswith(NO_ANSWER)
    flat = " ".join(answer.replace("\u00a0", " ").split())
    return not answer.startswith(NO_ANSWER) and any(
        " ".join(e.replace("\u00a0", " ").split()) in flat for e in turn["expect"]
    )


async def run(conversations: list[dict[str, Any]], context: Context) -> list[TurnResult]:
    """Ask every conversation's turns in a thread of its own; each turn's result."""
    graph = builder.compile(checkpointer=InMemorySaver())
    results = []
    for conversation in conversations:
        config = {"configurable": {"thread_id": conversation["id"]}}
        for n, turn in enumerate(conversation["turns"], start=1):
            state = await graph.ainvoke({"messages": [("user", turn["question"])]}, config, context=context)
            results.append(
                TurnResult(
                    conversation["id"],
                    n,
                    turn["question"],
                    state.get("question", ""),
                    is_right(turn, state.get("answer", "")),
                    state.get("answer", ""),
                    tuple(r.get("paragraph_id", "") for r in state.get("evidence", [])[:10]),
                    cited_paragraphs(state),
                )
            )
    return results


def cited_paragraphs(state: dict[str, Any]) -> tuple[str, ...]:
    """The paragraph ids of the evidence an answer's citations point at, in citation order."""
    paragraphs = {r["chunk_id"]: r.get("paragraph_id", "") for r in state.get("evidence", [])}
    cited = (paragraphs.get(c["chunk_id"], "") for c in state.get("citations", []))
    return tuple(dict.fromkeys(p for p in cited if p))


def accuracy(results: list[TurnResult], first: bool | None = None) -> float:
    """Share of turns answered right (`first`: only first turns, True, or only follow-ups, False)."""
    chosen = [r for r in results if first is None or (r.turn == 1) == first]
    return sum(r.right for r in chosen) / len(chosen) if chosen else 0.0
