"""``reflect mcp`` through the SDK's own client: a server in a child process over stdio."""

import json
import os
import select
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from conftest import NO_TABLE
from mcp import ClientSession, StdioServerParameters, stdio_client

from reflect import Memory
from reflect.api.memory import port
from reflect.base.text import text_key
from reflect.capture.scrub import storable

TOOLS = {"recall", "record_failure", "record_outcome", "teach", "search_lessons", "show_lesson"}


def session(calls, args=("-m", "reflect", "mcp")):
    """Run ``calls(session)`` against a fresh ``reflect mcp`` server; returns its result.
    A call that gets no reply fails the test in 30 s instead of waiting forever."""
    params = StdioServerParameters(command=sys.executable, args=list(args), cwd=os.getcwd(),
                                   env=dict(os.environ))

    async def main():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            with anyio.fail_after(30):
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
    assert "python repro.py" in text(recorded)  # the run's block came with the record
    assert text(recalled).startswith("Nothing new")
    assert "Resolved 1 failure(s)" in text(outcome)
    assert text(taught).startswith("L-")
    [lesson] = found.structured_content["result"]
    with Memory() as mem:
        [entry] = mem.failures(run="task-1")
        assert "python manage.py migrate && python repro.py" in entry.resolution
        assert mem.lesson(text(taught)).pinned

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
        assert port(mem).store.text_vector(text_key(goal), port(mem).vectors.model_name()) is None
        assert mem.status().jobs


def test_a_failed_outcome_says_what_to_do():
    async def calls(s):
        return await s.call_tool("record_outcome", {"action": "pytest", "success": False})

    said = text(session(calls))
    assert "record_failure" in said and "none open" not in said


LONE = "LONE-SURROGATE"
# Between the SDK's client and the server: writes LONE as a lone surrogate's escape, as a
# client whose JSON encoder takes one does (JavaScript's JSON.stringify); the SDK's own
# encoder refuses to send one.
SURROGATE_WRITER = f"""
import subprocess, sys
server = subprocess.Popen([sys.executable, "-m", "reflect", "mcp"], stdin=subprocess.PIPE)
for line in sys.stdin.buffer:
    server.stdin.write(line.replace(b"{LONE}", rb"\\udcff"))
    server.stdin.flush()
server.stdin.close()
server.wait()
"""


def test_a_lone_surrogate_gets_a_reply_and_keeps_the_capture():
    async def calls(s):
        return await s.call_tool("record_failure", {
            "action": f"python x{LONE}.py", "error_text": f"ValueError: bad {LONE} byte",
            "goal": f"g{LONE}", "run": "lone"})

    assert not session(calls, args=("-c", SURROGATE_WRITER)).is_error
    with Memory() as mem:
        [entry] = mem.failures(run="lone")
    shown = storable("\udcff")  # the capture CLI's rule for invalid UTF-8 in argv
    assert "\udcff" not in shown and (entry.action, entry.message, entry.goal) == (
        f"python x{shown}.py", f"bad {shown} byte", f"g{shown}")


def test_an_exit_code_of_5000_digits_gets_a_reply_and_keeps_the_capture():
    sys.set_int_max_str_digits(0)  # the client's own encoder writes it

    async def calls(s):
        return await s.call_tool("record_failure", {
            "action": "python big.py", "exit_code": int("9" * 5000), "run": "big"})

    assert not session(calls).is_error
    with Memory() as mem:
        [entry] = mem.failures(run="big")
    assert entry.action == "python big.py" and entry.exit_code == 2**63 - 1


def test_a_nul_byte_is_not_stored_raw():
    async def calls(s):
        return await s.call_tool("record_failure", {
            "action": "python\x00 nul.py", "error_text": "ValueError: n\x00ul", "goal": "g\x00",
            "phase": "p\x00", "run": "nul\x00run"})

    assert not session(calls).is_error
    with Memory() as mem:
        [entry] = mem.failures()
    stored = [v for v in entry.to_dict().values() if isinstance(v, str)]
    assert not any("\x00" in v for v in stored)
    assert (entry.action, entry.run) == ("python\ufffd nul.py", "nul\ufffdrun")


def test_a_search_of_a_megabyte_answers():
    """bench/bounds.py times it."""
    with Memory() as mem:
        mem.capture(run="a", exit_code=1, error_text=NO_TABLE)

    async def calls(s):
        return await s.call_tool("search_lessons", {"text": "auth_user " * 100_000})

    found = session(calls)
    assert not found.is_error
    assert found.structured_content["result"]  # its words still find the lesson


