"""The attack cases of captures, transcripts and the store directory, through the product's
own code: a secret a cut falls in (a message's bound, a line's, a field's, an error file's
64 KB tail), session ids a trace is written with, a session file that cannot be read, a
file of blank lines, a first prompt after many records, a store directory others can
write. Each row: tried, and how many got through (0 is the target). Imported by
bench/attacks.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

from secret_corpus import SECRETS  # noqa: E402
from secret_forms import leaked  # noqa: E402
from test_leaks import across  # noqa: E402
from transcript_fixtures import CLAUDE_SESSION, CODEX_SESSION, synthesize  # noqa: E402

from reflect import Memory  # noqa: E402
from reflect.capture.entry import MAX_ERROR_BYTES, read_error_file  # noqa: E402


def cli(*args: str, home: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "REFLECT_HOME": str(home), "REFLECT_WORKER": "off",
           "REFLECT_EMBEDDINGS": "hash", "TMPDIR": str(cwd)}
    return subprocess.run([sys.executable, "-m", "reflect", *args], capture_output=True,
                          env=env, cwd=cwd, timeout=600)


def kinds_leaked(mem: Memory) -> int:
    got = [" ".join(str(v) for e in mem.failures(run=f"r{n}", limit=100)
                    for v in e.to_dict().values()) for n in range(len(SECRETS))]
    return sum(leaked(secret, line, out, lambda o: o)
               for (secret, line), out in zip(SECRETS.values(), got, strict=True))


def across_a_cut(tmp: Path) -> dict:
    rows = {}
    for at in (500, 2000, 4000):  # a message's bound, a line's, a field's
        with Memory(tmp / f"cut-{at}") as mem:
            for n, (secret, line) in enumerate(SECRETS.values()):
                for text in across(at - len("ValueError: "), secret, line):
                    mem.capture(run=f"r{n}", exit_code=1, error_text=f"ValueError: {text}")
                    mem.capture(run=f"r{n}", crash={"error_class": "E", "stack_signature": text})
            rows[f"secret across a cut at {at}"] = {"kinds": len(SECRETS),
                                                    "leaked": kinds_leaked(mem)}
    log = tmp / "error.log"
    with Memory(tmp / "tail") as mem:
        for n, (secret, line) in enumerate(SECRETS.values()):
            head = f"Error: {line}\n".encode()
            rest = head.index(secret.encode()) + len(secret.encode()) // 2 + MAX_ERROR_BYTES \
                - len(head)
            log.write_bytes(head + (b"=" * 999 + b"\n") * (rest // 1000) + b"\n" * (rest % 1000))
            mem.capture(run=f"r{n}", exit_code=1, error_text=read_error_file(str(log))[0])
        rows["secret across an error file's tail"] = {"kinds": len(SECRETS),
                                                      "leaked": kinds_leaked(mem)}
    return rows


def session_ids(tmp: Path) -> dict:
    rows = {}
    for client, main in (("claude-code", CLAUDE_SESSION), ("codex", CODEX_SESSION)):
        for n, (_, line) in enumerate(SECRETS.values()):
            synthesize(client, tmp / client, texts={main: f"s{n} {line}"}, start=n)
        trace = tmp / f"{client}.jsonl"
        cli("eval", "convert", client, str(tmp / client), "-o", str(trace), home=tmp / "h",
            cwd=tmp)
        written = trace.read_text() if trace.exists() else ""
        rows[f"eval convert {client}: session ids"] = {
            "kinds": len(SECRETS),
            "leaked": sum(secret in written for secret, _ in SECRETS.values())}
    return rows


def transcripts(tmp: Path) -> dict:
    rows: dict[str, dict[str, float]] = {}
    [main, *_] = synthesize("claude-code", tmp / "io", 2)
    broken = main.with_name("broken.jsonl")
    broken.symlink_to("/proc/self/mem")  # reading it fails (EIO), for root too
    done = cli("learn", "claude-code", str(tmp / "io"), home=tmp / "h-io", cwd=tmp)
    rows["an unreadable session file"] = {
        "stopped": int(done.returncode != 0 or b"read 2 sessions" not in done.stdout),
        "unnamed": int(str(broken).encode() not in done.stderr)}
    [main, *_] = synthesize("claude-code", tmp / "blank")
    with open(main, "a") as f:
        f.write("\n" * 30_000_000)
    start = time.monotonic()
    done = cli("learn", "claude-code", str(tmp / "blank"), home=tmp / "h-blank", cwd=tmp)
    took = time.monotonic() - start
    rows["30 MB of blank lines"] = {"seconds": round(took, 1), "over_10_s": int(took > 10),
                                    "unsaid": int(b"only to their first" not in done.stdout)}
    [main, *_] = synthesize("claude-code", tmp / "late")
    lines = main.read_text().splitlines(keepends=True)
    main.write_text("".join([json.dumps({"type": "progress", "data": "x"}) + "\n"] * 500
                            + lines))
    done = cli("learn", "claude-code", str(tmp / "late"), home=tmp / "h-late", cwd=tmp)
    rows["a first prompt after 500 records"] = {
        "sessions_missed": int(b"read 1 session," not in done.stdout)}
    return rows


def store_directory(tmp: Path) -> dict:
    home = tmp / "open-store"
    home.mkdir()
    home.chmod(0o777)
    done = cli("capture", "--run", "r", "--exit-code", "1", home=home, cwd=tmp)
    return {"a store directory others can write": {
        "used": int(bool(os.listdir(home))), "broke_the_loop": int(done.returncode != 0),
        "lost": int(not list(tmp.glob("reflect-*/pending-*.jsonl")))}}


def main() -> dict:
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        rows = {**across_a_cut(tmp), **session_ids(tmp), **transcripts(tmp),
                **store_directory(tmp)}
    print("captures, transcripts and the store directory (0 is the target unless said):")
    for case, row in rows.items():
        print(f"  {case:38} " + "  ".join(f"{k} {v}" for k, v in row.items()))
    return rows


if __name__ == "__main__":
    main()
