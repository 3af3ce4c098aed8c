"""The readers of Claude Code's transcripts and Codex's rollouts, on files the real
binaries wrote (tests/fixtures/transcripts), and on those files damaged."""

import json

import pytest
from transcript_fixtures import (
    CLAUDE_FORK,
    CLAUDE_PROJECT,
    CLAUDE_SESSION,
    CODEX_SESSION,
    CODEX_SESSIONS,
    fixture_files,
    synthesize,
)

from reflect.api.learn import sessions
from reflect.capture.transcripts import COPIED, INTERRUPTED, REFUSED, TranscriptError
from reflect.capture.transcripts.lines import MALFORMED, TOO_LONG, UNFINISHED, Skipped, records


def calls_of(client, paths):
    skipped = Skipped()
    found = sessions(client, paths, skipped)
    return {s.run: (s, list(s.calls(skipped))) for s in found}, skipped


def test_claude_code_transcripts_as_the_hooks_saw_them():
    found, skipped = calls_of("claude-code", [CLAUDE_PROJECT])
    session, calls = found[CLAUDE_SESSION]
    assert session.goal == "Make the weekly report run"  # the first prompt, not a resume's
    assert session.cwd.endswith("/project") and len(session.files) == 2  # and its side chain
    assert [(c.tool, c.action.rsplit("/", 1)[-1], c.failed, c.exit_code) for c in calls] == [
        ("Bash", "python3 report.py", True, 1),
        ("Read", "config.yaml", True, None),  # a failure a hook sees, of another tool
        ("Edit", "report.py", False, None),
        ("Bash", "python3 report.py", False, 0),
        ("Task", "Task", False, None),
        ("Bash", "ls data", True, 2),  # the subagent's side chain, in time order
        ("Bash", "ls", False, 0),
        ("Bash", "python3 total.py", True, 2),  # after the session was resumed
    ]
    assert calls[0].error_text.endswith("ModuleNotFoundError: No module named 'openpyxl'")
    assert "Exit code" not in calls[0].error_text  # the exit line read as the hook reads it
    # The fork repeats the session's calls: only its own is read.
    assert [(c.action, c.failed) for c in found[CLAUDE_FORK][1]] == [("python3 report.py", False)]
    assert skipped == {REFUSED: 1, INTERRUPTED: 1, COPIED: 8}


def test_codex_rollouts_as_the_hooks_saw_them():
    found, skipped = calls_of("codex", [CODEX_SESSIONS])
    assert list(found) == [CODEX_SESSION]  # the subagent's rollout is its parent's run
    session, calls = found[CODEX_SESSION]
    assert session.goal == "Make the weekly report run" and len(session.files) == 2
    assert [(c.action, c.failed, c.exit_code) for c in calls] == [
        ("python3 report.py", True, 1),
        ("python3 report.py", False, 0),
        ("ls data", True, 2),  # the subagent's
        ("ls", False, 0),
        ("python3 total.py", True, 2),  # resumed; the interrupted command after it is not
    ]
    assert calls[0].error_text.endswith("No module named 'openpyxl'\n")
    assert skipped == {REFUSED: 1, INTERRUPTED: 1}  # the patch that did not apply