def test_an_empty_recall_outside_the_repository_says_where_it_looked(tmp_path, monkeypatch):
    """The store holds a repository's lessons; the server was started outside it."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    monkeypatch.chdir(project)
    with Memory() as mem:
        mem.capture(run="a", exit_code=1, error_text=NO_TABLE)
    monkeypatch.chdir(tmp_path)

    async def calls(s):
        return await s.call_tool("recall", {"run": "b"})

    answer = session(calls).content[0].text
    assert answer.startswith("Nothing to recall: looked in the lessons of ")
    assert f"{tmp_path}, which is in no git repository" in answer
    assert "1 lesson(s) of other repositories" in answer


# The server with the SDK's import held back until a file exists: what it answers before
# then, it answers without the SDK. Held in the module's execution, not in its look-up,
# which holds the interpreter's import lock: the server's other thread imports as it goes.
HELD_SDK = """
import importlib.machinery, os, sys, time
class Held:
    def __init__(self, loader):
        self.loader = loader
    def create_module(self, spec):
        return self.loader.create_module(spec)
    def exec_module(self, module):
        while not os.path.exists(sys.argv[1]):
            time.sleep(0.01)
        self.loader.exec_module(module)
class HoldTheSDK:
    def find_spec(self, name, path=None, target=None):
        if name != "mcp.server":  # deep in `import mcp`, and in no look-up for it
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        spec.loader = Held(spec.loader)
        return spec
sys.meta_path.insert(0, HoldTheSDK())
from reflect.cli.main import main
sys.exit(main(["mcp"]))
"""


def initialize(version: str = "2025-06-18", id: int = 1) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}}).encode() + b"\n"


def held_server(flag: Path) -> subprocess.Popen:
    """The server, its SDK held back until ``flag`` exists; its output unbuffered here, so
    that ``reply`` sees each line as it comes."""
    return subprocess.Popen([sys.executable, "-c", HELD_SDK, str(flag)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)


def reply(server: subprocess.Popen, seconds: float = 30) -> dict:
    """The server's next line, or a failure once ``seconds`` have passed without one."""
    if not select.select([server.stdout], [], [], seconds)[0]:
        raise AssertionError(f"no answer within {seconds} s")
    return json.loads(server.stdout.readline())


def test_initialize_is_answered_before_the_sdk_is_imported(tmp_path):
    flag = tmp_path / "let-the-sdk-load"
    server = held_server(flag)
    try:
        server.stdin.write(initialize())
        server.stdin.flush()
        answered = reply(server)
        assert answered["id"] == 1 and answered["result"]["serverInfo"]["name"] == "reflect"
        assert not flag.exists()  # the SDK was still held back: answered without it
        flag.touch()
        server.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n'
                           b'{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}\n')
        server.stdin.flush()
        # Then the SDK serves: the next message is the tools, not its own answer to the
        # initialize again.
        listed = reply(server, 60)
        assert listed["id"] == 2 and {t["name"] for t in listed["result"]["tools"]} == TOOLS
        server.stdin.close()
        assert server.wait(60) == 0
        assert server.stderr.read() == b""
    finally:
        flag.touch()
        server.kill()
        server.wait()


@pytest.mark.parametrize("version", ["2025-06-18", "2024-11-05", "1999-01-01"])
def test_the_early_answer_is_the_sdk_s_own(version):
    """The server compares what the SDK answers to the initialize it reads after its import
    with what was sent before it, and says so on stderr when they differ; the SDK's own
    client takes the answer."""
    done = subprocess.run([sys.executable, "-m", "reflect", "mcp"], input=initialize(version),
                          capture_output=True, timeout=60)
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    [line] = done.stdout.splitlines()  # one answer, not two
    result = json.loads(line)["result"]
    assert result["protocolVersion"] == (version if version != "1999-01-01" else "2025-11-25")

    async def calls(s):
        return await s.list_tools()

    assert {t.name for t in session(calls).tools} == TOOLS


