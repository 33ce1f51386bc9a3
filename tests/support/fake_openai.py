"""An OpenAI-compatible chat server (plus Cohere's v2 rerank) on loopback, scripted by tests and benchmarks.

The real `openai` and `cohere` clients talk to it over HTTP, so retries, timeouts, `n` samples,
structured-output methods and streaming are exercised the way a provider would exercise them::

    with FakeOpenAI(SchemaResponder(), delay=0.5) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)        # http://127.0.0.1:PORT/v1
        monkeypatch.setenv("COHERE_BASE_URL", server.root_url)        # cohere.ClientV2 posts to /v2/rerank
        server.script([Fail(429), {"query": "q", "sub_queries": []}])  # consumed in order, then the responder
        ...
        assert server.chat_requests[0].body["n"] == 3

Replies (from the script or the responder, which gets the parsed request body):
- `str`: the message content; `dict` / `list`: JSON content, or a tool call when the request forces a tool;
- `ToolCall(name, arguments)`: a tool call; `Choices([...])`: one reply per choice when `n` > 1
  (any other reply is repeated for every choice);
- `Fail(status)`: an error response; `Delay(seconds, reply)`: wait, then reply (None: ask the responder);
- `Hang(seconds)`: answer nothing until the client has given up (or the server stops);
- `Reset()`: drop the connection without a response (a TCP reset);
- `Truncated(reply)`: a 200 whose JSON body is cut off (a stream: cut before its end, no `[DONE]`);
- `Malformed(reply)`: a well-formed 200 whose content is cut in half (broken JSON; a stream: a broken event);
- `Empty()`: a well-formed 200 with empty content (a rerank with no results).

`Faults` injects these at seeded rates into every request (`FakeOpenAI(..., faults=Faults(0.3, seed=1))`);
each request's `Recorded.fault` says which fault it met (None: answered as asked)::

    server = FakeOpenAI(SchemaResponder(), faults=Faults(0.3, seed=7)).start()
    ...
    assert server.fault_counts()["429"] == sum(r.status == 429 for r in server.requests)
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import random
import re
import socket
import struct
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "Choices",
    "Delay",
    "Empty",
    "Exchange",
    "FAULT_KINDS",
    "Fail",
    "FakeOpenAI",
    "Faults",
    "Hang",
    "Malformed",
    "READABLE_FAULTS",
    "Recorded",
    "Reset",
    "SchemaResponder",
    "ToolCall",
    "Truncated",
    "exchanges",
    "overlap_score",
    "prompt_text",
    "request_schema",
]


# replies ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fail:
    """Answer with an HTTP error (429 rate limit, 500 server error, 400 bad request, ...)."""

    status: int = 500
    message: str = "scripted failure"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Delay:
    """Wait `seconds`, then send `reply` (None: whatever the responder says)."""

    seconds: float
    reply: Any = None


@dataclass(frozen=True)
class Hang:
    """Send nothing for `seconds` (or until the server stops): longer than the client's timeout."""

    seconds: float = 60.0


@dataclass(frozen=True)
class Reset:
    """Drop the connection without answering: the client reads a reset (RST), not a response."""


@dataclass(frozen=True)
class Truncated:
    """A 200 whose JSON body stops at `keep` of its length (Content-Length agrees: the body itself is cut).

    A streamed reply sends that share of its events and closes without `[DONE]`.
    """

    reply: Any = None
    """What would have been sent (None: the script or the responder decides)."""
    keep: float = 0.5


@dataclass(frozen=True)
class Malformed:
    """A well-formed 200 whose message content (or tool arguments) is cut in half: broken JSON.

    A streamed reply carries one event whose data is not JSON; a rerank answers JSON without `results`.
    """

    reply: Any = None
    """What would have been sent (None: the script or the responder decides)."""


@dataclass(frozen=True)
class Empty:
    """A well-formed 200 with nothing in it: empty content and no tool call; a rerank with no results."""


@dataclass(frozen=True)
class ToolCall:
    """A tool call reply: the function name and its arguments (a dict, or a raw string for malformed ones)."""

    name: str
    arguments: dict[str, Any] | str


@dataclass(frozen=True)
class Choices:
    """One reply per choice of an `n` > 1 request (cycled when shorter than `n`)."""

    replies: list[Any]


@dataclass
class Recorded:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    started: float
    """time.monotonic() when the request arrived."""
    status: int | None = None
    """The HTTP status answered (None: nothing was sent, e.g. a Hang)."""
    response: Any = None
    """The JSON answered (for a stream: the completion the chunks were cut from)."""
    fault: str | None = None
    """The fault this request met (a FAULT_KINDS name, or the status of another scripted Fail); None: none."""

    @property
    def text(self) -> str:
        """All message text of a chat request (prompts, as the model would read them)."""
        return prompt_text(self.body if isinstance(self.body, dict) else {})


Responder = Callable[[dict[str, Any]], Any]


def default_responder(request: dict[str, Any]) -> Any:
    """Reply "ok" to anything."""
    return "ok"


# fault injection ----------------------------------------------------------------------------------------

FAULT_KINDS = ("429", "500", "503", "reset", "timeout", "truncated", "malformed", "empty")
"""What `Faults` injects: rate limit (with Retry-After), server errors, a dropped connection, no answer
before the client's timeout, a cut JSON body, broken JSON content, an empty completion."""


