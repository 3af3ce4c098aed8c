"""The converters, the replay and the evaluation's command line on small files written for
the project in each data set's own layout (tests/fixtures/datasets, described in its
README.md): they run on a fresh clone with no data sets beside it. The same code on the
real data sets is tested in test_eval_convert.py, test_eval_replay.py and
test_block_quality.py, which run when the data is there."""

import json
from pathlib import Path

import pytest
from conftest import run_cli

from reflect.eval._convert import ConvertError, convert
from reflect.eval._replay import replay
from reflect.eval._trace import read_trace

DATASETS = Path(__file__).parent / "fixtures" / "datasets"
MINI = DATASETS / "mini-swe-agent"
REFLEXION = DATASETS / "reflexion"
DEBUGBENCH = DATASETS / "debugbench"


def fields(records, *names):
    return [tuple(getattr(r, n) for n in names) for r in records]


def test_mini_swe_agent_turns_with_a_return_code_are_the_iterations():
    records = convert("mini-swe-agent", [MINI])
    # run 101: a format error, a command that timed out and the submission make no record
    assert fields(records, "run", "iteration", "exit_code", "success") == [
        ("helpdesk__helpdesk-101", 1, 0, True), ("helpdesk__helpdesk-101", 2, 1, False),
        ("helpdesk__helpdesk-101", 3, 1, False), ("helpdesk__helpdesk-101", 4, 127, False),
        ("helpdesk__helpdesk-101", 5, 0, True),
        ("helpdesk__helpdesk-102", 1, 1, False), ("helpdesk__helpdesk-102", 2, 127, False),
        ("helpdesk__helpdesk-102", 3, 1, False), ("helpdesk__helpdesk-102", 4, 0, True)]
    first = records[:5]
    assert {r.goal for r in first} == {
        "Ticket counts ignore closed tickets\nThe admin shows 3 tickets when 2 are open."}
    assert [r.action for r in first] == [
        "ls helpdesk", "python repro.py", "grep -rn closed_count helpdesk",
        "pytest tests/test_admin.py", "python manage.py migrate && python repro.py"]
    assert [r.ts for r in first] == [1_760_000_000.0 + 10 * n for n in (0, 1, 3, 4, 6)]
    assert "no such table: helpdesk_ticket" in first[1].error_text
    assert "<output>" not in first[1].error_text and first[0].error_text == ""
    assert first[2].error_text == ""  # a grep that matched nothing printed nothing
    # a long output cut into head and tail, in content parts: both halves, no tags
    assert first[3].error_text == "bash: line 1: pytest: command not found\nexit status 127"


def test_reflexion_attempts_and_the_twin_without_memory():
    on = convert("reflexion", [REFLEXION / "reflexion_demo_py"])
    assert fields(on, "run", "iteration", "success") == [
        ("demo_1_add", 1, False), ("demo_1_add", 2, False), ("demo_1_add", 3, True),
        ("demo_2_last", 1, False), ("demo_2_last", 2, False), ("demo_3_neg", 1, True)]
    assert on[2].action == "def add(a, b):\n    return a + b" and on[0].action == ""
    assert all(r.phase == "test" and r.exit_code is None and r.ts is None for r in on)
    off = convert("reflexion", [REFLEXION / "simple_demo_py"])
    assert fields(off, "run", "iteration", "success") == [
        ("demo_1_add", 1, True), ("demo_2_last", 1, False), ("demo_3_neg", 1, True)]
    with pytest.raises(ConvertError, match=r"'demo_1_add' is also in .* separately"):
        convert("reflexion", [REFLEXION])


def test_debugbench_the_buggy_code_then_the_judged_fix():
    records = convert("debugbench", [DEBUGBENCH])
    assert [(r.run.removeprefix("undefined_methods/"), r.iteration, r.success)
            for r in records] == [
        ("sum-of-digits", 1, False), ("sum-of-digits", 2, True),
        ("count-vowels", 2, False),  # no traceback: its run starts at the fix
        ("reverse-words", 1, False), ("reverse-words", 2, False),
        ("reverse-words#2", 1, False), ("reverse-words#2", 2, True)]  # max-depth: never judged
    assert {r.run.split("/")[0] for r in records} == {"undefined_methods"}
    assert [r.error_text for r in records if not r.success] == [
        "Line 4: AttributeError: 'Solution' object has no attribute 'digits'",
        "Wrong Answer: 7 of 12 test cases passed",
        "Line 3: AttributeError: 'Solution' object has no attribute 'split_words'",
        "TypeError: 'NoneType' object is not iterable",
        "Line 3: NameError: name 'wrods' is not defined"]
    assert [r.ts for r in records if r.iteration == 2] == [1_700_000_000.0, 1_700_000_100.0,
                                                          1_700_000_200.0, None]
    assert records[1].action == "Called the helper as self.digits_of."


