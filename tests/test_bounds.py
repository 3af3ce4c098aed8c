"""Numbers out of range and inputs that never end still leave a recorded failure."""

import json
import os
import subprocess
import sys

import pytest
from conftest import run_cli

from reflect import Memory
from reflect.capture.numbers import INT64_MAX, INT64_MIN, MAX_ITERATION, whole_number


def stored(home) -> list[tuple]:
    with Memory(home) as mem:
        return [(f.run, f.iteration, f.exit_code, f.message)
                for f in reversed(mem.failures(limit=100))]


@pytest.mark.parametrize(("text", "number"), [
    ("42", 42), (" 7 ", 7), ("1e20", 10**20), ("2**63", 2**63), ("-3", -3), ("1.9", 1),
    ("nan", None), ("inf", None), ("forty", None), ("", None),
])
def test_whole_number_reads_what_a_shell_passes(text, number):
    assert whole_number(text) == number


@pytest.mark.parametrize(("flag", "value"), [
    ("--exit-code", "100000000000000000000"), ("--exit-code", "-1e30"),
    ("--iteration", str(2**63)), ("--iteration", "1e20"), ("--iteration", "2**63"),
    ("--iteration", "-5"),
])
def test_out_of_range_numbers_still_record_the_failure(own_store, flag, value):
    out = run_cli("capture", "--run", "r", "--exit-code", "1", f"{flag}={value}",
                  "--error-file", "-", stdin=b"ValueError: overflow case")
    assert out.returncode == 0 and b"warning" in out.stderr, out.stderr
    [(_run, iteration, exit_code, message)] = stored(own_store)
    assert message == "overflow case" and 0 < iteration <= MAX_ITERATION
    assert exit_code is None or INT64_MIN <= exit_code <= INT64_MAX


@pytest.mark.parametrize("code", ["1e23", "100000000000000000000000", "-1e400", "\"12\""])
def test_crash_exit_codes_out_of_range_are_bounded(own_store, tmp_path, code):
    crash = tmp_path / "crash.json"
    crash.write_text(f'{{"error_class": "Boom", "exit_code": {code}}}')
    out = run_cli("capture", "--run", "r", "--crash-file", str(crash))
    assert out.returncode == 0, out.stderr
    [(_, _, exit_code, message)] = stored(own_store)
    assert "Boom" in message and (exit_code is None or INT64_MIN <= exit_code <= INT64_MAX)


def test_a_huge_iteration_does_not_poison_the_run(own_store):
    with Memory() as mem:
        mem.capture(run="r", iteration=2**63 - 1, exit_code=1, error_text="ValueError: first")
        later = mem.capture(run="r", exit_code=1, error_text="KeyError: 'second'")
        assert later.iteration <= MAX_ITERATION
        assert "second" in mem.recall(run="r").text
    for args in (["--iteration", "9223372036854775807"], ["--iteration", "1e30"], []):
        out = run_cli("recall", "--run", "r", *args)
        assert out.returncode == 0 and b"second" in out.stdout, out.stderr
    out = run_cli("outcome", "--run", "r", "--iteration", "1e30", "--success")
    assert out.returncode == 0 and b"failed" not in out.stderr, out.stderr


@pytest.mark.parametrize("limit", ["100000000000000000000", "1e20"])
def test_a_huge_limit_lists_everything(own_store, limit):
    Memory().capture(run="r", exit_code=1)
    out = run_cli("failures", "list", "--limit", limit)
    assert out.returncode == 0 and b"F-" in out.stdout, out.stderr


def test_bad_limit_is_a_misuse_that_says_what_is_wanted():
    out = run_cli("failures", "list", "--limit", "lots")
    assert out.returncode == 2 and b"whole number" in out.stderr


def capture(*args: str, stdin=None) -> subprocess.CompletedProcess:
    """``reflect capture`` reading what never ends: its exit is the event (the timeout only
    catches a hang; bench/bounds.py times it)."""
    return subprocess.run([sys.executable, "-m", "reflect", "capture", "--run", "r",
                           "--exit-code", "3", *args], stdin=stdin, capture_output=True,
                          timeout=60)


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_an_endless_device_is_read_in_bounded_time(own_store, device):
    out = capture("--error-file", device)
    assert out.returncode == 0, out.stderr
    assert b"did not end" in out.stderr
    assert len(stored(own_store)) == 1


