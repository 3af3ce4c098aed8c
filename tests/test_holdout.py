"""The holdout: a lesson of an earlier run withheld from a share of runs, by a hash of (run,
lesson); what each lesson changes, measured from the log; verdicts that promote and
demote; a population of scripted agents where the true effects are known."""

import json

import pytest
from conftest import run_cli

from reflect import Memory, Settings
from reflect.api.memory import port
from reflect.eval._scripted import Mistake, run_population
from reflect.recall.holdout import (
    DEMOTED,
    PROMOTED,
    SHOWN,
    WITHHELD,
    Effect,
    Holdout,
    wilson,
    withheld,
)

NO_YAML = "ModuleNotFoundError: No module named 'yaml'"
NO_PYTEST = "bash: pytest: command not found"


def earlier_runs(mem, n=4):
    """Earlier runs that all missed yaml: its lesson is predicted for the next run."""
    for i in range(n):
        mem.recall(run=f"old{i}", iteration=1)
        entry = mem.capture(run=f"old{i}", iteration=1, action="python -c 'import yaml'",
                            exit_code=1, error_text=NO_YAML)
    return entry


def runs_in(arm, fingerprint, p, n=200):
    return [f"new{i}" for i in range(n) if withheld(f"new{i}", fingerprint, p) == (arm == WITHHELD)]


def test_the_arm_is_a_hash_of_run_and_lesson_in_the_share_asked():
    pairs = [(f"run{i}", f"L-{j}") for i in range(200) for j in range(50)]
    share = sum(withheld(r, lesson, 0.1) for r, lesson in pairs) / len(pairs)
    assert 0.09 < share < 0.11
    assert [withheld(r, lesson, 0.1) for r, lesson in pairs] == \
           [withheld(r, lesson, 0.1) for r, lesson in pairs]
    # One run is in another arm for another lesson: the arms are per (run, lesson).
    assert {withheld("run1", f"L-{j}", 0.5) for j in range(20)} == {True, False}
    assert not any(withheld(r, lesson, 0.0) for r, lesson in pairs)


def test_wilson_intervals_are_the_textbook_ones():
    assert wilson(5, 10, 1.96) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    lo, hi = wilson(0, 10, 1.96)
    assert lo == 0 and hi == pytest.approx(0.2775, abs=1e-4)
    assert wilson(0, 0, 1.96) == (0.0, 1.0)


def test_a_holdout_is_a_share():
    with pytest.raises(ValueError, match="0 <= p < 1"):
        Holdout(p=1.5)


def test_verdicts_come_at_looks_only_and_need_both_bounds():
    rule = Holdout(p=0.5, min_runs=30, z=2.5, min_effect=0.05)
    clear = Effect("L-a", "f", shown=30, shown_hits=3, withheld=30, withheld_hits=18)
    assert clear.judge(rule) == PROMOTED
    # The same rates one run past the look: no verdict until the smaller arm doubles.
    assert Effect("L-a", "f", shown=31, shown_hits=3, withheld=31, withheld_hits=18
                  ).judge(rule) == ""
    assert Effect("L-a", "f", shown=29, shown_hits=0, withheld=29, withheld_hits=29
                  ).judge(rule) == ""  # too few runs, however clear
    flat = Effect("L-b", "f", shown=960, shown_hits=288, withheld=960, withheld_hits=280)
    assert flat.interval(rule.z)[1] < rule.min_effect and flat.judge(rule) == DEMOTED
    unclear = Effect("L-c", "f", shown=60, shown_hits=15, withheld=60, withheld_hits=20)
    assert unclear.judge(rule) == ""


def test_recall_withholds_a_lesson_from_its_arm_and_a_rerun_gives_the_same_block():
    with Memory(settings=Settings(holdout=0.5)) as mem:
        entry = earlier_runs(mem)
        lesson_id = entry.lesson_id
        held, seen = (runs_in(arm, entry.fingerprint, 0.5)[0] for arm in (WITHHELD, SHOWN))
        before = arms(mem)
        blocks = {run: mem.recall(run=run, iteration=1) for run in (held, seen)}
        assert lesson_id in [i.id for i in blocks[seen].items]
        assert lesson_id not in [i.id for i in blocks[held].items]
        assert [(e.lesson_id, e.arm) for e in blocks[held].eligible] == [(lesson_id, WITHHELD)]
        assert blocks[held].eligible[0].predicted > 0
        again = mem.recall(run=held, iteration=2)
        assert again.text == blocks[held].text and not again.items
        after = arms(mem)  # each run logged once, however often it recalls
        assert {k: after[k] - before.get(k, 0) for k in after} == {(lesson_id, WITHHELD): 1,
                                                                   (lesson_id, SHOWN): 1}


