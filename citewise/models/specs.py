"""Model specs: "provider/model" -> a LangChain chat model (OpenAI, OpenAI-compatible servers, Cohere)."""

from __future__ import annotations

import logging
import os
import threading
import urllib.parse
import warnings
from typing import TYPE_CHECKING, Any

import httpx
from langchain_core.language_models import BaseChatModel

if TYPE_CHECKING:
    from langchain_core.caches import BaseCache

logger = logging.getLogger(__name__)


OPENAI_COMPATIBLE = ("ollama", "vllm", "llamacpp", "lmstudio")
"""Providers that mean "an OpenAI-compatible server at OPENAI_BASE_URL"."""
PROVIDERS = ("openai", "cohere", *OPENAI_COMPATIBLE)
"""Every provider a model spec may name."""
PLACEHOLDER_KEY = "not-needed"
"""The API key sent to an OpenAI-compatible server when OPENAI_API_KEY is not set (most ignore it)."""

_EXAMPLE_BASE_URLS = {
    "ollama": "http://localhost:11434/v1",
    "vllm": "http://localhost:8000/v1",
    "llamacpp": "http://localhost:8080/v1",
    "lmstudio": "http://localhost:1234/v1",
}


class ModelSetupError(ValueError):
    """A model spec or its credentials are wrong (unknown provider, missing key or base URL)."""


def env_setting(name: str) -> str | None:
    """An environment variable's value, None when unset or empty."""
    return os.environ.get(name) or None


# model specs and chat models ----------------------------------------------------------------------------


def parse_model(spec: str) -> tuple[str, str]:
    """Split "provider/model" into (provider, model); the model part may itself contain "/" or ":".

    Raises:
        ModelSetupError: No "/", an empty part, or a provider citewise does not know.
    """
    accepted = ", ".join(PROVIDERS)
    if not isinstance(spec, str) or "/" not in spec:
        raise ModelSetupError(
            f"model {spec!r} must be written as provider/model, e.g. openai/gpt-4o-mini or "
            f"cohere/command-r-plus (providers: {accepted})"
        )
    provider, _, name = spec.strip().partition("/")
    provider, name = provider.strip().lower(), name.strip()
    if provider not in PROVIDERS:
        raise ModelSetupError(
            f"unknown model provider {provider!r} in {spec!r}; accepted providers: {accepted}"
        )
    if not name:
        raise ModelSetupError(f"model {spec!r} names no model after {provider}/")
    return provider, name


def credentials(spec: str) -> tuple[str, str | None]:
    """The API key and base URL a model spec is reached with, from the environment.

    OpenAI-compatible servers: OPENAI_BASE_URL, and OPENAI_API_KEY or a placeholder when a base URL is set;
    Cohere: COHERE_API_KEY (and COHERE_BASE_URL).

    Raises:
        ModelSetupError: Bad spec, or the key / base URL the provider needs is not set.
    """
    provider, _ = parse_model(spec)
    if provider == "cohere":
        key = env_setting("COHERE_API_KEY")
        if not key:
            raise ModelSetupError(f"{spec} needs the COHERE_API_KEY environment variable")
        return key, base_url_setting("COHERE_BASE_URL")
    base_url = base_url_setting("OPENAI_BASE_URL")
    if provider != "openai" and not base_url:
        raise ModelSetupError(
            f"{spec} runs on an OpenAI-compatible server: set OPENAI_BASE_URL "
            f"(e.g. {_EXAMPLE_BASE_URLS[provider]})"
        )
    key = env_setting("OPENAI_API_KEY") or (PLACEHOLDER_KEY if base_url else None)
    if not key:
        raise ModelSetupError(
            f"{spec} needs the OPENAI_API_KEY environment variable "
            "(or OPENAI_BASE_URL for an OpenAI-compatible server)"
        )
    return key, base_url


def base_url_setting(name: str) -> str | None:
    """A base URL environment variable's value, None when unset.

    Raises:
        ModelSetupError: It is not an http(s) URL with a host: "localhost:8080/v1" or "notaurl" was retried
            as a connection error for 18 s before "check its URL" (the client reads it as a relative path).
    """
    value = env_setting(name)
    if value is None:
        return None
    parts = urllib.parse.urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ModelSetupError(
            f"{name}={value!r} is not an http(s) URL with a host: write it in full, "
            f"e.g. {_EXAMPLE_BASE_URLS['llamacpp']}"
        )
    return value


def speaks_openai(provider: str) -> bool:
    """True for OpenAI and OpenAI-compatible servers (they take `n`, `response_format` and tools)."""
    return provider == "openai" or provider in OPENAI_COMPATIBLE


class ResponseCaches:
    """One langchain_community SQLiteCache per database path, for the models one way in builds.

    Held by citewise.core.resources.Resources (not by this module), so every pair of models built for the
    same path shares one connection pool instead of opening its own each turn.
    """

    def __init__(self) -> None:
        """No cache opened yet."""
        self._caches: dict[str, BaseCache] = {}
        self._lock = threading.Lock()

    def get(self, path: str) -> BaseCache:
        """The cache at `path` (its folder made), opened on first use."""
        with self._lock:
            if path not in self._caches:
                self._caches[path] = sqlite_cache(path)
            return self._caches[path]


def sqlite_cache(path: str) -> BaseCache:
    """A new langchain_community SQLiteCache at `path` (its folder made)."""
    with warnings.catch_warnings():
        # langchain-community 0.4 warns on import that it is being sunset; the cache still works
        warnings.simplefilter("ignore", DeprecationWarning)
        from langchain_community.cache import SQLiteCache
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    return SQLiteCache(database_path=path)


def chat_model(
    spec: str, *, temperature: float, timeout: float, cache: BaseCache | None = None
) -> BaseChatModel:
    """A LangChain chat model for "provider/model", with no client-side retries and an optional SQLite cache.

    OpenAI-compatible servers are reached through OPENAI_BASE_URL (key: OPENAI_API_KEY, or a placeholder when
    a base URL is set); Cohere needs COHERE_API_KEY (and takes COHERE_BASE_URL).

    Raises:
        ModelSetupError: Bad spec, or the key / base URL the provider needs is not set.
    """
    from langchain.chat_models import init_chat_model

    provider, name = parse_model(spec)
    key, base_url = credentials(spec)
    options: dict[str, Any] = {"temperature": temperature}
    if cache is not None:
        options["cache"] = cache
    if provider == "cohere":
        options.update(model_provider="cohere", cohere_api_key=key, timeout_seconds=timeout)
        if base_url:
            options["base_url"] = base_url
    else:
        options.update(
            model_provider="openai",
            api_key=key,
            base_url=base_url,
            max_retries=0,  # tenacity retries; the openai client's own retries would multiply them
            timeout=timeout,
            use_responses_api=False,  # Chat Completions: the API that takes `n` and that local servers speak
            stream_usage=True,  # token usage of the streamed answer too
            # A client of its own: langchain-openai otherwise shares one cached async client per base URL
            # across event loops, and a second asyncio.run (the next chat turn) fails on the closed loop.
            http_async_client=httpx.AsyncClient(timeout=timeout),
        )
    return init_chat_model(name, **options)
