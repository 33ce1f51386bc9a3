"""What a model server turned out to be, learnt from its replies and kept for the way in's later runs.

Local servers differ from hosted APIs in ways no setting announces: llama-cpp-python refuses `json_schema`
but takes `json_object` with a schema, llama.cpp and Ollama ignore `n`, many serve one request at a time, a
small model on a laptop writes a few dozen tokens a second, and the context window is whatever the server
was started with. `ServerFacts` keeps what was learnt per (base URL, model), and `Servers` holds them for the
resources a way in builds once (citewise.core.resources.Resources), so a chat session or a server learns it
once, not per question:

- `method`: the structured-output method that works (an index into METHODS);
- `n_ignored`: the server answers an `n` request with one choice;
- `serial`: requests in flight do not overlap (the latest of a group sent together ends about as late as
  their sum), so more than one in flight only queues them past their timeouts;
- `seconds_per_token`: measured speed, which sets each request's timeout from the tokens it may write;
- `context_window`: read from the server (llama.cpp's `/props`, `/v1/models` metadata, Ollama's
  `/api/show`), from Context.context_window, or learnt from the first refusal for length ("maximum context
  length is 8192 tokens": llama-cpp-python reports it nowhere else); evidence is packed to fit it;
- `chars_per_token`: how many characters of prompt make one of the model's tokens, learnt from the prompt
  tokens each reply (or refusal) counts, so a prompt's size in the model's own tokens is known before it is
  sent (scientific text is nearer three characters a token than four for small models' tokenizers).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from citewise.models.specs import env_setting, speaks_openai

logger = logging.getLogger(__name__)


GROUP_WINDOW = 0.25
"""Requests that start within this many seconds of a group's first are judged together for queueing."""
SERIAL_RATIO = 0.7
"""A group of n is served one at a time when its slowest took at least this x n times its fastest."""
MIN_LATENCY = 0.2
"""Groups answered faster than this (each request) say nothing about queueing: timings are mostly noise."""
PREFILL_WEIGHT = 0.05
"""What a prompt token costs against a written one (prompt tokens are read in batches)."""
TIMEOUT_MARGIN = 3.0
"""A request may take this many times what its tokens are expected to take before it times out."""
CHARS_PER_TOKEN = 3.2
"""Characters a token until the server has counted one prompt: below English's usual four, so a first
prompt is not thought smaller than it is (small models' tokenizers split scientific text finely)."""
TOKEN_MARGIN = 1.08
"""A prompt's token estimate is multiplied by this: prompts differ from the ones the ratio was learnt on."""
MESSAGE_TOKENS = 8
"""Tokens a chat template adds around each message (role markers and separators)."""
PROBE_TIMEOUT = 2.0
"""Seconds to wait for a server's metadata (the context window) before going without it."""
LOCAL_HOSTS = ("localhost", "127.", "0.0.0.0", "::1", "[::1]", "10.", "192.168.", "host.docker.internal")
"""Hosts of servers on this machine or its network (a local model), as opposed to a hosted API."""


def base_url(provider: str) -> str:
    """The URL a provider's requests go to ("" for OpenAI's and Cohere's own APIs)."""
    if speaks_openai(provider):
        return (env_setting("OPENAI_BASE_URL") or "").rstrip("/")
    return (env_setting("COHERE_BASE_URL") or "").rstrip("/")


def is_local(provider: str) -> bool:
    """True for a model served on this machine or its network (an OpenAI-compatible local server)."""
    if provider in ("ollama", "vllm", "llamacpp", "lmstudio"):
        return True
    url = base_url(provider)
    if not url:
        return False
    host = urlsplit(url).hostname or ""
    return host.startswith(LOCAL_HOSTS) or host.endswith((".local", ".lan", ".internal"))


@dataclass
class _Group:
    """Requests sent together (within GROUP_WINDOW of the first), judged together for queueing."""

    started: float
    spans: list[tuple[float, float | None]] = field(default_factory=list)


