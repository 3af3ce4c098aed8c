"""bench/actionable.py's core on a tiny synthetic replay (not the shared data): a broken
bench fails here, not only when someone runs it."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

import pytest

from reflect.eval._trace import TraceRecord

BENCH = Path(__file__).resolve().parents[1] / "bench"
NOT_FOUND = "bash: line 1: pytest: command not found"
RED = ("    def test_x():\n>       assert f() == 2\nE       AssertionError: assert 1 == 2\n"
       "FAILED tests/test_x.py::test_x - AssertionError: assert 1 == 2")


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCH))  # bench/ is no package: its scripts import so
    return importlib.import_module("actionable")


def steps(run: str, project: str, test: str) -> list[TraceRecord]:
    """A run that calls pytest where it is not installed, runs it as a module instead, goes
    red on the code under repair, edits that code and goes green."""
    plan = [(f"cd /testbed && pytest {test}", NOT_FOUND),
            (f"python -m pytest {test}", ""),
            (f"python -m pytest {test}", RED),
            ("sed -i 's/return 1/return 2/' src/mod.py", ""),
            (f"python -m pytest {test}", "")]
    return [TraceRecord(run=run, iteration=n, goal=f"fix {run}", phase="test", action=action,
                        exit_code=1 if error else 0, error_text=error, success=not error,
                        project=project)
            for n, (action, error) in enumerate(plan, 1)]


TRACE = [*steps("a-1", "a", "tests/test_x.py"), *steps("b-1", "b", "tests/test_y.py"),
         TraceRecord(run="a-2", iteration=1, goal="fix a-2", phase="test", action="ls",
                     exit_code=0, success=True, project="a"),
         *(TraceRecord(**{**r.to_dict(), "run": "a-2", "iteration": r.iteration + 1})
           for r in steps("a-2", "a", "tests/test_z.py"))]


def test_the_classifier_reads_a_run_of_its_own(bench):
    run = [bench.Step(n, r.action, r.success or False, None if r.success else
                      ("CommandNotFound: x" if r.error_text == NOT_FOUND else "AssertionError: x"),
                      None, [])
           for n, r in enumerate(steps("a-1", "a", "tests/test_x.py"))]
    work = bench.the_work(run)
    assert work == {0: "run another way", 2: ""}  # the red test is the work, the slip is not
    fix = bench.fixes(run)
    assert fix[0].steps == ["python -m pytest tests/test_x.py"]
    assert fix[2].kinds == {"edit"} and fix[2].writes == ["src/mod.py"]


def test_programs_as_agreement_names_them(bench):
    assert bench.named_programs("- [L-1] x\n  What worked in 2 of the 3 runs that hit it: "
                                "`mkdir <name> && touch <name>/__init__.py`; `cat <<'EOF' > "
                                "r.py`, then `python3 r.py` passed") == ["mkdir", "touch", "r.py"]
    assert bench.step_programs("cd /testbed && git diff && python -m pytest -x t.py") == [
        "pytest"]
    assert bench.step_programs("grep -n x a.py | head") == []
    assert bench.says_what_to_do("- [L-1] x\n  Hint: do y")
    assert not bench.says_what_to_do("- [L-1] on NameError: \"Hint: y\"")


def test_the_bench_on_a_synthetic_replay(bench, tmp_path):
    summary, rows, benign = bench.replayed(TRACE, tmp_path)
    figures = bench.measure(TRACE, rows, benign)
    rules, agreement = figures["pooled"]["rules"], figures["pooled"]["agreement"]
    # a-2 is shown the rule of pytest not found, with what worked in a-1 and b-1; the
    # red test is the runs' own work and is shown as no rule
    assert rules["rules"] >= 1 and rules["says"] == rules["rules"]
    assert rules["work_shown"] == 0 and rules["judged"] == rules["rules"]
    shown = [i["text"] for r in rows if r["run"] == "a-2" for i in r["items"]
             if i["section"] != "recent"]
    assert shown and all("What worked in 2 of the 2 runs" in t for t in shown)
    assert all("AssertionError" not in t for t in shown)
    # its repeat of pytest not found: the rule names pytest, and the run ran it next
    assert agreement["named"] == 1 and agreement["rule"] == 1 and agreement["base_k"] == 1
    # b-1 repeats both of a-1's failures before any rule (a rule needs two runs), a-2 both
    # after: the rule of pytest not found covers one; the red test has none
    assert agreement["repeats"] == 4 and agreement["covered"] == 1
    folds = bench.coverage(summary["matched"])
    assert len(folds) == len(figures["folds"]) + 1 and folds[-1]["groups"] == ["pooled"]
    assert all(isinstance(bench.holds(f), bool) for f in folds)
    for fold, mine in zip(folds, [*figures["folds"], figures["pooled"]], strict=True):
        bench.print_fold("fold", mine, fold)  # every line of the report renders


def test_the_bench_scoped_by_project_counts_each_project_s_runs_alone(bench, tmp_path):
    # Scoped by project, b-1's failures repeat none of project a's, and no rule of a's two
    # runs is shown to b: a-2 alone repeats a-1's, where the baseline has a-1 to count.
    summary, rows, benign = bench.replayed(TRACE, tmp_path, by_project=True)
    assert summary["scope_by_project"]
    agreement = bench.measure(TRACE, rows, benign, by_project=True)["pooled"]["agreement"]
    assert agreement["repeats"] == 2 and agreement["base_all"] == 2
    assert bench.projects_of(rows) == {"a-1": "a", "b-1": "b", "a-2": "a"}  # their folds
