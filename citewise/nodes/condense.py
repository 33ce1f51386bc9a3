"""condense: the latest message plus the conversation -> one standalone question."""

from __future__ import annotations

import time

from langchain_core.messages import HumanMessage
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from citewise.context import Context
from citewise.core import llms
from citewise.core.questions import check_question, read_turn
from citewise.core.text import content_words, last_human, message_text, user_turns
from citewise.models import degradation
from citewise.prompts.common import DATA_RULE, as_messages, quote, render
from citewise.state import State


async def condense(state: State, runtime: Runtime[Context]) -> dict:
    """Decide the standalone question this turn asks."""
    messages = state.get("messages", [])
    question = check_question(last_human(messages))
    history = [message_text(m) for m in messages[:-1] if isinstance(m, HumanMessage) or m.type == "human"]
    judge, _ = llms.models(runtime.context, "condense")
    turn = new_turn(runtime.context)
    if not history or judge is None:
        local = read_turn(*user_turns(messages))
        return {
            "question": local.question,
            "search_question": local.search,
            "mode": _mode(runtime.context),
            **turn,
        }
    conversation = "\n".join(f"{m.type}: {message_text(m)}" for m in messages[-8:-1])
    prompt = render(
        runtime.context.condense_prompt,
        data_rule=DATA_RULE,
        conversation=quote("conversation", conversation),
        question=quote("question", question),
    )
    rewritten = (await judge.text(as_messages(prompt), stage="condense")).strip()
    if not keeps_the_subject(rewritten, question, history):  # "I'm ready to help. What's your question?"
        reason = "the model's standalone question shares no word with the conversation: joined locally"
        local = read_turn(*user_turns(messages))
        return {
            "question": local.question,
            "search_question": local.search,
            "mode": "llm",
            **turn,
            "degraded": Overwrite([degradation("condense", reason, [])]),
        }
    return {"question": rewritten, "search_question": rewritten, "mode": "llm", **turn}


def keeps_the_subject(rewritten: str, question: str, history: list[str]) -> bool:
    """Whether a model's standalone question shares a content word with the follow-up or the conversation."""
    said = {w for text in (question, *history) for w in content_words(text)}
    return bool(set(content_words(rewritten)) & said)


def new_turn(context: Context | None = None) -> dict:
    """Per-turn keys reset: accumulating ones with Overwrite, report keys emptied, the loop counter zeroed.

    The turn's time budget starts here (`deadline`, None without Context.budget_seconds).
    """
    budget = context.budget_seconds if context is not None else None
    return {
        "deadline": time.time() + budget if budget else None,
        "attempt": 0,
        "usage": Overwrite({}),  # llms.metered adds this run's own requests to it
        "degraded": Overwrite([]),
        "sections": Overwrite({}),
        "outline": [],
        "outline_type": "",
        "validation": {},
        "route_reason": "",
        "error": None,
    }


def _mode(context: Context | None) -> str:
    return "llm" if context is not None and context.llm else "local"