@dataclass
class Ticket:
    """One request in flight: its group and place there, and whether it has had the server to itself."""

    group: _Group
    place: int
    start: float
    alone: bool


@dataclass
class ServerFacts:
    """What one (base URL, model) turned out to support and how fast it is (see the module's docstring)."""

    url: str
    model: str
    method: int | None = None
    n_ignored: bool = False
    serial: bool | None = None
    seconds_per_token: float | None = None
    context_window: int | None = None
    chars_per_token: float | None = None
    probed: bool = False
    _group: _Group | None = None
    _flying: list[Ticket] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # queueing and speed -----------------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        """Requests to this server in flight now (from this process)."""
        return len(self._flying)

    def started(self) -> Ticket:
        """Note a request sent now; hand the ticket to `finished` when it ends (or fails)."""
        now = time.monotonic()
        with self._lock:
            group = self._group
            if group is None or now - group.started > GROUP_WINDOW:
                group = self._group = _Group(now)
            group.spans.append((now, None))
            for other in self._flying:
                other.alone = False
            ticket = Ticket(group, len(group.spans) - 1, now, alone=not self._flying)
            self._flying.append(ticket)
            return ticket

    def finished(
        self, ticket: Ticket, output_tokens: int = 0, input_tokens: int = 0, ok: bool = True
    ) -> None:
        """Note a request's end: the speed from a request that had the server alone, queueing from a group."""
        now = time.monotonic()
        with self._lock:
            self._flying = [t for t in self._flying if t is not ticket]
            group = ticket.group
            group.spans[ticket.place] = (ticket.start, now if ok else -1.0)
            work = output_tokens + PREFILL_WEIGHT * input_tokens
            if ok and ticket.alone and work > 0:
                rate = (now - ticket.start) / work
                previous = self.seconds_per_token
                self.seconds_per_token = rate if previous is None else 0.7 * previous + 0.3 * rate
            if any(end is None for _, end in group.spans) or len(group.spans) < 2:
                return
            if self._group is group:
                self._group = None
            latencies = sorted(end - begin for begin, end in group.spans if end is not None and end >= 0)
            if len(latencies) < 2 or latencies[0] < MIN_LATENCY:
                return
            serial = latencies[-1] >= SERIAL_RATIO * len(latencies) * latencies[0]
            if serial and not self.serial:
                logger.warning(
                    "%s serves one request at a time (%d sent together took %.1f to %.1f s): "
                    "sending one at a time from now on",
                    self.url or self.model,
                    len(latencies),
                    latencies[0],
                    latencies[-1],
                )
                self.serial = True
            elif self.serial is None and not serial:
                self.serial = False

    def limit(self, configured: int) -> int:
        """Requests to keep in flight: one for a server found serial, else the configured number."""
        return 1 if self.serial else configured

    def timeout(self, configured: float, max_tokens: int, prompt_chars: int) -> float:
        """A request's timeout: the configured one, longer when the measured speed says it needs longer.

        Until the server is known not to queue, the requests already in flight count against it too.
        """
        if self.seconds_per_token is None:
            return configured
        expected = self.seconds_per_token * (max_tokens + PREFILL_WEIGHT * prompt_chars / 4)
        queue = 1 if self.serial is False else 1 + self.in_flight
        return max(configured, TIMEOUT_MARGIN * expected * queue)

    # the context window -----------------------------------------------------------------------------

    def prompt_tokens(self, chars: int, messages: int = 1) -> int:
        """The model's tokens for a prompt of `chars` characters in `messages` messages (estimated high)."""
        ratio = self.chars_per_token or CHARS_PER_TOKEN
        return int(chars / ratio * TOKEN_MARGIN) + MESSAGE_TOKENS * messages

    def counted(self, chars: int, tokens: int) -> None:
        """Learn the characters a token from a prompt of `chars` characters the server counted as `tokens`."""
        if chars < 200 or tokens <= 0:  # a short prompt is mostly the template's own tokens
            return
        rate = chars / tokens
        with self._lock:
            previous = self.chars_per_token
            # the lower of the two counts more: over-estimating a prompt costs evidence, under-estimating it
            # costs a refused request
            self.chars_per_token = rate if previous is None else min(rate, 0.5 * previous + 0.5 * rate)

    def refused_for_length(self, window: int | None, prompt_tokens: int | None, chars: int) -> None:
        """Learn from a refusal for length: the window it named, and the prompt's size in tokens."""
        if window:
            if window != self.context_window:
                where = self.url or self.model
                logger.info("%s: context window %d tokens (learnt from a refusal)", where, window)
            self.context_window = window
        if prompt_tokens:
            self.counted(chars, prompt_tokens)

    def probe(self, provider: str) -> None:
        """Read the context window from the server once (quietly: a server without metadata is normal)."""
        with self._lock:
            if self.probed:
                return
            self.probed = True
        if not self.url or not is_local(provider):
            return
        window = _read_window(self.url, self.model)
        if window:
            logger.info("%s: context window %d tokens", self.url, window)
            self.context_window = window