@pytest.mark.parametrize(("content", "says"), [
    ("{not json", "not valid JSON"), ('{"a": 1}', "expected a JSON list"),
    ('[{"description": "no slug"}]', "record 1 is not a DebugBench record"),
    ('[{"slug": "s", "description": "d", "test_result_dict": {"state": "SUCCESS"},'
     ' "test_result_bool": "yes"}]', "test_result_bool is not a boolean"),
])
def test_debugbench_bad_files_say_which_and_why(tmp_path, content, says):
    bad = tmp_path / "python3_bad.json"
    bad.write_text(content)
    with pytest.raises(ConvertError, match=says):
        convert("debugbench", [bad])


@pytest.mark.parametrize(("line", "says"), [
    ('{"prompt": "p", "is_solved": true}', r"bad.jsonl:1: not a Reflexion task record"),
    ('{"name": "t", "prompt": "p", "is_solved": "True"}', "is_solved is not a boolean"),
])
def test_reflexion_bad_lines_say_which_and_why(tmp_path, line, says):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n" + line + "\n")
    with pytest.raises(ConvertError, match=says.replace(":1:", ":2:")):
        convert("reflexion", [bad])


def test_unknown_format_and_empty_directories_say_how_to_fix(tmp_path):
    with pytest.raises(ConvertError, match="unknown format 'swe'; choose one of mini-swe-agent"):
        convert("swe", [MINI])
    with pytest.raises(ConvertError, match=r"no \*.traj.json files .* right format"):
        convert("mini-swe-agent", [REFLEXION])


def test_a_replay_of_the_fixture_runs_covers_their_repeats(tmp_path):
    trace = convert("mini-swe-agent", [MINI])
    totals = {mode: replay(trace, mode, tmp_path / mode)["totals"]
              for mode in ("on", "recency", "off", "last3", "popular")}
    on = totals["on"]
    # the grep that matched nothing is benign; run 102 meets `pytest: command not found`
    # again (a cross-run repeat); nothing repeats within a run
    assert (on["runs"], on["iterations"], on["repeats_cross"], on["repeats_within"]) == (
        2, 9, 1, 0)
    assert on["foreign_items"] == 0
    assert totals["off"]["items"] == 0 and totals["recency"]["covered_cross"] == 0
    assert totals["popular"]["covered_cross"] == 1
    rows = [json.loads(line) for line in (tmp_path / "on" / "iterations.jsonl").read_text()
            .splitlines()]
    assert len(rows) == 9 and all(r["tokens"] <= 400 for r in rows)


def test_the_evaluation_command_line_on_the_fixtures(tmp_path):
    trace = tmp_path / "trace.jsonl"
    done = run_cli("eval", "convert", "mini-swe-agent", str(MINI), "-o", str(trace))
    assert done.returncode == 0, done.stderr
    assert "2 runs, 9 iterations, 6 failures" in done.stdout.decode()
    assert len(read_trace(trace)) == 9
    for mode in ("on", "popular"):
        out = run_cli("eval", "replay", str(trace), "--mode", mode, "--out", str(tmp_path / mode))
        assert out.returncode == 0, out.stderr
    compared = run_cli("eval", "compare", str(tmp_path / "on"), str(tmp_path / "popular"))
    assert compared.returncode == 0, compared.stderr
    table = compared.stdout.decode()
    # Of two runs, the first's mistakes are no house rule for the second (a rule needs two
    # runs); the popularity list shows them anyway.
    assert "coverage, cross-run repeats                  0.0% [0.0%, 0.0%]        100.0%" in table
    assert "difference from on (paired):" in table
    (tmp_path / "a-file").write_text("")
    unwritable = run_cli("eval", "convert", "reflexion", str(REFLEXION / "simple_demo_py"),
                         "-o", str(tmp_path / "a-file" / "t.jsonl"))
    assert unwritable.returncode == 1 and b"a-file: File exists" in unwritable.stderr
