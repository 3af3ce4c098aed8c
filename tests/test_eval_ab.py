import json
import sys
import textwrap

import pytest
from conftest import run_cli

from reflect.eval._ab import ABError, Task, read_tasks, render_command, run_ab, schedule
from reflect.eval._trace import read_trace

# A scripted agent with no memory of its own: its task names a module it needs, and it
# fails with the same ModuleNotFoundError until its prompt file names the fix.
FAKE_AGENT = textwrap.dedent("""\
    import sys
    prompt = open(sys.argv[1], encoding="utf-8").read()
    module = prompt.split("needs module ", 1)[1].split()[0]
    if f"pip install {module}" in prompt:
        print(f"installed {module}; the report ran")
        sys.exit(0)
    print("Traceback (most recent call last):", file=sys.stderr)
    print('  File "report.py", line 1, in <module>', file=sys.stderr)
    print(f"ModuleNotFoundError: No module named '{module}'", file=sys.stderr)
    sys.exit(1)
""")

TASKS = [
    {"id": "weekly", "goal": "Write the weekly report; needs module requests to fetch data."},
    {"id": "monthly", "goal": "Write the monthly report; needs module rich for tables."},
    {"id": "daily", "goal": "Write the daily report; needs module requests as well."},
]


@pytest.fixture
def agent(tmp_path):
    script = tmp_path / "fake_agent.py"
    script.write_text(FAKE_AGENT)
    return f"{sys.executable} {script} {{prompt_file}}"


