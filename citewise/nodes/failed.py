"""failed: a run that cannot go on ends with an assistant message saying what happened and what to do.

Every node of the query graph hands its error here (after its own retries), so a chat client, Studio and the
web page show the reason instead of "internal error", and `error` in the output lets programs tell a failed
run from an answer. The traceback goes to the log for whoever runs the process.
"""

from __future__ import annotations

import logging

from langchain_core.messages import AIMessage
from langgraph.errors import NodeError
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Command

from citewise.context import Context
from citewise.deployment import DeploymentError
from citewise.index.records import IndexOpenError
from citewise.models import (
    MalformedOutput,
    ModelSetupError,
    PromptTooLong,
    ProviderUnreachable,
    UnreadableResponse,
    context_overflow,
    http_status,
    redact,
)
from citewise.state import RunError, State

logger = logging.getLogger(__name__)

PROVIDER_MODULES = ("openai", "cohere", "httpx", "httpcore", "langchain_openai", "langchain_cohere")
"""Where the errors of an unreachable or refusing model provider come from."""


def explain(error: BaseException, stage: str) -> RunError:
    """What went wrong in words a user can act on: the kind, the cause and what to do."""
    cause = redact(str(error).strip()) or type(error).__name__  # a provider may echo the key it refused
    if isinstance(error, IndexOpenError):
        kind, hint = "no index", "Add documents first (`citewise ingest PATH` or the index graph), then ask."
    elif isinstance(error, ModelSetupError):
        kind, hint = "model setup", "Fix the model setting (CITEWISE_MODEL) or leave it empty: local mode."
    elif isinstance(error, DeploymentError):
        kind, hint = "server setting", "Ask the server's operator, or run citewise yourself."
    elif isinstance(error, ProviderUnreachable):
        kind = "model provider"
        hint = (
            "Start the model server (or check its port), set OPENAI_BASE_URL to where it listens, or run "
            "without a model for local mode."
        )
    elif isinstance(error, PromptTooLong) or context_overflow(error) is not None:
        kind = "model context window"
        hint = (
            "A request did not fit the model's context window (the URL and key are fine): start the model "
            "server with a larger context (llama.cpp: --n_ctx), or lower Context context_tokens."
        )
    elif isinstance(error, MalformedOutput):
        kind = "model output"
        hint = "The model's replies did not fit the expected form after repairs: try another model."
    elif isinstance(error, ValueError) and type(error).__module__.startswith("citewise"):
        kind, hint = "request", "Check the run's input and settings."
    elif http_status(error) in (401, 403):
        kind = "model provider"
        cause = f"the API key was refused ({http_status(error)}): {type(error).__name__}: {cause}"
        hint = (
            "Set a valid key for the provider (OPENAI_API_KEY, or COHERE_API_KEY for Cohere) that may use "
            "this model, or run without a model for local mode."
        )
    elif type(error).__module__.split(".")[0] in PROVIDER_MODULES or isinstance(
        error, TimeoutError | UnreadableResponse
    ):
        kind = "model provider"
        cause = f"{type(error).__name__}: {cause}"
        hint = (
            "The model provider failed after its retries: check its URL and API key (OPENAI_BASE_URL, "
            "OPENAI_API_KEY, COHERE_API_KEY) and that it is up, or run without a model for local mode."
        )
    else:
        kind = "unexpected"
        cause = f"{type(error).__name__}: {cause}"
        hint = "This is a fault in citewise: the process's log has the traceback; please report it."
    return {"stage": stage, "kind": kind, "message": cause, "hint": hint}


def failed(state: State, error: NodeError, runtime: Runtime[Context] | None = None) -> Command:
    """End the run with the reason as the reply; nothing of this turn is shown as an answer."""
    problem = explain(error.error, error.node)
    if runtime is not None:  # the turn is over (a served run's is audited as a failed ask)
        turn = {"question": state.get("question"), "route": state.get("route"), "error": problem}
        runtime.context.log("ask", {**turn, "citations": []})
    trace = error.error if problem["kind"] == "unexpected" else None  # known causes need no traceback
    logger.error("run failed in %s: %s (%s)", error.node, problem["message"], problem["kind"], exc_info=trace)
    reply = f"citewise could not answer this ({problem['kind']}, in {problem['stage']}): {problem['message']}"
    reply += f"\n\n{problem['hint']}"
    return Command(
        update={
            "error": problem,
            "answer": reply,
            "citations": [],
            "references": {"primary": [], "secondary": []},
            "evidence": [],
            "messages": [AIMessage(content=reply)],
        },
        goto=END,
    )
