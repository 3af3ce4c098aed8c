"""Capture and CLI recall import neither litellm nor torch and start no subprocess; on the
SQLite store, nor psycopg."""

import subprocess
import sys
import textwrap

PROBE = textwrap.dedent("""
    import sys

    FORBIDDEN = ("litellm", "torch", "sentence_transformers", "transformers", "psycopg",
                 "psycopg_pool")
    attempted, spawned = [], []

    class Spy:  # sees import attempts even of packages that are not installed
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in FORBIDDEN:
                attempted.append(name)
            return None

    sys.meta_path.insert(0, Spy())
    SPAWN = {"subprocess.Popen", "os.system", "os.fork", "os.forkpty", "os.posix_spawn",
             "os.exec", "os.spawn"}
    sys.addaudithook(lambda event, args: event in SPAWN and spawned.append(event))

    from reflect import Memory
    from reflect.cli.main import main

    with open("err.log", "w") as f:
        f.write("Traceback (most recent call last):\\n  File 'a.py', line 1\\n"
                "ModuleNotFoundError: No module named 'numpy'\\n")
    with Memory() as mem:
        mem.capture(run="r", exit_code=1, error_text=open("err.log").read())
    assert main(["capture", "--run", "r", "--exit-code", "1", "--error-file", "err.log"]) == 0
    assert main(["recall", "--run", "r"]) == 0
    print("ATTEMPTED", attempted, "SPAWNED", spawned)
""")


def test_capture_and_recall_stay_off_heavy_imports_and_subprocesses():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert "PAST FAILURES TO AVOID:" in out.stdout
    assert "ATTEMPTED [] SPAWNED []" in out.stdout
