"""``reflect mcp``'s start and end: the client's handshake is answered before the MCP SDK
is imported, since importing it is most of a server's start (0.5 s of 0.55 s here, seconds
on a loaded machine) and a client waits for those answers before anything else; once
served, the process leaves without tearing the SDK's modules down.

The same holds for a ``server/discover`` probe, the first message of a client of the
2026-07-28 protocol (Claude Code): it gives up on a server that has not answered within a
few seconds, then sends ``initialize``, which the SDK, locked to the new protocol by the
probe it read, refuses (-32022), and the client starts the server again.

What a client asks next at connect is answered the same way while the SDK loads: the
lists of tools, prompts, resources and resource templates (from ``mcp_listing.json``,
which is written from the SDK server's own lists: ``make mcp-listing``, checked by the
tests), a ``ping``, a ``server/discover`` again, and a subscription to changes of the
lists is acknowledged (Claude Code counts the server connected only then; the SDK holds
the subscription once loaded). A request that needs the SDK (a tool call) waits for it.

Each answer is the one the SDK gives (``reflect.integrations.mcp`` serves the rest): the
protocol version is negotiated from the SDK's own registry of versions (its
``mcp_types/version.py``, read alone: the package around it is what costs), the rest is
what the server says of itself. The SDK then reads every message, those answered too, in
order, so its session goes as it always does, and its own replies to those answered, the
same answers, are dropped (a difference is said on stderr). A first message that is
neither ``initialize`` nor ``server/discover``, or one this module cannot answer as the
SDK would, goes to the SDK untouched, and so does all that follows it.
"""

from __future__ import annotations

import functools
import importlib.util
import io
import json
import queue
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

NAME = "reflect"
INSTRUCTIONS = (
    "Failure memory for this project. Call recall before a task or after a failure; "
    "record_failure when a command fails, record_outcome when a later attempt works.")
# What the server can do, as the SDK's MCPServer says it in its own answer.
CAPABILITIES = {"prompts": {"listChanged": False},
                "resources": {"listChanged": False, "subscribe": False},
                "tools": {"listChanged": False}}
# The same under the 2026-07-28 protocol, where changes are told on subscriptions/listen,
# which the SDK serves.
MODERN_CAPABILITIES = {"prompts": {"listChanged": True},
                       "resources": {"listChanged": True, "subscribe": True},
                       "tools": {"listChanged": True}}
# The keys of a request's ``_meta`` under that protocol (the SDK's ``mcp_types``).
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_KEY = "io.modelcontextprotocol/subscriptionId"
# The first message on a subscription (subscriptions/listen), which such a client waits for
# before it counts the server connected; the changes the SDK tells of when asked.
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
LISTENED = ("toolsListChanged", "promptsListChanged", "resourcesListChanged")
# What the SDK adds to a result under that protocol, beside its serverInfo.
MODERN_RESULT = {"cacheScope": "private", "resultType": "complete", "ttlMs": 0}
# The SDK server's lists, as it answers them under the handshake protocols.
LISTING = Path(__file__).with_name("mcp_listing.json")


def start() -> Inbox:
    """Read the client's first message and answer it when it is an ``initialize`` or a
    ``server/discover``; then read on, answering what can be, until the SDK takes over."""
    stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    first = stdin.readline()
    early = answer(first)
    if early is not None:
        send(early)
    return Inbox(stdin, first, early, json.loads(first)["method"] if early else None)


def send(message: dict[str, Any]) -> None:
    sys.stdout.buffer.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
    sys.stdout.flush()