class Faults:
    """Seeded fault injection: each request meets a fault of kind k with probability `rates[k]`.

    The draw is a function of the seed, the endpoint, the request body and how often that same body was
    seen before, so a campaign repeats exactly whatever the threads' timing, and a retry of a request (the
    same body again) draws afresh.
    """

    def __init__(
        self,
        rate: float = 0.3,
        *,
        kinds: Iterable[str] = FAULT_KINDS,
        rates: dict[str, float] | None = None,
        seed: int = 0,
        retry_after: float = 1.0,
        hang: float = 60.0,
        endpoints: Iterable[str] = ("chat", "rerank"),
        where: Callable[[dict[str, Any]], bool] | None = None,
    ) -> None:
        """Set the rates.

        Args:
            rate: Share of requests that meet a fault, split evenly over `kinds`.
            kinds: The kinds to inject (FAULT_KINDS names; any other HTTP status as digits).
            rates: Per-kind rates instead of `rate` and `kinds`.
            seed: Changes every draw.
            retry_after: Seconds a 429 asks for in its Retry-After header.
            hang: Seconds a timeout holds the request (longer than the client's timeout).
            endpoints: Where faults are injected ("chat", "rerank").
            where: Only into requests whose body this accepts (e.g. one schema's: `request_schema`).
        """
        kinds = list(kinds)
        self.rates = dict(rates) if rates is not None else {k: rate / len(kinds) for k in kinds}
        unknown = [k for k in self.rates if k not in FAULT_KINDS and not k.isdigit()]
        if unknown:
            raise ValueError(f"unknown fault kinds {unknown}: use {FAULT_KINDS} or an HTTP status")
        if not 0 <= sum(self.rates.values()) <= 1 or min(self.rates.values(), default=0) < 0:
            raise ValueError(f"fault rates must be >= 0 and sum to at most 1: {self.rates}")
        self.seed = seed
        self.retry_after = retry_after
        self.hang = hang
        self.endpoints = frozenset(endpoints)
        self.where = where
        self._seen: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def draw(self, endpoint: str, body: Any) -> tuple[str, Any] | None:
        """(kind, the reply that plays it) for one request, or None when it is answered as asked."""
        if endpoint not in self.endpoints or (self.where is not None and not self.where(body)):
            return None
        digest = hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()
        with self._lock:
            occurrence = self._seen.get((endpoint, digest), 0)
            self._seen[(endpoint, digest)] = occurrence + 1
        roll = random.Random(f"{self.seed}|{endpoint}|{digest}|{occurrence}").random()
        bound = 0.0
        for kind, rate in self.rates.items():
            bound += rate
            if roll < bound:
                return kind, self.reply(kind)
        return None

    def reply(self, kind: str) -> Any:
        """The reply that plays a fault kind."""
        if kind == "429":
            return Fail(429, "rate limit reached (injected)", {"Retry-After": f"{self.retry_after:g}"})
        if kind.isdigit():
            return Fail(int(kind), f"server error {kind} (injected)")
        return {
            "reset": Reset(),
            "timeout": Hang(self.hang),
            "truncated": Truncated(),
            "malformed": Malformed(),
            "empty": Empty(),
        }[kind]


def fault_kind(reply: Any) -> str | None:
    """The FAULT_KINDS name of a fault reply (a Fail: its status), None for an ordinary reply."""
    if isinstance(reply, Fail):
        return str(reply.status)
    return _KIND_OF.get(type(reply))


_KIND_OF: dict[type, str] = {
    Reset: "reset",
    Hang: "timeout",
    Truncated: "truncated",
    Malformed: "malformed",
    Empty: "empty",
}


# reading a campaign -------------------------------------------------------------------------------------

READABLE_FAULTS = frozenset({"malformed", "empty"})
"""Faults whose reply arrives whole: what the client makes of it is its own business. Every other fault (an
error status, a reset, a timeout, a cut body or stream) leaves the client no reply: the attempt failed."""

REPAIR_MARK = "corrected JSON object"
"""Words of citewise's repair prompt: a request that asks to fix a malformed reply."""


def request_schema(body: Any) -> str | None:
    """The structured-output schema a chat request asks for (json_schema name or forced tool), else None."""
    if not isinstance(body, dict):
        return None
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        return (response_format.get("json_schema") or {}).get("name")
    return _forced_tool(body)


def _endpoint(recorded: Recorded) -> str:
    return "rerank" if recorded.path.rstrip("/").endswith("/rerank") else "chat"


def _kind(recorded: Recorded) -> str:
    """What a request is for: "rerank", a schema name, or "text"."""
    if _endpoint(recorded) == "rerank":
        return "rerank"
    return request_schema(recorded.body) or "text"


@dataclass
class Exchange:
    """One call as the server saw it: the same request (endpoint and body), sent until the client stopped.

    A client's retries and its re-asks of a malformed reply repeat the request (streamed or not); a new call
    of the same request is told apart by a request of another kind started in between (the run moved on).
    """

    kind: str
    """"rerank", the schema asked for, or "text"."""
    requests: list[Recorded]
    """In arrival order."""

    @property
    def repair(self) -> bool:
        """Whether this asks to repair a malformed reply (citewise's repair prompt)."""
        return REPAIR_MARK in self.requests[0].text

    @staticmethod
    def failed(recorded: Recorded) -> bool:
        """Whether an attempt left the client no reply (a fault not in READABLE_FAULTS)."""
        return recorded.fault is not None and recorded.fault not in READABLE_FAULTS

    def retry_runs(self) -> list[int]:
        """The retries of each attempt sequence: failed attempts followed by another try of the same request.

        A sequence ends at a reply the client could read (then every failure before it was retried) or at
        the last request (then the last failure was given up, not retried).
        """
        runs: list[int] = []
        failures = 0
        for n, recorded in enumerate(self.requests):
            if self.failed(recorded):
                failures += 1
                if n == len(self.requests) - 1:
                    runs.append(failures - 1)
            else:
                runs.append(failures)
                failures = 0
        return runs

    @property
    def retries(self) -> int:
        """Requests that repeated a failed attempt."""
        return sum(self.retry_runs())

    @property
    def given_up(self) -> bool:
        """Whether the last attempt failed: the client went without a reply."""
        return self.failed(self.requests[-1])

    @property
    def answered(self) -> Recorded | None:
        """The last request that got a reply the client could read (None: none did)."""
        return next((r for r in reversed(self.requests) if not self.failed(r)), None)


def _asked(body: Any) -> str:
    """What a request asks, however it is delivered: a streamed answer re-asked without streaming (as
    citewise re-asks an empty reply) asks the same."""
    if isinstance(body, dict):
        body = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
    return json.dumps(body, sort_keys=True, default=str)


