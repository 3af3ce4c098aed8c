import json
import os
import re
import subprocess
import sys

import pytest
from conftest import run_cli

TRACEBACK = b"""Traceback (most recent call last):
  File "/srv/app/manage.py", line 9, in <module>
    main()
django.db.utils.OperationalError: no such table: auth_user
"""


def captured(run="r"):
    out = run_cli("failures", "list", "--run", run, "--format", "json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["failures"]


def test_capture_json_prints_the_entry_fields_at_the_top_level():
    out = run_cli("capture", "--run", "r", "--iteration", "4", "--phase", "test",
                  "--action", "python manage.py shell", "--exit-code", "1",
                  "--error-file", "-", "--format", "json", stdin=TRACEBACK)
    assert out.returncode == 0, out.stderr
    entry = json.loads(out.stdout)
    assert entry["failure_id"].startswith("F-")
    assert (entry["run"], entry["iteration"], entry["error_type"]) == ("r", 4, "OperationalError")
    assert {"fingerprint", "message", "signature", "goal", "action", "exit_code", "source",
            "redactions", "seq", "ts", "phase"} <= entry.keys()
    assert "auth_user" in entry["hint"] and "migrate" in entry["hint"]


def test_recall_text_and_json():
    run_cli("capture", "--run", "r", "--exit-code", "1", "--error-file", "-", stdin=TRACEBACK)
    text = run_cli("recall", "--run", "r")
    assert text.returncode == 0
    assert text.stdout.startswith(b"PAST FAILURES TO AVOID:")
    data = json.loads(run_cli("recall", "--run", "r", "--format", "json").stdout)
    assert set(data) == {"text", "tokens", "items"}
    (item,) = data["items"]
    assert set(item) == {"section", "id", "text", "fingerprint", "source_failure_ids", "score"}
    assert item["section"] == "recent" and item["id"].startswith("L-")


def test_run_defaults_to_reflect_run():
    run_cli("capture", "--exit-code", "1", env={"REFLECT_RUN": "from-env"})
    assert len(captured("from-env")) == 1
    assert run_cli("recall", env={"REFLECT_RUN": "from-env"}).stdout


@pytest.mark.parametrize("args", [
    ["capture", "--no-such-option"],  # a bad number is no misuse: see test_bounds
    ["nonsense"],
    ["outcome", "--iteration", "2"],  # neither --success nor --failure
    ["recall", "--format", "yaml"],
])
def test_misuse_exits_2_with_usage(args):
    out = run_cli(*args)
    assert out.returncode == 2
    assert b"usage:" in out.stderr


def test_unknown_id_exits_1_naming_the_listing_command():
    out = run_cli("failures", "show", "F-00000000")
    assert out.returncode == 1
    assert b"reflect failures list" in out.stderr


def test_clear_all_needs_yes():
    run_cli("capture", "--run", "r", "--exit-code", "1")
    assert run_cli("clear", "--all").returncode == 2
    assert len(captured()) == 1
    assert run_cli("clear", "--all", "--yes").returncode == 0
    assert captured() == []


@pytest.mark.parametrize(("name", "content", "option", "warning"), [
    ("missing.json", None, "--crash-file", b"cannot read crash file"),
    ("crash.json", b"{not json", "--crash-file", b"is not valid JSON"),
    ("crash.json", b"[1, 2]", "--crash-file", b"is not a JSON object"),
    ("missing.log", None, "--error-file", b"cannot read error file"),
    ("bin.log", b"\x00\x01\x02ELF\x00" * 100 + b"\nValueError: late", "--error-file", b"binary"),
    ("latin1.log", "KeyError: 'caf\xe9'".encode("latin-1"), "--error-file", b"UTF-8"),
])
def test_bad_input_warns_once_records_and_exits_0(tmp_path, name, content, option, warning):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    out = run_cli("capture", "--run", "r", "--exit-code", "3", option, str(path))
    assert out.returncode == 0
    lines = out.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("reflect: warning:") and warning in out.stderr
    (entry,) = captured()
    assert entry["exit_code"] == 3


def test_huge_error_file_reads_a_bounded_tail(tmp_path):
    path = tmp_path / "huge.log"
    path.write_bytes(b"progress 42%\n" * 400_000 + b"PermissionError: [Errno 13] denied\n")
    out = run_cli("capture", "--run", "r", "--exit-code", "1", "--error-file", str(path))
    assert out.returncode == 0 and b"kept its last part" in out.stderr
    (entry,) = captured()
    assert entry["error_type"] == "PermissionError"


def test_unwritable_store_keeps_the_failure_in_a_fallback_file(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    home = {"REFLECT_HOME": str(blocker / "store")}
    out = run_cli("capture", "--run", "r", "--exit-code", "1", env=home)
    assert out.returncode == 0
    assert b"not writable" in out.stderr and b"pending-" in out.stderr
    kept = list((tmp_path).glob("reflect-*/pending-*.jsonl"))
    assert len(kept) == 1 and '"exit_code": 1' in kept[0].read_text()


def test_kill_switch_prints_nothing_and_creates_nothing(own_store):
    off = {"REFLECT_FAILURE_MEMORY": "0"}
    for args in (["capture", "--exit-code", "1"], ["recall"], ["outcome", "--iteration", "1",
                                                              "--success"],
                 ["run", "--", "true"]):
        out = run_cli(*args, env=off)
        assert (out.returncode, out.stdout, out.stderr) == (0, b"", b"")
    # the test command still runs, and its exit code stands
    assert run_cli("run", "--", "sh", "-c", "echo ran; exit 3", env=off).returncode == 3
    assert not own_store.exists()


def test_a_success_in_a_run_that_never_failed_is_silent():
    """The usual success: nothing to resolve, and nothing worth a line in the agent's log."""
    out = run_cli("outcome", "--run", "clean", "--iteration", "2", "--success")
    assert (out.returncode, out.stdout, out.stderr) == (0, b"", b"")


@pytest.mark.parametrize("args", [["capture", "--bogus"], ["lessons", "list", "--bogus"],
                                  ["eval", "replay", "t.jsonl", "--bogus"]])
def test_an_unknown_option_is_told_with_the_commands_own_usage(args):
    out = run_cli(*args)
    assert out.returncode == 2
    usage, *_, error = out.stderr.decode().splitlines()
    command = " ".join(a for a in args if not a.startswith("-") and a != "t.jsonl")
    assert usage.startswith(f"usage: reflect {command} ")
    assert error == f"reflect {command}: error: unrecognized arguments: --bogus"


def test_outcome_resolves_and_stats_counts():
    run_cli("capture", "--run", "r", "--action", "python repro.py", "--exit-code", "1",
            "--error-file", "-", stdin=TRACEBACK)
    out = run_cli("outcome", "--run", "r", "--iteration", "2", "--success",
                  "--action", "python manage.py migrate && python repro.py", "--format", "json")
    assert len(json.loads(out.stdout)["resolved_failure_ids"]) == 1
    stats = run_cli("stats").stdout.decode()
    assert "failures: 1" in stats and "OperationalError" in stats


def test_benign_exits_are_counted_by_stats_and_listed_with_all():
    run_cli("capture", "--run", "r", "--action", "grep -n needle haystack.py", "--exit-code",
            "1")
    run_cli("capture", "--run", "r", "--exit-code", "1", "--error-file", "-", stdin=TRACEBACK)
    assert "benign exits (not failures): 1" in run_cli("stats").stdout.decode()
    plain = json.loads(run_cli("failures", "list", "--format", "json").stdout)["failures"]
    every = json.loads(run_cli("failures", "list", "--all", "--format", "json").stdout)
    assert [e["source"] for e in plain] == ["text"]
    assert sorted(e["source"] for e in every["failures"]) == ["benign", "text"]
    assert run_cli("recall", "--run", "r").stdout.decode().count("- [") == 1


def test_version_prints_the_package_version():
    from reflect import __version__

    out = run_cli("--version")
    assert (out.returncode, out.stdout.decode()) == (0, f"reflect {__version__}\n")


@pytest.mark.parametrize("args", [("stats",), ("failures", "list"), ("lessons", "list")])
def test_a_closed_pipe_ends_quietly_as_git_log_does(args):
    """`reflect stats | head -1`: the reader went away; exit 0 with nothing on stderr."""
    run_cli("capture", "--run", "r", "--exit-code", "1", "--error-file", "-", stdin=TRACEBACK)
    read, write = os.pipe()
    os.close(read)  # closed before anything is written: the first write meets EPIPE
    try:
        done = subprocess.run([sys.executable, "-m", "reflect", *args], stdout=write,
                              stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (0, b"")


def test_failures_show_prints_a_readable_time_and_json_the_epoch():
    run_cli("capture", "--run", "r", "--exit-code", "1", "--error-file", "-", stdin=TRACEBACK)
    (entry,) = captured()
    text = run_cli("failures", "show", entry["failure_id"]).stdout.decode()
    (ts,) = [line.split(": ", 1)[1] for line in text.splitlines() if line.strip().startswith("ts:")]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", ts), ts
    shown = json.loads(run_cli("failures", "show", entry["failure_id"], "--format", "json").stdout)
    assert shown["ts"] == entry["ts"]


def test_an_empty_recall_at_a_terminal_says_where_it_looked_and_what_is_elsewhere(tmp_path,
                                                                                  monkeypatch):
    """Lessons are kept per repository: outside it, a person at a terminal is told where
    recall looked and how many lessons other repositories hold; a harness's log is not."""
    import pty

    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    monkeypatch.chdir(project)
    run_cli("capture", "--run", "a", "--exit-code", "1", "--error-file", "-", stdin=TRACEBACK)
    assert run_cli("recall", "--run", "b").stderr == b""  # its own lessons: nothing to say
    monkeypatch.chdir(tmp_path)
    assert run_cli("recall", "--run", "b").stderr == b""  # a pipe: no person reads it
    master, slave = pty.openpty()
    try:
        done = subprocess.run([sys.executable, "-m", "reflect", "recall", "--run", "b"],
                              stdout=subprocess.PIPE, stderr=slave, timeout=60)
        os.close(slave)
        said = os.read(master, 65536).decode()
    finally:
        os.close(master)
    assert done.returncode == 0 and done.stdout == b""
    assert said.startswith("reflect: nothing to recall: looked in the lessons of ")
    assert f"{tmp_path}, which is in no git repository" in said
    assert "1 lesson(s) of other repositories" in said


def test_a_capture_given_nothing_records_nothing_and_one_of_an_exit_code_alone_says_so():
    done = run_cli("capture", "--error-file", "-", stdin=b"")  # `reflect capture </dev/null`
    assert done.returncode == 0 and done.stdout == b""
    assert b"nothing recorded: no error text, exit code or crash file came" in done.stderr
    done = run_cli("capture")
    assert done.returncode == 0 and b"nothing recorded" in done.stderr
    assert captured("default") == []
    done = run_cli("capture", "--exit-code", "3", "--error-file", "-", stdin=b"")
    assert done.returncode == 0 and b"from its exit code alone" in done.stderr
    assert [f["error_type"] for f in captured("default")] == ["Synthesized"]


def test_a_mistyped_option_is_named_with_the_nearest_one():
    done = run_cli("--verison")
    assert done.returncode == 2 and b"did you mean --version?" in done.stderr
    assert b"COMMAND" not in done.stderr.splitlines()[-1]
    assert run_cli("--vers").returncode == 0  # argparse takes a prefix of an option


def test_teach_says_what_it_stored_and_when_it_is_recalled():
    taught = run_cli("teach", "when running the tests: use python -m pytest -x")
    assert taught.returncode == 0 and taught.stdout.startswith(b"L-")
    said = taught.stderr.decode()
    assert "when running the tests: use python -m pytest -x" in said
    assert "run, test" in said and "pytest" in said
    vague = run_cli("teach", "when it is: do it")
    assert vague.returncode == 0 and "never recalled" in vague.stderr.decode()


def test_recall_told_the_command_about_to_run_brings_the_lesson_taught_for_it():
    taught = run_cli("teach", "when running manage.py migrate: pass --run-syncdb on a fresh db")
    assert taught.returncode == 0, taught.stderr
    told = run_cli("recall", "--run", "r", "--action", "cd /repo && python manage.py migrate")
    untold = run_cli("recall", "--run", "r")
    assert told.returncode == 0 and b"--run-syncdb" in told.stdout, told.stdout + told.stderr
    assert untold.returncode == 0 and untold.stdout == b""
