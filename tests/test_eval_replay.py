import json
import textwrap

import pytest
from conftest import run_cli
from fake_store import FakeStore

from reflect.api.memory import Memory
from reflect.api.settings import Settings
from reflect.eval._convert import convert
from reflect.eval._replay import ReplayError, replay
from reflect.eval._signature import signature
from reflect.eval._trace import TraceRecord, write_trace
from reflect.recall.predict import Predictor
from reflect.recall.render import LESSONS_HEADER, RECENT_HEADER, estimate_tokens
from reflect.store import StoreUnavailable

E1 = textwrap.dedent("""\
    Traceback (most recent call last):
      File "/work/app.py", line 1, in <module>
        import requests
    ModuleNotFoundError: No module named 'requests'
""")
E2 = "KeyError: 'x'"


def rec(run, iteration, error=None, exit_code=None, success=False):
    code = 0 if success else (1 if exit_code is None else exit_code)
    return TraceRecord(run=run, iteration=iteration, goal=f"goal of {run}", phase="test",
                       action=f"step {iteration}", exit_code=code, error_text=error or "",
                       success=success, ts=1000.0 + iteration)


# Run A: E1, E2, E1 again (a within-run repeat), then success.
# Run B: E1 (a cross-run repeat), a failure without output (unclassified), then success.
SYNTHETIC = [
    rec("A", 1, E1), rec("A", 2, E2), rec("A", 3, E1), rec("A", 4, success=True),
    rec("B", 1, E1), rec("B", 2, ""), rec("B", 3, success=True),
]


def rows_of(out):
    return [json.loads(line) for line in (out / "iterations.jsonl").read_text().splitlines()]


def test_metrics_on_a_synthetic_trace_recency(tmp_path):
    summary = replay(SYNTHETIC, "recency", tmp_path)
    t = summary["totals"]
    assert (t["runs"], t["iterations"], t["failures"], t["unclassified"]) == (2, 7, 5, 1)
    assert (t["repeats"], t["repeats_within"], t["repeats_cross"]) == (2, 1, 1)
    # A3's block held A1's item (same signature); B1's block was empty (recency only)
    assert (t["covered_within"], t["covered_cross"]) == (1, 0)
    # Injected items and which are noise (signature not failing at this iteration or later):
    #   A2 [E1]          E1 fails again at A3          -> 0 of 1
    #   A3 [E2, E1]      only E1 fails from A3 on      -> 1 of 2
    #   A4 [E1, E2]      nothing fails from A4 on      -> 2 of 2
    #   B1 []            new run, nothing recent
    #   B2 [E1]          B2 has no signature            -> 1 of 1
    #   B3 [B2's, E1]    nothing fails from B3 on      -> 2 of 2
    assert (t["items"], t["noise_items"], t["lesson_items"]) == (8, 6, 0)
    m = summary["metrics"]
    assert m["repeat_rate"]["value"] == pytest.approx(2 / 7)
    assert m["repeats_per_failure"]["value"] == pytest.approx(2 / 5)
    assert m["coverage_within"]["value"] == 1.0
    assert m["coverage_cross"]["value"] == 0.0
    assert m["noise"]["value"] == pytest.approx(6 / 8)
    assert m["noise_lessons"]["value"] is None
    assert m["last_ok"]["value"] == 1.0
    rows = rows_of(tmp_path)
    assert [len(r["items"]) for r in rows] == [0, 1, 2, 2, 0, 1, 2]
    assert m["tokens_per_iteration"]["value"] == pytest.approx(sum(r["tokens"] for r in rows) / 7)
    assert all(r["tokens"] > 0 for r in rows if r["items"])
    assert summary["recall_ms"]["p50"] is not None
    assert json.loads((tmp_path / "summary.json").read_text())["totals"] == t


def test_injected_items_carry_provenance_from_earlier_failures_only(tmp_path):
    replay(SYNTHETIC, "recency", tmp_path)
    rows = rows_of(tmp_path)
    failure_row = {r["failure_id"]: r["index"] for r in rows if r["failure_id"]}
    sig1, sig2 = signature(E1), signature(E2)
    assert [r["signature"] for r in rows] == [sig1, sig2, sig1, None, sig1, None, None]
    a3 = rows[2]
    assert [item["signatures"] for item in a3["items"]] == [[sig2], [sig1]]
    assert {item["section"] for item in a3["items"]} == {"recent"}
    for row in rows:
        for item in row["items"]:
            assert item["id"].startswith("L-") and item["text"]
            assert item["source_failure_ids"]
            assert all(failure_row[f] < row["index"] for f in item["source_failure_ids"])