def exchanges(records: Iterable[Recorded]) -> list[Exchange]:
    """The POST requests of one run grouped into exchanges, in the order their first requests arrived."""
    posts = sorted((r for r in records if r.method == "POST"), key=lambda r: r.started)
    open_: dict[tuple[str, str], Exchange] = {}
    found: list[Exchange] = []
    for recorded in posts:
        kind = _kind(recorded)
        key = (_endpoint(recorded), _asked(recorded.body))
        current = open_.get(key)
        if current is not None:
            last = current.requests[-1].started
            moved_on = any(
                _kind(other) != kind and last < other.started < recorded.started for other in posts
            )
            if not moved_on:
                current.requests.append(recorded)
                continue
        open_[key] = Exchange(kind, [recorded])
        found.append(open_[key])
    return found


# the server ---------------------------------------------------------------------------------------------


class FakeOpenAI:
    """A scripted OpenAI-compatible server on 127.0.0.1 (random port) in a daemon thread."""

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        delay: float = 0.0,
        reject_json_schema: bool = False,
        reject_tools: bool = False,
        reject_json_mode: bool = False,
        reject_json_object_schema: bool = False,
        reject_status: int = 400,
        ignore_n: bool = False,
        serial: bool = False,
        require_max_tokens: bool = True,
        model: str = "fake-model",
        faults: Faults | None = None,
        stream_delay: float = 0.0,
        context_window: int | None = None,
        chars_per_token: float = 4.0,
        window_counts_reply: bool = False,
    ) -> None:
        """Configure the server; `start()` (or `with`) runs it.

        Args:
            responder: Called with the parsed request body when the script is empty (default: "ok").
            delay: Seconds every chat and rerank request waits before it is answered (benchmarks).
            reject_json_schema: Answer 400 to `response_format` `json_schema`, as servers without it do.
            reject_tools: Answer 400 to requests with `tools`.
            reject_json_mode: Answer 400 to `response_format` `json_object`.
            reject_json_object_schema: Answer 400 to `json_object` with a `schema` beside it (OpenAI's API
                knows no such field; llama.cpp takes it).
            reject_status: The status of those refusals (422, or 500 as llama-cpp-python's server answers).
            require_max_tokens: Refuse (400) a chat request that caps no tokens: citewise must cap every one.
            serial: Answer one chat request at a time, the others waiting their turn (llama-cpp-python).
            ignore_n: Return one choice whatever `n` asks for (as llama.cpp and Ollama do).
            model: The model name reported by GET /v1/models.
            faults: Inject faults at seeded rates (before the script and the responder); settable later.
            stream_delay: Seconds between a stream's events (a client can be seen showing part of an answer).
            context_window: Refuse (400, llama-cpp-python's words) a chat request whose prompt has this many
                tokens or more, as llama-cpp-python does (the reply's cap is cut to what is left, not
                refused); the window is reported nowhere else.
            chars_per_token: Characters a token, for the prompt tokens counted, reported and refused.
            window_counts_reply: Refuse when the prompt and the reply's cap together exceed the window, as
                vLLM and OpenAI do (llama-cpp-python refuses only a prompt that fills it).
        """
        self.responder: Responder = responder or default_responder
        self.delay = delay
        self.reject_json_schema = reject_json_schema
        self.reject_tools = reject_tools
        self.reject_json_mode = reject_json_mode
        self.reject_status = reject_status
        self.reject_json_object_schema = reject_json_object_schema
        self.require_max_tokens = require_max_tokens
        self.ignore_n = ignore_n
        self.serial = serial
        self._serving = threading.Lock()
        self.model = model
        self.faults = faults
        self.stream_delay = stream_delay
        self.context_window = context_window
        self.chars_per_token = chars_per_token
        self.window_counts_reply = window_counts_reply
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._scripts: dict[str, deque[Any]] = {"chat": deque(), "rerank": deque()}
        self._requests: list[Recorded] = []
        self._in_flight = 0
        self._max_in_flight = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle --------------------------------------------------------------------------------------

    def start(self) -> FakeOpenAI:
        """Bind 127.0.0.1 on a free port and serve in a daemon thread."""
        if self._httpd is not None:
            return self
        self._stopping.clear()
        handler = type("Handler", (_Handler,), {"fake": self})
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        httpd.daemon_threads = True
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Release hanging requests, stop serving and close the socket."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port."""
        if self._httpd is None:
            raise RuntimeError("the fake server is not running")
        return self._httpd.server_address[1]

    @property
    def root_url(self) -> str:
        """http://127.0.0.1:PORT (COHERE_BASE_URL: the cohere client appends /v2/rerank)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """http://127.0.0.1:PORT/v1 (OPENAI_BASE_URL)."""
        return f"{self.root_url}/v1"

    # scripting and inspection -----------------------------------------------------------------------

    def script(self, replies: Iterable[Any], *, endpoint: str = "chat") -> None:
        """Queue replies for the next requests of `endpoint` ("chat" or "rerank"), before the responder."""
        if endpoint not in self._scripts:
            raise ValueError(f"unknown endpoint {endpoint!r}: use 'chat' or 'rerank'")
        with self._lock:
            self._scripts[endpoint].extend(replies)

    @property
    def scripted_left(self) -> int:
        """Scripted replies not consumed yet (all endpoints)."""
        with self._lock:
            return sum(len(queue) for queue in self._scripts.values())

    @property
    def requests(self) -> list[Recorded]:
        """Every request received, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def chat_requests(self) -> list[Recorded]:
        """The POST /v1/chat/completions requests."""
        return [r for r in self.requests if r.path.rstrip("/").endswith("/chat/completions")]

    @property
    def rerank_requests(self) -> list[Recorded]:
        """The POST /v2/rerank requests."""
        return [r for r in self.requests if r.path.rstrip("/").endswith("/rerank")]

    @property
    def in_flight(self) -> int:
        """Requests being answered right now."""
        with self._lock:
            return self._in_flight

    @property
    def max_in_flight(self) -> int:
        """The most requests answered at the same time since start (or `reset`)."""
        with self._lock:
            return self._max_in_flight

    def fault_counts(self, endpoint: str | None = None) -> dict[str, int]:
        """How many requests met each fault (of one endpoint, "chat" or "rerank", or all)."""
        requests = {None: self.requests, "chat": self.chat_requests, "rerank": self.rerank_requests}[endpoint]
        counts: dict[str, int] = {}
        for recorded in requests:
            if recorded.fault is not None:
                counts[recorded.fault] = counts.get(recorded.fault, 0) + 1
        return counts

    def reported_usage(self) -> dict[str, int]:
        """Token usage summed over the chat completions answered (what a client should have counted)."""
        total = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        for recorded in self.chat_requests:
            if recorded.status == 200 and isinstance(recorded.response, dict):
                for key in total:
                    total[key] += int(recorded.response.get("usage", {}).get(key, 0))
        return total

    def reset(self) -> None:
        """Forget recorded requests, scripts and the in-flight maximum."""
        with self._lock:
            self._requests.clear()
            for queue in self._scripts.values():
                queue.clear()
            self._max_in_flight = self._in_flight

    # used by the handler ----------------------------------------------------------------------------

    def _record(self, recorded: Recorded) -> None:
        with self._lock:
            self._requests.append(recorded)

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _next(self, endpoint: str, body: dict[str, Any]) -> Any:
        with self._lock:
            queue = self._scripts[endpoint]
            if queue:
                return queue.popleft()
        if endpoint == "rerank":
            return None
        return self.responder(body)

    def _sleep(self, seconds: float) -> bool:
        """Sleep; False when the server is stopping."""
        return not self._stopping.wait(seconds) if seconds > 0 else not self._stopping.is_set()


# wire format --------------------------------------------------------------------------------------------


def _tokens(text: str, chars_per_token: float = 4.0) -> int:
    """A rough token count (four characters per token unless told)."""
    return math.ceil(len(text) / chars_per_token) if text else 0


def prompt_tokens(request: dict[str, Any], chars_per_token: float = 4.0) -> int:
    """The tokens a chat request's prompt counts: its text, and 8 for each message's template."""
    return _tokens(prompt_text(request), chars_per_token) + 8 * len(request.get("messages") or [])


def prompt_text(request: dict[str, Any]) -> str:
    """All the text of a chat request's messages, joined by blank lines."""
    parts: list[str] = []
    for message in request.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(p.get("text", "") for p in content if isinstance(p, dict))
    return "\n\n".join(parts)


