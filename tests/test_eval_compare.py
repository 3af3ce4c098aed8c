import builtins
import json
import os
import sys

import pytest
from conftest import run_cli

from reflect.eval._compare import CompareError, chart, compare, table, verdict
from reflect.eval._metrics import RATIOS, bootstrap, per_run
from reflect.eval._replay import replay
from reflect.eval._trace import TraceRecord


def trace(runs: int = 12):
    """Runs that fail with one of three errors, some twice in a row, then succeed."""
    records = []
    for r in range(runs):
        errors = [f"ValueError: bad value {r}", f"KeyError: 'k{r % 3}'"][: 1 + r % 2]
        errors += errors[:1] if r % 3 else []
        for i, error in enumerate(errors, 1):
            records.append(TraceRecord(run=f"r{r}", iteration=i, exit_code=1,
                                       error_text=error, success=False))
        records.append(TraceRecord(run=f"r{r}", iteration=len(errors) + 1, exit_code=0,
                                   success=True))
    return records


@pytest.fixture
def replays(tmp_path):
    records = trace()
    for mode in ("on", "recency", "off"):
        replay(records, mode, tmp_path / mode)
    return [tmp_path / mode for mode in ("on", "recency", "off")]


def test_bootstrap_is_deterministic_and_contains_the_estimate(replays):
    first = compare(replays, seed=7)
    assert compare(replays, seed=7) == first
    assert compare(replays, seed=8) != first
    for arm in first["arms"]:
        for name in RATIOS:
            m = arm["metrics"][name]
            if m["value"] is None:
                assert m["low"] is None and m["high"] is None
                continue
            assert m["low"] <= m["value"] <= m["high"], (arm["label"], name)
    on = first["arms"][0]["metrics"]
    assert on["repeat_rate"]["low"] < on["repeat_rate"]["high"]  # runs differ, so it spreads


def test_resampling_is_over_runs_and_paired_across_arms(replays):
    result = compare(replays, seed=1)
    labels = [a["label"] for a in result["arms"]]
    assert labels == ["on", "recency", "off"]
    # the trace is the same in every mode: repeats are identical, their difference exactly 0
    off = result["arms"][2]["metrics"]
    assert off["repeat_rate"]["diff"] == {"value": 0.0, "low": 0.0, "high": 0.0}
    assert off["coverage_within"]["diff"]["value"] == -1.0
    assert off["coverage_within"]["diff"]["high"] == -1.0


def test_bootstrap_of_hand_made_runs():
    runs = per_run([
        {"run": "a", "success": False, "signature": "E: x"},
        {"run": "a", "success": False, "signature": "E: x"},
        {"run": "b", "success": False, "signature": None},
        {"run": "b", "success": True, "signature": None},
    ])
    assert [(r["run"], r["failures"], r["repeats"], r["unclassified"], r["last_ok"])
            for r in runs] == [("a", 2, 1, 0, 0), ("b", 1, 0, 1, 1)]
    (result,) = bootstrap([runs], seed=0, resamples=500)
    assert result["repeat_rate"]["value"] == 0.25
    # resampling runs: both "a" (1/2), both "b" (0/2) or one each (1/4)
    assert result["repeat_rate"]["low"] == 0.0 and result["repeat_rate"]["high"] == 0.5


def test_pairing_matches_runs_by_name_in_any_order():
    a = per_run([{"run": "x", "success": False, "signature": "E"},
                 {"run": "y", "success": True, "signature": None}])
    b = list(reversed(a))
    _, second = bootstrap([a, b], seed=3, resamples=200)
    assert second["last_ok"]["diff"] == {"value": 0.0, "low": 0.0, "high": 0.0}
    _, unpaired = bootstrap([a, a[:1]], seed=3, resamples=200)
    assert "diff" not in unpaired["last_ok"]


def test_table_lists_every_arm_with_intervals(replays):
    text = table(compare(replays))
    lines = text.splitlines()
    assert lines[0].split() == ["on", "recency", "off"]
    assert any(line.startswith("coverage, within-run repeats") and "100.0% [" in line
               for line in lines)
    assert "difference from on (paired):" in text
    assert "bootstrap over runs, 2000 resamples, seed 0" in lines[-1]


def test_cli_compare_with_chart_when_matplotlib_is_missing(replays, tmp_path):
    paths = [str(tmp_path / "nomatplotlib"), os.environ.get("PYTHONPATH", "")]
    env = {"PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    blocker = tmp_path / "nomatplotlib" / "matplotlib"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('not installed here')\n")
    done = run_cli("eval", "compare", *map(str, replays), "--chart", str(tmp_path / "c.png"),
                   env=env)
    assert done.returncode == 0, done.stderr
    assert "repeats per iteration" in done.stdout.decode()
    note = done.stderr.decode().strip()
    assert note.count("\n") == 0 and "pip install 'reflect-memory[charts]'" in note
    assert not (tmp_path / "c.png").exists()


def test_chart_without_matplotlib_writes_nothing(replays, tmp_path, monkeypatch):
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "matplotlib", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    assert chart(compare(replays), tmp_path / "c.png") is False
    assert not (tmp_path / "c.png").exists()


def test_chart_with_matplotlib(replays, tmp_path):
    pytest.importorskip("matplotlib")
    assert chart(compare(replays), tmp_path / "c.png") is True
    assert (tmp_path / "c.png").read_bytes().startswith(b"\x89PNG")


def test_bad_inputs(tmp_path):
    with pytest.raises(CompareError, match="replay --out DIR"):
        compare([tmp_path / "absent"])
    bad = tmp_path / "summary.json"
    bad.write_text(json.dumps({"mode": "on"}))
    with pytest.raises(CompareError, match="no per-run counts"):
        compare([bad])
    done = run_cli("eval", "compare", str(tmp_path / "absent"))
    assert done.returncode == 1 and b"replay --out DIR" in done.stderr
    assert run_cli("eval", "compare").returncode == 2


def test_a_reading_is_held_only_at_the_best_lists_coverage_and_precision():
    def tally(covered, precision):
        return {"covered": covered, "repeats": 10, "precision": precision}

    def reading(mode, **lists):
        return {"mode": tally(*mode), "matched": {k: tally(*v) for k, v in lists.items()}}

    # the best list is the one that covers most, then the more precise of a tie
    assert verdict(reading((5, 0.2), a=(5, 0.1), b=(4, 0.3))) == \
        "5/10 (precision 20.0%) vs popular/a 5 (10.0%) held"
    assert verdict(reading((5, 0.1), a=(5, 0.2), b=(5, 0.1))).endswith("popular/a 5 (20.0%) LOST")
    # covering more at a lower precision is not holding
    assert verdict(reading((6, 0.1), a=(5, 0.2))).endswith("LOST")
    assert verdict(reading((4, 0.5), a=(5, 0.2))).endswith("LOST")
    # a list that showed nothing has no precision, and any mode's is at least it
    assert verdict(reading((0, None), a=(0, None))).endswith("held")
