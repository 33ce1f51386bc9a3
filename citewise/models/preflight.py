"""Model settings checked before a run starts: a wrong name, key or base URL said at once, not after start-up.

A run loads the embedding model and opens the index (seconds on a cold start) before its first request, so a
typo in `--model`, a key that is not the server's, or a base URL where nothing listens was reported only then.
`check_models` reads what the specs need from the environment (`specs.credentials`) and asks the server for
its list of models (`GET {base}/models`, one request, PREFLIGHT_TIMEOUT seconds):

- nothing listens at the base URL: `ProviderUnreachable`, as the run's first request would raise;
- the server refuses the key (HTTP 401 / 403): the `openai.APIStatusError` the run's request would meet;
- the server lists its models and the spec's is not among them: an error listing them, except where one
  model is served (llama.cpp serves its one model under any name: a note in the log, not an error);
- no answer in time, no list (HTTP 404), or a reply that is not a list: nothing is decided here; the run goes
  on and its own retries and messages apply.

Hosted APIs are asked the same way (OpenAI lists the models a key may use); Cohere is not asked.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import httpx

from citewise.models.faults import ProviderUnreachable
from citewise.models.specs import ModelSetupError, credentials, parse_model

logger = logging.getLogger(__name__)

PREFLIGHT_TIMEOUT = 1.0
"""Seconds to wait for a server's list of models before going on without it."""
OPENAI_URL = "https://api.openai.com/v1"


def check_models(specs: Iterable[str | None]) -> None:
    """Check each model spec's name, credentials and server before the run starts (see the module docstring).

    Raises:
        ModelSetupError: the spec is wrong, its key or base URL unset, or the server does not serve the model.
        ProviderUnreachable: nothing listens at the base URL.
        openai.APIStatusError: the server refused the key.
    """
    asked: set[tuple[str, str]] = set()
    for spec in specs:
        if not spec:
            continue
        provider, name = parse_model(spec)
        key, base_url = credentials(spec)
        if provider == "cohere":
            continue
        url = (base_url or OPENAI_URL).rstrip("/")
        if (url, name) in asked:
            continue
        asked.add((url, name))
        served = _served(url, key)
        if served is None or name in served:
            continue
        listed = ", ".join(sorted(served)[:8]) + (" ..." if len(served) > 8 else "")
        if len(served) == 1:
            logger.info("%s serves %s, asked for %r: its one model answers", url, listed, name)
            continue
        raise ModelSetupError(
            f"model {name!r} is not served at {url}; it serves: {listed} (--model {provider}/NAME)"
        )


def _served(url: str, key: str) -> set[str] | None:
    """The ids of the models a server lists (None when it does not say: no list, a slow or odd reply).

    Raises:
        ProviderUnreachable: nothing listens at `url`.
        openai.APIStatusError: the server refused the key.
    """
    try:
        reply = httpx.get(
            f"{url}/models", headers={"Authorization": f"Bearer {key}"}, timeout=PREFLIGHT_TIMEOUT
        )
    except httpx.ConnectError as error:
        raise ProviderUnreachable.at(url) from error
    except httpx.HTTPError:
        return None  # slow or odd: the run's own requests will tell
    if reply.status_code in (401, 403):  # the error the run's first request would have met
        import openai

        refused = openai.AuthenticationError if reply.status_code == 401 else openai.PermissionDeniedError
        # openai 3 types the response as httpx2's; httpx's has all the error reads (request, status_code,
        # headers). openai 2 types it as httpx's, where the ignore is unused.
        raise refused(
            f"GET {url}/models: HTTP {reply.status_code}",
            response=reply,  # type: ignore[arg-type, unused-ignore]
            body=None,
        )
    if reply.status_code != 200:
        return None
    try:
        data = reply.json().get("data")
    except (ValueError, AttributeError):
        return None
    if not isinstance(data, list):
        return None
    served = {str(item.get("id")) for item in data if isinstance(item, dict) and item.get("id")}
    return served or None