def test_stdin_from_an_endless_device(own_store):
    with open("/dev/zero", "rb") as zero:
        out = capture("--error-file", "-", stdin=zero)
    assert out.returncode == 0 and len(stored(own_store)) == 1, out.stderr
    assert b"did not end" in out.stderr


def test_a_fifo_without_a_writer_does_not_hang(own_store, tmp_path):
    fifo = tmp_path / "err.fifo"
    os.mkfifo(fifo)
    out = capture("--error-file", str(fifo), "--crash-file", str(fifo))
    assert out.returncode == 0, out.stderr
    assert len(stored(own_store)) == 1


def test_a_pipe_whose_writer_hangs_is_given_up_on(own_store):
    writer = subprocess.Popen([sys.executable, "-c",
                               "import sys, time; print('ValueError: partial', flush=True);"
                               " time.sleep(60)"], stdout=subprocess.PIPE)
    try:
        out = capture("--error-file", "-", stdin=writer.stdout)
    finally:
        writer.kill()
    assert out.returncode == 0 and b"no end" in out.stderr, out.stderr
    assert stored(own_store)[0][3] == "partial"


def test_import_refuses_what_is_not_a_regular_file(tmp_path):
    for path in ("/dev/zero", str(tmp_path)):
        out = run_cli("import", path)
        assert (out.returncode == 1 and b"regular file" in out.stderr) or b"directory" in out.stderr


def test_import_cuts_an_endless_line(tmp_path):
    path = tmp_path / "lessons.jsonl"
    good = {"fingerprint": "0123456789abcdef", "trigger": "running pytest",
            "guidance": "use python -m pytest -x", "kind": "model"}
    path.write_text("x" * 5_000_000 + "\n" + json.dumps(good) + "\n")
    out = run_cli("import", str(path))
    assert b"lessons.jsonl:1: line longer" in out.stderr and b"imported 1" in out.stdout


@pytest.mark.parametrize("value", ["10**5000", "9" * 4000 + "**9999", "", "abc", "nan", "inf",
                                   "1e400", "0x10", "9" * 5000])
@pytest.mark.parametrize("option", ["--exit-code", "--iteration"])
def test_an_absurd_number_keeps_its_row(own_store, value, option):
    out = run_cli("capture", "--run", "r", option, value, "--error-file", "-",
                  "--format", "json", stdin=b"ValueError: kept")
    assert out.returncode == 0, out.stderr
    listed = json.loads(run_cli("failures", "list", "--format", "json").stdout)["failures"]
    assert len(listed) == 1


def test_invalid_utf8_and_nul_in_the_fields_keep_the_row(own_store):
    from reflect import Memory

    with Memory() as mem:
        entry = mem.capture(run="r\udcff", goal="g\udcff\x00", phase="p\ud800", action="a\x00",
                            exit_code=1, error_text="ValueError: bad \udcff byte\x00")
        assert mem.failure(entry.failure_id) is not None
        assert "\x00" not in json.dumps(mem.failure(entry.failure_id).to_dict())


@pytest.mark.parametrize("value", ["-2**70", "-inf", "-nan", "-abc", "-1e400", "--5", "-0x10"])
def test_a_value_beginning_with_a_dash_is_a_value_not_an_option(own_store, value):
    out = run_cli("capture", "--run", "r", "--exit-code", value, "--iteration", value,
                  "--goal", value, "--error-file", "-", stdin=b"ValueError: kept")
    assert out.returncode == 0 and b"warning" in out.stderr, out.stderr
    [(_run, _iteration, exit_code, message)] = stored(own_store)
    assert message == "kept" and (exit_code is None or INT64_MIN <= exit_code <= INT64_MAX)


def test_an_option_still_ends_a_missing_value():
    out = run_cli("capture", "--run", "r", "--exit-code", "--goal", "g")
    assert out.returncode == 2 and b"expected one argument" in out.stderr


def test_an_absurd_iteration_does_not_carry_over_to_the_run_s_next_number(own_store):
    run_cli("capture", "--run", "r", "--exit-code", "1")
    run_cli("capture", "--run", "r", "--exit-code", "1", "--iteration", str(MAX_ITERATION))
    for _ in range(2):
        run_cli("capture", "--run", "r", "--exit-code", "1")
    assert [iteration for _, iteration, _, _ in stored(own_store)] == [1, MAX_ITERATION, 2, 3]