def _forced_tool(request: dict[str, Any]) -> str | None:
    """The function a request forces (tool_choice naming it, or a single tool with tool_choice required)."""
    tools = request.get("tools") or []
    choice = request.get("tool_choice")
    if not tools or choice in ("none", "NONE"):
        return None
    if isinstance(choice, dict):
        return (choice.get("function") or {}).get("name")
    if choice in ("required", "REQUIRED", "any") or len(tools) == 1:
        return (tools[0].get("function") or {}).get("name")
    return None


def _message(reply: Any, request: dict[str, Any]) -> dict[str, Any]:
    """One choice's assistant message for a reply."""
    tool = _forced_tool(request)
    if isinstance(reply, dict) and tool:
        reply = ToolCall(tool, reply)
    if isinstance(reply, ToolCall):
        arguments = reply.arguments if isinstance(reply.arguments, str) else json.dumps(reply.arguments)
        call = {
            "id": f"call_{uuid.uuid4().hex[:24]}",
            "type": "function",
            "function": {"name": reply.name, "arguments": arguments},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    if isinstance(reply, dict | list):
        return {"role": "assistant", "content": json.dumps(reply)}
    return {"role": "assistant", "content": str(reply)}


def _message_text(message: dict[str, Any]) -> str:
    text = message.get("content") or ""
    for call in message.get("tool_calls") or []:
        text += call["function"]["name"] + call["function"]["arguments"]
    return text


def completion(
    request: dict[str, Any], replies: list[Any], model: str, chars_per_token: float = 4.0
) -> dict[str, Any]:
    """A chat.completion object with one choice per reply and usage estimated from text length."""
    messages = [_message(reply, request) for reply in replies]
    prompt_count = prompt_tokens(request, chars_per_token)
    completion_tokens = sum(_tokens(_message_text(m)) for m in messages)
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model") or model,
        "system_fingerprint": "fp_fake",
        "choices": [
            {
                "index": i,
                "message": m,
                "logprobs": None,
                "finish_reason": "tool_calls" if m.get("tool_calls") else "stop",
            }
            for i, m in enumerate(messages)
        ],
        "usage": {
            "prompt_tokens": prompt_count,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_count + completion_tokens,
        },
    }


def stream_chunks(request: dict[str, Any], body: dict[str, Any]) -> list[dict[str, Any]]:
    """The chat.completion.chunk objects that stream `body` (a completion), usage last when asked for."""
    base = {
        "id": body["id"],
        "object": "chat.completion.chunk",
        "created": body["created"],
        "model": body["model"],
        "system_fingerprint": body["system_fingerprint"],
    }
    chunks: list[dict[str, Any]] = []
    for choice in body["choices"]:
        i, message = choice["index"], choice["message"]
        chunks.append(
            {
                **base,
                "choices": [
                    {
                        "index": i,
                        "delta": {"role": "assistant", "content": ""},
                        "logprobs": None,
                        "finish_reason": None,
                    }
                ],
            }
        )
        for piece in re.findall(r"\S*\s*", message.get("content") or ""):
            if piece:
                chunks.append(
                    {
                        **base,
                        "choices": [
                            {"index": i, "delta": {"content": piece}, "logprobs": None, "finish_reason": None}
                        ],
                    }
                )
        for n, call in enumerate(message.get("tool_calls") or []):
            delta = {
                "tool_calls": [
                    {"index": n, "id": call["id"], "type": "function", "function": call["function"]}
                ]
            }
            chunks.append(
                {**base, "choices": [{"index": i, "delta": delta, "logprobs": None, "finish_reason": None}]}
            )
        chunks.append(
            {
                **base,
                "choices": [
                    {"index": i, "delta": {}, "logprobs": None, "finish_reason": choice["finish_reason"]}
                ],
            }
        )
    if (request.get("stream_options") or {}).get("include_usage"):
        chunks.append({**base, "choices": [], "usage": body["usage"]})
    return chunks