def answer(line: str, opened_by: str | None = None) -> dict[str, Any] | None:
    """The SDK's answer to ``line`` when it is a request this module answers as the SDK
    would; else None. ``opened_by``: the method of the connection's first message,
    answered already (None: ``line`` is the first)."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not (isinstance(message, dict) and message.get("jsonrpc") == "2.0"
            and isinstance(message.get("id"), int | str)
            and not isinstance(message.get("id"), bool)
            and isinstance(message.get("params", {}), dict)):
        return None
    method, params = message.get("method"), message.get("params", {})
    if opened_by == "server/discover" and method == "subscriptions/listen":
        return _acknowledged(message["id"], params)
    result = _result(method, params, opened_by)
    return None if result is None else {"jsonrpc": "2.0", "id": message["id"], "result": result}


def answering(message: dict[str, Any]) -> tuple[str, object] | None:
    """What a message answers: a request (by its id) or a subscription (by its id); None:
    neither (another notification)."""
    if "method" not in message:
        return "request", message.get("id")
    if message["method"] == ACKNOWLEDGED:
        return "subscription", message.get("params", {}).get("_meta", {}).get(SUBSCRIPTION_KEY)
    return None


def _acknowledged(id: int | str, params: dict[str, Any]) -> dict[str, Any] | None:
    """The SDK's acknowledgement of a subscription to changes of the lists (one to
    resources, or worded otherwise, is left to it)."""
    asked = params.get("notifications")
    if not (_modern(params.get("_meta")) and isinstance(asked, dict) and asked
            and all(k in LISTENED and v is True for k, v in asked.items())):
        return None
    return {"jsonrpc": "2.0", "method": ACKNOWLEDGED,
            "params": {"_meta": {SUBSCRIPTION_KEY: id}, "notifications": asked}}


def _result(method: object, params: dict[str, Any], opened_by: str | None
            ) -> dict[str, Any] | None:
    if opened_by is None:  # the handshake
        return (_initialized(params) if method == "initialize"
                else _discovered(params) if method == "server/discover" else None)
    if opened_by == "server/discover":  # the 2026-07-28 protocol: each request says so
        return (_discovered(params) if method == "server/discover"
                else _listed_modern(method, params))
    if _modern(params.get("_meta")) is not None:  # refused on a connection of the handshake
        return None
    return {} if method == "ping" else _listed(method, params)


def _initialized(params: dict[str, Any]) -> dict[str, Any] | None:
    if not (isinstance(params.get("protocolVersion"), str)
            and isinstance(params.get("capabilities"), dict) and _named(params.get("clientInfo"))):
        return None
    versions = handshake_versions()
    if versions is None:
        return None
    offered, latest = params["protocolVersion"], versions[-1]
    return {"capabilities": CAPABILITIES, "instructions": INSTRUCTIONS,
            "protocolVersion": offered if offered in versions else latest,
            "serverInfo": _server_info()}


def _discovered(params: dict[str, Any]) -> dict[str, Any] | None:
    """The SDK's answer to a probe of the 2026-07-28 protocol at a version it serves (one
    at another version it refuses, which is left to it)."""
    versions = _modern(params.get("_meta"))
    if versions is None:
        return None
    return {**MODERN_RESULT, "capabilities": MODERN_CAPABILITIES,
            "instructions": INSTRUCTIONS, "supportedVersions": list(versions),
            "_meta": {SERVER_INFO_KEY: _server_info()}}


def _modern(meta: object) -> tuple[str, ...] | None:
    """The versions of the 2026-07-28 era the SDK serves when a request's ``_meta`` names
    one of them, with the client's capabilities, as each request of that era does."""
    versions = handshake_versions("MODERN_PROTOCOL_VERSIONS")
    if not (isinstance(meta, dict) and versions and meta.get(VERSION_KEY) in versions
            and isinstance(meta.get(CAPABILITIES_KEY), dict)):
        return None
    return versions


def _listed(method: object, params: dict[str, Any]) -> dict[str, Any] | None:
    """The SDK server's answer to a list it serves, asked for whole (a page by its cursor
    is left to it)."""
    if "cursor" in params:
        return None
    lists = listing()
    return lists.get(method) if isinstance(method, str) and lists else None


def _listed_modern(method: object, params: dict[str, Any]) -> dict[str, Any] | None:
    listed = _listed(method, params) if _modern(params.get("_meta")) else None
    if listed is None:
        return None
    return {**listed, **MODERN_RESULT, "_meta": {SERVER_INFO_KEY: _server_info()}}


