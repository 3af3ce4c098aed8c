"""What each cold command imports: `reflect capture`, `reflect recall` and every hook event
of Claude Code and Codex, run as a process with `python -X importtime` and no resident
helper (`REFLECT_HELPER=off`: the cold path, the first hook of a store and every fallback),
side by side with `python -c pass` in one run. Per command: the modules imported, how many
more than `python -c pass`, and the import time (the sum of `-X importtime`'s self times,
median of the runs); `--list` adds the modules beyond `python -c pass` by their cost.

Run: .venv/bin/python bench/importtime.py [--runs N] [--list]   (5 runs by default)
The package's bytecode is compiled first, as an install leaves it.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from figures import emit
from hooks import FIXTURES, SESSION, event, seed

import reflect

RUNS = 5
CODEX = FIXTURES.parent / "codex"
CLAUDE_EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse",
                 "PostToolUseFailure")
CODEX_EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse")


@dataclass(frozen=True)
class Imports:
    """One process's imports, as `-X importtime` reports them."""

    self_us: dict[str, int]  # module -> microseconds spent in its own body

    @property
    def total_ms(self) -> float:
        return sum(self.self_us.values()) / 1000


def parse(report: str) -> Imports:
    """`-X importtime`'s lines (``import time: self | cumulative | name``, the name indented
    by its depth) as module -> self time; anything else on stderr is left out."""
    found: dict[str, int] = {}
    for line in report.splitlines():
        if not line.startswith("import time:"):
            continue
        fields = line.removeprefix("import time:").split("|")
        if len(fields) != 3 or not fields[0].strip().isdigit():
            continue  # the header
        found[fields[2].strip()] = int(fields[0])
    return Imports(found)


def imports(argv: list[str], stdin: bytes, env: dict[str, str]) -> Imports:
    done = subprocess.run([sys.executable, "-X", "importtime", *argv], input=stdin, env=env,
                          capture_output=True, timeout=60)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: "
                         f"{done.stderr.decode(errors='replace')[-2000:]}")
    found = parse(done.stderr.decode(errors="replace"))
    if not found:
        raise SystemExit(f"{' '.join(argv)}: no -X importtime report on stderr")
    return found


def commands() -> dict[str, tuple[list[str], bytes]]:
    """name -> (argv after the interpreter, stdin): each cold command a step may run."""
    script = str(Path(sys.executable).parent / "reflect")
    found = {
        "python -c pass": (["-c", "pass"], b""),
        "reflect capture": ([script, "capture", "--exit-code", "1", "--error-file", "-"],
                            b"ModuleNotFoundError: No module named 'yaml'\n"),
        "reflect recall": ([script, "recall", "--goal", "make the report run"], b""),
    }
    for name in CLAUDE_EVENTS:
        found[f"claude-code {name}"] = ([script, "hook", "claude-code"], event(name))
    for name in CODEX_EVENTS:  # the rollout that tells a Bash call's exit code, as Codex has it
        found[f"codex {name}"] = ([script, "hook", "codex"], event(
            name, CODEX, transcript_path=str(CODEX / "rollout.jsonl"), tool_use_id="call_00"))
    return found


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=RUNS, help=f"runs of each command ({RUNS})")
    p.add_argument("--list", action="store_true",
                   help="also list each command's modules beyond `python -c pass`")
    args = p.parse_args(argv)
    compileall.compile_dir(Path(reflect.__file__).parent, quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "store"
        env = {**os.environ, "REFLECT_HOME": str(home), "REFLECT_RUN": SESSION,
               "REFLECT_WORKER": "off", "REFLECT_HELPER": "off"}
        seed(home)
        runs: dict[str, list[Imports]] = {name: [] for name in commands()}
        for _ in range(args.runs):  # interleaved: the machine's load falls on all alike
            for name, (command, stdin) in commands().items():
                runs[name].append(imports(command, stdin, env))
    bare = runs["python -c pass"][-1].self_us
    bare_ms = statistics.median(i.total_ms for i in runs["python -c pass"])
    print(f"imports of each cold process, median of {args.runs} runs (`python -X importtime`):")
    print(f"  {'command':<30} {'modules':>7} {'beyond pass':>11} {'import time':>11}")
    figures = {}
    for name, each in runs.items():
        last = each[-1].self_us
        extra = sorted(set(last) - set(bare), key=lambda m: -last[m])
        ms = statistics.median(i.total_ms for i in each)
        figures[name] = {"modules": len(last), "beyond_pass": len(extra), "import_ms": ms,
                         "reflect_modules": sorted(m for m in last if m.startswith("reflect"))}
        print(f"  {name:<30} {len(last):7d} {len(extra):11d} {ms:8.1f} ms  "
              f"{ms / bare_ms:4.1f}x python -c pass")
        if args.list and extra:
            print("      " + ", ".join(f"{m} {last[m] / 1000:.1f}" for m in extra))
    if args.list:
        print("(beyond pass: each module with its own import time in ms, costliest first)")
    emit({"runs": args.runs, "commands": figures})


if __name__ == "__main__":
    main()
