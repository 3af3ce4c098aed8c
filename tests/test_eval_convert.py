"""The converters on the real data in ../shared/data (read, never copied).

The counts were checked against the raw files: mini-swe-agent by counting
observations that begin with <returncode>, Reflexion from the number of
reflections and is_solved per task, DebugBench from traceback_messages,
test_result_bool and the judge's state.
"""

import collections
import json

import pytest
from conftest import run_cli

from reflect.eval._convert import ConvertError, convert
from reflect.eval._trace import read_trace


def summary(records):
    runs = collections.Counter(r.run for r in records)
    return len(runs), len(records), sum(not r.success for r in records)


@pytest.fixture
def trajs(data_dir):
    return data_dir / "mini-swe-agent" / "trajs"


# -- mini-swe-agent --------------------------------------------------------------


def test_mini_swe_agent_counts(data_dir):
    records = convert("mini-swe-agent", [data_dir / "mini-swe-agent"])
    assert summary(records) == (34, 1313, 87)
    assert all(r.success == (r.exit_code == 0) for r in records)
    assert all(r.error_text == "" for r in records if r.success)
    assert all(r.ts is not None and r.phase == "" for r in records)
    # the 17 failures with no output at all are greps that matched nothing
    silent = [r for r in records if not r.success and not r.error_text.strip()]
    assert len(silent) == 17 and all("grep" in r.action for r in silent)


def test_mini_swe_agent_turns_without_return_code_produce_no_record(trajs):
    path = trajs / "django__django-15380.traj.json"
    messages = json.loads(path.read_text())["messages"]
    assistant = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    format_errors = [i for i in assistant
                     if messages[i + 1]["content"].startswith("Please always provide EXACTLY ONE")]
    assert (len(assistant), len(format_errors)) == (48, 7)  # and one final submission
    records = convert("mini-swe-agent", [path])
    assert len(records) == 40
    assert [r.iteration for r in records] == list(range(1, 41))
    skipped = {messages[i]["extra"]["response"]["created"] for i in format_errors}
    assert not skipped & {r.ts for r in records}
    assert not any("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" in r.action for r in records)


def test_mini_swe_agent_timeout_turn_produces_no_record(trajs):
    path = trajs / "matplotlib__matplotlib-25775.traj.json"
    records = convert("mini-swe-agent", [path])
    assert summary(records) == (1, 92, 6)


def test_mini_swe_agent_goal_comes_from_pr_description(trajs):
    records = convert("mini-swe-agent", [trajs / "astropy__astropy-13398.traj.json"])
    goals = {r.goal for r in records}
    assert len(goals) == 1
    goal = goals.pop()
    assert goal.startswith("A direct approach to ITRS to Observed transformations that stays "
                           "within the ITRS.")
    assert "<pr_description>" not in goal and "Consider the following" not in goal
    assert "THOUGHT" not in goal  # nothing of the system prompt or the instructions around it


def test_mini_swe_agent_failure_fields(trajs):
    records = convert("mini-swe-agent", [trajs / "django__django-16263.traj.json"])
    assert summary(records) == (1, 78, 9)
    failure = records[10]
    assert (failure.run, failure.iteration, failure.exit_code) == ("django__django-16263", 11, 1)
    assert failure.action == "python reproduce_issue.py"
    assert "no such table: annotations_publisher" in failure.error_text
    assert "<returncode>" not in failure.error_text and "<output>" not in failure.error_text

    first = convert("mini-swe-agent", [trajs / "astropy__astropy-13398.traj.json"])[13]
    assert (first.iteration, first.exit_code, first.ts) == (14, 1, 1763511814.0)
    assert first.action == "pytest astropy/coordinates/tests/test_intermediate_transformations.py"
    assert "<output_head>" not in first.error_text and "<elided_chars>" not in first.error_text


# -- Reflexion -------------------------------------------------------------------


REFLEXION = {
    # directory: (runs, iterations, failures, runs whose last attempt solved the task)
    "reflexion_mbpp_py": (397, 875, 569, 306),
    "simple_mbpp_py": (397, 397, 79, 318),
    "reflexion_leetcode_python3_gpt4": (40, 186, 184, 2),
    "simple_leetcode_python3_gpt4": (40, 40, 36, 4),
    "reflexion_humaneval_py_pass_at_1": (164, 358, 208, 150),
    "simple_human_eval_py_logging": (164, 164, 23, 141),
}


