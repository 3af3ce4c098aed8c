"""``RunContext``: everything a boundary reads of its environment, read once and checked.

A boundary (the command line, a hook, a request the resident helper answers, the MCP
server, mini-swe-agent's agent, a worker) makes one from an environment mapping and passes
it down: nothing under it reads ``REFLECT_*`` again. A detached worker gets it back from
``environ()``, the variables that make the same context."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from reflect.api.settings import Settings
from reflect.base import config
from reflect.base.member import member_id, this_user
from reflect.capture.entry import scrubbed
from reflect.capture.scrub import Scrubber, for_store


@dataclass(frozen=True)
class RunContext:
    home: Path  # the store directory: the SQLite file, and what stays on this machine
    store_url: str  # a shared PostgreSQL store's URL; "" for the SQLite file in ``home``
    run: str  # the default run, as capture stores it (``run_id``)
    member: str  # who its runs are by, as the store keeps it (``member``)
    model: config.ModelSettings | None  # None: no model is ever called
    embeddings: str | None  # the embedding model's spec; None: no dense search
    enabled: bool  # False: the kill switch, capture and recall do nothing
    offline: bool
    settings: Settings
    scrubber: Scrubber = field(compare=False, repr=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ, *,
                 home: str | os.PathLike[str] | None = None, store_url: str | None = None,
                 run: str | None = None, model: str | None = None,
                 embeddings: str | None = None, settings: Settings | None = None) -> RunContext:
        """The context of ``env``; each value given here wins over its variable. A value
        out of range is said in one line, naming its variable, and its default stands."""
        settings = (settings or Settings()).with_env(env)
        place = Path(home) if home is not None else config.default_home(env)
        scrubber = for_store(place, settings.scrub_patterns)
        enabled = config.enabled(env)
        return cls(
            home=place,
            store_url=(env.get("REFLECT_STORE", "") if store_url is None else store_url).strip(),
            run=run_id(scrubber, run or config.default_run(env)),
            member=member(scrubber, config.member_name(env)),
            model=config.model_settings(model, env) if enabled else None,
            embeddings=config.embeddings_spec(embeddings, env) if enabled else None,
            enabled=enabled, offline=config.offline(env), settings=settings, scrubber=scrubber)

    def run_id(self, run: str | None) -> str:
        """``run`` as capture stores it (the default run for None)."""
        return self.run if run is None else run_id(self.scrubber, run)

    def environ(self) -> dict[str, str]:
        """The variables that make this context again in another process (a detached
        worker): its store, run, member, model, embeddings and settings."""
        env = {"REFLECT_HOME": str(self.home), "REFLECT_STORE": self.store_url,
               "REFLECT_RUN": self.run, "REFLECT_MEMBER": self.member,
               "REFLECT_EMBEDDINGS": "off" if self.embeddings is None else self.embeddings,
               "REFLECT_FAILURE_MEMORY": "1" if self.enabled else "0",
               "REFLECT_OFFLINE": "1" if self.offline else ""}
        if self.model is not None:
            env |= config.model_environ(self.model)
        return env | self.settings.environ()


def run_id(scrubber: Scrubber, run: str) -> str:
    """A run id as capture stores it: scrubbed, then cut. Every path that names a run
    (capture, recall, outcome, the listings, what MCP has shown) uses this one form, so a
    run id holding an address finds its own failures."""
    return scrubbed(scrubber, run)[0]


def member(scrubber: Scrubber, name: str) -> str:
    """The member a store shared by several knows this context's runs by: the configured
    ``name`` (scrubbed: a secret pasted there is no name), else this user and host, as a
    digest (``base.member``)."""
    return member_id(scrubber.scrub(name)[0] if name else this_user())
