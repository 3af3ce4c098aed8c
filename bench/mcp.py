"""`reflect mcp` from a client's side: how long from starting the server to its answer to
`initialize` and to its list of tools, for a client of the handshake protocols (the SDK's
own) and for the real Claude Code's handshake (tests/fixtures/claude_code/
mcp_handshake.jsonl: a `server/discover` probe, then the lists); then to the answer of a
first `recall` (the SDK loaded), the next recall, and from closing its stdin to its exit.
Side by side in one run with `python -c pass` and `python -c "import mcp"` (start to
exit), and the time to the tools as a ratio of `python -c pass`. Each figure is the median
of RUNS fresh servers of each kind, on a store of one run with three failures, spoken to
over the pipes as an MCP client does (one JSON-RPC message a line). The package's
bytecode is compiled first, as an install leaves it.

Run: .venv/bin/python bench/mcp.py [--runs N]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from figures import emit

import reflect
from reflect import Memory

GOAL = "Make the weekly report run"
HANDSHAKE = (Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "claude_code"
             / "mcp_handshake.jsonl").read_bytes().splitlines()
WHAT = {
    "initialize": "start -> initialize answered",
    "tools/list": "start -> tools/list answered",
    "claude-code tools/list": "Claude Code's handshake: start -> tools listed",
    "first recall": "start -> first recall answered (the SDK loaded)",
    "second recall": "second recall",
    "exit": "stdin closed -> process gone",
}


class Server:
    def __init__(self, env: dict[str, str], cwd: Path):
        self.started = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "-m", "reflect", "mcp"], cwd=cwd, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, bufsize=0)
        assert self.proc.stdin is not None and self.proc.stdout is not None  # both piped
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        self.next_id = 0

    def since_start(self) -> float:
        return time.perf_counter() - self.started

    def notify(self, method: str) -> None:
        self.send(json.dumps({"jsonrpc": "2.0", "method": method}).encode())

    def ask(self, method: str, params: dict) -> dict:
        self.next_id += 1
        self.send(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                              "params": params}).encode())
        return self.answer(self.next_id, method)

    def answer(self, id: object, method: str) -> dict:
        """The reply to the request ``id``; what comes before it is passed over."""
        while True:
            line = self.stdout.readline()
            if not line:
                raise SystemExit(f"the server closed its stdout before answering {method}")
            message = json.loads(line)
            if message.get("id") == id and "method" not in message:
                if "error" in message:
                    raise SystemExit(f"{method}: {message['error']}")
                return message

    def send(self, line: bytes) -> None:
        self.stdin.write(line + b"\n")
        self.stdin.flush()

    def close(self) -> float:
        closed = time.perf_counter()
        self.stdin.close()
        self.proc.wait(60)
        return time.perf_counter() - closed


def session(env: dict[str, str], cwd: Path) -> dict[str, float]:
    """One server's figures, in seconds, spoken to as the SDK's client does."""
    server = Server(env, cwd)
    server.ask("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "bench", "version": "0"}})
    found = {"initialize": server.since_start()}
    server.notify("notifications/initialized")
    server.ask("tools/list", {})
    found["tools/list"] = server.since_start()
    for name in ("first recall", "second recall"):
        t = time.perf_counter()  # the second asks again for what the first showed
        answer = server.ask("tools/call", {"name": "recall", "arguments": {
            "goal": GOAL, "repeat": name == "second recall"}})
        found[name] = server.since_start() if name == "first recall" else time.perf_counter() - t
        if "openpyxl" not in json.dumps(answer):
            raise SystemExit(f"the recall did not show the store's failures: {answer}")
    found["exit"] = server.close()
    return found


def claude_code(env: dict[str, str], cwd: Path) -> float:
    """Seconds from start to the tools, for the real Claude Code's handshake: its probe,
    then, once that is answered, the rest at once, as the binary sends them."""
    server = Server(env, cwd)
    probe, *rest = HANDSHAKE
    server.send(probe)
    server.answer(json.loads(probe)["id"], "server/discover")
    for line in rest:
        server.send(line)
    [tools] = [json.loads(line)["id"] for line in rest if b'"tools/list"' in line]
    listed = server.answer(tools, "tools/list")
    if not listed["result"]["tools"]:
        raise SystemExit(f"no tools listed: {listed}")
    seconds = server.since_start()
    server.close()
    return seconds


def process(argv: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run(argv, env=env, check=True)
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="fresh servers of each kind")
    runs = parser.parse_args().runs
    compileall.compile_dir(Path(reflect.__file__).parent, quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / ".reflect"
        env = {**os.environ, "REFLECT_HOME": str(home), "REFLECT_RUN": "bench",
               "REFLECT_WORKER": "off"}
        with Memory(home, run="bench") as mem:
            for i, module in enumerate(("openpyxl", "dateutil", "requests")):
                mem.capture(iteration=i + 1, goal=GOAL, action="python report.py",
                            exit_code=1,
                            error_text=f"ModuleNotFoundError: No module named '{module}'")
        rows: dict[str, list[float]] = {name: [] for name in
                                        (*WHAT, "python -c pass", "python -c 'import mcp'")}
        for _ in range(runs):  # interleaved, so a change of load touches every figure alike
            for name, value in session(env, Path(tmp)).items():
                rows[name].append(value)
            rows["claude-code tools/list"].append(claude_code(env, Path(tmp)))
            rows["python -c pass"].append(process([sys.executable, "-c", "pass"], env))
            rows["python -c 'import mcp'"].append(
                process([sys.executable, "-c", "import mcp"], env))
    medians = {name: statistics.median(values) * 1000 for name, values in rows.items()}
    ratios = {name: medians[name] / medians["python -c pass"]
              for name in ("initialize", "tools/list", "claude-code tools/list")}
    print(f"reflect mcp, median of {runs} fresh servers of each kind (ms)")
    for name, value in medians.items():
        what = WHAT.get(name, f"{name}, start to exit")
        low, high = min(rows[name]) * 1000, max(rows[name]) * 1000
        ratio = f"  {ratios[name]:.1f}x python -c pass" if name in ratios else ""
        print(f"  {what:52} {value:8.1f}   ({low:.1f} to {high:.1f}){ratio}")
    print(f"load average {os.getloadavg()[0]:.2f}")
    emit({"medians_ms": medians, "ratios": ratios, "runs": runs, "load": os.getloadavg()[0]})


if __name__ == "__main__":
    main()
