"""``reflect mcp``: the memory as tools of an MCP server over stdio (the ``mcp`` SDK 2.x).

Tools: ``recall``, ``record_failure``, ``record_outcome``, ``teach``, ``search_lessons``,
``show_lesson``. Forgetting and quarantine stay a person's commands. A bad argument or
an unknown id comes back as a tool error, never as a crash of the server. Without a
``run`` argument, every call of one server process belongs to one run.

Like the hooks, the server never loads the embedding model: a recall uses the vectors
already computed and keyword search, and what needs a model (the goal's vector, a new
lesson's) is queued for a detached worker, started in the background, so the first call
answers as fast as the later ones.
"""

from __future__ import annotations

import io
import json
import os
import sys
import uuid
from typing import IO, Any, cast

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server

from reflect import Memory, Settings, __version__
from reflect.capture.numbers import whole_number
from reflect.capture.scrub import storable
from reflect.text import format_error

LESSON_FIELDS = ("id", "status", "kind", "trigger", "guidance", "resolution", "confidence")


def server(mem: Memory) -> MCPServer:  # noqa: C901 - six small tools, closures over one Memory
    app = MCPServer("reflect", version=__version__, instructions=(
        "Failure memory for this project. Call recall before a task or after a failure; "
        "record_failure when a command fails, record_outcome when a later attempt works."))

    @app.tool()
    def recall(goal: str = "", run: str = "", phase: str = "") -> str:
        """This run's recent failures with their hints, and lessons from earlier runs that
        fit the goal: the block to read before the next attempt."""
        text = mem.recall(run=run or None, goal=goal, phase=phase).text
        mem.ensure_worker()
        if text:
            return text
        note = mem.elsewhere()  # started outside the repository whose lessons are stored
        return f"Nothing to recall: {note}." if note else "Nothing to recall."

    @app.tool()
    def record_failure(action: str, error_text: str = "", exit_code: int | None = None,
                       goal: str = "", phase: str = "", run: str = "") -> str:
        """Record a failed command: what ran, its exit code and its output. Returns the
        failure's id and the run's block, with a hint for this failure."""
        if not (action or error_text or exit_code is not None):
            raise ToolError("give the failed command (action), its output (error_text) "
                            "or its exit code")
        entry = mem.capture(run=run or None, goal=goal, phase=phase, action=action,
                            exit_code=exit_code, error_text=error_text)
        if entry is None:
            return "Failure memory is switched off (REFLECT_FAILURE_MEMORY=0)."
        block = mem.recall(run=entry.run, goal=goal, phase=phase).text
        mem.ensure_worker()
        recorded = format_error(entry.error_type, entry.message)
        return f"Recorded {entry.failure_id}: {recorded}\n\n{block}"

    @app.tool()
    def record_outcome(action: str = "", success: bool = True, run: str = "") -> str:
        """Report that an attempt worked (the action that fixed the run's open failures)."""
        if not success:
            return ("A failed attempt resolves nothing: record it with record_failure (its "
                    "command, output and exit code), so that recall shows it and its hint.")
        resolved = mem.outcome(run=run or None, success=success, action=action)
        return f"Resolved {len(resolved)} failure(s): {', '.join(resolved) or 'none open'}."

    @app.tool()
    def teach(text: str) -> str:
        """A lesson of your own, written "when <trigger>: <guidance>"; returns its id."""
        try:
            return mem.teach(text)
        except ValueError as e:
            raise ToolError(str(e)) from e

    @app.tool()
    def search_lessons(text: str) -> list[dict[str, Any]]:
        """Lessons whose words match the text."""
        return [{k: row.get(k) for k in LESSON_FIELDS} for row in mem.search_lessons(text)]

    @app.tool()
    def show_lesson(id: str) -> dict[str, Any]:
        """One lesson with its provenance: the failures it came from and its outcomes."""
        try:  # through JSON: what is no JSON type (a Path, a datetime) becomes its text
            shown: dict[str, Any] = json.loads(json.dumps(mem.lesson(id), default=str))
            return shown
        except LookupError as e:  # an unknown id
            raise ToolError(str(e)) from e

    return app


def serve() -> int:
    run = os.environ.get("REFLECT_RUN") or f"mcp-{uuid.uuid4().hex[:10]}"
    with Memory(run=run, settings=Settings(embed_here=False)) as mem:
        anyio.run(_serve_stdio, server(mem))
    return 0


async def _serve_stdio(app: MCPServer) -> None:
    """``app.run("stdio")``, reading its stdin through ``readable_line``."""
    lines = Readable(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    # anyio reads a file's lines by its readline alone
    async with stdio_server(stdin=anyio.wrap_file(cast("IO[str]", lines))) as (read, write):
        low = app._lowlevel_server  # what app.run("stdio") runs, given these streams
        await low.run(read, write, low.create_initialization_options())


class Readable:
    """A text stream whose lines are ``readable_line``'s."""

    def __init__(self, stream: io.TextIOBase):
        self.stream = stream

    def readline(self) -> str:
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
    try:
        message = json.loads(line, parse_int=whole_number)
    except (ValueError, RecursionError):
        return line
    return json.dumps(_storable(message), ensure_ascii=False) + "\n"


def _storable(value: object) -> object:
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, list):
        return [_storable(v) for v in value]
    if isinstance(value, dict):
        return {storable(k): _storable(v) for k, v in value.items()}
    return value
