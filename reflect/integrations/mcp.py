"""``reflect mcp``: the memory as tools of an MCP server over stdio (the ``mcp`` SDK 2.x).

Tools: ``recall``, ``record_failure``, ``record_outcome``, ``teach``, ``search_lessons``,
``show_lesson``. A client keeps what it was told: a run's recall and record_failure answer
with the items of its block it has not been given yet. Forgetting and quarantine stay a
person's commands. A bad argument or an unknown id comes back as a tool error, never as
a crash of the server. Without a ``run`` argument, every call of one server process
belongs to one run.

Like the hooks, the server never loads the embedding model: a recall uses the vectors
already computed and keyword search, and what needs a model (the goal's vector, a new
lesson's) is queued for a detached worker, started in the background. The client's
handshake and lists were answered before this module was imported (``mcp_start``, from
``mcp_listing.json``, which ``write_listing`` writes from this server's own lists); the
store is opened before the first call comes.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections import defaultdict
from collections.abc import Iterable
from typing import IO, TYPE_CHECKING, Any, Self, cast

import anyio
import mcp_types
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.shared.memory import create_client_server_memory_streams
from mcp.shared.message import SessionMessage
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from reflect import Memory, Rejected, Settings, StoreUnavailable, __version__
from reflect.api.context import RunContext
from reflect.base import config, lazy
from reflect.base.text import format_error
from reflect.integrations.mcp_start import INSTRUCTIONS, LISTING, NAME, Inbox, answering
from reflect.integrations.shown import unseen

if TYPE_CHECKING:  # the SDK's protocol of a stream, from a module it keeps private
    from mcp.shared._stream_protocols import WriteStream

LESSON_FIELDS = ("id", "status", "kind", "trigger", "guidance", "resolution", "confidence")


def server(mem: Memory) -> MCPServer:  # noqa: C901 - six small tools, closures over one Memory
    app = MCPServer(NAME, version=__version__, instructions=INSTRUCTIONS)
    # A client keeps its conversation: each run is told an item once (``shown.unseen``).
    shown: defaultdict[str, set[str]] = defaultdict(set)
    # A tool that answers text declares no output schema: given structuredContent as well,
    # a client (Claude Code) shows the model that, an escaped JSON string, not the text.

    def new_items(run: str, goal: str, phase: str, action: str = "") -> tuple[str, int]:
        """The run's block as far as this client has not read it, and how many items the
        whole block holds."""
        rec = mem.recall(run=run or None, goal=goal, phase=phase, action=action)
        key = mem.context.run_id(run or None)  # the run as it is stored, however it is named
        text, digests = unseen(rec, shown[key])
        shown[key].update(digests)
        return (text if digests else ""), len(rec.items)

    @app.tool(structured_output=False)
    def recall(goal: str = "", run: str = "", phase: str = "", action: str = "",
               repeat: bool = False) -> str:
        """This run's recent failures with their hints, and lessons from earlier runs that
        fit the goal: the block to read before the next attempt. Items this run was shown
        already are left out unless ``repeat``: pass repeat=true at a conversation's first
        recall (a new chat, after /clear or a compaction), which holds none of them;
        ``action``: the command about to run."""
        if repeat:
            shown.pop(mem.context.run_id(run or None), None)
        text, items = new_items(run, goal, phase, action)
        mem.ensure_worker()
        if text:
            return text
        if items:
            return (f"Nothing new: the {items} item(s) of this run's block were in an earlier"
                    " reply. If this conversation does not hold it (a new chat, /clear, a"
                    " compaction), call recall with repeat=true to see them again.")
        note = mem.elsewhere()  # started outside the repository whose lessons are stored
        return f"Nothing to recall: {note}." if note else "Nothing to recall."

    @app.tool(structured_output=False)
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
        block, _ = new_items(run, goal, phase)
        mem.ensure_worker()
        recorded = format_error(entry.error_type, entry.message)
        return f"Recorded {entry.failure_id}: {recorded}\n\n{block}"

    @app.tool(structured_output=False)
    def record_outcome(action: str = "", success: bool = True, run: str = "") -> str:
        """Report that an attempt worked (the action that fixed the run's open failures)."""
        if not success:
            return ("A failed attempt resolves nothing: record it with record_failure (its "
                    "command, output and exit code), so that recall shows it and its hint.")
        resolved = mem.outcome(run=run or None, success=success, action=action)
        return f"Resolved {len(resolved)} failure(s): {', '.join(resolved) or 'none open'}."

    @app.tool(structured_output=False)
    def teach(text: str) -> str:
        """A lesson of your own, written "when <trigger>: <guidance>"; returns its id."""
        try:
            return mem.teach(text)
        except ValueError as e:
            raise ToolError(str(e)) from e

    @app.tool()
    def search_lessons(text: str) -> list[dict[str, Any]]:
        """Lessons whose words match the text."""
        return [{k: getattr(lesson, k) for k in LESSON_FIELDS}
                for lesson in mem.search_lessons(text)]

    @app.tool()
    def show_lesson(id: str) -> dict[str, Any]:
        """One lesson with its provenance: the failures it came from and its outcomes."""
        try:  # through JSON: what is no JSON type (a Path, a datetime) becomes its text
            shown: dict[str, Any] = json.loads(json.dumps(mem.lesson(id).to_dict(), default=str))
            return shown
        except LookupError as e:  # an unknown id
            raise ToolError(str(e)) from e

    return app


def serve(stdin: Inbox) -> int:
    """Serve the client on ``stdin`` (its lines as ``readable_line`` makes them, some
    answered already) and stdout."""
    env = os.environ  # the server's run context, read once here
    run = None if env.get("REFLECT_RUN") else f"mcp-{uuid.uuid4().hex[:10]}"
    with Memory(context=RunContext.from_env(env, run=run,
                                            settings=Settings(embed_here=False))) as mem:
        warm(mem)
        anyio.run(_serve_stdio, server(mem), stdin)
    return 0


def warm(mem: Memory) -> None:
    """What a first call would do first, done before it comes: the store opened, the
    project's scope read, a recall's modules imported and their patterns compiled (most
    of a first recall: 20 ms against 1 ms for the next, in process). A store that cannot
    be opened is left to the calls, which say so."""
    import reflect.recall.block  # noqa: F401

    with contextlib.suppress(StoreUnavailable, Rejected, OSError):
        mem.scope  # noqa: B018 - read for its work: the store opened, the scope cached
    lazy.compile_all()


async def _serve_stdio(app: MCPServer, stdin: Inbox) -> None:
    """``app.run("stdio")``, reading ``stdin``, less the replies to requests answered early."""
    early = stdin.hand_over()  # before the transport takes stdout over
    # anyio reads a file's lines by its readline alone
    async with stdio_server(stdin=anyio.wrap_file(cast("IO[str]", stdin))) as (read, write):
        low = app._lowlevel_server  # what app.run("stdio") runs, given these streams
        out = AnsweredEarly(write, early) if early else write
        await low.run(read, out, low.create_initialization_options())


class AnsweredEarly:
    """The server's messages to the client, less its answers to the requests and
    subscriptions ``early`` answered already (one each); one that differs is said on
    stderr."""

    def __init__(self, stream: WriteStream[SessionMessage], early: Iterable[dict[str, Any]]):
        self.stream = stream
        self.early = list(early)

    async def send(self, item: SessionMessage, /) -> None:
        sent = wire(item)
        answers = answering(sent)
        given = next((e for e in self.early if answers and answering(e) == answers), None)
        if given is not None:
            if sent != given:
                config.warn(f"mcp: the SDK answers {json.dumps(sent)}, not "
                            f"{json.dumps(given)} as given")
            self.early.remove(given)
            return
        await self.stream.send(item)

    async def aclose(self) -> None:
        await self.stream.aclose()

    async def __aenter__(self) -> Self:
        await self.stream.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        return await self.stream.__aexit__(*exc_info)


def wire(item: SessionMessage) -> dict[str, Any]:
    """A message as the SDK's stdio transport writes it."""
    sent: dict[str, Any] = item.message.model_dump(by_alias=True, mode="json",
                                                   exclude_unset=True)
    return sent


async def replies(app: MCPServer, messages: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The server's messages to a client sending ``messages`` (JSON-RPC), as they go on
    the wire, each request's answer (a subscription's: its acknowledgement) awaited before
    the next message is sent."""
    low = app._lowlevel_server
    answers: list[dict[str, Any]] = []
    async with (create_client_server_memory_streams() as ((read, write), (s_read, s_write)),
                anyio.create_task_group() as tasks):
        tasks.start_soon(low.run, s_read, s_write, low.create_initialization_options())
        for message in messages:
            parsed = mcp_types.jsonrpc_message_adapter.validate_python(message)
            await write.send(SessionMessage(parsed))
            awaited = ("subscription" if message["method"] == "subscriptions/listen"
                       else "request", message.get("id"))
            while "id" in message:
                got = await read.receive()
                if isinstance(got, Exception):
                    raise got
                answers.append(wire(got))
                if answering(answers[-1]) == awaited:
                    break
        tasks.cancel_scope.cancel()
    return answers


def listed(app: MCPServer) -> dict[str, dict[str, Any]]:
    """The lists the server answers at connect, by method, as a client of the handshake
    protocols is given them: what ``mcp_start`` answers before the SDK is imported."""
    methods = ("tools/list", "prompts/list", "resources/list", "resources/templates/list")
    client = {"name": NAME, "version": __version__}
    handshake: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {},
            "clientInfo": client}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        *({"jsonrpc": "2.0", "id": i, "method": m} for i, m in enumerate(methods, 1))]
    answers = {a["id"]: a for a in anyio.run(replies, app, handshake)}
    return {m: answers[i]["result"] for i, m in enumerate(methods, 1)}


def write_listing() -> None:
    """Write ``mcp_listing.json`` from the server's own lists (``make mcp-listing``)."""
    with Memory(settings=Settings(embed_here=False)) as mem:
        lists = listed(server(mem))
    LISTING.write_text(json.dumps(lists, indent=2) + "\n", encoding="utf-8")
