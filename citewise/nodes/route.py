"""route: a direct cited answer or a report, decided from the question and the evidence, or by the caller."""

from __future__ import annotations

from langgraph.runtime import Runtime

from citewise.context import Context
from citewise.core import llms
from citewise.core.evidence import overview
from citewise.core.questions import explains, report_form
from citewise.models import degradation
from citewise.prompts.common import DATA_RULE, as_messages, quote, render
from citewise.state import RouteDecision, State

SPREAD = 3
"""An explain-style question becomes a report when the kept evidence spans at least this many documents."""


def local_route(question: str, documents: int) -> tuple[str, str]:
    """The question's form decides; an explanation is a report only when its evidence spans documents."""
    if documents == 0:
        return "direct", "nothing passed the threshold: the direct answer says so and shows the closest"
    form = report_form(question)
    if form:
        return "report", f"local rule: the question is {form}"
    if explains(question) and documents >= SPREAD:
        return "report", f"local rule: an explanation whose kept evidence spans {documents} documents"
    return "direct", f"local rule: a single question, kept evidence from {documents} document(s)"


async def route(state: State, runtime: Runtime[Context]) -> dict:
    """Decide the path: the caller's choice when given, else a report when the question needs parts."""
    context = runtime.context
    if context.route != "auto":
        return {"route": context.route, "route_reason": f"chosen by the caller (route={context.route})"}
    documents = len({r.get("doc_id") for r in state.get("evidence", []) if r.get("kept")})
    judge, _ = llms.models(context, "route")
    if judge is None or documents == 0:
        path, reason = local_route(state["question"], documents)
        return {"route": path, "route_reason": reason}
    prompt = render(
        context.route_prompt,
        data_rule=DATA_RULE,
        question=quote("question", state["question"]),
        overview=overview(state),
    )
    samples = await judge.structured(RouteDecision, as_messages(prompt), stage="route")
    decision = samples[0] if samples else None
    if decision is None:
        path, reason = local_route(state["question"], documents)
        return {
            "route": path,
            "route_reason": f"{reason} (the model's decision was malformed)",
            "degraded": [
                degradation("route", "model output malformed after repairs: the local rule routed", [])
            ],
        }
    return {"route": decision.route, "route_reason": decision.reason.strip()}
