"""Cold start, since a hook starts a process per tool call: `reflect capture`, `reflect
recall` and `reflect hook claude-code` for each event, from process start to answer,
side by side with `python -c pass` and `python -c "import numpy"` in one run.

Run: .venv/bin/python bench/hooks.py
Targets: PostToolUseFailure median under 150 ms, PreToolUse under 100 ms and at most 3x
`python -c pass`, `reflect capture` at most 3x `python -c pass`, `reflect recall` at
most 1.3x `python -c "import numpy"`.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from capture_recall import cold
from figures import emit

from reflect import Memory

RUNS = 21
SESSION = "bench-session"
FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "claude_code"


def event(name: str, **changes) -> bytes:
    data = json.loads((FIXTURES / f"{name}.json").read_text())
    return json.dumps({**data, "session_id": SESSION, "cwd": os.getcwd(), **changes}).encode()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "store"
        env = {**os.environ, "REFLECT_HOME": str(home), "REFLECT_RUN": SESSION,
               "REFLECT_WORKER": "off"}
        with Memory(home, run=SESSION) as mem:  # a session that has failed a few times
            for i, module in enumerate(("yaml", "dateutil", "requests")):
                mem.capture(iteration=i + 1, action="python report.py", exit_code=1,
                            error_text=f"ModuleNotFoundError: No module named '{module}'")
        script = str(Path(sys.executable).parent / "reflect")
        hook = [script, "hook", "claude-code"]
        commands = {
            "python -c pass": ([sys.executable, "-c", "pass"], b""),
            'python -c "import numpy"': ([sys.executable, "-c", "import numpy"], b""),
            "reflect capture": ([script, "capture", "--exit-code", "1", "--error-file", "-"],
                                b"ModuleNotFoundError: No module named 'yaml'\n"),
            "reflect recall": ([script, "recall", "--goal", "make the report run"], b""),
            "hook PreToolUse": (hook, event("PreToolUse")),
            "hook PostToolUse (Bash)": (hook, event("PostToolUse")),
            "hook PostToolUseFailure": (hook, event("PostToolUseFailure")),
            "hook UserPromptSubmit": (hook, event("UserPromptSubmit")),
            "hook SessionStart": (hook, event("SessionStart")),
        }
        print(f"cold processes, median of {RUNS}, interleaved (one store, one session):")
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(RUNS):  # interleaved, so the machine's load falls on all alike
            for name, (argv, stdin) in commands.items():
                times[name].append(cold(argv, env, stdin)[0])
        medians = {name: statistics.median(t) for name, t in times.items()}
        bare, numpy = medians["python -c pass"], medians['python -c "import numpy"']
        for name, ms in medians.items():
            print(f"  {name:<26} {ms:7.1f} ms   {ms / bare:4.1f}x python -c pass   "
                  f"{ms / numpy:4.2f}x import numpy")
    emit({"runs": RUNS, "medians_ms": medians})


if __name__ == "__main__":
    main()