def test_a_run_is_told_each_item_once_unless_it_asks_again():
    """An MCP client keeps its conversation: the house rules and a failure already in it
    are not sent again; a new failure is, alone; repeat=true sends the whole block."""
    with Memory() as mem:
        for i in range(3):  # three earlier runs make a house rule
            mem.capture(run=f"old{i}", action="pytest -q", exit_code=1,
                        error_text="ModuleNotFoundError: No module named 'yaml'")

    async def calls(s):
        first = await s.call_tool("recall", {"goal": "Fix the user count", "run": "t"})
        again = await s.call_tool("recall", {"goal": "Fix the user count", "run": "t"})
        recorded = await s.call_tool("record_failure", {
            "action": "python repro.py", "exit_code": 1, "error_text": NO_TABLE, "run": "t"})
        after = await s.call_tool("recall", {"goal": "Fix the user count", "run": "t"})
        whole = await s.call_tool("recall", {"goal": "Fix the user count", "run": "t",
                                             "repeat": True})
        other = await s.call_tool("recall", {"goal": "Fix the user count", "run": "u"})
        return first, again, recorded, after, whole, other

    first, again, recorded, after, whole, other = map(text, session(calls))
    assert first.startswith("HOUSE RULES") and "yaml" in first, first
    assert again.startswith("Nothing new: the 1 item(s)"), again
    assert "a new chat" in again and "repeat=true" in again  # what a new conversation does
    assert "no such table" in recorded and "HOUSE RULES" not in recorded, recorded
    assert after.startswith("Nothing new"), after
    assert "HOUSE RULES" in whole and "no such table" in whole, whole
    assert other.startswith("HOUSE RULES"), other  # another run is told from the start


def test_the_model_is_told_to_ask_for_the_whole_block_in_a_new_conversation():
    """The server cannot see a new chat, /clear or a compaction (the client keeps it and
    says nothing): the recall tool's description tells the model what to pass then."""
    async def calls(s):
        return (await s.list_tools()).tools

    (recall,) = [t for t in session(calls) if t.name == "recall"]
    assert "repeat=true at a conversation's first" in " ".join(recall.description.split())


def test_a_block_comes_back_as_text_alone():
    """A client given structuredContent beside the text shows the model that (Claude Code
    shows ``{"result":"HOUSE RULES…\\n…"}``): the tools that answer text declare no output
    schema and send none."""
    with Memory() as mem:
        mem.capture(run="t", action="python repro.py", exit_code=1, error_text=NO_TABLE)

    async def calls(s):
        return (await s.list_tools()).tools, await s.call_tool("recall", {"run": "t"})

    tools, recalled = session(calls)
    schemas = {t.name: t.output_schema for t in tools}
    assert all(schemas[name] is None for name in
               ("recall", "record_failure", "record_outcome", "teach")), schemas
    assert recalled.structured_content is None and "no such table" in text(recalled)


# What Claude Code 2.1.332 sent a server up to its list of tools (recorded from the binary
# with a fake model API): a server/discover probe of the 2026-07-28 protocol, which it
# gives up on after a few seconds, then the rest once the probe is answered.
CLAUDE_CODE_HANDSHAKE = (Path(__file__).parent / "fixtures" / "claude_code"
                         / "mcp_handshake.jsonl").read_bytes().splitlines(keepends=True)


def test_claude_code_connects_at_the_first_try_before_the_sdk_is_imported(tmp_path):
    """Answered only once the SDK has loaded (seconds on a loaded machine), the probe times
    out, the client's initialize is refused (-32022) and it starts the server again; and
    it counts the server connected only once its subscription is acknowledged."""
    flag = tmp_path / "let-the-sdk-load"
    server = held_server(flag)
    try:
        probe, *rest = CLAUDE_CODE_HANDSHAKE
        server.stdin.write(probe)
        server.stdin.flush()
        answered = reply(server)
        assert answered["id"] == json.loads(probe)["id"], answered
        assert "2026-07-28" in answered["result"]["supportedVersions"]
        server.stdin.writelines(rest)  # what the client sends once its probe is answered
        server.stdin.flush()
        asked = [json.loads(line)["id"] for line in rest]
        early = [reply(server) for _ in asked]  # the subscription's acknowledgement, the rest
        assert not flag.exists()  # the SDK was still held back: all answered without it
        assert all("error" not in message for message in early), early
        [acknowledged] = [m for m in early if "method" in m]
        assert acknowledged["method"] == "notifications/subscriptions/acknowledged"
        assert acknowledged["params"]["_meta"][
            "io.modelcontextprotocol/subscriptionId"] == "listen:0"
        answered = [str(m["id"]) for m in early if "id" in m]
        assert sorted(map(str, asked)) == sorted([*answered, "listen:0"])
        [listed] = [m for m in early if "tools" in m.get("result", {})]
        assert {t["name"] for t in listed["result"]["tools"]} == TOOLS
        flag.touch()
        # Then the SDK serves: a tool call is answered, nothing is answered twice.
        meta = json.loads(rest[-1])["params"]["_meta"]
        server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                                       "params": {"name": "recall", "arguments": {},
                                                  "_meta": meta}}).encode() + b"\n")
        server.stdin.flush()
        called = reply(server, 60)
        assert called["id"] == 9 and not called["result"]["isError"], called
        server.stdin.close()
        after = [json.loads(line) for line in server.stdout.read().splitlines()]
        assert [m.get("id") for m in after] == ["listen:0"], after  # closed with the input
        assert server.wait(60) == 0
        assert server.stderr.read() == b""  # the SDK's own answers were the same
    finally:
        flag.touch()
        server.kill()
        server.wait()


