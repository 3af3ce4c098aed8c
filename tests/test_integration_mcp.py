"""``reflect mcp`` through the SDK's own client: a server in a child process over stdio."""

import os
import sys

import anyio
from conftest import NO_TABLE
from mcp import ClientSession, StdioServerParameters, stdio_client

from reflect import Memory
from reflect.text import text_key

TOOLS = {"recall", "record_failure", "record_outcome", "teach", "search_lessons", "show_lesson"}


def session(calls):
    """Run ``calls(session)`` against a fresh ``reflect mcp`` server; returns its result."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "reflect", "mcp"], cwd=os.getcwd(),
        env=dict(os.environ))

    async def main():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            return await calls(s)

    return anyio.run(main)


def test_the_server_reports_the_package_version():
    from importlib.metadata import version

    import reflect

    params = StdioServerParameters(command=sys.executable, args=["-m", "reflect", "mcp"],
                                   cwd=os.getcwd(), env=dict(os.environ))

    async def main():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            return await s.initialize()

    info = anyio.run(main).server_info
    assert (info.name, info.version) == ("reflect", reflect.__version__)
    assert info.version == version("reflect-memory")


def text(result) -> str:
    return "".join(c.text for c in result.content)


def test_every_tool_over_stdio():
    async def calls(s):
        listed = {t.name for t in (await s.list_tools()).tools}
        recorded = await s.call_tool("record_failure", {
            "action": "python repro.py", "exit_code": 1, "error_text": NO_TABLE,
            "goal": "Fix the user count", "run": "task-1"})
        recalled = await s.call_tool("recall", {"goal": "Fix the user count", "run": "task-1"})
        outcome = await s.call_tool("record_outcome", {
            "action": "python manage.py migrate && python repro.py", "run": "task-1"})
        taught = await s.call_tool("teach", {
            "text": "when running the tests: use python -m pytest -x"})
        found = await s.call_tool("search_lessons", {"text": "auth_user"})
        return listed, recorded, recalled, outcome, taught, found

    listed, recorded, recalled, outcome, taught, found = session(calls)
    assert listed == TOOLS
    assert not recorded.is_error and "no such table" in text(recorded)
    assert "python repro.py" in text(recalled)
    assert "Resolved 1 failure(s)" in text(outcome)
    assert text(taught).startswith("L-")
    [lesson] = found.structured_content["result"]
    with Memory() as mem:
        [entry] = mem.failures(run="task-1")
        assert "python manage.py migrate && python repro.py" in entry.resolution
        assert mem.lesson(text(taught))["pinned"]

    async def show(s):
        return await s.call_tool("show_lesson", {"id": lesson["id"]})

    assert "auth_user" in text(session(show))


def test_errors_come_back_as_tool_errors_and_the_server_goes_on():
    async def calls(s):
        results = [await s.call_tool("show_lesson", {"id": "L-0000000000"}),
                   await s.call_tool("teach", {"text": "no trigger here"}),
                   await s.call_tool("record_failure", {}),
                   await s.call_tool("recall", {"goal": 3})]
        return results, await s.call_tool("recall", {"goal": "still here"})

    errors, after = session(calls)
    assert all(r.is_error for r in errors)
    assert "reflect lessons list" in text(errors[0]) and "when <trigger>" in text(errors[1])
    assert not after.is_error


def test_the_first_recall_embeds_nothing_in_the_server():
    """The server never loads the embedding model: the goal's vector is left to a worker
    (the hooks' rule), so no first call waits for a model to load."""
    goal = "Count the users in the new table"
    with Memory() as mem:
        mem.capture(run="earlier", action="python repro.py", exit_code=1, error_text=NO_TABLE)

    async def calls(s):
        return await s.call_tool("recall", {"goal": goal})

    assert not session(calls).is_error
    with Memory() as mem:  # not computed in the server: queued
        assert mem.store.text_vector(text_key(goal), mem.vectors.model_name()) is None
        assert mem.status()["jobs"]


def test_a_failed_outcome_says_what_to_do():
    async def calls(s):
        return await s.call_tool("record_outcome", {"action": "pytest", "success": False})

    said = text(session(calls))
    assert "record_failure" in said and "none open" not in said
