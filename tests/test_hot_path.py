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


def test_a_named_tuple_without_typing_is_typing_s():
    """``reflect.base.named.NamedTuple`` (a hook's process loads no typing) makes what
    ``typing.NamedTuple`` makes of the same class statement."""
    import typing

    from reflect.base.named import NamedTuple

    def made(base):
        class Step(base):
            """One step."""

            action: str
            exit_code: int | None = None
            tool: str = "Bash"

            def failed(self) -> bool:
                return bool(self.exit_code)

        return Step

    ours, theirs = made(NamedTuple), made(typing.NamedTuple)
    for step in (ours, theirs):
        assert step("ls")._replace(exit_code=2) == ("ls", 2, "Bash")
        assert step("ls", 2).failed() and not step("ls").failed()
    for name in ("_fields", "_field_defaults", "__doc__", "__annotations__", "__module__",
                 "__qualname__"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert repr(ours("ls")) == repr(theirs("ls"))
    assert repr(ours("ls")) == "Step(action='ls', exit_code=None, tool='Bash')"