def _read_window(url: str, model: str) -> int | None:
    root = url[: -len("/v1")] if url.endswith("/v1") else url
    try:
        with httpx.Client(timeout=PROBE_TIMEOUT) as client:
            found = _window_of_props(client, root) or _window_of_models(client, url, model)
            return found or _window_of_ollama(client, root, model)
    except (httpx.HTTPError, ValueError):
        return None


def _window_of_props(client: httpx.Client, root: str) -> int | None:
    """llama.cpp's llama-server: GET /props -> default_generation_settings.n_ctx."""
    reply = client.get(f"{root}/props")
    if reply.status_code != 200:
        return None
    settings = reply.json().get("default_generation_settings") or {}
    return _positive(settings.get("n_ctx") or reply.json().get("n_ctx"))


def _window_of_models(client: httpx.Client, url: str, model: str) -> int | None:
    """GET /v1/models: llama-server's `meta.n_ctx_train`, vLLM's `max_model_len`, per model."""
    reply = client.get(f"{url}/models")
    if reply.status_code != 200:
        return None
    for entry in reply.json().get("data") or []:
        if not isinstance(entry, dict) or entry.get("id") not in (model, None):
            continue
        meta = entry.get("meta") or {}
        found = _positive(entry.get("max_model_len") or meta.get("n_ctx") or meta.get("n_ctx_train"))
        if found:
            return found
    return None


def _window_of_ollama(client: httpx.Client, root: str, model: str) -> int | None:
    """Ollama: POST /api/show -> model_info['<family>.context_length']."""
    reply = client.post(f"{root}/api/show", json={"model": model})
    if reply.status_code != 200:
        return None
    info = reply.json().get("model_info") or {}
    return next((_positive(v) for k, v in info.items() if k.endswith(".context_length")), None)


def _positive(value: Any) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


class Servers:
    """What runs learn about each server, one `ServerFacts` per base URL and model.

    Not a process cache: the way in (citewise.core.resources.Resources) holds one and hands it to every LLM it
    builds, so that the next run knows what a server refused or how fast it is; a test builds its own, so
    nothing one test's server taught reaches another's.
    """

    def __init__(self) -> None:
        """No server known yet."""
        self._facts: dict[tuple[str, str], ServerFacts] = {}
        self._lock = threading.Lock()

    def facts(self, provider: str, model: str) -> ServerFacts:
        """The facts about the server behind `provider`/`model` (one per base URL and model)."""
        key = (base_url(provider) or provider, model)
        with self._lock:
            if key not in self._facts:
                self._facts[key] = ServerFacts(url=base_url(provider), model=model)
            return self._facts[key]
