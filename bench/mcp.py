"""`reflect mcp` from a client's side: how long from starting the server to its answer to
`initialize`, to its list of tools (the SDK loaded, ready for a call), the first `recall`
and the next, and from closing its stdin to its exit; side by side in one run with
`python -c pass` and `python -c "import mcp"` (start to exit). Each figure is the median
of RUNS fresh servers, on a store of one run with three failures, spoken to over the
pipes as an MCP client does (one JSON-RPC message a line). The package's bytecode is
compiled first, as an install leaves it.

Run: .venv/bin/python bench/mcp.py
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

RUNS = 15
GOAL = "Make the weekly report run"
PHASES = ("initialize", "tools/list", "first recall", "second recall", "exit")


class Server:
    def __init__(self, env: dict[str, str], cwd: Path):
        self.started = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "-m", "reflect", "mcp"], cwd=cwd, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, bufsize=0)
        assert self.proc.stdin is not None and self.proc.stdout is not None  # both piped
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        self.next_id = 0

    def notify(self, method: str) -> None:
        self._send({"jsonrpc": "2.0", "method": method})

    def ask(self, method: str, params: dict) -> dict:
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            line = self.stdout.readline()
            if not line:
                raise SystemExit(f"the server closed its stdout before answering {method}")
            message = json.loads(line)
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise SystemExit(f"{method}: {message['error']}")
                return message

    def _send(self, message: dict) -> None:
        self.stdin.write(json.dumps(message).encode() + b"\n")
        self.stdin.flush()

    def close(self) -> float:
        closed = time.perf_counter()
        self.stdin.close()
        self.proc.wait(60)
        return time.perf_counter() - closed


def session(env: dict[str, str], cwd: Path) -> dict[str, float]:
    """One server's figures, in seconds."""
    server = Server(env, cwd)
    server.ask("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "bench", "version": "0"}})
    found = {"initialize": time.perf_counter() - server.started}
    server.notify("notifications/initialized")
    server.ask("tools/list", {})
    found["tools/list"] = time.perf_counter() - server.started
    for name in ("first recall", "second recall"):
        t = time.perf_counter()  # the second asks again for what the first showed
        answer = server.ask("tools/call", {"name": "recall", "arguments": {
            "goal": GOAL, "repeat": name == "second recall"}})
        found[name] = time.perf_counter() - t
        if "openpyxl" not in json.dumps(answer):
            raise SystemExit(f"the recall did not show the store's failures: {answer}")
    found["exit"] = server.close()
    return found


def process(argv: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run(argv, env=env, check=True)
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--runs", type=int, default=RUNS, help=f"fresh servers ({RUNS})")
    runs = p.parse_args(argv).runs
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
                                        (*PHASES, "python -c pass", "python -c 'import mcp'")}
        for _ in range(runs):  # interleaved, so a change of load touches every figure alike
            for name, value in session(env, Path(tmp)).items():
                rows[name].append(value)
            rows["python -c pass"].append(process([sys.executable, "-c", "pass"], env))
            rows["python -c 'import mcp'"].append(
                process([sys.executable, "-c", "import mcp"], env))
    medians = {name: statistics.median(values) * 1000 for name, values in rows.items()}
    print(f"reflect mcp, median of {runs} fresh servers (ms)")
    for name, value in medians.items():
        what = {"initialize": "start -> initialize answered",
                "tools/list": "start -> tools/list answered (the SDK loaded)",
                "first recall": "first recall, sent once tools/list answered",
                "second recall": "second recall",
                "exit": "stdin closed -> process gone"}.get(name, f"{name}, start to exit")
        low, high = min(rows[name]) * 1000, max(rows[name]) * 1000
        print(f"  {what:52} {value:8.1f}   ({low:.1f} to {high:.1f})")
    print(f"load average {os.getloadavg()[0]:.2f}")
    emit({"medians_ms": medians, "runs": runs, "load": os.getloadavg()[0]})


if __name__ == "__main__":
    main()