@pytest.mark.parametrize(("directory", "expected"), REFLEXION.items())
def test_reflexion_counts(data_dir, directory, expected):
    records = convert("reflexion", [data_dir / "reflexion" / directory])
    last = {r.run: r for r in records}
    assert (*summary(records), sum(r.success for r in last.values())) == expected
    # no attempt has error text, an exit code or a time: the data keeps none
    assert all(r.error_text == "" and r.exit_code is None and r.ts is None for r in records)


def test_reflexion_attempts_follow_the_reflections(data_dir):
    path = next((data_dir / "reflexion" / "reflexion_mbpp_py").glob("*.jsonl"))
    tasks = [json.loads(line) for line in path.read_text().splitlines()]
    task = next(t for t in tasks if len(t["reflections"]) == 4 and t["is_solved"])
    records = [r for r in convert("reflexion", [path]) if r.run == task["name"]]
    assert [r.iteration for r in records] == [1, 2, 3, 4, 5]
    assert [r.success for r in records] == [False, False, False, False, True]
    assert records[-1].action == task["solution"].strip()
    assert all(r.goal == task["prompt"].strip() and r.phase == "test" for r in records)
    assert all(r.action == "" for r in records[:-1])


# -- DebugBench ------------------------------------------------------------------


def test_reflexion_twins_share_run_names_and_mixing_them_is_an_error(data_dir):
    on = convert("reflexion", [data_dir / "reflexion" / "reflexion_humaneval_py_pass_at_1"])
    off = convert("reflexion", [data_dir / "reflexion" / "simple_human_eval_py_logging"])
    assert list(dict.fromkeys(r.run for r in on)) == [r.run for r in off]
    assert off[0].run == "HumanEval/0"
    with pytest.raises(ConvertError, match=r"'HumanEval/0' is also in .* separately"):
        convert("reflexion", [data_dir / "reflexion"])


def test_debugbench_counts(data_dir):
    records = convert("debugbench", [data_dir / "debugbench"])
    # 280 records, 2 slugs twice in one file; 196 tracebacks of buggy code; 276 judged
    # fixes (4 judges never finished); 3 records have neither, so no run.
    assert summary(records) == (277, 472, 246)
    bugs = [r for r in records if r.iteration == 1]
    fixes = [r for r in records if r.iteration == 2]
    assert len(bugs) == 196 and all(not r.success and r.error_text for r in bugs)
    assert len(fixes) == 276 and sum(not r.success for r in fixes) == 50
    assert all(r.ts is not None for r in fixes) and all(r.ts is None for r in bugs)


def test_debugbench_record_fields(data_dir):
    records = convert("debugbench", [data_dir / "debugbench"])
    by_run = collections.defaultdict(list)
    for r in records:
        by_run[r.run].append(r)
    bug, fix = by_run["undefined_methods/check-if-two-string-arrays-are-equivalent"]
    assert bug.error_text == "Line 4: AttributeError: 'Solution' object has no attribute 'concat'"
    assert fix.success and fix.action.startswith('Used Python\'s built-in "".join()')
    assert fix.goal.startswith("Given two string arrays word1 and word2")
    _, wrong = by_run["==_and_=_confusion/add-edges-to-make-degrees-of-all-nodes-even"]
    assert wrong.error_text == "Wrong Answer: 44 of 52 test cases passed"
    _, crashed = by_run["unclosed_string/sliding-window-median"]
    assert crashed.error_text.startswith("TypeError: '>' not supported between instances")
    twice = "colon_missing/check-if-string-is-transformable-with-substring-sort-operations"
    assert twice in by_run and twice + "#2" in by_run


# -- files and the command line --------------------------------------------------


def test_cli_convert_writes_a_readable_trace(data_dir, tmp_path):
    out = tmp_path / "trace.jsonl"
    done = run_cli("eval", "convert", "reflexion",
                   str(data_dir / "reflexion" / "simple_leetcode_python3_gpt4"), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert "40 runs, 40 iterations, 36 failures" in done.stdout.decode()
    assert len(read_trace(out)) == 40


def test_wrong_format_and_missing_paths_say_how_to_fix(data_dir, tmp_path):
    with pytest.raises(ConvertError, match="no such file or directory"):
        convert("debugbench", [tmp_path / "absent"])
    with pytest.raises(ConvertError, match=r"no \*.traj.json files .* right format"):
        convert("mini-swe-agent", [data_dir / "reflexion"])
    bad = tmp_path / "bad.traj.json"
    bad.write_text("[1, 2]")
    with pytest.raises(ConvertError, match="no 'messages' list"):
        convert("mini-swe-agent", [bad])
    done = run_cli("eval", "convert", "debugbench", str(tmp_path / "absent"),
                   "-o", str(tmp_path / "t.jsonl"))
    assert done.returncode == 1 and b"no such file or directory" in done.stderr