def arms(mem):
    return {(r["lesson_id"], r["arm"]): r["runs"] for r in port(mem).store.holdout_arms()}


def test_this_runs_own_failures_are_never_withheld():
    with Memory(settings=Settings(holdout=0.99)) as mem:
        mine = mem.capture(run="r", iteration=1, action="pytest", exit_code=127,
                           error_text=NO_PYTEST)
        rec = mem.recall(run="r", iteration=2)
        assert [(i.section, i.id) for i in rec.items] == [("recent", mine.lesson_id)]
        assert rec.eligible == []


def test_without_a_holdout_every_eligible_lesson_is_shown_and_logged():
    with Memory() as mem:
        assert port(mem).holdout.p == 0
        lesson_id = earlier_runs(mem).lesson_id
        rec = mem.recall(run="new", iteration=1)
        assert lesson_id in [i.id for i in rec.items]
        assert [(e.lesson_id, e.arm) for e in rec.eligible] == [(lesson_id, SHOWN)]
        # old2 and old3 (each after runs that had missed yaml: one run's is no house
        # rule), then new.
        assert mem.lesson(lesson_id).holdout["shown"]["runs"] == 3


def test_reflect_holdout_sets_the_share_and_a_bad_one_is_said(monkeypatch, caplog):
    monkeypatch.setenv("REFLECT_HOLDOUT", "0.1")
    with Memory() as mem:
        assert port(mem).holdout.p == 0.1
    assert port(Memory(settings=Settings(holdout=0.2))).holdout.p == 0.2  # the argument wins
    monkeypatch.setenv("REFLECT_HOLDOUT", "2")
    assert port(Memory()).holdout.p == 0.0
    assert "REFLECT_HOLDOUT='2' is not a share" in caplog.text


def test_clearing_a_run_clears_its_holdout_log():
    with Memory(settings=Settings(holdout=0.5)) as mem:
        earlier_runs(mem)
        before = arms(mem)
        mem.recall(run="new0", iteration=1)
        assert arms(mem) != before
        mem.clear("new0")
        assert arms(mem) == before


def test_a_demoted_lesson_gives_its_place_to_the_next_one():
    """With a verdict read from the log, a demoted lesson is not shown and is logged so."""
    rule = Holdout(p=0.5, min_runs=2, z=1.0, min_effect=0.5)
    with Memory(settings=Settings(holdout=rule)) as mem:
        entry = earlier_runs(mem, 2)  # two: neither saw the lesson
        lesson_id = entry.lesson_id
        for run in (runs_in(SHOWN, entry.fingerprint, 0.5)[:2]
                    + runs_in(WITHHELD, entry.fingerprint, 0.5)[:2]):
            mem.recall(run=run, iteration=1)  # none of them misses yaml: no effect
        assert mem.effects()[0].verdict == DEMOTED
        rec = mem.recall(run="later", iteration=1)
        assert lesson_id not in [i.id for i in rec.items]
        assert [(e.lesson_id, e.arm) for e in rec.eligible] == [(lesson_id, DEMOTED)]
        assert lesson_id not in mem.export()  # left out of the house rules


# The population: showing A's lesson cuts A from 0.3 to 0.1 of runs; B's changes nothing.
A = Mistake("python -c 'import yaml'", 1, NO_YAML, rate=0.3, shown_rate=0.1)
B = Mistake("pytest", 127, NO_PYTEST, rate=0.3, shown_rate=0.3)
RUNS = 800
# Half the runs withheld, so both arms fill: looks at 45, 90, 180 and 360 runs an arm.
# Demoted: it cannot be shown to cut its mistake by 15 points (B's interval shrinks below
# that at about 120 runs an arm). bench/holdout.py runs the same population over 20 seeds
# (docs/holdout.md has its figures).
RULE = Holdout(p=0.5, min_runs=45, z=2.5, min_effect=0.15)