def test_recall_never_sees_the_failure_about_to_happen():
    seen = []

    def before_capture(mem, record):  # called after each record's recall, before its capture
        stored = {(e.run, e.iteration) for e in mem.failures(limit=1000)}
        assert (record.run, record.iteration) not in stored
        seen.append(record)

    fake = FakeStore()
    replay(SYNTHETIC, "on", observe=before_capture, settings=Settings(open_store=fake.open))
    assert seen == list(SYNTHETIC)
    # Each recall logged what it injected for the iteration about to run.
    logged = [args[:2] for name, args, _ in fake.calls if name == "record_injections"]
    assert logged and set(logged) <= {(r.run, r.iteration) for r in SYNTHETIC}


def test_told_the_command_about_to_run_the_block_is_a_pretooluse_hook_s():
    from dataclasses import replace

    def step(run, action, error):
        return replace(rec(run, 1, error), action=action)

    # Three runs' scripts raised KeyError; two runs' pytest missed a module; C's pytest then
    # misses it too. One place: the KeyError rule, unless the block knows pytest is next.
    trace = [step(r, "python x.py", E2) for r in "DEF"]
    trace += [step(r, "python -m pytest -q", E1) for r in "GH"] + [step("C", "pytest", E1)]
    one = Predictor(max_items=1, action=3.0)
    untold = replay(trace, "on", embeddings="off", predictor=one)
    told = replay(trace, "on", embeddings="off", predictor=one, actions=True)
    assert untold["totals"]["covered_cross"] + 1 == told["totals"]["covered_cross"]
    assert told["actions"] and not untold["actions"]


def test_modes_differ_only_in_what_is_injected(tmp_path):
    on = replay(SYNTHETIC, "on", tmp_path / "on")
    off = replay(SYNTHETIC, "off", tmp_path / "off")
    for key in ("iterations", "failures", "repeats", "repeats_within", "repeats_cross"):
        assert on["totals"][key] == off["totals"][key]
    assert on["totals"]["covered_within"] == 1
    assert (off["totals"]["covered"], off["totals"]["items"], off["totals"]["tokens"]) == (0, 0, 0)
    assert off["metrics"]["noise"]["value"] is None
    assert off["recall_ms"] == {"p50": None, "p95": None}
    assert all(r["items"] == [] and r["recall_ms"] is None for r in rows_of(tmp_path / "off"))


def test_real_trajectory_in_all_three_modes(data_dir, tmp_path):
    path = data_dir / "mini-swe-agent" / "trajs" / "django__django-16263.traj.json"
    records = convert("mini-swe-agent", [path])
    results = {mode: replay(records, mode, tmp_path / mode) for mode in ("on", "recency", "off")}
    for mode, s in results.items():
        t = s["totals"]
        # 9 failures; repeats at iterations 12 (no such table: annotations_publisher),
        # 69 (AssertionError), 71 (can't open file) and 77 (rm: cannot remove)
        assert (t["iterations"], t["failures"], t["repeats"], t["repeats_within"]) == (
            78, 9, 4, 4), mode
        repeats = [r["iteration"] for r in rows_of(tmp_path / mode) if r["signature"]
                   and sum(x["signature"] == r["signature"] for x in rows_of(tmp_path / mode)
                           if x["index"] < r["index"])]
        assert repeats == [12, 69, 71, 77]
    assert results["recency"]["totals"]["covered_within"] == 4
    assert results["on"]["totals"]["covered_within"] >= results["recency"]["totals"][
        "covered_within"]
    assert results["off"]["totals"]["covered"] == 0
    assert results["off"]["totals"]["tokens"] == 0 < results["recency"]["totals"]["tokens"]


def test_store_option_keeps_a_fresh_store(tmp_path):
    replay(SYNTHETIC, "recency", store=tmp_path / "kept")
    with Memory(home=tmp_path / "kept") as mem:
        assert len(mem.failures(limit=100)) == 5
    with pytest.raises(ReplayError, match="already exists"):
        replay(SYNTHETIC, "recency", store=tmp_path / "kept")


