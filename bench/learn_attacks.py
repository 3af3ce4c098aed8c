"""``reflect learn``'s attack cases, as real processes: four learns of the same sessions at
once, and a learn beside the live hooks of the same sessions. Each row: the steps the
sessions hold, the rows stored, and how many were doubled (the target is 0). Imported by
bench/attacks.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from transcript_fixtures import hook_events, synthesize

from reflect import Memory
from reflect.api.learn import sessions

CLIENT = "claude-code"


def cli(home: Path, *args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "REFLECT_HOME": str(home), "REFLECT_WORKER": "off",
           "REFLECT_HELPER": "off", "REFLECT_EMBEDDINGS": "hash"}
    return subprocess.Popen([sys.executable, "-m", "reflect", *args], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def steps(where: Path) -> int:
    """The failed calls of the sessions (benign exits apart), as one learn alone stores them."""
    with Memory(where.parent / "alone") as mem:
        return mem.learn(CLIENT, [where]).failures


def rows(home: Path) -> int:
    with Memory(home) as mem:
        return len(mem.failures(limit=10**6))


def learns_at_once(tmp: Path, n_sessions: int = 50, learns: int = 4) -> dict:
    where = tmp / "at-once" / "sessions"
    synthesize(CLIENT, where, n_sessions)
    home = tmp / "at-once" / "store"
    running = [cli(home, "learn", CLIENT, str(where), "--quiet") for _ in range(learns)]
    for process in running:
        assert process.stdin is not None  # piped
        process.stdin.close()
        process.wait(600)
    expected, kept = steps(where), rows(home)
    return {"steps": expected, "rows": kept, "doubled": kept - expected}


def learn_beside_hooks(tmp: Path, n_sessions: int = 5) -> dict:
    where = tmp / "beside" / "sessions"
    synthesize(CLIENT, where, n_sessions)
    home = tmp / "beside" / "store"
    learning = cli(home, "learn", CLIENT, str(where), "--quiet")
    assert learning.stdin is not None  # piped
    learning.stdin.close()
    for session in sessions(CLIENT, [where]):
        for event in hook_events(session):
            hook = cli(home, "hook", CLIENT)
            hook.communicate(event, timeout=60)
    learning.wait(600)
    expected, kept = steps(where), rows(home)
    return {"steps": expected, "rows": kept, "doubled": kept - expected}


def main(n_sessions: int = 50) -> dict:
    """The cases; ``n_sessions``: the sessions the learns at once read."""
    found: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        found[f"4 learns of {n_sessions} sessions at once"] = learns_at_once(tmp, n_sessions)
        found["a learn beside the live hooks"] = learn_beside_hooks(tmp)
    print("reflect learn cases (real processes; doubled: 0 is the target):")
    for name, row in found.items():
        print(f"  {name:34} " + "  ".join(f"{k} {v}" for k, v in row.items()))
    return found


if __name__ == "__main__":
    main()
