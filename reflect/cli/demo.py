"""``make demo``: a scripted agent loop, run with failure memory off and on.

The task only succeeds once the agent carries out the fixes its prompt names:
install the missing module, create the missing config file. The fake agent has
no memory of its own (each iteration is a fresh prompt, as in many harnesses),
so without ``reflect`` it keeps repeating what it tried before.
"""

from __future__ import annotations

import random
import re
import tempfile
import textwrap

from reflect import Memory

GOAL = "Make `python report.py` print the weekly report."
MAX_ITERATIONS = 8
# What a memoryless agent tries: mostly the task itself, sometimes a guess.
GUESSES = ["python report.py", "python3 report.py", "pip install yaml && python report.py",
           "pip install -r requirements.txt && python report.py"]


class Sandbox:
    """A pretend project: report.py needs the `yaml` module and a config.yaml."""

    def __init__(self) -> None:
        self.packages: set[str] = set()
        self.files: set[str] = {"report.py"}

    def run(self, command: str) -> tuple[int, str]:
        for step in command.split("&&"):
            code, output = self._step(step.strip())
            if code:
                return code, output
        return 0, "weekly report: 42 tasks done"

    def _step(self, step: str) -> tuple[int, str]:
        if step.startswith("pip install -r"):
            return 1, "ERROR: Could not open requirements file: [Errno 2] No such file or " \
                      "directory: 'requirements.txt'"
        if step.startswith("pip install "):
            package = step.split()[-1]
            if package == "yaml":
                return 1, "ERROR: Could not find a version that satisfies the requirement yaml"
            self.packages.add(package)
            return 0, ""
        if step.startswith("touch "):
            self.files.add(step.split()[-1])
            return 0, ""
        if step.endswith("report.py"):
            if "pyyaml" not in self.packages:
                return 1, traceback("import yaml", "ModuleNotFoundError: No module named 'yaml'")
            if "config.yaml" not in self.files:
                return 1, traceback(
                    "with open('config.yaml') as f:",
                    "FileNotFoundError: [Errno 2] No such file or directory: 'config.yaml'",
                )
            return 0, ""
        return 127, f"bash: {step.split()[0]}: command not found"


def traceback(line: str, error: str) -> str:
    return textwrap.dedent(f"""\
        Traceback (most recent call last):
          File "/work/project/report.py", line 3, in <module>
            {line}
        {error}""")


def agent(prompt_block: str, rng: random.Random) -> str:
    """Act on the fixes the block names; otherwise do what a memoryless agent does."""
    fixes = []
    for hint in re.findall(r"Hint: (.*)", prompt_block):
        for named in re.findall(r"`([^`]+)`", hint):
            if re.fullmatch(r"pip install [\w.-]+", named):
                fixes.append(named)
            elif re.fullmatch(r"[\w.-]+\.(?:yaml|yml|json|toml|cfg|ini)", named):
                fixes.append(f"touch {named}")
    if fixes:
        return " && ".join([*dict.fromkeys(fixes), "python report.py"])
    return rng.choice(GUESSES) if rng.random() < 0.4 else "python report.py"


def run_arm(memory_on: bool, seed: int = 7) -> int | None:
    """Run the loop; return the iteration that succeeded, or None."""
    rng = random.Random(seed)
    sandbox = Sandbox()
    with tempfile.TemporaryDirectory() as home, Memory(home, run="demo") as mem:
        for iteration in range(1, MAX_ITERATIONS + 1):
            block = mem.recall(goal=GOAL, iteration=iteration).text if memory_on else ""
            print(f"\n--- iteration {iteration}")
            if memory_on:
                print(textwrap.indent(block or "(nothing to recall yet)", "  | "))
            action = agent(block, rng)
            code, output = sandbox.run(action)
            print(f"  $ {action}\n  -> exit {code}: {output.splitlines()[-1]}")
            if code == 0:
                return iteration
            # Capture whether or not memory is on: the off arm records, it just never recalls.
            mem.capture(iteration=iteration, goal=GOAL, phase="run", action=action,
                        exit_code=code, error_text=output)
    return None


def main() -> None:
    results = {}
    for name, on in (("memory off", False), ("memory on", True)):
        print(f"\n===== {name} =====")
        results[name] = run_arm(on)
    print("\n===== iterations to success =====")
    for name, done in results.items():
        print(f"  {name:<11} {done if done else f'not solved in {MAX_ITERATIONS}'}")


if __name__ == "__main__":
    main()
