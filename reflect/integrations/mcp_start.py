"""``reflect mcp``'s start and end: the client's ``initialize`` is answered before the MCP
SDK is imported, since importing it is most of a server's start (0.5 s of 0.55 s here,
seconds on a loaded machine) and a client waits for that answer before anything else;
once served, the process leaves without tearing the SDK's modules down.

The same holds for a ``server/discover`` probe, the first message of a client of the
2026-07-28 protocol (Claude Code): it gives up on a server that has not answered within a
few seconds, then sends ``initialize``, which the SDK, locked to the new protocol by the
probe it read, refuses (-32022), and the client starts the server again.

The answer is the one the SDK gives (``reflect.integrations.mcp`` serves the rest): the
protocol version is negotiated from the SDK's own registry of versions (its
``mcp_types/version.py``, read alone: the package around it is what costs), the rest is
what the server says of itself. The SDK then reads the same message first, so its
session starts as it always does, and its own reply to it, the same answer, is dropped
(a difference is said on stderr). A first message that is neither, or one this module
cannot answer as the SDK would, goes to the SDK untouched.
"""

from __future__ import annotations

import atexit
import importlib.util
import io
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

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


def start() -> tuple[Readable, dict[str, Any] | None]:
    """Read the client's first message and answer it when it is an ``initialize``: the
    server's stdin for the SDK (that message first), and the answer given (None: none)."""
    stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    first = stdin.readline()
    early = answer(first)
    if early is not None:
        sys.stdout.buffer.write(json.dumps(early, separators=(",", ":")).encode() + b"\n")
        sys.stdout.flush()
    return Readable(stdin, readable_line(first) if first else first), early


def leave(code: int) -> NoReturn:
    """Exit once served and the store closed. What is left then is the interpreter's
    teardown of the SDK's modules, ~0.2 s here, which a client waits for: the exit
    handlers run, the teardown is skipped."""
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def answer(line: str) -> dict[str, Any] | None:
    """The SDK's answer to ``line`` when it is an ``initialize`` or ``server/discover``
    request well formed enough that the SDK would accept it; else None."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not (isinstance(message, dict) and message.get("jsonrpc") == "2.0"
            and isinstance(message.get("id"), int | str)
            and not isinstance(message.get("id"), bool)
            and isinstance(message.get("params"), dict)):
        return None
    method = message.get("method")
    result = (_initialized(message["params"]) if method == "initialize"
              else _discovered(message["params"]) if method == "server/discover" else None)
    return None if result is None else {"jsonrpc": "2.0", "id": message["id"], "result": result}


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
    meta = params.get("_meta")
    versions = handshake_versions("MODERN_PROTOCOL_VERSIONS")
    if not (isinstance(meta, dict) and versions and meta.get(VERSION_KEY) in versions
            and isinstance(meta.get(CAPABILITIES_KEY), dict)):
        return None
    return {"cacheScope": "private", "capabilities": MODERN_CAPABILITIES,
            "instructions": INSTRUCTIONS, "resultType": "complete",
            "supportedVersions": list(versions), "ttlMs": 0,
            "_meta": {SERVER_INFO_KEY: _server_info()}}


def _server_info() -> dict[str, str]:
    from reflect import __version__

    return {"name": NAME, "version": __version__}


def _named(info: object) -> bool:
    return (isinstance(info, Mapping) and isinstance(info.get("name"), str)
            and isinstance(info.get("version"), str))


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


class Readable:
    """The server's stdin as the SDK reads it: ``first`` (the line already read), then
    the rest, each line as ``readable_line`` makes it."""

    def __init__(self, stream: io.TextIOBase, first: str):
        self.stream = stream
        self.first: str | None = first

    def readline(self) -> str:
        if self.first is not None:
            line, self.first = self.first, None
            return line
        line = self.stream.readline()
        return readable_line(line) if line else line


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