def test_a_store_that_drops_captures_stops_the_replay():
    unwritable = FakeStore(faults={"add_failure": StoreUnavailable("disk I/O error")})
    with pytest.raises(ReplayError, match="holds 0 of the 5 failures captured"):
        replay(SYNTHETIC, "recency", settings=Settings(open_store=unwritable.open))
    assert len(unwritable.answers("add_failure")) == 5  # each capture tried the store


def test_memory_switched_off_is_an_error(monkeypatch):
    monkeypatch.setenv("REFLECT_FAILURE_MEMORY", "0")
    with pytest.raises(ReplayError, match="REFLECT_FAILURE_MEMORY"):
        replay(SYNTHETIC, "recency")


def test_cli_replay_writes_outputs_and_prints_the_table(tmp_path):
    trace = tmp_path / "t.jsonl"
    write_trace(trace, SYNTHETIC)
    done = run_cli("eval", "replay", str(trace), "--mode", "recency", "--out", str(tmp_path / "o"))
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert "coverage, within-run repeats" in out and "100.0%" in out
    assert (tmp_path / "o" / "iterations.jsonl").exists()
    done = run_cli("eval", "replay", str(trace), "--mode", "off", "--format", "json")
    assert json.loads(done.stdout)["totals"]["repeats"] == 2


def test_the_store_clock_follows_the_trace_and_never_goes_back(tmp_path):
    records = [TraceRecord(run="a", iteration=1, exit_code=1, error_text="E1: x", ts=100.0),
               TraceRecord(run="b", iteration=1, exit_code=1, error_text="E2: y", ts=50.0),
               TraceRecord(run="b", iteration=2, exit_code=1, error_text="E3: z")]
    replay(records, "off", store=tmp_path / "s")
    with Memory(home=tmp_path / "s") as mem:
        assert sorted(e.ts for e in mem.failures(limit=10)) == [100.0, 100.0, 101.0]


# Baselines. Eight errors of distinct types (and so distinct signatures and fingerprints).
T = {1: "NameError: name 'foo' is not defined", 2: "KeyError: 'x'",
     3: "TypeError: unsupported operand type(s) for +: 'int' and 'str'",
     4: "ValueError: invalid literal for int() with base 10: 'a'",
     5: "ZeroDivisionError: division by zero", 6: "IndexError: list index out of range",
     7: "AttributeError: 'NoneType' object has no attribute 'x'",
     8: "ModuleNotFoundError: No module named 'requests'"}
# A: T1 T2.  B: T1 (cross) T3 T4 T5 T6 T7 T8.  C: T8 (cross) T2 (cross) T3 (cross) T8 (within).
BASELINE_TRACE = [
    rec("A", 1, T[1]), rec("A", 2, T[2]),
    *(rec("B", i, T[t]) for i, t in enumerate([1, 3, 4, 5, 6, 7, 8], 1)),
    *(rec("C", i, T[t]) for i, t in enumerate([8, 2, 3, 8], 1)),
]


def sigs_of(row):
    return [item["signatures"][0] for item in row["items"]]


def test_baseline_last3_holds_the_runs_last_three_failures_only(tmp_path):
    summary = replay(BASELINE_TRACE, "last3", tmp_path, max_tokens=4000)
    t = summary["totals"]
    assert (t["repeats_cross"], t["repeats_within"]) == (4, 1)
    # Nothing from earlier runs: no cross-run repeat is covered (B1, C1, C2, C3).
    # C4's block is [T3, T2, T8] (C3, C2, C1): it holds C1's T8.
    assert (t["covered_cross"], t["covered_within"], t["lesson_items"]) == (0, 1, 0)
    rows = rows_of(tmp_path)
    c4 = rows[-1]
    assert sigs_of(c4) == [signature(T[3]), signature(T[2]), signature(T[8])]
    ids = {r["failure_id"]: r for r in rows}
    for row in rows:
        assert len(row["items"]) == min(3, row["iteration"] - 1)
        for item in row["items"]:
            assert item["section"] == "recent" and item["id"].startswith("L-")
            (source,) = item["source_failure_ids"]
            assert ids[source]["run"] == row["run"] and ids[source]["index"] < row["index"]
            assert item["text"].startswith(f"- [{item['id']}] iteration ")
    assert c4["tokens"] == estimate_tokens("\n".join(
        [RECENT_HEADER, *(i["text"] for i in c4["items"])]))
    assert summary["blocks"]["items"]["max"] == 3
    assert summary["blocks"]["lesson_items"]["max"] == 0