@functools.cache
def listing() -> dict[str, dict[str, Any]] | None:
    """Each list the SDK server answers, by method (None: the file is missing or damaged,
    and the SDK answers them all)."""
    try:
        lists = json.loads(LISTING.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return lists if isinstance(lists, dict) else None


def _server_info() -> dict[str, str]:
    from reflect import __version__

    return {"name": NAME, "version": __version__}


def _named(info: object) -> bool:
    return (isinstance(info, Mapping) and isinstance(info.get("name"), str)
            and isinstance(info.get("version"), str))


@functools.cache
def handshake_versions(era: str = "HANDSHAKE_PROTOCOL_VERSIONS") -> tuple[str, ...] | None:
    """The protocol versions the SDK negotiates by ``initialize`` (``era``: or another of
    its registry's lists), oldest first, from its registry file loaded alone; None when
    the SDK has no such file (another layout)."""
    try:
        spec = importlib.util.find_spec("mcp_types")  # finds the package, runs none of it
        if spec is None or spec.origin is None:
            return None
        path = Path(spec.origin).parent / "version.py"
        registry = importlib.util.spec_from_file_location("_reflect_mcp_versions", path)
        if registry is None or registry.loader is None:
            return None
        module = importlib.util.module_from_spec(registry)
        registry.loader.exec_module(module)
        versions = tuple(getattr(module, era))
    except (ImportError, OSError, AttributeError, SyntaxError, TypeError):
        return None
    return versions if versions and all(isinstance(v, str) for v in versions) else None


class Inbox:
    """The server's stdin as the SDK reads it: every line of the client's, in order, each
    as ``readable_line`` makes it. A thread reads ahead, and until the SDK takes over
    (``hand_over``) answers what it can on stdout."""

    def __init__(self, stream: io.TextIOBase, first: str, early: dict[str, Any] | None,
                 opened_by: str | None):
        self.lines: queue.SimpleQueue[str] = queue.SimpleQueue()
        self.lines.put(first)
        self.answered = [early] if early else []
        self.opened_by = opened_by
        self.lock = threading.Lock()  # one writer on stdout at a time, then the SDK alone
        self.serving = False
        if first:
            threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: io.TextIOBase) -> None:
        for line in iter(stream.readline, ""):
            with self.lock:
                early = (None if self.serving or self.opened_by is None
                         else answer(line, self.opened_by))
                if early is not None:
                    send(early)
                    self.answered.append(early)
            self.lines.put(line)
        self.lines.put("")

    def hand_over(self) -> list[dict[str, Any]]:
        """The answers given so far; from now on the SDK answers everything (its stdio
        transport takes stdout over)."""
        with self.lock:
            self.serving = True
            return list(self.answered)

    def readline(self) -> str:
        line = self.lines.get()
        if not line:  # the end, for every later read too
            self.lines.put(line)
            return line
        return readable_line(line)


def readable_line(line: str) -> str:
    """A JSON-RPC line as the SDK can read it. Its parser refuses a lone surrogate
    (``"\\udcff"``, which JavaScript's JSON.stringify writes) and a number past its range
    (an exit code of 5000 digits), and a line it refuses gets no reply at all: the client
    waits forever and the capture is lost. So every string is made storable (capture's
    rule: U+FFFD for a lone surrogate or NUL) and a huge number bounded (the library
    warns and clamps it) before the SDK reads the line; one that is no JSON is left to
    the SDK."""
    from reflect.capture.numbers import whole_number
    from reflect.capture.scrub import storable

    def fixed(value: object) -> object:
        if isinstance(value, str):
            return storable(value)
        if isinstance(value, list):
            return [fixed(v) for v in value]
        if isinstance(value, dict):
            return {storable(k): fixed(v) for k, v in value.items()}
        return value

    try:
        message = json.loads(line, parse_int=whole_number)
    except (ValueError, RecursionError):
        return line
    return json.dumps(fixed(message), ensure_ascii=False) + "\n"
