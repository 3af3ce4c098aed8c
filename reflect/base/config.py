"""Settings read from the environment (the table in the README), and the store's location."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from reflect.base.home import default_home as default_home  # the store's location, named here too
from reflect.base.home import repo_root as repo_root
from reflect.base.named import NamedTuple

TYPE_CHECKING = False  # typing's flag (mypy knows it): a hook's process loads no typing
if TYPE_CHECKING:
    from typing import TypeVar

    _N = TypeVar("_N", int, float)
    _D = TypeVar("_D", int, float, None)

DISTRIBUTION = "reflect-memory"  # the name to install: `reflect` on the index is another project
DEFAULT_RUN = "default"
DEFAULT_MAX_TOKENS = 400  # the block's budget, four characters a token
# Seconds a process of one agent step (`reflect capture`, a hook) waits for a store that
# another process holds before it keeps the capture aside (pending.py): a write takes
# milliseconds, so a lock held longer is held for long, and the agent must not wait on it.
STEP_BUSY_TIMEOUT = 0.25
DEFAULT_MAX_FAILURES = 20_000  # about 15 MB of store with its history (bench/store_bound.py)


_stderr_pending = False  # the CLI asked for stderr warnings, set up at the first one


def log_to_stderr(lazily: bool = False) -> None:
    """The CLI's warnings: ``reflect: warning: …`` lines on stderr. ``lazily``: at the
    first warning, for the commands a hook runs per tool call: importing logging costs a
    cold process ~5 ms, and most of them never warn."""
    global _stderr_pending
    _stderr_pending = lazily
    if not lazily:
        import logging

        logging.basicConfig(format="reflect: warning: %(message)s", level=logging.WARNING)


def warn(message: str) -> None:
    """One line on stderr (the logger ``reflect``); the CLI prefixes it with
    ``reflect: warning:``."""
    if _stderr_pending:
        log_to_stderr()
    import logging  # here, not at import: see log_to_stderr

    logging.getLogger("reflect").warning(message)


def enabled(env: Mapping[str, str]) -> bool:
    """``REFLECT_FAILURE_MEMORY=0`` turns capture and recall into silent no-ops."""
    return env.get("REFLECT_FAILURE_MEMORY", "1").strip().lower() not in {"0", "false", "off", "no"}


def offline(env: Mapping[str, str]) -> bool:
    return env.get("REFLECT_OFFLINE", "").strip().lower() in {"1", "true", "on", "yes"}


def embeddings_spec(value: str | None, env: Mapping[str, str]) -> str | None:
    """The embedding model to use: ``value`` (else ``REFLECT_EMBEDDINGS``); "" is the
    bundled model, "hash" the numpy fallback; None when dense search is off."""
    spec = (value if value is not None else env.get("REFLECT_EMBEDDINGS", "")).strip()
    if spec == "off" or offline(env):
        return None
    return spec


def default_run(env: Mapping[str, str]) -> str:
    return env.get("REFLECT_RUN") or DEFAULT_RUN


def member_name(env: Mapping[str, str]) -> str:
    """``REFLECT_MEMBER``: the name a store shared by several knows this member's runs by;
    "" for this user and host (``member.this_user``)."""
    return env.get("REFLECT_MEMBER", "").strip()


class ModelSettings(NamedTuple):
    """How reflection calls a model; absent (None) means no model is ever called. (A named
    tuple: a hook imports this module, and importing dataclasses, with inspect, costs a cold
    process ~8 ms.)"""

    model: str
    api_base: str | None = None
    api_key: str | None = None
    timeout: float = 30.0
    max_tokens: int = 400
    temperature: float = 0.2
    max_cost_usd: float | None = None  # per UTC day, across processes
    max_calls_per_run: int = 50
    prompts: str = ""  # a directory of prompt templates overriding the shipped ones


def model_settings(model: str | None, env: Mapping[str, str]) -> ModelSettings | None:
    """``REFLECT_MODEL`` (or ``model``) names a litellm model; ``REFLECT_OFFLINE`` wins. A
    number out of its range is said in one line and its default stands."""
    model = model or env.get("REFLECT_MODEL", "").strip()
    if not model or offline(env):
        return None
    return ModelSettings(
        model=model,
        api_base=env.get("REFLECT_API_BASE") or None,
        api_key=env.get("REFLECT_API_KEY") or None,
        timeout=_number(env, "REFLECT_MODEL_TIMEOUT", float, 30.0, "above 0"),
        max_cost_usd=_number(env, "REFLECT_MAX_COST_USD", float, None, "0 or more"),
        max_calls_per_run=_number(env, "REFLECT_MAX_CALLS_PER_RUN", int, 50, "0 or more"),
        prompts=env.get("REFLECT_PROMPTS", ""),
    )


# The variable of each of ModelSettings' fields the environment sets.
MODEL_VARIABLES = {"model": "REFLECT_MODEL", "api_base": "REFLECT_API_BASE",
                   "api_key": "REFLECT_API_KEY", "timeout": "REFLECT_MODEL_TIMEOUT",
                   "max_cost_usd": "REFLECT_MAX_COST_USD",
                   "max_calls_per_run": "REFLECT_MAX_CALLS_PER_RUN", "prompts": "REFLECT_PROMPTS"}


def model_environ(model: ModelSettings) -> dict[str, str]:
    """The variables ``model_settings`` reads ``model`` back from."""
    values = model._asdict()
    return {variable: "" if values[name] is None else str(values[name])
            for name, variable in MODEL_VARIABLES.items()}


_RANGES: dict[str, Callable[[float], bool]] = {
    "above 0": lambda n: 0 < n < math.inf, "0 or more": lambda n: 0 <= n < math.inf}


def _number(env: Mapping[str, str], name: str, kind: Callable[[str], _N], default: _D,
            valid: str) -> _N | _D:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        value = None
    if value is None or not _RANGES[valid](value):
        warn(f"{name}={raw!r} is not a number {valid}; using {default}")
        return default
    return value