def test_baseline_popular_ranks_lessons_by_earlier_runs_regardless_of_goal(tmp_path):
    summary = replay(BASELINE_TRACE, "popular", tmp_path, max_tokens=4000)
    t = summary["totals"]
    # B1: lessons of A, [T2, T1] (one run each, latest first): T1 covered.
    # C1: T1 failed in two runs, then the latest of one run: [T1, T8, T7, T6, T5, T4]:
    #     T8 covered. C2: recent T8; lessons [T1, T7, T6, T5, T4, T3]: T2 not covered.
    # C3: recent T2, T8; lessons [T1, T7, T6, T5, T4, T3]: T3 covered.
    # C4: T8 is in the recent section: the within-run repeat is covered.
    assert (t["repeats_cross"], t["covered_cross"]) == (4, 3)
    assert (t["repeats_within"], t["covered_within"]) == (1, 1)
    rows = rows_of(tmp_path)
    s = {k: signature(v) for k, v in T.items()}

    def lessons(row):
        return [i["signatures"][0] for i in row["items"] if i["section"] == "lesson"]

    assert lessons(rows[2]) == [s[2], s[1]]
    assert lessons(rows[9]) == [s[1], s[8], s[7], s[6], s[5], s[4]]
    assert lessons(rows[10]) == lessons(rows[11]) == [s[1], s[7], s[6], s[5], s[4], s[3]]
    assert [i["signatures"] for i in rows[11]["items"] if i["section"] == "recent"] == [
        [s[2]], [s[8]]]
    assert lessons(rows[0]) == lessons(rows[1]) == []  # nothing from an earlier run yet
    assert summary["blocks"]["lesson_items"]["max"] == 6
    ids = {r["failure_id"]: r for r in rows}
    for row in rows:
        for item in row["items"]:
            assert item["source_failure_ids"] and item["id"].startswith("L-")
            assert all(ids[f]["index"] < row["index"] for f in item["source_failure_ids"])
            if item["section"] == "lesson":
                assert all(ids[f]["run"] != row["run"] for f in item["source_failure_ids"])
    assert rows[11]["tokens"] == estimate_tokens("\n".join(
        [RECENT_HEADER, *(i["text"] for i in rows[11]["items"][:2]), LESSONS_HEADER,
         *(i["text"] for i in rows[11]["items"][2:])]))


def test_baseline_popular_reads_as_many_lessons_as_the_predictor_in_use(tmp_path):
    summary = replay(BASELINE_TRACE, "popular", tmp_path, max_tokens=4000,
                     predictor=Predictor(max_items=2))
    assert summary["blocks"]["lesson_items"]["max"] == 2
    assert [len([i for i in row["items"] if i["section"] == "lesson"])
            for row in rows_of(tmp_path)][9] == 2  # six causes to offer: two shown


def test_baselines_keep_the_token_budget(tmp_path):
    for mode in ("last3", "popular"):
        replay(BASELINE_TRACE, mode, tmp_path / mode, max_tokens=60)
        rows = rows_of(tmp_path / mode)
        assert all(r["tokens"] <= 60 for r in rows)
        assert any(r["items"] for r in rows)


def test_cli_replays_a_baseline(tmp_path):
    trace = tmp_path / "t.jsonl"
    write_trace(trace, BASELINE_TRACE)
    done = run_cli("eval", "replay", str(trace), "--mode", "popular", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["mode"] == "popular"


def test_a_replay_scoped_by_project_recalls_no_lesson_across_projects(tmp_path):
    from dataclasses import replace

    runs = [replace(r, project="acme/one") for r in (rec("A", 1, E1), rec("A", 2, E1))]
    # two runs make a house rule; C repeats them in the same project
    runs += [replace(r, project="acme/one") for r in (rec("D", 1, E1), rec("C", 1, E1))]
    later = [replace(r, project=project) for r, project in
             ((rec("B", 1, success=True), "acme/two"), (rec("B", 2, E1), "acme/two"))]
    shared = replay([*runs, *later], "on", embeddings="off")
    scoped = replay([*runs, *later], "on", embeddings="off", scope_by_project=True)
    # Both cover C's repeat of A and D (one project); only the shared store covers B's.
    assert shared["totals"]["covered_cross"] == 2
    assert scoped["totals"]["covered_cross"] == 1 and scoped["scope_by_project"]
