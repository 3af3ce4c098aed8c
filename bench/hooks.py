"""Cold start, since a hook starts a process per tool call: `reflect capture`, `reflect
recall` and `reflect hook claude-code` for each event, from process start to answer,
side by side with `python -c pass` and `python -c "import numpy"` in one run; each hook
both as a cold process (`REFLECT_HELPER=off`) and answered by the resident helper
(`reflect.cli.resident`, started before the runs). The package's bytecode is
compiled first, as an install leaves it.

Run: .venv/bin/python bench/hooks.py [--runs N]   (21 by default)
Targets: PostToolUseFailure median under 150 ms, PreToolUse under 100 ms and at most 3x
`python -c pass`, `reflect capture` at most 3x `python -c pass`, `reflect recall` at
most 1.3x `python -c "import numpy"`.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from capture_recall import cold
from figures import emit

import reflect
from reflect import Memory
from reflect.cli import client

RUNS = 21
FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "claude_code"
# The session id the client sent (a UUID): one with a word like "session" in it would open
# the scrubber's gate of key names, whose rules no real hook's text compiles.
SESSION = json.loads((FIXTURES / "PreToolUse.json").read_text())["session_id"]


def event(name: str, fixtures: Path = FIXTURES, **changes: object) -> bytes:
    """The client's recorded event ``name`` (Claude Code's, unless ``fixtures`` says)."""
    data = json.loads((fixtures / f"{name}.json").read_text())
    # Each call its own id, as the client gives it: the same id again is a step stored once.
    return json.dumps({**data, "session_id": SESSION, "cwd": os.getcwd(),
                       "tool_use_id": f"toolu_{os.urandom(8).hex()}", **changes}).encode()


EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "SessionStart")
# A Bash call that succeeded and reruns no failed command, as most do: nothing to store.
SUCCEEDED = {"command": "ls src", "description": "List the sources"}


def seed(home: Path) -> None:
    """A store whose session has failed a few times, as a hook finds it mid-session."""
    with Memory(home, run=SESSION) as mem:
        for i, module in enumerate(("yaml", "dateutil", "requests")):
            mem.capture(iteration=i + 1, action="python report.py", exit_code=1,
                        error_text=f"ModuleNotFoundError: No module named '{module}'")


def start_helper(home: Path, env: dict) -> subprocess.Popen:
    helper = subprocess.Popen([sys.executable, "-m", "reflect.cli.resident",
                               str(home)], env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket(socket.AF_UNIX) as probe:
            try:
                probe.connect(str(home / client.SOCKET_NAME))
                return helper
            except OSError:
                time.sleep(0.1)
    raise SystemExit("the resident helper did not start")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=RUNS, help=f"runs of each process ({RUNS})")
    runs = p.parse_args().runs
    # As an install leaves it (pip compiles what it installs; PYTHONDONTWRITEBYTECODE
    # would have every run compile the package again).
    compileall.compile_dir(Path(reflect.__file__).parent, quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "store"
        env = {**os.environ, "REFLECT_HOME": str(home), "REFLECT_RUN": SESSION,
               "REFLECT_WORKER": "off", "REFLECT_HELPER": "off"}
        seed(home)
        script = str(Path(sys.executable).parent / "reflect")
        hook = [script, "hook", "claude-code"]
        warm = {**env, "REFLECT_HELPER": "on"}
        commands = {
            "python -c pass": ([sys.executable, "-c", "pass"], b"", env),
            'python -c "import numpy"': ([sys.executable, "-c", "import numpy"], b"", env),
            "reflect capture": ([script, "capture", "--exit-code", "1", "--error-file", "-"],
                                b"ModuleNotFoundError: No module named 'yaml'\n", env),
            "reflect recall": ([script, "recall", "--goal", "make the report run"], b"", env),
        }
        commands["helper capture"] = (*commands["reflect capture"][:2], warm)
        commands["helper recall"] = (*commands["reflect recall"][:2], warm)
        for name in EVENTS:
            label = "PostToolUse (Bash)" if name == "PostToolUse" else name
            commands[f"hook {label}"] = (hook, event(name), env)
            commands[f"helper {label}"] = (hook, event(name), warm)
        other = event("PostToolUse", tool_input=SUCCEEDED)
        commands["hook PostToolUse (other)"] = (hook, other, env)
        commands["helper PostToolUse (other)"] = (hook, other, warm)
        print(f"cold processes, median of {runs}, interleaved (one store, one session); "
              "helper: the hook answered by the resident helper:")
        times: dict[str, list[float]] = {name: [] for name in commands}
        helper = start_helper(home, warm)
        try:
            for _ in range(runs):  # interleaved, so the machine's load falls on all alike
                for name, (argv, stdin, environ) in commands.items():
                    times[name].append(cold(argv, environ, stdin)[0])
        finally:
            helper.terminate()
            helper.wait(10)
        medians = {name: statistics.median(t) for name, t in times.items()}
        bare, numpy = medians["python -c pass"], medians['python -c "import numpy"']
        for name, ms in medians.items():
            print(f"  {name:<26} {ms:7.1f} ms   {ms / bare:5.2f}x python -c pass   "
                  f"{ms / numpy:4.2f}x import numpy")
    print(f"load average {' / '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min), "
          f"{os.cpu_count()} cores")
    emit({"runs": runs, "medians_ms": medians, "load": os.getloadavg()})


if __name__ == "__main__":
    main()
