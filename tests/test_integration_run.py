"""``reflect run -- CMD``: the command's output and exit code as they are, memory after."""

import sys

from conftest import run_cli

from reflect import Memory

SCRIPT = ("import sys; print('collected 3 items'); "
          "print('E   ModuleNotFoundError: No module named \\'dateutil\\'', file=sys.stderr); "
          "sys.exit(2)")


def reflect_run(*argv: str, run: str = "ci-7"):
    return run_cli("run", "--run", run, "--goal", "Fix the date parser", "--", *argv)


def test_a_failure_passes_through_is_captured_and_followed_by_the_block():
    done = reflect_run(sys.executable, "-c", SCRIPT)
    assert done.returncode == 2
    out = done.stdout.decode()
    assert out.startswith("collected 3 items\n")  # the command's own output first, unchanged
    assert "dateutil" in out[len("collected 3 items\n"):]  # then the block
    assert "No module named 'dateutil'" in done.stderr.decode()
    with Memory() as mem:
        [entry] = mem.failures(run="ci-7")
    assert (entry.exit_code, entry.phase, entry.goal) == (2, "test", "Fix the date parser")
    assert entry.action.startswith(sys.executable) and "dateutil" in entry.message


def test_a_success_is_left_unchanged_and_is_the_outcome(tmp_path):
    assert reflect_run(sys.executable, "-c", "print('ok')").stdout == b"ok\n"
    check = tmp_path / "check.py"
    check.write_text(SCRIPT)
    reflect_run(sys.executable, str(check))
    check.write_text("print('3 passed')")  # the fix; the same command then passes
    done = reflect_run(sys.executable, str(check))
    assert (done.returncode, done.stdout, done.stderr) == (0, b"3 passed\n", b"")
    with Memory() as mem:
        resolution = mem.failures(run="ci-7")[0].resolution
    assert resolution.endswith("` passed when rerun unchanged")


def test_exit_codes_of_a_signal_and_of_a_missing_program():
    killed = reflect_run(sys.executable, "-c", "import os, signal; os.kill(os.getpid(), 9)")
    assert killed.returncode == 137
    missing = reflect_run("no-such-program-here", "-x")
    assert missing.returncode == 127 and b"command not found" in missing.stderr


def test_no_command_is_misuse():
    assert run_cli("run").returncode == 2
