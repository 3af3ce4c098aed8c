"""One model call through litellm, with every failure mapped to :class:`ProviderError`.

This is the only module that imports litellm, and only inside :func:`complete`: importing it
takes seconds, and capture and recall must never pay for it. litellm's own retries are off
(one call is one HTTP request): the worker's durable queue decides when to try again, from
``ProviderError.retryable`` and ``retry_after``.
"""

from __future__ import annotations

import email.utils
import os
import re
import time
from dataclasses import dataclass
from typing import Any

from reflect.base.text import clip

__all__ = ["Completion", "ProviderError", "complete", "provider_of"]

# Providers whose wire format has a JSON-object switch that litellm maps response_format to:
# Ollama's "format": "json" works for every model the server runs.
_JSON_PROVIDERS = ("ollama", "ollama_chat")
_REASON_MAX = 200
# "RateLimitError: RateLimitError: OpenAIException - " in front of the provider's words
_PREFIX = re.compile(r"^(?:\w*(?:Error|Exception|Timeout)\b\s*[:-]?\s*)+")


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None  # None when litellm knows no price for the model


class ProviderError(Exception):
    """A call that failed; ``retryable`` says whether the same call may succeed later."""

    def __init__(self, reason: str, *, retryable: bool, retry_after: float | None = None):
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable
        self.retry_after = retry_after  # seconds the provider asked us to wait, when it said


def provider_of(model: str) -> str:
    """The provider a litellm model string goes to, by its prefix (the circuit-breaker key).

    ``ollama`` and ``ollama_chat`` reach the same server. Bare names are guessed the way
    litellm's common cases go: ``gpt-…``/``o1…`` are OpenAI, ``claude-…`` Anthropic.
    """
    model = model.strip().lower()
    if "/" in model:
        prefix = model.split("/", 1)[0]
        return "ollama" if prefix == "ollama_chat" else prefix
    if model.startswith("claude"):
        return "anthropic"
    if model.startswith(("gpt-", "chatgpt-", "o1", "o3", "o4", "text-embedding-", "davinci")):
        return "openai"
    return model or "unknown"


