"""``reflect run -- CMD ARGS…``: for harnesses that run a test command (aider's
``--test-cmd``, CI scripts, Makefiles).

The command's output passes through unchanged, as it comes, and its exit code is
kept. On failure the output is captured and the run's block is printed after it;
on success the outcome is reported. Memory trouble costs one line on stderr, never
the command's exit code.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import threading

from reflect import config

KEEP_BYTES = 64 * 1024  # of the output, its end: where the error is; capture reads no more


def run(argv: list[str], run: str | None = None, goal: str = "", phase: str = "test") -> int:
    code, output = execute(argv)
    try:
        report(argv, code, output, run, goal, phase)
    except Exception as e:
        config.warn(f"run: memory failed ({e}); the command's exit code stands")
    return code


def execute(argv: list[str]) -> tuple[int, str]:
    """Run ``argv``, copying its stdout and stderr through as they come; its exit code
    (128 + N when killed by signal N, as a shell reports it) and the end of its output."""
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as e:
        message = f"{argv[0]}: command not found" if isinstance(e, FileNotFoundError) \
            else f"{argv[0]}: {e.strerror}"
        print(message, file=sys.stderr)
        return (127 if isinstance(e, FileNotFoundError) else 126), message
    tail = bytearray()
    lock = threading.Lock()

    def copy(source, sink) -> None:
        for chunk in iter(lambda: source.read1(65536), b""):
            sink.write(chunk)
            sink.flush()
            with lock:
                tail.extend(chunk)
                del tail[:-KEEP_BYTES]

    threads = [threading.Thread(target=copy, args=(proc.stdout, sys.stdout.buffer)),
               threading.Thread(target=copy, args=(proc.stderr, sys.stderr.buffer))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    code = proc.wait()
    return (128 - code if code < 0 else code), tail.decode("utf-8", errors="replace")


def report(argv: list[str], code: int, output: str, run: str | None, goal: str,
           phase: str) -> None:
    from reflect import Memory

    if not config.enabled():  # the kill switch: the command ran, and nothing is opened
        return
    action = shlex.join(argv)
    with Memory(run=run, embed_here=False) as mem:
        if code != 0:
            mem.capture(goal=goal, phase=phase, action=action, exit_code=code,
                        error_text=output)
            mem.ensure_worker()
            block = mem.recall(goal=goal, phase=phase).text
            if block:
                print(f"\n{block}", flush=True)
        elif mem.failures(run=mem.run, limit=1):
            mem.outcome(success=True, action=action)