def test_record_failure_given_the_last_line_alone_adds_no_second_lesson():
    """A client that records the traceback, then the same failure by its last line (or
    the other way round), gets one lesson: the one the run's block shows once."""
    last = "KeyError: 'api_url'"
    traceback = ('Traceback (most recent call last):\n  File "/srv/app/config.py", line 7,'
                 f" in load\n    return settings['api_url']\n{last}\n")

    async def calls(s):
        for run, forms in (("tb-first", (traceback, last)), ("line-first", (last, traceback))):
            for error_text in forms:
                await s.call_tool("record_failure", {"action": "python app.py",
                                                     "exit_code": 1, "run": run,
                                                     "error_text": error_text})

    session(calls)
    with Memory() as mem:
        assert len(mem.lessons()) == 1
        assert len({e.fingerprint for e in mem.failures(limit=10)}) == 1


def handshake(version: str) -> list[bytes]:
    """A client of the handshake protocols up to its lists (the SDK's client asks these)."""
    lists = ["tools/list", "prompts/list", "resources/list", "resources/templates/list", "ping"]
    return [initialize(version, id=0),
            b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n',
            *(json.dumps({"jsonrpc": "2.0", "id": i, "method": m}).encode() + b"\n"
              for i, m in enumerate(lists, 1))]


@pytest.mark.parametrize("connection", ["2024-11-05", "2025-11-25", "claude-code"])
def test_what_is_answered_before_the_sdk_is_what_the_sdk_answers(connection):
    """The lists answered early come from mcp_listing.json, written from the server's own
    (make mcp-listing): each answer is the SDK server's to the same request, whole (names,
    descriptions, input and output schemas, annotations), in either protocol era; and so
    is the acknowledgement of Claude Code's subscription, which the SDK then holds open."""
    from reflect.integrations.mcp import listed, replies, server
    from reflect.integrations.mcp_start import LISTING, answer, answering

    lines = handshake(connection) if connection != "claude-code" else CLAUDE_CODE_HANDSHAKE
    messages = [json.loads(line) for line in lines]
    opened_by = messages[0]["method"]
    early = [answer(lines[0].decode())] + [answer(line.decode(), opened_by) for line in lines[1:]]
    with Memory() as mem:
        app = server(mem)
        assert json.loads(LISTING.read_text(encoding="utf-8")) == listed(app)
        given = {answering(m): m for m in anyio.run(replies, app, messages)}
    asked = [("subscription" if m.get("method") == "subscriptions/listen" else "request",
              m.get("id")) for m in messages]
    assert early == [given.get(a) for a in asked]  # a notification gets none
    assert sum(e is not None for e in early) == len(messages) - (connection != "claude-code")

def test_the_sdk_s_clients_list_the_tools_before_it_is_imported(tmp_path):
    """The SDK's own client, of either protocol era, is given the tools while the server's
    SDK is held back; a tool call waits for it and is answered once it has loaded."""
    from mcp import Client

    flag = tmp_path / "let-the-sdk-load"
    params = StdioServerParameters(command=sys.executable, args=["-c", HELD_SDK, str(flag)],
                                   cwd=os.getcwd(), env=dict(os.environ))

    async def connect(mode):
        async with Client(params, mode=mode) as client:
            with anyio.fail_after(30):
                tools = (await client.list_tools()).tools
            held = not flag.exists()
            flag.touch()
            with anyio.fail_after(60):
                called = await client.call_tool("recall", {"goal": "Fix the user count"})
            return client.protocol_version, {t.name for t in tools}, held, called

    for mode, version in (("legacy", "2025-11-25"), ("auto", "2026-07-28")):
        flag.unlink(missing_ok=True)
        negotiated, tools, held, called = anyio.run(connect, mode)
        assert (negotiated, tools, held) == (version, TOOLS, True)
        assert not called.is_error and text(called).startswith("Nothing to recall")
