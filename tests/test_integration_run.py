"""``reflect run -- CMD``: the command's output and exit code as they are, memory after."""

import os
import pty
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
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
    with Memory() as mem:  # stored as `bash -c no-such-program-here` has it stored
        stored = mem.failures(run="ci-7")[0]
    assert (stored.error_type, stored.message) == ("CommandNotFound",
                                                   "no-such-program-here: command not found")


def test_no_command_is_misuse():
    assert run_cli("run").returncode == 2


def wrapper(*argv: str, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "reflect", "run", "--run", "ci-7", "--",
                             *argv], env=os.environ.copy(), **popen)


def wait_for(path: Path) -> str:
    deadline = time.monotonic() + 30
    while not (path.exists() and path.read_text().strip()):
        assert time.monotonic() < deadline, f"{path} never written"
        time.sleep(0.05)
    return path.read_text().strip()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


LONG = ("import os, subprocess, sys, time; child = subprocess.Popen(['sleep', '60']); "
        "open(sys.argv[1], 'w').write(f'{os.getpid()} {child.pid}'); time.sleep(60)")


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_signal_to_the_wrapper_reaches_the_command_s_whole_group(tmp_path, sig, code):
    pids = tmp_path / "pids"
    # As a terminal's wrapper would have it: a suite started under nohup ignores SIGHUP,
    # and an ignored signal stays ignored in every process it starts.
    proc = wrapper(sys.executable, "-c", LONG, str(pids), stdout=subprocess.DEVNULL,
                   preexec_fn=lambda: signal.signal(sig, signal.SIG_DFL))
    command, grandchild = map(int, wait_for(pids).split())
    proc.send_signal(sig)
    assert proc.wait(timeout=30) == code
    deadline = time.monotonic() + 10
    while (alive(command) or alive(grandchild)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(command) and not alive(grandchild)


def test_ctrl_c_exits_130_with_no_traceback_and_records_nothing(tmp_path):
    pids = tmp_path / "pids"
    quiet = "import signal; signal.signal(signal.SIGINT, signal.SIG_DFL); " + LONG
    proc = wrapper(sys.executable, "-c", quiet, str(pids), stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)
    wait_for(pids)
    proc.send_signal(signal.SIGINT)  # as the terminal sends it to the foreground group
    assert proc.wait(timeout=30) == 130
    assert b"Traceback" not in proc.stderr.read()
    with Memory() as mem:
        assert mem.failures(run="ci-7") == []


def test_both_streams_to_one_place_keep_their_order(tmp_path):
    lines = "".join(f"print({n}, file=sys.{'stderr' if n % 2 else 'stdout'}, flush=True); "
                    for n in range(1000))
    with open(tmp_path / "log", "wb") as log:
        proc = wrapper(sys.executable, "-c", f"import sys; {lines}", stdout=log, stderr=log)
        assert proc.wait(timeout=60) == 0
    assert (tmp_path / "log").read_text().splitlines() == [str(n) for n in range(1000)]


def test_a_command_run_from_a_terminal_writes_to_a_terminal(tmp_path):
    master, slave = pty.openpty()
    proc = wrapper(sys.executable, "-c", "import sys; print(sys.stdout.isatty(), "
                   "sys.stderr.isatty())", stdout=slave, stderr=slave)
    os.close(slave)
    screen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        screen += chunk
    os.close(master)
    assert proc.wait(timeout=30) == 0
    assert screen.replace(b"\r", b"") == b"True True\n"


def test_binary_output_is_summarised_not_quoted_and_a_kill_is_named():
    blob = "import os, sys; sys.stdout.buffer.write(os.urandom(3000)); sys.exit(3)"
    assert reflect_run(sys.executable, "-c", blob).returncode == 3
    assert reflect_run(sys.executable, "-c", "import os; os.kill(os.getpid(), 9)",
                       run="ci-8").returncode == 137
    with Memory() as mem:
        [binary] = mem.failures(run="ci-7")
        [killed] = mem.failures(run="ci-8")
        block = mem.recall(run="ci-8").text
    assert "binary output, 3000 bytes" in binary.message and "\ufffd" not in binary.message
    assert "SIGKILL" in killed.message
    assert "killed (SIGKILL) from outside" in block and "Out of memory" not in block
