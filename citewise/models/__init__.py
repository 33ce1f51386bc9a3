"""The one place that talks to model providers, split by concern.

- `specs`: "provider/model" -> a LangChain chat model with `init_chat_model` (OpenAI, any OpenAI-compatible
  server through OPENAI_BASE_URL, Cohere). The client's own retries are off: tenacity is the one retry layer.
- `faults`: which provider errors are transient (429, 5xx, timeouts, connection errors, unreadable bodies),
  the retry policy (exponential backoff with jitter, a server's Retry-After honoured), what a fallback
  records in `degraded`, and API keys kept out of every message.
- `structured`: structured output's formats: the methods in fallback order, the request each makes of a
  schema, lenient JSON from a reply, validation against the schema, the JSON-mode and repair prompts.
- `usage`: calls and tokens per stage, counted per node run.
- `server`: what each server turned out to be (the structured-output method it takes, whether it honours
  `n`, whether it serves one request at a time, its speed and context window), kept per base URL and model
  by a `Servers` the way in holds (citewise.core.resources.Resources) and hands to the models it builds.
- `window`: what fits a model's context window: each stage's reply cap, evidence budgets, prompt sizes.
- `concurrency`: the in-flight limit a run's models share. `budget`: the answer's time budget.
- `transport`: one request: within the in-flight limit and the time budget, retried on transient errors,
  counted, refitted once after a refusal for length, a reply cut off before its end told apart.
- `sampling`: structured output: n samples of a schema in one request (or several), falling back through
  the methods a server rejects, retrying and then repairing malformed output (never raising for it).
- `llm`: the `LLM` nodes call, a facade over `window`, `transport` and `sampling`: `text(...)` for free text,
  `structured(schema, ..., n=...)` for n parsed samples; it counts usage. `models_for(context)` gives the
  run's (judge, writer) pair, (None, None) in local mode.
- `rerank`: Cohere rerank (when COHERE_API_KEY is set) behind the same retry policy.
- `preflight`: the model specs checked before a run starts; `settings`: what this layer reads of a run's
  settings (a protocol); `records`: the usage and fallback records a run's state carries.

Internal calls are tagged so LangGraph's message stream skips them: only the writer's answer streams.

What LangChain does, it does here: `init_chat_model` builds the clients, `convert_to_openai_tool` /
`convert_to_openai_function` turn a schema into the request, `SQLiteCache` caches replies, a callback handler
counts usage, messages are LangChain's. Two helpers of its own are not used, for what they lack:
`with_structured_output` parses only the first generation of a reply (`BaseOutputParser.parse_result`:
`result[0]`), so the n samples a judge asks for in one request would be lost; it offers no downgrade from a
method a server rejects (OpenAI's `json_schema`, llama.cpp's `json_object` with a schema, a forced tool call,
JSON mode, plain text) and no repair of a malformed reply. `Runnable.with_retry` (tenacity inside) takes a
predicate and jittered backoff, but not a server's Retry-After nor the answer's time budget (an attempt
here is sent only while the budget lasts, its timeout cut to what is left); tenacity, which the design
names, is used directly (`faults.retrying`).
"""

from citewise.models.budget import answer_deadline, budget_left
from citewise.models.concurrency import ConcurrencyLimit, RunShared
from citewise.models.faults import (
    BACKOFF_INITIAL,
    BACKOFF_MAX,
    REDACTED,
    Backoff,
    BudgetSpent,
    PromptTooLong,
    ProviderUnreachable,
    UnreadableResponse,
    context_overflow,
    degradation,
    fault_reason,
    http_status,
    is_retryable,
    is_transient,
    provider_errors,
    redact,
    rejects_method,
    retrying,
    scrub,
)
from citewise.models.llm import LLM, models_for
from citewise.models.rerank import Reranker, reranker
from citewise.models.server import ServerFacts, Servers, is_local
from citewise.models.specs import (
    PROVIDERS,
    ModelSetupError,
    ResponseCaches,
    chat_model,
    parse_model,
    speaks_openai,
    sqlite_cache,
)
from citewise.models.structured import METHODS, MalformedOutput, extract_json, validate_output
from citewise.models.transport import NOSTREAM_TAGS
from citewise.models.usage import UsageMeter, take_usage, usage_scope
from citewise.models.window import MAX_TOKENS

__all__ = [
    "BACKOFF_INITIAL",
    "BACKOFF_MAX",
    "LLM",
    "MAX_TOKENS",
    "METHODS",
    "NOSTREAM_TAGS",
    "PROVIDERS",
    "REDACTED",
    "Backoff",
    "BudgetSpent",
    "ConcurrencyLimit",
    "MalformedOutput",
    "ModelSetupError",
    "PromptTooLong",
    "ProviderUnreachable",
    "Reranker",
    "RunShared",
    "ResponseCaches",
    "ServerFacts",
    "Servers",
    "UnreadableResponse",
    "UsageMeter",
    "answer_deadline",
    "budget_left",
    "chat_model",
    "context_overflow",
    "degradation",
    "extract_json",
    "fault_reason",
    "http_status",
    "is_local",
    "is_retryable",
    "is_transient",
    "models_for",
    "parse_model",
    "provider_errors",
    "redact",
    "rejects_method",
    "reranker",
    "retrying",
    "scrub",
    "speaks_openai",
    "sqlite_cache",
    "take_usage",
    "usage_scope",
    "validate_output",
]
