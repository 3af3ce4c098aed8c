"""``reflect mcp``'s start and end: the client's ``initialize`` is answered before the MCP
SDK is imported, since importing it is most of a server's start (0.5 s of 0.55 s here,
seconds on a loaded machine) and a client waits for that answer before anything else;
once served, the process leaves without tearing the SDK's modules down.

The answer is the one the SDK gives (``reflect.integrations.mcp`` serves the rest): the
protocol version is negotiated from the SDK's own registry of versions (its
``mcp_types/version.py``, read alone: the package around it is what costs), the rest is
what the server says of itself. The SDK then reads the same ``initialize`` first, so its
session starts as it always does, and its own reply to it, the same answer, is dropped
(a difference is said on stderr). A first message that is not an ``initialize`` this
module can answer goes to the SDK untouched.
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
    """The SDK's answer to ``line`` when it is an ``initialize`` request well formed
    enough that the SDK would accept it; else None."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not (isinstance(message, dict) and message.get("jsonrpc") == "2.0"
            and message.get("method") == "initialize"
            and isinstance(message.get("id"), int | str)
            and not isinstance(message.get("id"), bool)):
        return None
    params = message.get("params")
    if not (isinstance(params, dict) and isinstance(params.get("protocolVersion"), str)
            and isinstance(params.get("capabilities"), dict) and _named(params.get("clientInfo"))):
        return None
    versions = handshake_versions()
    if versions is None:
        return None
    offered, latest = params["protocolVersion"], versions[-1]
    from reflect import __version__

    return {"jsonrpc": "2.0", "id": message["id"], "result": {
        "capabilities": CAPABILITIES, "instructions": INSTRUCTIONS,
        "protocolVersion": offered if offered in versions else latest,
        "serverInfo": {"name": NAME, "version": __version__}}}


def _named(info: object) -> bool:
    return (isinstance(info, Mapping) and isinstance(info.get("name"), str)
            and isinstance(info.get("version"), str))


def handshake_versions() -> tuple[str, ...] | None:
    """The protocol versions the SDK negotiates by ``initialize``, oldest first, from its
    registry file loaded alone; None when the SDK has no such file (another layout)."""
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
        versions = tuple(module.HANDSHAKE_PROTOCOL_VERSIONS)
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
