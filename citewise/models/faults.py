"""Provider errors and retries: what is transient, what a fallback records, keys kept out of messages."""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Sequence
from typing import Any

import httpx
from langchain_core.exceptions import ContextOverflowError, ModelError
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt
from tenacity.wait import wait_base, wait_exponential_jitter

from citewise.models.records import Degraded
from citewise.models.structured import MalformedOutput

logger = logging.getLogger(__name__)


BACKOFF_INITIAL = 1.0
"""First retry wait in seconds (doubles per retry, plus up to a second of jitter)."""
BACKOFF_MAX = 30.0
"""Longest retry wait in seconds (also caps a server's Retry-After)."""


class ProviderUnreachable(Exception):
    """Nothing listens at the model server's URL (connection refused): fatal at once, never retried.

    A refused connection does not heal within a question's retries; the user must start the server or fix
    OPENAI_BASE_URL, and should hear so in a second, not after four backoffs.
    """

    @classmethod
    def at(cls, where: str) -> ProviderUnreachable:
        """The error for `where` (a base URL or a provider), saying what to do."""
        return cls(
            f"nothing answers at {where} (connection refused): start the model server or fix OPENAI_BASE_URL"
        )


class BudgetSpent(Exception):
    """The answer's time budget (Context.budget_seconds) is spent: the stages left fall back locally."""


class PromptTooLong(Exception):
    """A request's prompt does not fit the model's context window, even with its reply cut short.

    Raised before a request is sent when the window is known, or after the server refused one for length
    (the window it named is then known for every later request). Never a URL or key problem: the stage
    packs its evidence smaller or runs its local fallback, and `degraded` says so.
    """

    def __init__(self, message: str, *, window: int | None = None, prompt_tokens: int | None = None) -> None:
        super().__init__(message)
        self.window = window
        self.prompt_tokens = prompt_tokens


class UnreadableResponse(Exception):
    """A provider response that cannot be read (a cut or non-JSON body, a stream ended early, a bad rerank).

    Transient: retried, then a fallback or a provider error.

    Not a ConnectionError / OSError: `retrieve`'s node retry policy re-runs the whole node on those.
    """


# errors and retries -------------------------------------------------------------------------------------


def http_status(error: BaseException) -> int | None:
    """The HTTP status of a provider error, when it carries one."""
    import openai  # not at module level: a local-mode command never loads the client (about 0.5 s)

    if isinstance(error, openai.APIStatusError):
        return error.status_code
    from cohere.core.api_error import ApiError

    if isinstance(error, ApiError) and error.status_code is not None:
        return int(error.status_code)
    return None


def _transport_errors() -> tuple[type[BaseException], ...]:
    """Timeouts and connection failures of the HTTP clients (cohere: httpx; openai 3: httpx2).

    The openai client wraps them in APITimeoutError / APIConnectionError, except while reading a stream.
    """
    errors: list[type[BaseException]] = [
        httpx.TimeoutException,
        httpx.NetworkError,
        httpx.RemoteProtocolError,
    ]
    try:
        import httpx2  # type: ignore[import-not-found, unused-ignore]  # absent before openai 3
    except ImportError:
        return tuple(errors)
    return (*errors, httpx2.TimeoutException, httpx2.NetworkError, httpx2.RemoteProtocolError)


TRANSPORT_ERRORS = _transport_errors()