def endpoint(api_base: str) -> str:
    """Where an API base points, without what it may carry besides (``user:pass@``,
    ``?api-key=…``, a fragment): the name the circuit breaker keeps it under."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(api_base.strip())
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # a port that is no number: keep no part of it
        return "unparsable"
    return f"{parts.scheme}://{host}{port}{parts.path}" if parts.scheme else host + parts.path


def complete(
    model: str,
    messages: list[dict[str, str]],
    *,
    timeout: float = 30.0,
    max_tokens: int = 400,
    temperature: float = 0.2,
    api_base: str | None = None,
    api_key: str | None = None,
    json_mode: bool = True,
) -> Completion:
    litellm = _litellm()
    kwargs: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "timeout": timeout,
        "max_tokens": max_tokens,
        "temperature": temperature,
        # One call, one request: litellm turns num_retries=0 into the openai SDK's
        # max_retries=0, so neither layer retries behind the queue's back.
        "num_retries": 0,
        # A parameter a model refuses (temperature on reasoning models) is dropped, not fatal.
        "drop_params": True,
    }
    if api_base:
        kwargs["api_base"] = api_base
    if api_key:
        kwargs["api_key"] = api_key
    if json_mode and _supports_json_mode(litellm, model):
        kwargs["response_format"] = {"type": "json_object"}
    try:
        response = litellm.completion(**kwargs)
    except Exception as e:  # every provider failure becomes a ProviderError
        raise _provider_error(litellm, e, model, api_key) from None
    choices = getattr(response, "choices", None) or []
    text = (choices[0].message.content if choices else None) or ""
    if not text.strip():
        raise ProviderError(f"empty response from {provider_of(model)}", retryable=True)
    usage = getattr(response, "usage", None)
    return Completion(
        text=text,
        prompt_tokens=getattr(usage, "prompt_tokens", None),
        completion_tokens=getattr(usage, "completion_tokens", None),
        cost_usd=_cost(litellm, response),
    )


def _litellm() -> Any:  # litellm has no type stubs
    # Before the import: litellm would otherwise fetch its price list (and other catalogs)
    # from GitHub on import. An explicit setting in the environment wins.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
    import litellm as module

    litellm: Any = module  # its re-exports are not declared as such
    litellm.telemetry = False  # older releases report usage unless told not to
    litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banner on errors
    litellm.set_verbose = False
    return litellm


def _supports_json_mode(litellm: Any, model: str) -> bool:
    """Whether asking for a JSON object is known to work; when unsure, do not ask.

    An OpenAI-compatible server behind api_base may reject response_format with a 400, and
    Anthropic has no JSON-object switch (litellm only emulates schemas with a forced tool),
    so only providers with a native switch and models litellm's map vouches for get it.
    """
    try:
        name, provider, _, _ = litellm.get_llm_provider(model)
        if "response_format" not in (
            litellm.get_supported_openai_params(model=name, custom_llm_provider=provider) or ()
        ):
            return False
        if provider in _JSON_PROVIDERS:
            return True
        return provider != "anthropic" and bool(
            litellm.supports_response_schema(model=name, custom_llm_provider=provider)
        )
    except Exception:  # an unknown model is simply not vouched for
        return False


def _cost(litellm: Any, response: Any) -> float | None:
    try:
        cost = litellm.completion_cost(completion_response=response)
    except Exception:  # no price for this model: cost unknown, not an error
        return None
    return float(cost) if isinstance(cost, int | float) else None


def _provider_error(litellm: Any, e: Exception, model: str, api_key: str | None) -> ProviderError:
    provider = provider_of(model)
    status = getattr(e, "status_code", None)
    status = status if isinstance(status, int) else None
    detail = _detail(e, api_key)
    if isinstance(e, litellm.Timeout) or _is_httpx(e, "TimeoutException"):
        return ProviderError(f"{provider} timed out: {detail}", retryable=True)
    if isinstance(e, litellm.RateLimitError) or status == 429:
        return ProviderError(
            f"{provider} rate limit (429): {detail}", retryable=True, retry_after=_retry_after(e)
        )
    if isinstance(e, litellm.APIConnectionError) or _is_httpx(e, "TransportError"):
        return ProviderError(f"cannot reach {provider}: {detail}", retryable=True)
    if isinstance(e, litellm.ContextWindowExceededError):
        return ProviderError(
            f"the prompt exceeds {model}'s context window: use a model with a larger one",
            retryable=False,
        )
    if status in (401, 403):
        return ProviderError(
            f"{provider} refused the credentials ({status}): set REFLECT_API_KEY or the "
            f"provider's own key variable: {detail}",
            retryable=False,
        )
    if status == 404:
        return ProviderError(
            f"{provider} does not know model {model!r} (404): check REFLECT_MODEL: {detail}",
            retryable=False,
        )
    if status is not None and status >= 500:
        return ProviderError(f"{provider} server error ({status}): {detail}", retryable=True)
    if status in (408, 409):  # request timeout, conflict: the openai SDK retries these too
        return ProviderError(f"{provider} temporary error ({status}): {detail}", retryable=True)
    label = f"{provider} rejected the request ({status})" if status else f"{provider} call failed"
    return ProviderError(f"{label}: {detail}", retryable=False)


def _is_httpx(e: Exception, name: str) -> bool:
    import httpx

    return isinstance(e, getattr(httpx, name))


def _detail(e: Exception, api_key: str | None) -> str:
    """The provider's own words, short, without litellm's prefixes or anything secret."""
    from reflect.capture.scrub import Scrubber

    text = str(getattr(e, "message", "") or e or type(e).__name__).split("\n", 1)[0]
    text = _PREFIX.sub("", text.replace("litellm.", "")) or type(e).__name__
    if api_key:
        text = text.replace(api_key, "[REDACTED:api_key]")
    text, _ = Scrubber().scrub(text)
    return clip(text, _REASON_MAX)


def _retry_after(e: Exception) -> float | None:
    """Seconds from the provider's Retry-After header (seconds or an HTTP date)."""
    import httpx

    # The openai SDK keeps the reply on e.response; litellm's own HTTP handler (Anthropic,
    # Ollama) hands back a stand-in response and the real headers separately.
    headers = httpx.Headers(getattr(e, "litellm_response_headers", None) or {})
    headers.update(getattr(getattr(e, "response", None), "headers", None) or {})
    if value := headers.get("retry-after-ms"):
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