def test_a_population_of_scripted_agents_recovers_what_each_lesson_changes():
    with Memory(settings=Settings(holdout=RULE)) as mem:
        steps = run_population(mem, [A, B], RUNS, seed=0)
        effects = {port(mem).store.lesson(e.lesson_id)["fingerprint"]: e for e in mem.effects()}
        fingerprint = {k: next(s for s in mem.failures(limit=5000) if s.action == m.action
                               ).fingerprint for k, m in enumerate((A, B))}
        a, b = effects[fingerprint[0]], effects[fingerprint[1]]
        # Each estimate holds the truth within its interval.
        for e, shown, held in ((a, A.shown_rate, A.rate), (b, B.shown_rate, B.rate)):
            lo, hi = wilson(e.shown_hits, e.shown, RULE.z)
            assert lo <= shown <= hi
            lo, hi = wilson(e.withheld_hits, e.withheld, RULE.z)
            assert lo <= held <= hi
            lo, hi = e.interval(RULE.z)
            assert lo <= held - shown <= hi
        assert (a.verdict, b.verdict) == (PROMOTED, DEMOTED)
        # The predicted rate stands beside both, between what each arm saw.
        assert 0.1 < a.predicted < 0.3 and 0.2 < b.predicted < 0.4
        # After its verdict a promoted lesson is shown to every run, a demoted one to none.
        a_steps, b_steps = ([s for s in steps if s.mistake == k] for k in (0, 1))
        judged = a.shown + a.withheld  # runs in an arm of A, until its verdict
        first = min(i for i, s in enumerate(a_steps) if s.shown)
        last = max(i for i, s in enumerate(a_steps) if not s.shown)
        # (A is offered once its family's rate passes the predictor's threshold: early.)
        assert first < 40 and last < first + judged
        last_shown = max(i for i, s in enumerate(b_steps) if s.shown)
        assert last_shown < first + b.shown + b.withheld < RUNS - 1
        rec = mem.recall(run="after", iteration=1)
        assert a.lesson_id in [i.id for i in rec.items]
        assert b.lesson_id not in [i.id for i in rec.items]
        # The cost: A's withheld runs repeat it more, by the effect, and only until its
        # verdict, about p of its judged runs: p x effect x judged runs in all.
        assert judged < RUNS / 2
        assert abs(a.withheld - RULE.p * judged) <= 2.5 * (judged * RULE.p * (1 - RULE.p)) ** 0.5
        extra = a.withheld_hits - A.shown_rate * a.withheld
        effect = A.rate - A.shown_rate
        assert abs(extra - effect * a.withheld) <= 2.5 * (a.withheld * A.rate * (1 - A.rate)) ** 0.5
        # People see it: the house rules lead with A, B is left out.
        house = mem.export()
        assert "House rules: proven by the holdout" in house
        assert a.lesson_id in house.split("## ")[1] and b.lesson_id not in house
    shown = run_cli("lessons", "show", a.lesson_id)
    assert shown.returncode == 0 and b"withheld:" in shown.stdout and b"promoted" in shown.stdout
    out = run_cli("eval", "effect", "--format", "json")
    verdicts = {r["lesson_id"]: r["verdict"] for r in json.loads(out.stdout)["effects"]}
    assert verdicts == {a.lesson_id: PROMOTED, b.lesson_id: DEMOTED}


def test_upkeep_drops_the_holdout_log_with_the_old_history():
    now = [1_000_000.0]
    with Memory(settings=Settings(holdout=0.5, clock=lambda: now[0])) as mem:
        earlier_runs(mem)
        assert arms(mem)
        now[0] += 200 * 86400  # past the history upkeep keeps
        mem.consolidate()
        assert arms(mem) == {}


def test_eval_effect_says_how_to_start_when_nothing_was_withheld(tmp_path):
    out = run_cli("eval", "effect", "--chart", str(tmp_path / "e.png"))
    assert out.returncode == 0 and b"REFLECT_HOLDOUT=0.1" in out.stdout
    assert b"the holdout is off" in out.stdout
    if b"matplotlib is not installed" not in out.stderr:
        assert (tmp_path / "e.png").read_bytes().startswith(b"\x89PNG")


