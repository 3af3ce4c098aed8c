"""The baselines read at the mode's own number of items, rebuilt from a replay's rows."""

from reflect.eval._convert import swe_bench_repository
from reflect.eval._matched import matched


def fail(run, key, project="", items=()):
    return {"run": run, "project": project, "success": False, "signature": key,
            "group": key.split(":")[0], "items": list(items)}


def ok(run, project="", items=()):
    return {"run": run, "project": project, "success": True, "signature": None,
            "group": None, "items": list(items)}


def lesson(*keys):
    return {"section": "lesson", "id": "L-" + "+".join(keys), "signatures": list(keys),
            "groups": sorted({k.split(":")[0] for k in keys})}


def test_each_block_gets_a_list_as_long_as_the_modes_and_coverage_counts_by_key():
    rows = [
        fail("r1", "A:x"), fail("r1", "B:y"),
        fail("r2", "A:x"),
        # r3: one lesson shown (of B), then A:z fails; popular shows 1 key too: A:x.
        ok("r3", items=[lesson("B:y")]), fail("r3", "A:z", items=[lesson("B:y")]),
    ]
    out = matched(rows)
    assert out["lesson_items"] == 2
    by_sig, by_group = out["keys"]["signature"], out["keys"]["group"]
    # By signature only r2's A:x repeats (A:z never failed before); by group r3's does too.
    assert by_sig["mode"]["repeats"] == 1
    assert by_group["mode"] == {**by_group["mode"], "repeats": 2, "covered": 0}
    # r2's A:x repeated r1's with nothing shown; r3's A by group: popular showed group A.
    assert by_group["matched"]["global"]["covered"] == 1
    assert by_group["matched"]["global"]["items"] == 2
    # The curve shows k items in every block: at length 1 before r2's A, A and B tie on
    # runs and failures and the later (B) goes first; before r3's, A leads with two runs.
    assert by_group["curve"]["global"][0]["covered"] == 1
    assert by_group["curve"]["global"][1]["covered"] == 2


def test_the_scope_pool_ranks_the_projects_own_failures_first():
    rows = [fail("a1", "A:1", "p"), fail("b1", "B:1", "q"), fail("b2", "B:1", "q"),
            fail("a2", "A:1", "p", items=[lesson("C:1")])]
    figures = matched(rows)["keys"]["signature"]["matched"]
    assert figures["global"]["covered"] == 0  # B (two runs) outranks A (one)
    assert figures["scope"]["covered"] == 1  # within project p, A comes first


def test_the_recent_pool_forgets_old_runs():
    rows = [fail("r1", "A:1"), fail("r1", "A:1"), fail("r2", "B:1"),
            fail("r3", "A:1", items=[lesson("X:1")])]
    figures = matched(rows, window=1)["keys"]["signature"]["matched"]
    assert figures["global"]["covered"] == 1
    assert figures["recent"]["covered"] == 0  # only r2 is in the window: B


def test_precision_counts_distinct_keys_borne_out_later_in_the_run():
    rows = [fail("r1", "A:1"), fail("r1", "B:1"),
            ok("r2", items=[lesson("A:1"), lesson("B:1")]),
            fail("r2", "A:1", items=[lesson("A:1"), lesson("B:1")])]
    mode = matched(rows)["keys"]["signature"]["mode"]
    assert (mode["shown"], mode["borne"], mode["covered"]) == (2, 1, 1)


def test_swe_bench_ids_name_their_repository():
    assert swe_bench_repository("django__django-11099") == "django/django"
    assert swe_bench_repository("scikit-learn__scikit-learn-25747") == "scikit-learn/scikit-learn"
    assert swe_bench_repository("task-42") == ""


def test_the_modes_precision_counts_lessons_not_the_keys_they_stand_for():
    rows = [fail("r1", "A:1"), fail("r2", "A:2"),
            ok("r3", items=[lesson("A:1", "A:2")]), fail("r3", "A:2")]
    mode = matched(rows)["keys"]["signature"]["mode"]
    assert (mode["shown"], mode["borne"]) == (1, 1)


def test_anywhere_earlier_the_mode_keeps_what_it_showed_and_each_list_is_shown_once():
    # r3 was shown B early and A's lesson only at its first block; A:x fails later, when
    # the block no longer holds it: covered anywhere earlier, not in the block before.
    rows = [fail("r1", "A:x"), fail("r1", "B:y"), fail("r2", "B:y"),
            ok("r3", items=[lesson("A:x"), lesson("B:y")]), ok("r3", items=[lesson("B:y")]),
            fail("r3", "A:x", items=[lesson("B:y")])]
    out = matched(rows)
    assert out["keys"]["signature"]["mode"]["covered"] == 0
    run = out["run"]["signature"]
    assert run["mode"] == {**run["mode"], "covered": 1, "repeats": 2, "shown": 2}
    # r2 was shown nothing, so its list is empty; r3's holds two keys (as many as its
    # distinct lessons), B and A: it covers r3's A:x.
    assert run["matched"]["global"]["covered"] == 1
    assert run["matched"]["global"]["shown"] == 2


def test_folds_are_projects_largest_first_to_the_fold_with_fewest_runs():
    rows = [fail(f"a{i}", "A:x", "big") for i in range(4)]
    rows += [fail(f"b{i}", "A:x", "mid") for i in range(2)]
    rows += [fail("c0", "A:x", "small"), fail("d0", "A:x", "tiny")]
    folds = matched(rows, folds=2)["folds"]
    assert [(f["groups"], f["runs"]) for f in folds] == [(["big"], 4),
                                                        (["mid", "small", "tiny"], 4)]
    # every run is in one fold: the folds' repeats add up to the whole
    assert sum(f["keys"]["signature"]["block"]["mode"]["repeats"] for f in folds) == 7