@pytest.mark.parametrize("client", ["claude-code", "codex"])
def test_damaged_lines_are_counted_and_the_rest_is_read(client, tmp_path):
    files = synthesize(client, tmp_path)
    main = files[0]
    lines = main.read_text().splitlines(keepends=True)
    whole = len([c for c in calls_of(client, [tmp_path])[0].popitem()[1][1]])
    # A damaged line in the middle, and the session still being written at the end.
    lines.insert(len(lines) // 2, '{"type": "user", "message": {"content": [\n')
    main.write_text("".join(lines) + '{"type": "assistant", "mess')
    found, skipped = calls_of(client, [tmp_path])
    assert len(found.popitem()[1][1]) == whole
    assert skipped[MALFORMED] == 1 and skipped[UNFINISHED] == 1


def test_a_line_too_long_is_read_through_not_held(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text('{"a": 1}\n' + '{"b": "' + "x" * 5000 + '"}\n{"c": 3}\n')
    skipped = Skipped()
    assert list(records(path, skipped, max_line=1000)) == [{"a": 1}, {"c": 3}]
    assert skipped == {TOO_LONG: 1}


def test_a_file_is_read_to_a_bound_of_lines_and_what_was_left_is_said(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text('{"a": 1}\n' + "\n" * 20 + '{"b": 2}\n')
    skipped = Skipped()
    assert list(records(path, skipped, max_lines=10)) == [{"a": 1}]
    assert skipped == {"files read only to their first 10 lines (the rest not learned)": 1}
    skipped = Skipped()
    assert len(list(records(path, skipped, max_lines=22))) == 2 and skipped == {}


@pytest.mark.parametrize("client", ["claude-code", "codex"])
def test_a_session_whose_first_prompt_comes_late_is_read_whole(client, tmp_path):
    """Many records before the first prompt (a long context restored, a client's notes):
    the session, its goal and its calls all the same."""
    [main, *_] = synthesize(client, tmp_path, texts={"Make the weekly report run": "Fix it"})
    lines = main.read_text().splitlines(keepends=True)
    if client == "claude-code":  # records of no session, then the session
        note, at = {"type": "progress", "data": "x"}, 0
    else:  # after its session_meta, events before the first prompt
        note, at = {"type": "event_msg", "payload": {"type": "token_count"}}, 1
    lines[at:at] = [json.dumps(note) + "\n"] * 500
    main.write_text("".join(lines))
    found, skipped = calls_of(client, [tmp_path])
    [(session, calls)] = [v for v in found.values() if v[0].files[0] == main]
    assert session.goal == "Fix it" and len([c for c in calls if c.failed]) >= 3, skipped


def test_a_number_past_int_s_limit_is_no_damaged_line(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text('{"exit_code": ' + "9" * 5000 + '}\n')  # int() stops at 4300 digits
    skipped = Skipped()
    [record] = records(path, skipped)
    assert record["exit_code"] > 2**63 and skipped == {}


def test_a_format_not_known_is_reported_and_skipped(tmp_path):
    for path in synthesize("claude-code", tmp_path / "c"):  # the session and its side chain
        path.write_text(path.read_text().replace('"version": "2.1.332"', '"version": "3.0.0"'))
    found, skipped = calls_of("claude-code", [tmp_path / "c"])
    assert found == {}
    assert [n for why, n in skipped.items() if "Claude Code 3.x" in why and "upgrade" in why
            ] == [2]

    codex = synthesize("codex", tmp_path / "x")
    for path in codex:
        path.write_text(path.read_text().replace('"cli_version": "0.171.0"',
                                                 '"cli_version": "1.2.0"'))
    old = tmp_path / "x" / "rollout-old.jsonl"  # an early Codex: no session_meta first
    old.write_text(json.dumps({"id": "x", "timestamp": "2025-04-01", "instructions": ""}) + "\n")
    found, skipped = calls_of("codex", [tmp_path / "x"])
    assert found == {}
    assert sorted(skipped.values()) == [1, 2]


def test_paths_a_file_a_directory_a_glob_and_a_missing_one(tmp_path):
    files = fixture_files("codex")
    assert len(calls_of("codex", [files[0]])[0]) == 1
    assert len(calls_of("codex", [str(CODEX_SESSIONS / "*" / "*" / "*" / "rollout-*")])[0]) == 1
    with pytest.raises(TranscriptError, match="no such file"):
        sessions("codex", [tmp_path / "nowhere"])


def test_an_older_codex_rollout_shell_calls_and_exec_command_end(tmp_path):
    """Written by hand in the form Codex 0.3x wrote (no fixture of a binary that old): the
    `shell` tool with an argv, its end in `exec_command_end`, or only in its output's
    header, as the hook reads them too."""
    def line(kind, payload, ts="2025-09-01T10:00:00.000Z"):
        return json.dumps({"timestamp": ts, "type": kind, "payload": payload}) + "\n"

    shell = {"command": ["bash", "-lc", "pytest -x"]}
    path = tmp_path / "rollout-2025-09-01T10-00-00-old.jsonl"
    path.write_text("".join([
        line("session_meta", {"id": "old-1", "timestamp": "2025-09-01T10:00:00Z",
                              "cwd": "/srv/app", "cli_version": "0.36.0"}),
        line("response_item", {"type": "message", "role": "user",
                               "content": [{"type": "input_text", "text": "Fix the tests"}]}),
        line("response_item", {"type": "function_call", "name": "shell", "call_id": "c1",
                               "arguments": json.dumps(shell)}),
        line("event_msg", {"type": "exec_command_end", "call_id": "c1", "exit_code": 1,
                           "aggregated_output": "E   assert 1 == 2\n"}, "2025-09-01T10:00:05Z"),
        line("response_item", {"type": "function_call_output", "call_id": "c1",
                               "output": {"output": "E   assert 1 == 2\n",
                                          "metadata": {"exit_code": 1}}}),
        line("response_item", {"type": "function_call", "name": "shell", "call_id": "c2",
                               "arguments": json.dumps(shell)}),
        line("response_item", {"type": "function_call_output", "call_id": "c2",
                               "output": "Process exited with code 0\nOutput:\n1 passed\n"},
             "2025-09-01T10:00:09Z"),
    ]))
    found, skipped = calls_of("codex", [path])
    session, calls = found["old-1"]
    assert (session.goal, session.cwd) == ("Fix the tests", "/srv/app")
    assert [(c.action, c.failed, c.exit_code, c.error_text) for c in calls] == [
        ("pytest -x", True, 1, "E   assert 1 == 2\n"), ("pytest -x", False, 0, "")]
    assert skipped == {}


def test_an_interrupted_call_is_known_by_its_words_without_toolDenialKind(tmp_path):
    main = synthesize("claude-code", tmp_path)[0]
    records = [json.loads(line) for line in main.read_text().splitlines()]
    assert sum(r.pop("toolDenialKind", None) is not None for r in records) == 1
    main.write_text("".join(json.dumps(r) + "\n" for r in records))
    _, skipped = calls_of("claude-code", [tmp_path])
    assert skipped[INTERRUPTED] == 1