def test_the_effect_table_and_chart(tmp_path):
    pytest.importorskip("matplotlib")
    from reflect.eval._effect import chart, table

    rule = Holdout(p=0.5, min_runs=30)
    found = [Effect("L-a", "f", 60, 6, 60, 18, 0.2, PROMOTED),
             Effect("L-b", "g", 60, 18, 60, 18, 0.3, "")]
    text = table(found, rule, {"L-a": "running `python -c 'import yaml'`"})
    a_line = next(line for line in text.splitlines() if line.startswith("L-a"))
    assert "10.0%" in a_line and "30.0%" in a_line and "+20.0" in a_line
    assert "promoted" in a_line and "import yaml" in a_line
    assert chart(found, rule, tmp_path / "e.png")
    assert (tmp_path / "e.png").read_bytes().startswith(b"\x89PNG")


def test_a_failure_counts_against_the_arm_it_followed_logged_before_or_after_it():
    from reflect.base.records import Eligible

    with Memory() as mem:
        entry = earlier_runs(mem, 1)
        mine = port(mem).store.failure(entry.failure_id)["family"]
        e = Eligible(entry.lesson_id, mine, WITHHELD, 0.3)
        port(mem).store.record_injections("before", 1, [], 0, 1.0, eligible=[e])
        mem.capture(run="before", iteration=2, action="python -c 'import yaml'", exit_code=1,
                    error_text=NO_YAML)
        mem.capture(run="late", iteration=3, action="python -c 'import yaml'", exit_code=1,
                    error_text=NO_YAML)
        port(mem).store.record_injections("late", 2, [], 0, 1.0, eligible=[e])  # logged after
        port(mem).store.record_injections("early", 5, [], 0, 1.0, eligible=[e])
        mem.capture(run="early", iteration=4, action="python -c 'import yaml'", exit_code=1,
                    error_text=NO_YAML)  # before it was eligible: not its arm's doing
        (row,) = port(mem).store.holdout_arms([entry.lesson_id])
        assert (row["arm"], row["runs"], row["hits"]) == (WITHHELD, 3, 2)


def test_a_population_runs_with_failure_memory_switched_off(monkeypatch):
    # Capture records nothing then (it returns None): the runs still make their mistakes
    # at the rate without a lesson, and no block shows one.
    monkeypatch.setenv("REFLECT_FAILURE_MEMORY", "0")
    with Memory() as mem:
        steps = run_population(mem, [A, B], 20, seed=0)
    assert len(steps) == 40 and not any(s.shown for s in steps)
    assert any(s.made for s in steps)


def test_eval_effect_says_the_holdout_is_off_when_it_never_withheld_a_lesson():
    """Runs shown every lesson (no holdout ever set) measured nothing: the table does not
    claim it was measured while the holdout was on."""
    with Memory() as mem:
        earlier_runs(mem)
        mem.recall(run="new", iteration=1)
        assert mem.effects() and not any(e.withheld for e in mem.effects())
    out = run_cli("eval", "effect")
    assert out.returncode == 0
    assert b"while it was on" not in out.stdout and b"the holdout is off" in out.stdout
    assert b"REFLECT_HOLDOUT=0.1" in out.stdout  # how to start


def test_eval_effect_says_when_the_holdout_is_off_or_on():
    """What was measured stays shown when the holdout is switched off, with a line that says
    nothing new is measured; switched on, an empty table says it is on and how much."""
    with Memory(settings=Settings(holdout=0.5)) as mem:
        earlier_runs(mem, n=6)
        assert any(e.withheld for e in mem.effects())
    off = run_cli("eval", "effect")
    assert off.returncode == 0 and b"the holdout is off now" in off.stdout
    assert json.loads(run_cli("eval", "effect", "--format", "json").stdout)["holdout"] == 0.0
    on = run_cli("eval", "effect", env={"REFLECT_HOLDOUT": "0.5"})
    assert b"the holdout is off" not in on.stdout
    with Memory() as mem:
        mem.clear(run=None)
    empty = run_cli("eval", "effect", env={"REFLECT_HOLDOUT": "0.1"}).stdout
    assert b"no lesson has been withheld yet" in empty and b"10% of the runs" in empty