def connection_refused(error: BaseException) -> bool:
    """True when the error (or one it chains) is a refused TCP connection: nothing listens at the URL."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError | ProviderUnreachable):
            return True
        if isinstance(current, TRANSPORT_ERRORS) and "connection refused" in str(current).lower():
            return True
        current = current.__cause__ or current.__context__
    return False


def timed_out(error: BaseException) -> bool:
    """Whether a request failed by running out of time (the client's timeout), not by an answer."""
    import openai

    transport = tuple(e for e in TRANSPORT_ERRORS if e.__name__ == "TimeoutException")
    return isinstance(error, (openai.APITimeoutError, TimeoutError, *transport))


def is_retryable(error: BaseException) -> bool:
    """True for errors a later try may not meet: rate limits, 5xx (not 501), timeouts, connection errors.

    Never a refused structured-output method (whatever its status: llama-cpp-python answers 500), nor a
    refused connection (nothing listens), nor a spent time budget, nor a prompt too long for the model
    (sent again as it is, it is refused again).
    """
    if isinstance(error, BudgetSpent) or rejects_method(error) or connection_refused(error):
        return False
    if context_overflow(error) is not None:
        return False
    status = http_status(error)
    if status is not None:
        return status in (408, 429) or (status >= 500 and status != 501)
    import openai

    if isinstance(error, openai.APITimeoutError | openai.APIConnectionError | UnreadableResponse):
        return True
    if isinstance(error, TRANSPORT_ERRORS):
        return True
    if isinstance(error, TimeoutError | ConnectionError):
        return True
    if isinstance(error, ModelError):
        return error.is_retryable
    return False


_FORMAT_PARAMS = frozenset({"response_format", "tools", "tool_choice", "functions", "function_call"})
"""Request parameters through which citewise asks for structured output."""
_FORMAT_WORDS = re.compile(
    r"response.?format|json.?schema|json.?object|json.?mode|structured.?output|tool.?choice|\btools?\b"
    r"|function.?calling|\bgrammar\b",
    re.IGNORECASE,
)
"""How an error message names a structured-output feature."""
_CONTEXT_WORDS = re.compile(
    r"context.?length|context.?window|maximum context|too many tokens|reduce the length|prompt is too long",
    re.IGNORECASE,
)
"""How an error message says the prompt is too long (it may also count the tokens "in the functions")."""


_WINDOW = re.compile(
    r"maximum context length is (\d+)|\bn_ctx\D{1,5}(\d+)|context (?:window|size) of (\d+)", re.I
)
"""A refusal's context window: OpenAI, vLLM and llama-cpp-python ("This model's maximum context length is 8192
tokens"), llama.cpp's llama-server (its error body's `n_ctx`), llama-cpp-python's own ValueError."""
_PROMPT = re.compile(
    r"(\d+) in the messages|messages resulted in (\d+) tokens|has (\d+) input tokens"
    r"|n_prompt_tokens\D{1,5}(\d+)|Requested tokens \((\d+)\)",
    re.I,
)
"""A refusal's count of the prompt's tokens, in the same servers' words."""


def context_overflow(error: BaseException) -> tuple[int | None, int | None] | None:
    """(context window, prompt tokens) a server named when it refused a request for length; None otherwise.

    Either number is None when the message does not give it. A client error (4xx) or a server error that
    speaks of the context length counts (llama-cpp-python answers 400, some servers 500), and so does
    LangChain's ContextOverflowError.
    """
    status = http_status(error)
    message = f"{error} {getattr(error, 'body', '') or ''}"
    if not isinstance(error, ContextOverflowError | PromptTooLong) and (
        status is None or status < 400 or status in (401, 403, 404, 408, 429)
    ):
        return None
    if isinstance(error, PromptTooLong):
        return error.window, error.prompt_tokens
    if not (
        isinstance(error, ContextOverflowError)
        or _CONTEXT_WORDS.search(message)
        or "exceed_context_size" in message
        or "exceeds the available context" in message
    ):
        return None

    def first(pattern: re.Pattern[str]) -> int | None:
        found = pattern.search(message)
        return int(next(g for g in found.groups() if g)) if found else None

    return first(_WINDOW), first(_PROMPT)


def rejects_method(error: BaseException) -> bool:
    """True when a server refused the structured-output method itself (response_format, tools).

    An error response of any status but 401 / 403 / 404 / 408 / 429 (servers answer 400, 422, 501, and
    llama-cpp-python 500 with a validation error) counts only when it names the method's parameter (`param`)
    or its message speaks of response_format, JSON schema / object / mode, tools or tool choice; any other
    refused request (a prompt too long, an unknown model, a bad argument) is no reason to give up a method
    and propagates. LangChain's own NotImplementedError (a model class without the method) counts too.
    """
    if isinstance(error, ContextOverflowError | PromptTooLong):
        return False
    if isinstance(error, NotImplementedError):
        return True
    status = http_status(error)
    if status is None or status < 400 or status in (401, 403, 404, 408, 429):
        return False
    if getattr(error, "param", None) in _FORMAT_PARAMS:
        return True
    message = f"{error} {getattr(error, 'body', '') or ''}"
    return bool(_FORMAT_WORDS.search(message)) and not _CONTEXT_WORDS.search(message)


def provider_errors() -> tuple[type[BaseException], ...]:
    """Every error type a provider call may raise: the ones a node's `except` may name.

    A node catches these and then keeps only the transient ones (`is_transient`); anything else (a bug in
    citewise, a KeyError, a ModelSetupError) is never caught by a node.
    """
    import openai
    from cohere.core.api_error import ApiError

    return (
        openai.APIError,
        ApiError,
        BudgetSpent,
        PromptTooLong,
        ModelError,
        MalformedOutput,
        UnreadableResponse,
        TimeoutError,
        ConnectionError,
        *TRANSPORT_ERRORS,
    )


def is_transient(error: BaseException) -> bool:
    """True for a provider fault a stage may work around after its retries (recorded as `degraded`).

    Transient: what `is_retryable` retries (rate limits, 5xx, timeouts, connection errors), output still
    malformed after the repairs, and a prompt that cannot fit the model's context window. Fatal, for the
    whole run: a refused key (401 / 403), a request the server rejects (400 / 404 / 422 that is neither a
    structured-output method, already handled by the fallback, nor a prompt too long), a ModelSetupError,
    and every error that does not come from a provider (a bug).
    """
    return isinstance(error, MalformedOutput | BudgetSpent | PromptTooLong) or is_retryable(error)


def fault_reason(error: BaseException) -> str:
    """A transient provider fault in a few words, for a `degraded` entry and a record's flag."""
    status = http_status(error)
    code = f" (HTTP {status})" if status is not None else ""
    if isinstance(error, MalformedOutput):
        return f"model output malformed after repairs: {error}"
    if isinstance(error, BudgetSpent):
        return f"time budget spent, local fallback used: {error}"
    if isinstance(error, PromptTooLong):
        return f"prompt longer than the model's context window: {error}"
    return f"provider failed after retries: {type(error).__name__}{code}"


def one_line(text: str, limit: int = 300) -> str:
    """An error's text in one line of at most `limit` characters (a server may echo the whole prompt)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else f"{line[: limit - 3]}..."


REDACTED = "[redacted key]"
"""What an API key becomes in any text citewise shows or logs."""


def _secrets() -> list[str]:
    """This process's provider keys (the values of *_API_KEY variables), longest first."""
    keys = {v for name, v in os.environ.items() if name.upper().endswith("_API_KEY") and len(v) >= 8}
    return sorted(keys, key=len, reverse=True)


def redact(text: str) -> str:
    """`text` with every provider key of this process replaced by REDACTED."""
    for secret in _secrets():
        text = text.replace(secret, REDACTED)
    return text


def scrub(error: BaseException) -> BaseException:
    """Redact the provider keys from an error and the errors it chains, in place; return it.

    A provider may echo the key it refused in its error message (some OpenAI-compatible proxies repeat it
    whole), and that message reaches logs, tracebacks, the run's `error` and the CLI's output.
    """
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        current.args = tuple(redact(a) if isinstance(a, str) else a for a in current.args)
        for name in ("message", "body"):
            value = getattr(current, name, None)
            try:
                if isinstance(value, str):
                    setattr(current, name, redact(value))
                elif isinstance(value, dict | list):
                    setattr(current, name, json.loads(redact(json.dumps(value))))
            except (AttributeError, TypeError, ValueError):  # a read-only or unserialisable attribute
                continue
        current = current.__cause__ or current.__context__
    return error


def degradation(stage: str, reason: str, chunks: Sequence[str]) -> Degraded:
    """One `degraded` entry: the stage that fell back, why, and the chunks whose result it affects."""
    return {"stage": stage, "reason": reason, "chunks": list(dict.fromkeys(chunks))}


def _retry_after(error: BaseException | None) -> float | None:
    """Seconds a server asked us to wait (Retry-After / retry-after-ms headers)."""
    import openai

    headers: Any = None
    if isinstance(error, openai.APIStatusError):
        headers = error.response.headers
    elif error is not None:
        headers = getattr(error, "headers", None)
    if not headers:
        return None
    lowered = {str(k).lower(): str(v) for k, v in dict(headers).items()}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            return float(lowered[name]) * scale
        except (KeyError, ValueError):
            continue
    return None


class Backoff(wait_base):
    """Exponential backoff with jitter, waiting at least what the server's Retry-After asks (capped)."""

    def __init__(self, initial: float = BACKOFF_INITIAL, maximum: float = BACKOFF_MAX) -> None:
        try:
            self._jittered = wait_exponential_jitter(multiplier=initial, max=maximum, jitter=initial)
        except TypeError:  # older tenacity only knows `initial` (9.2 deprecates that name)
            self._jittered = wait_exponential_jitter(initial=initial, max=maximum, jitter=initial)
        self._maximum = maximum

    def __call__(self, retry_state: RetryCallState) -> float:
        """Seconds to wait before the next try."""
        wait = self._jittered(retry_state)
        error = retry_state.outcome.exception() if retry_state.outcome else None
        asked = _retry_after(error)
        return min(self._maximum, max(wait, asked)) if asked else wait


def _log_retry(retry_state: RetryCallState) -> None:
    error = retry_state.outcome.exception() if retry_state.outcome else None
    wait = retry_state.next_action.sleep if retry_state.next_action else 0.0
    logger.warning(
        "provider call failed (%s: %s); try %d, retrying in %.1fs",
        type(error).__name__,
        error,
        retry_state.attempt_number,
        wait,
    )


def retrying(
    max_retries: int, backoff: tuple[float, float] = (BACKOFF_INITIAL, BACKOFF_MAX)
) -> AsyncRetrying:
    """The one retry policy of provider calls: `max_retries` retries of retryable errors, then re-raise."""
    return AsyncRetrying(
        stop=stop_after_attempt(max(0, max_retries) + 1),
        wait=Backoff(*backoff),
        retry=retry_if_exception(is_retryable),
        before_sleep=_log_retry,
        reraise=True,
    )
