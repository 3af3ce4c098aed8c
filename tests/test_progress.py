"""The progress report: repeat rates run by run, early against recent, honest when thin."""

import itertools

import pytest

from reflect import Memory, Settings
from reflect.api.repeat_rates import render, sparkline
from reflect.base.answers import Pooled

ERRORS = {k: f"ModuleNotFoundError: No module named 'pkg_{k.lower()}'" for k in "ABCDEF"}
# Repeats drop over time: early runs meet A, B and C again, later runs fail in new ways.
RUNS = [("zeta", "AAB"), ("alpha", "ABC"), ("mid", "AC"), ("delta", "DA"), ("eps", "E"),
        ("omega", "F")]


@pytest.fixture
def mem():
    ticks = itertools.count(1_000_000)
    with Memory(settings=Settings(clock=lambda: float(next(ticks)))) as m:
        yield m


def capture_runs(mem, runs):
    for run, errors in runs:
        for iteration, key in enumerate(errors, 1):
            mem.capture(run=run, iteration=iteration, exit_code=1, error_text=ERRORS[key])


def test_figures_match_a_count_by_hand(mem):
    capture_runs(mem, RUNS)
    assert len({e.fingerprint for e in mem.failures(limit=100)}) == 6

    r = mem.progress()

    # Ordered by first failure, not by name.
    assert [x.run for x in r.runs] == [run for run, _ in RUNS]
    assert [(x.failures, x.repeats) for x in r.runs] == [
        (3, 1), (3, 2), (2, 2), (2, 1), (1, 0), (1, 0)]
    assert [x.repeat_rate for x in r.runs] == [0.3333, 0.6667, 1.0, 0.5, 0.0, 0.0]
    assert (r.failures, r.repeats, r.repeat_rate) == (12, 6, 0.5)
    assert r.enough_data is True
    assert r.early == Pooled(failures=6, repeats=3, repeat_rate=0.5, runs=2)
    assert r.recent == Pooled(failures=2, repeats=0, repeat_rate=0.0, runs=2)

    text = render(r)
    assert "6 runs, 12 failures, 6 repeats (50%)" in text
    assert "repeat rate  ▃▆█▅▁▁" in text and "failures     ██▆▆▃▃" in text
    assert "early  (runs 1-2): repeat rate 50% (3/6)" in text
    assert "recent (runs 5-6): repeat rate 0% (0/2)" in text
    assert "Not enough data" not in text


def test_too_few_runs_say_so_honestly(mem):
    capture_runs(mem, RUNS[:2])
    r = mem.progress(min_runs=5)
    assert r.enough_data is False and r.early is None and r.recent is None
    text = render(r)
    assert "Not enough data yet: 2 of the 5 runs needed to tell whether memory helps (3 more)" \
        in text
    assert "repeat rate  ▃▆" in text and "early" not in text


def test_counts_of_one_are_said_in_the_singular(mem):
    capture_runs(mem, [("solo", "AA")])
    text = render(mem.progress())
    assert text.startswith("1 run, 2 failures, 1 repeat (50%)")
    assert "injected     0 lessons, 0 tokens" in text


def test_an_empty_store_reports_nothing_yet(mem):
    r = mem.progress()
    assert r.runs == [] and r.failures == 0 and not r.enough_data
    assert render(r) == ("No runs recorded yet: at least 5 runs are needed to tell whether "
                         "memory helps.")


def test_injected_lessons_and_tokens_are_counted_per_run(mem):
    capture_runs(mem, RUNS[:3])  # A fails in three runs: its lesson is recalled on evidence
    first = mem.recall(run="delta", goal="install the packages", iteration=1)
    mem.capture(run="delta", iteration=1, exit_code=1, error_text=ERRORS["D"])
    second = mem.recall(run="delta", goal="install the packages", iteration=2)
    again = mem.recall(run="delta", goal="install the packages", iteration=2)  # same prompt
    clean = mem.recall(run="clean", goal="install the packages", iteration=1)
    assert first.items and second.items and clean.items

    runs = {x.run: x for x in mem.progress().runs}

    ids = {i.id for rec in (first, second, again) for i in rec.items}
    assert runs["delta"].lessons_injected == len(ids) >= 2
    assert runs["delta"].tokens_injected == first.tokens + second.tokens
    assert runs["zeta"].lessons_injected == runs["zeta"].tokens_injected == 0
    # A run that recalled and never failed still counts: memory's best case.
    assert (runs["clean"].failures, runs["clean"].tokens_injected) == (0, clean.tokens)
    assert list(runs)[-1] == "clean"


def test_sparkline_scales_to_the_top_value():
    assert sparkline([0, 1, 2, 4]) == "▁▃▅█"
    assert sparkline([0.0, 0.5, 1.0], top=1.0) == "▁▅█"
    assert sparkline([0, 0]) == "▁▁"
    assert sparkline([0] * 100 + [7] * 100, width=10) == "▁" * 5 + "█" * 5