_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "the a an and or of to in on for is are was were be by with what which who how why when where does "
    "do did it its this that these those as at from into about than then there their them they you your "
    "not no".split()
)


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1}


def overlap_score(query: str, text: str) -> float:
    """Share of the query's content words found in the text (0..1): a deterministic relevance."""
    query_words = _words(query)
    if not query_words:
        return 0.0
    return len(query_words & _words(text)) / len(query_words)


def rerank_response(request: dict[str, Any]) -> dict[str, Any]:
    """A Cohere v2 rerank response ranking documents by word overlap with the query (ties: input order)."""
    documents = [d if isinstance(d, str) else json.dumps(d) for d in request.get("documents") or []]
    scored = [(i, round(overlap_score(request.get("query", ""), d), 6)) for i, d in enumerate(documents)]
    scored.sort(key=lambda pair: (-pair[1], pair[0]))
    top_n = request.get("top_n")
    if isinstance(top_n, int) and top_n > 0:
        scored = scored[:top_n]
    return {
        "id": str(uuid.uuid4()),
        "results": [{"index": i, "relevance_score": s} for i, s in scored],
        "meta": {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}},
    }


_GONE = object()
"""A reply that will never be sent: the request hung until the client gave up, or the server stopped."""


def _cut(text: str, choice: int) -> str:
    return text[: max(1, len(text) // 2 - choice)]


def _broken(reply: Any, request: dict[str, Any], choice: int = 0) -> Any:
    """A reply cut about in half: JSON content or tool arguments that no longer parse (text: half of it).

    Choice i loses i more characters, so the n samples of one request stay distinct (as are their repairs).
    """
    tool = _forced_tool(request)
    if isinstance(reply, dict) and tool:
        reply = ToolCall(tool, reply)
    if isinstance(reply, ToolCall):
        arguments = reply.arguments if isinstance(reply.arguments, str) else json.dumps(reply.arguments)
        return ToolCall(reply.name, _cut(arguments, choice))
    if isinstance(reply, dict | list):
        return _cut(json.dumps(reply), choice)
    return _cut(str(reply), choice)


class _Handler(BaseHTTPRequestHandler):
    """Serves one connection; `fake` is set on a per-server subclass."""

    protocol_version = "HTTP/1.1"
    fake: FakeOpenAI
    current: Recorded | None = None

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet."""

    # helpers -----------------------------------------------------------------------------------------

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        if self.current is not None:
            self.current.status, self.current.response = status, payload
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self._done()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _send_events(
        self,
        chunks: list[dict[str, Any]],
        completion: dict[str, Any],
        *,
        done: bool = True,
        broken: bool = False,
    ) -> None:
        """Stream `chunks` as server-sent events; `done=False` closes without `[DONE]` (a cut stream),
        `broken=True` ends with an event whose data is not JSON (neither records the usage as delivered)."""
        if self.current is not None:
            self.current.status = 200
            self.current.response = completion if done and not broken else None
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for chunk in chunks:
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
                if self.fake.stream_delay and not self.fake._sleep(self.fake.stream_delay):
                    break
            self._done()
            if broken:
                self.wfile.write(f"data: {json.dumps(chunks[-1])[:20]}\n\n".encode())
            if done:
                self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def _fail(self, fail: Fail, endpoint: str) -> None:
        if endpoint == "rerank":
            payload: dict[str, Any] = {"message": fail.message}
        else:
            kind = {
                400: "invalid_request_error",
                401: "authentication_error",
                404: "not_found_error",
                429: "rate_limit_error",
            }.get(fail.status, "server_error")
            payload = {"error": {"message": fail.message, "type": kind, "param": None, "code": None}}
        self._send_json(fail.status, payload, fail.headers)

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw or b"null")
        except json.JSONDecodeError:
            return raw.decode(errors="replace")

    # routes ------------------------------------------------------------------------------------------

    def do_GET(self) -> None:
        """GET /v1/models."""
        self.current = Recorded("GET", self.path, dict(self.headers), None, time.monotonic())
        self.fake._record(self.current)
        if self.path.rstrip("/").endswith("/models"):
            model = {"id": self.fake.model, "object": "model", "created": 0, "owned_by": "citewise-tests"}
            self._send_json(200, {"object": "list", "data": [model]})
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found_error"}})

    def do_POST(self) -> None:
        """POST /v1/chat/completions and /v2/rerank."""
        body = self._body()
        self.current = Recorded("POST", self.path, dict(self.headers), body, time.monotonic())
        self.fake._record(self.current)
        path = self.path.split("?")[0].rstrip("/")
        if path.endswith("/chat/completions"):
            endpoint = "chat"
        elif path.endswith("/rerank"):
            endpoint = "rerank"
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found_error"}})
            return
        if not isinstance(body, dict):
            self._fail(Fail(400, "the request body is not a JSON object"), endpoint)
            return
        self.fake._enter()
        self._left = False
        try:
            if self.fake.serial and endpoint == "chat":
                with self.fake._serving:
                    self._answer(endpoint, body)
            else:
                self._answer(endpoint, body)
        finally:
            self._done()

    def _done(self) -> None:
        """The request leaves the in-flight count, once: before its last bytes go out, since a client that
        has them may send its next request before this handler's thread runs again (a busy machine counted
        three in flight under a cap of two)."""
        if not getattr(self, "_left", True):
            self._left = True
            self.fake._leave()

    def _answer(self, endpoint: str, body: dict[str, Any]) -> None:
        fake = self.fake
        if not fake._sleep(fake.delay):
            self.close_connection = True
            return
        if endpoint == "chat" and (rejection := self._rejection(body)):
            self._fail(Fail(fake.reject_status, rejection), endpoint)
            return
        capped = body.get("max_tokens") or body.get("max_completion_tokens")
        if endpoint == "chat" and (refusal := self._too_long(body, capped)):
            self._fail(Fail(400, refusal), endpoint)
            return
        if endpoint == "chat" and fake.require_max_tokens and not (isinstance(capped, int) and capped > 0):
            self._fail(Fail(400, "this test server requires max_tokens on every request"), endpoint)
            return
        drawn = fake.faults.draw(endpoint, body) if fake.faults is not None else None
        reply = self._settle(drawn[1] if drawn else fake._next(endpoint, body), endpoint, body)
        if reply is _GONE:
            return
        if self.current is not None:
            self.current.fault = fault_kind(reply)
        if isinstance(reply, Fail):
            self._fail(reply, endpoint)
        elif isinstance(reply, Reset):
            self._reset()
        elif isinstance(reply, Truncated | Malformed):
            inner = reply.reply if reply.reply is not None else fake._next(endpoint, body)
            inner = self._settle(inner, endpoint, body)
            if inner is _GONE:
                return
            if isinstance(reply, Truncated):
                self._truncated(endpoint, body, inner, reply.keep)
            else:
                self._malformed(endpoint, body, inner)
        elif isinstance(reply, Empty):
            if endpoint == "rerank":
                self._send_json(200, {**rerank_response(body), "results": []})
            else:
                self._reply(body, [""] * self._choices(body))
        elif endpoint == "rerank":
            self._send_json(200, reply if isinstance(reply, dict) else rerank_response(body))
        else:
            self._reply(body, self._spread(reply, body))

    def _settle(self, reply: Any, endpoint: str, body: dict[str, Any]) -> Any:
        """The reply after its Delays (asking the responder when one says None); _GONE after a Hang."""
        fake = self.fake
        while isinstance(reply, Delay | Hang):
            if isinstance(reply, Hang):
                if self.current is not None:
                    self.current.fault = "timeout"
                fake._sleep(reply.seconds)
                self.close_connection = True  # the client has given up: answer nothing
                return _GONE
            if not fake._sleep(reply.seconds):
                self.close_connection = True
                return _GONE
            reply = reply.reply if reply.reply is not None else fake._next(endpoint, body)
        return reply

    def _choices(self, body: dict[str, Any]) -> int:
        return 1 if self.fake.ignore_n else max(1, int(body.get("n") or 1))

    def _spread(self, reply: Any, body: dict[str, Any]) -> list[Any]:
        """One reply per choice the request asks for."""
        n = self._choices(body)
        if isinstance(reply, Choices):
            return [reply.replies[i % len(reply.replies)] for i in range(n)]
        return [reply] * n

    def _reply(self, body: dict[str, Any], replies: list[Any]) -> None:
        payload = completion(body, replies, self.fake.model, self.fake.chars_per_token)
        if body.get("stream"):
            self._send_events(stream_chunks(body, payload), payload)
        else:
            self._send_json(200, payload)

    def _reset(self) -> None:
        """Close the socket at once with SO_LINGER 0: the kernel sends a reset, and no response is read."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            return
        self.rfile.close()  # the socket's last reference goes with it: closed before any FIN
        self.connection.close()

    def _send_raw(self, status: int, data: bytes) -> None:
        """Send `data` as a JSON response whatever it holds (a cut body)."""
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self._done()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _truncated(self, endpoint: str, body: dict[str, Any], inner: Any, keep: float) -> None:
        if isinstance(inner, Fail):  # nothing to cut: the error stands
            self.current.fault = fault_kind(inner)  # type: ignore[union-attr]
            self._fail(inner, endpoint)
            return
        if endpoint == "rerank":
            payload = inner if isinstance(inner, dict) else rerank_response(body)
        else:
            payload = completion(body, self._spread(inner, body), self.fake.model, self.fake.chars_per_token)
        if body.get("stream") and endpoint == "chat":
            chunks = stream_chunks(body, payload)
            self._send_events(chunks[: int(len(chunks) * keep)], payload, done=False)
            return
        data = json.dumps(payload).encode()
        cut = data[: max(1, min(len(data) - 1, int(len(data) * keep)))]
        if self.current is not None:
            self.current.status, self.current.response = 200, cut.decode(errors="replace")
        self._send_raw(200, cut)

    def _malformed(self, endpoint: str, body: dict[str, Any], inner: Any) -> None:
        if isinstance(inner, Fail):
            self.current.fault = fault_kind(inner)  # type: ignore[union-attr]
            self._fail(inner, endpoint)
            return
        if endpoint == "rerank":  # JSON, but not a rerank response
            self._send_json(200, {"id": str(uuid.uuid4()), "message": "ok"})
            return
        replies = [_broken(r, body, i) for i, r in enumerate(self._spread(inner, body))]
        payload = completion(body, replies, self.fake.model, self.fake.chars_per_token)
        if body.get("stream"):
            chunks = stream_chunks(body, payload)
            at = max(1, len(chunks) // 2)
            self._send_events(chunks[:at], payload, broken=True)
            return
        self._send_json(200, payload)

    def _too_long(self, body: dict[str, Any], capped: Any) -> str | None:
        """A refusal of a prompt too long for the context window, in llama-cpp-python's and vLLM's words."""
        window = self.fake.context_window
        if window is None:
            return None
        prompt = prompt_tokens(body, self.fake.chars_per_token)
        completion = capped if isinstance(capped, int) else 0
        if prompt < window and not (self.fake.window_counts_reply and prompt + completion > window):
            return None
        return (
            f"This model's maximum context length is {window} tokens. However, you requested "
            f"{prompt + completion} tokens ({prompt} in the messages, {completion} in the completion). "
            "Please reduce the length of the messages or completion."
        )

    def _rejection(self, body: dict[str, Any]) -> str | None:
        fake = self.fake
        kind = (body.get("response_format") or {}).get("type")
        if fake.reject_json_schema and kind == "json_schema":
            return "'response_format' of type 'json_schema' is not supported by this server"
        if fake.reject_json_mode and kind == "json_object":
            return "'response_format' of type 'json_object' is not supported by this server"
        if fake.reject_json_object_schema and kind == "json_object" and "schema" in body["response_format"]:
            return "Unrecognized request argument supplied: response_format.schema"
        if fake.reject_tools and body.get("tools"):
            return "'tools' are not supported by this server"
        return None


# deterministic answers for citewise's prompts -----------------------------------------------------------

KNOWN_SCHEMAS = (
    "RelevanceScores",
    "Reflections",
    "CriticVerdicts",
    "SupportMap",
    "RewrittenQuery",
    "FollowUpQueries",
    "RouteDecision",
    "PlannedOutline",
)

# innermost tags, evidence with an id: a prompt's prose may mention "<question>" and "<evidence>" tags too
_EVIDENCE = re.compile(
    r"<evidence\b([^>]*\bid=\"[^\"]*\"[^>]*)>((?:(?!<evidence\b).)*?)</evidence>", re.DOTALL
)
_ATTR_ID = re.compile(r'\bid="([^"]*)"')
_LABEL = re.compile(r"\b(?:S\d+)?E\d+\b(?!\.\d)")
_LINE_LABEL = re.compile(r"\b(?:S\d+)?E\d+\.\d+\b")
_SECTION = re.compile(r'<section\b[^>]*\btitle="([^"]*)"[^>]*>\n(.*?)\n</section>', re.DOTALL)
_QUESTION = re.compile(r"<question\b[^>]*>((?:(?!<question\b).)*?)</question>", re.DOTALL)
_COUNT = re.compile(r"\(1 to (\d+)\)")
_NUMBERED = re.compile(r"^\s*\[?(\d+)[\].):]\s+\S", re.MULTILINE)
_SCHEMA_NAME = re.compile(r"schema named (\w+)")
_JSON_BLOCK = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_PART = re.compile(r'section "Part (\d+)"')


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


@dataclass
class _Prompt:
    """What a responder reads from a request's prompt."""

    text: str
    question: str
    evidence: dict[str, str]
    labels: list[str]
    line_labels: list[str]

    @classmethod
    def read(cls, request: dict[str, Any]) -> _Prompt:
        text = prompt_text(request)
        evidence: dict[str, str] = {}
        for attributes, body in _EVIDENCE.findall(text):
            found = _ATTR_ID.search(attributes)
            if found:
                evidence.setdefault(html.unescape(found.group(1)), html.unescape(body).strip())
        labels = list(evidence) or _unique(_LABEL.findall(text))
        question = _QUESTION.search(text)
        return cls(
            text=text,
            question=html.unescape(question.group(1)).strip() if question else "",
            evidence=evidence,
            labels=labels,
            line_labels=_unique(_LINE_LABEL.findall(text)),
        )

    def sentence_count(self) -> int:
        found = _COUNT.search(self.text)
        if found:
            return int(found.group(1))
        numbers = [int(n) for n in _NUMBERED.findall(self.text)]
        return max(numbers, default=1)


class SchemaResponder:
    """Valid, deterministic replies to citewise's structured-output and writing requests.

    It reads the request: a `json_schema` response_format, a forced tool, or (json mode) the schema spelled
    out in the prompt names the output model; evidence labels (E1, E2, ...), sentence-line labels (E1.2) and
    the question come from the prompt. Relevance scores are `scores[label]` when given, otherwise the word
    overlap of the question with the evidence text (x100), or a hash of the label when there is no question.
    Free-text requests get an answer that quotes and cites the first evidence ("... [E1]."), or the question
    itself when there is no evidence (a condense call).
    """

    def __init__(
        self,
        *,
        scores: dict[str, int] | None = None,
        jitter: int = 0,
        delay: float = 0.0,
        answer: str | None = None,
        supported: bool = True,
        route: str = "direct",
        sections: int = 3,
        queries: list[str] | None = None,
    ) -> None:
        """Configure the replies.

        Args:
            scores: Fixed relevance per label (E1 -> 80); others are computed.
            jitter: Sample i of an n-sample request moves the score by (0, +jitter, -jitter)[i % 3].
            delay: Seconds each reply waits (a stand-in for model latency in benchmarks).
            answer: A fixed free-text answer instead of the quoting one.
            supported: What SupportMap says about every sentence.
            route: What RouteDecision answers ("direct" or "report").
            sections: How many sections PlannedOutline plans.
            queries: Section n's search is queries[n - 1] (default: the question).
        """
        self.scores = dict(scores or {})
        self.jitter = jitter
        self.delay = delay
        self.answer = answer
        self.supported = supported
        self.route = route
        self.sections = sections
        self.queries = list(queries or [])

    def __call__(self, request: dict[str, Any]) -> Any:
        """The reply for one request (wrapped in a Delay when a delay is set)."""
        reply = self.reply(request)
        return Delay(self.delay, reply) if self.delay > 0 else reply

    def reply(self, request: dict[str, Any]) -> Any:
        """The reply, without delay."""
        prompt = _Prompt.read(request)
        n = max(1, int(request.get("n") or 1))
        name, schema, tool = self._target(request, prompt)
        if name is None and schema is None:
            return self.answer if self.answer is not None else self.free_text(prompt)
        objects = [self.build(name, schema or {}, prompt, i) for i in range(n)]
        replies: list[Any] = [ToolCall(tool, o) for o in objects] if tool else objects
        return Choices(replies) if n > 1 else replies[0]

    # what is asked -----------------------------------------------------------------------------------

    @staticmethod
    def _target(request: dict[str, Any], prompt: _Prompt) -> tuple[str | None, dict | None, str | None]:
        """(schema name, JSON schema, tool name when answering with a tool call)."""
        response_format = request.get("response_format") or {}
        if response_format.get("type") == "json_schema":
            spec = response_format.get("json_schema") or {}
            return spec.get("name"), spec.get("schema"), None
        tool = _forced_tool(request)
        if tool:
            for entry in request.get("tools") or []:
                function = entry.get("function") or {}
                if function.get("name") == tool:
                    return tool, function.get("parameters"), tool
        if response_format.get("type") in ("json_object", "json_mode") or _SCHEMA_NAME.search(prompt.text):
            named = _SCHEMA_NAME.search(prompt.text)
            name = named.group(1) if named else next((k for k in KNOWN_SCHEMAS if k in prompt.text), None)
            schema = None
            for block in _JSON_BLOCK.findall(prompt.text):
                try:
                    candidate = json.loads(block)
                except json.JSONDecodeError:
                    continue
                if isinstance(candidate, dict) and "properties" in candidate:
                    schema = candidate
                    break
            return name or "object", schema, None
        return None, None, None

    # values ------------------------------------------------------------------------------------------

    def score(self, label: str, prompt: _Prompt, sample: int = 0) -> int:
        """The relevance of one label for sample `sample` (0..100)."""
        if label in self.scores:
            base = self.scores[label]
        elif prompt.question and label in prompt.evidence:
            base = round(100 * overlap_score(prompt.question, prompt.evidence[label]))
        else:
            base = int(hashlib.sha256(label.encode()).hexdigest(), 16) % 101
        offset = (0, self.jitter, -self.jitter)[sample % 3]
        return max(0, min(100, base + offset))

    def build(self, name: str | None, schema: dict[str, Any], prompt: _Prompt, sample: int = 0) -> Any:
        """A valid object for a known citewise schema, else one generated from the JSON schema."""
        labels = prompt.labels
        if name == "RelevanceScores":
            return {"scores": [{"id": label, "score": self.score(label, prompt, sample)} for label in labels]}
        if name == "Reflections":
            return {
                "items": [
                    {
                        "id": label,
                        "score": self.score(label, prompt, sample),
                        "justification": f"Deterministic test reflection for {label}.",
                    }
                    for label in labels
                ]
            }
        if name == "CriticVerdicts":
            return {
                "items": [
                    {
                        "id": label,
                        "score": self.score(label, prompt, sample),
                        "reason": f"Deterministic test verdict for {label}.",
                    }
                    for label in labels
                ]
            }
        if name == "SupportMap":  # cite lines the prompt really shows, not labels its prose mentions
            lines = [key for key in prompt.evidence if _LINE_LABEL.fullmatch(key)] or prompt.line_labels
            return {
                "sentences": [
                    {
                        "sentence": k,
                        "sources": [lines[(k - 1) % len(lines)]] if lines and self.supported else [],
                        "supported": self.supported,
                    }
                    for k in range(1, prompt.sentence_count() + 1)
                ]
            }
        if name == "RewrittenQuery":
            return {"query": prompt.question or "test query", "sub_queries": []}
        if name == "FollowUpQueries":  # no second hop unless a test scripts one
            return {"needed": False, "queries": []}
        if name == "RouteDecision":
            return {"route": self.route, "reason": f"scripted: {self.route}"}
        if name == "PlannedOutline":
            return {"sections": [self.planned(prompt.question, n) for n in range(1, self.sections + 1)]}
        return _instance(schema, schema.get("$defs", {}), prompt, self, sample)

    def planned(self, question: str, n: int) -> dict[str, Any]:
        """Section n of a planned outline: a distinct title and its search."""
        query = self.queries[n - 1] if n <= len(self.queries) else question or f"part {n}"
        return {"title": f"Part {n}", "goal": f"What the documents say about {query}.", "queries": [query]}

    def free_text(self, prompt: _Prompt) -> str:
        """Cite the first two evidence passages; join drafted sections into a report; else the question."""
        sections = _SECTION.findall(prompt.text)
        if sections:
            return self.report(sections)
        part = _PART.search(prompt.text)  # a report section starts at its own evidence, so parts differ
        shift = (int(part.group(1)) - 1) % len(prompt.labels) if part and prompt.labels else 0
        cited = []
        for label in (prompt.labels[shift:] + prompt.labels[:shift])[:2]:
            text = prompt.evidence.get(label, "")
            first = _SENTENCE_END.split(text.strip())[0].rstrip(" .!?") if text.strip() else "It is so"
            cited.append(f"{first} [{label}].")
        if cited:
            return " ".join(cited)
        if prompt.question:
            return prompt.question
        return "This is a test answer."

    @staticmethod
    def report(sections: list[tuple[str, str]]) -> str:
        """The customize reply: each section under its heading, framed by an introduction (the first sentences
        of the first two sections) and a conclusion (the last sentences of the last two): paragraphs of their
        own, as a writer's would be."""
        bodies = [(html.unescape(title), html.unescape(body).strip()) for title, body in sections]
        split = [_SENTENCE_END.split(body) for _, body in bodies]
        intro = " ".join(dict.fromkeys(parts[0] for parts in split[:2]))
        closing = " ".join(dict.fromkeys(parts[-1] for parts in split[-2:]))
        parts = [intro] + [f"## {title}\n\n{body}" for title, body in bodies]
        return "\n\n".join([*parts, f"## Conclusion\n\n{closing}"])


def _instance(
    schema: dict[str, Any],
    defs: dict[str, Any],
    prompt: _Prompt,
    responder: SchemaResponder,
    sample: int,
    key: str = "",
    label: str | None = None,
) -> Any:
    """A value valid for a JSON schema, filled with the prompt's labels where an `id` is asked for."""
    if "$ref" in schema:
        schema = defs.get(schema["$ref"].split("/")[-1], {})
    for union in ("anyOf", "oneOf"):
        if union in schema:
            options = [s for s in schema[union] if s.get("type") != "null"] or schema[union]
            return _instance(options[0], defs, prompt, responder, sample, key, label)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        return {
            k: _instance(v, defs, prompt, responder, sample, k, label)
            for k, v in (schema.get("properties") or {}).items()
        }
    if kind == "array":
        items = schema.get("items") or {}
        resolved = defs.get(items["$ref"].split("/")[-1], {}) if "$ref" in items else items
        if "id" in (resolved.get("properties") or {}) and prompt.labels:
            return [_instance(resolved, defs, prompt, responder, sample, key, lab) for lab in prompt.labels]
        return [_instance(items, defs, prompt, responder, sample, key, label)]
    if kind == "string":
        if key in ("id", "label") and (label or prompt.labels):
            return label or prompt.labels[0]
        return f"test {key or 'text'}" + (f" for {label}" if label else "")
    if kind in ("integer", "number"):
        if "score" in key and label:
            return responder.score(label, prompt, sample)
        return schema.get("minimum", 1)
    if kind == "boolean":
        return True
    return None
