"""``reflect hook codex`` on the events Codex sends. The fixtures are payloads captured from
codex-cli 0.171.0 (tests/real_clients.py pins it) on a failing ``python3 report.py``, and
``rollout.jsonl`` holds that session's rollout lines for the call as they stood when its
PostToolUse hook ran: Codex gives the hook the raw output and no exit code; the rollout
has it."""

import json
from pathlib import Path

import pytest
from test_integration_claude_code import FIXTURES, context, event, hook

from reflect import Memory

SESSION = "01a2333c-615a-7320-966e-b2a6074ccaab"
ROLLOUT = FIXTURES.parent / "codex" / "rollout.jsonl"


def codex(name: str, **changes) -> dict:
    changes.setdefault("transcript_path", str(ROLLOUT))
    return hook(event(name, client="codex", **changes), client="codex")[0]


def captured() -> list:
    with Memory() as mem:
        return mem.failures(run=SESSION)


def rollout(tmp_path, call_id: str, exit_code: object, output: str = "") -> str:
    """A rollout holding one completed call, as codex-cli 0.171.0 writes it (the
    fixture's line with the id, exit code and output changed), or as an older Codex's
    ``exec_command_end`` when asked."""
    lines = ROLLOUT.read_text().splitlines()
    done = json.loads(lines[1])
    done["payload"]["item"].update(id=call_id, exit_code=exit_code, aggregated_output=output)
    path = tmp_path / f"rollout-{call_id}.jsonl"
    path.write_text(lines[0] + "\n" + json.dumps(done) + "\n")
    return str(path)


def test_a_bash_call_that_exited_non_zero_is_captured_and_answered():
    text = context(codex("PostToolUse"), "PostToolUse")
    assert "python3 report.py" in text and "openpyxl" in text
    [entry] = captured()
    assert (entry.action, entry.exit_code, entry.error_type) == \
        ("python3 report.py", 1, "ModuleNotFoundError")


def test_a_passing_command_that_prints_an_exit_code_is_no_failure(tmp_path):
    printed = "Exit code: 3\nProcess exited with code 3\n"
    assert codex("PostToolUse", tool_use_id="call_07", tool_response=printed,
                 transcript_path=rollout(tmp_path, "call_07", 0, printed)) == {}
    assert captured() == []


def test_the_exit_code_is_the_rollout_s_not_the_output_s(tmp_path):
    assert codex("PostToolUse", tool_use_id="call_08", tool_response="Exit code: 0\n",
                 transcript_path=rollout(tmp_path, "call_08", 2))
    assert [e.exit_code for e in captured()] == [2]


def test_an_older_rollout_s_exec_command_end_is_read_too(tmp_path):
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps({"type": "event_msg", "payload": {
        "type": "exec_command_end", "call_id": "call_00", "exit_code": 4,
        "aggregated_output": "boom\n"}}) + "\n")
    assert codex("PostToolUse", transcript_path=str(path), tool_response="")
    [entry] = captured()
    assert entry.exit_code == 4 and "boom" in entry.message


def test_without_the_call_in_a_rollout_nothing_is_recorded(tmp_path):
    (tmp_path / "empty.jsonl").write_text("")
    for where in (None, "/nonexistent/rollout.jsonl", str(tmp_path / "empty.jsonl")):
        assert codex("PostToolUse", transcript_path=where) == {}
    assert codex("PostToolUse", tool_use_id="call_99") == {}  # another call's lines only
    assert captured() == []


def test_a_long_rollout_is_read_from_its_end(tmp_path):
    path = tmp_path / "long.jsonl"
    filler = json.dumps({"type": "event_msg", "payload": {"type": "token_count",
                                                          "pad": "x" * 1000}})
    path.write_text("\n".join([filler] * 2000) + "\n" + ROLLOUT.read_text()
                    + "\n".join([filler] * 300) + "\n")
    assert codex("PostToolUse", transcript_path=str(path))
    assert [e.exit_code for e in captured()] == [1]


def test_prompt_session_start_and_pre_tool_use():
    codex("UserPromptSubmit")
    codex("PostToolUse")
    assert captured()[0].goal == "Make the weekly report script run"
    assert "openpyxl" in context(codex("SessionStart"), "SessionStart")
    # The same command, nothing run since it failed: refused with the reason, which Codex
    # shows its model (its hooks read Claude Code's permissionDecision).
    answer = codex("PreToolUse")["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny"
    assert "python3 report.py" in answer["permissionDecisionReason"]


def test_the_rollout_s_lines_that_are_no_record_of_the_call_are_passed_over(tmp_path):
    from reflect.integrations.codex import call_result

    path = tmp_path / "mixed.jsonl"
    output = ("Chunk ID: 7302bd\nWall time: 0.0 seconds\nProcess exited with code 5\n"
              "Output:\nProcess exited with code 0\n")
    path.write_text("\n".join([
        json.dumps({"type": "response_item", "payload": {
            "type": "function_call_output", "call_id": "call_05", "output": output}}),
        'not json "call_05"', json.dumps({"payload": ["call_05"]}),
        json.dumps({"payload": {"type": "function_call", "call_id": "call_55"}}) + ' "call_05"',
    ]) + "\n")
    assert call_result(str(path), "call_05") == (5, "")  # the header's, not the output's
    assert call_result(str(path), "") == (None, "")


@pytest.mark.parametrize("code", ["1", 1.0, "1.0"])
def test_an_exit_code_written_as_text_or_a_float_is_read(tmp_path, code):
    path = rollout(tmp_path, "call_09", code, "Traceback (most recent call last):\nKeyError: 'k'\n")
    assert codex("PostToolUse", tool_use_id="call_09", tool_response="", transcript_path=path)
    [entry] = captured()
    assert entry.exit_code == 1 and entry.error_type == "KeyError"


def test_a_tool_response_given_as_a_list_keeps_the_failure(tmp_path):
    response = [{"type": "text", "text": "Traceback (most recent call last):\n"},
                {"type": "text", "text": "KeyError: 'listed'\n"}, 7]
    assert codex("PostToolUse", tool_use_id="call_10", tool_response=response,
                 transcript_path=rollout(tmp_path, "call_10", 2))
    [entry] = captured()
    assert entry.exit_code == 2 and "listed" in entry.message


@pytest.mark.parametrize("where", ["item_completed", "output header"])
def test_an_exit_code_of_5000_digits_is_a_failure_still(tmp_path, where):
    digits = "9" * 5000  # past Python's int() limit of 4300 digits
    error = "Traceback (most recent call last):\nKeyError: 'k'\n"
    if where == "item_completed":  # json.dumps cannot write such an int: put it in as text
        path = Path(rollout(tmp_path, "call_11", 0, error))
        path.write_text(path.read_text().replace('"exit_code": 0', f'"exit_code": {digits}'))
    else:
        path = tmp_path / "rollout.jsonl"
        path.write_text(json.dumps({"payload": {
            "type": "function_call_output", "call_id": "call_11",
            "output": f"Process exited with code {digits}\nOutput:\n{error}"}}) + "\n")
    answer = codex("PostToolUse", tool_use_id="call_11",
                   tool_response=error, transcript_path=str(path))
    assert "KeyError" in context(answer, "PostToolUse")
    [entry] = captured()
    assert entry.exit_code == 2**63 - 1 and entry.error_type == "KeyError"