@pytest.fixture
def tasks_file(tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    return path


def test_memory_on_repeats_less_than_off(agent, tasks_file, tmp_path):
    out = tmp_path / "ab"
    report = run_ab(agent, read_tasks(tasks_file), out, trials=4, seed=3,
                    arms=("on", "recency", "off"))
    on, recency, off = (json.loads((out / arm / "summary.json").read_text())
                        for arm in ("on", "recency", "off"))
    # off: every attempt fails; 12 failures of two signatures -> 10 repeats
    assert (off["totals"]["iterations"], off["totals"]["failures"]) == (12, 12)
    assert off["totals"]["repeats"] == 10
    # recency: each task fails once, then the block names `pip install …` and it succeeds;
    # the second "requests" task's first failure repeats the first task's (cross-run)
    assert (recency["totals"]["iterations"], recency["totals"]["failures"]) == (6, 3)
    assert (recency["totals"]["repeats"], recency["totals"]["repeats_cross"]) == (1, 1)
    # on adds lessons from earlier runs, which can only spare that cross-run repeat
    assert on["totals"]["repeats"] <= 1 and on["totals"]["failures"] <= 3
    rate = {name: s["metrics"]["repeat_rate"]["value"] for name, s in
            (("on", on), ("recency", recency), ("off", off))}
    assert rate["on"] <= rate["recency"] < rate["off"]
    assert on["metrics"]["last_ok"]["value"] == 1.0 and off["metrics"]["last_ok"]["value"] == 0
    assert all(report["wall_seconds"][arm] > 0 for arm in ("on", "recency", "off"))
    assert sorted(map(tuple, report["schedule"])) == sorted(
        (t["id"], arm) for t in TASKS for arm in ("on", "recency", "off"))


def test_the_agent_gets_the_block_and_its_output_is_captured(agent, tasks_file, tmp_path):
    out = tmp_path / "ab"
    run_ab(agent, read_tasks(tasks_file), out, trials=2, seed=0, arms=("recency", "off"))
    prompts = sorted((out / "prompts" / "recency").rglob("2.txt"))
    assert len(prompts) == 3
    text = prompts[0].read_text()
    assert text.startswith("Write the") and "PAST FAILURES TO AVOID:" in text
    assert "pip install" in text
    for first in (out / "prompts" / "off").rglob("*.txt"):
        assert "PAST FAILURES" not in first.read_text()
    trace = read_trace(out / "off" / "trace.jsonl")
    assert len(trace) == 6 and not any(r.success for r in trace)
    assert all(r.exit_code == 1 and "ModuleNotFoundError" in r.error_text for r in trace)
    rows = [json.loads(x) for x in
            (out / "recency" / "iterations.jsonl").read_text().splitlines()]
    assert [r["success"] for r in rows if r["iteration"] == 2] == [True] * 3
    assert all(r["items"][0]["signatures"] for r in rows if r["iteration"] == 2)


def test_order_is_randomized_by_seed():
    tasks = [Task(str(i), f"goal {i}") for i in range(8)]
    first = schedule(tasks, ("on", "off"), seed=1)
    assert first == schedule(tasks, ("on", "off"), seed=1)
    assert first != schedule(tasks, ("on", "off"), seed=2)
    assert [t.id for t, _ in first[::2]] != [str(i) for i in range(8)]
    leading = {arm for _, arm in first[::2]}
    assert leading == {"on", "off"}  # neither arm always runs first
    for k in range(0, len(first), 2):
        assert first[k][0] is first[k + 1][0] and first[k][1] != first[k + 1][1]


def test_timeout_kills_the_agent_and_counts_as_a_failure(tmp_path):
    out = tmp_path / "ab"
    agent = f"{sys.executable} -c 'import time; time.sleep(30)' {{prompt_file}}"
    run_ab(agent, [Task("slow", "wait")], out, trials=1, timeout=0.5)
    (record,) = read_trace(out / "on" / "trace.jsonl")
    assert record.exit_code is None and not record.success
    assert "killed after the 0.5 s timeout" in record.error_text


def test_placeholders_are_shell_quoted():
    command = render_command("agent --prompt {prompt_file} --task {task} awk '{print $1}'",
                             {"prompt_file": "/tmp/a b.txt", "workdir": "/w", "task": "x;rm",
                              "arm": "on", "iteration": "1"})
    assert command == "agent --prompt '/tmp/a b.txt' --task 'x;rm' awk '{print $1}'"


def test_bad_tasks_and_arguments(tmp_path, agent):
    bad = tmp_path / "tasks.jsonl"
    bad.write_text('{"id": "a", "goal": "g"}\n{"id": "b"}\n')
    with pytest.raises(ABError, match=r"tasks.jsonl:2: 'goal'"):
        read_tasks(bad)
    bad.write_text('{"id": "a", "goal": "g"}\n{"id": "a", "goal": "h"}\n')
    with pytest.raises(ABError, match="appears twice"):
        read_tasks(bad)
    with pytest.raises(ABError, match=r"must contain \{prompt_file\}"):
        run_ab("agent", [Task("a", "g")], tmp_path / "x")
    run_ab(agent.replace("{prompt_file}", "{prompt_file} || true"),
           [Task("a", "needs module os")], tmp_path / "again", trials=1)
    with pytest.raises(ABError, match="already exists"):
        run_ab(agent, [Task("a", "g")], tmp_path / "again")


def test_cli_ab_prints_rates_with_intervals_and_wall_time(agent, tasks_file, tmp_path):
    done = run_cli("eval", "ab", "--agent", agent, "--tasks", str(tasks_file), "--trials", "3",
                   "--seed", "5", "--out", str(tmp_path / "ab"), "--quiet")
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert out.splitlines()[0].split() == ["on", "off"]
    assert "repeats per iteration" in out and "%" in out
    assert "agent wall time: on" in out
    assert run_cli("eval", "ab", "--agent", agent, "--tasks", str(tasks_file),
                   "--trials", "0").returncode == 2
    assert run_cli("eval", "ab", "--agent", agent, "--tasks", str(tasks_file),
                   "--arms", "on,sometimes").returncode == 2
    missing = run_cli("eval", "ab", "--agent", agent, "--tasks", str(tmp_path / "none.jsonl"),
                      "--out", str(tmp_path / "ab2"))
    assert missing.returncode == 1 and b"cannot read tasks" in missing.stderr
