"""Is memory helping? Repeat rates run by run, and what was injected to get them.

A failure is a repeat when its fingerprint was seen before, in the same run or
an earlier one (runs ordered by their first recorded activity). If memory
works, the repeat rate of recent runs falls below that of early runs. Rates of
a group of runs are pooled (its repeats over its failures), so a run with few
failures cannot swing them.
"""

from __future__ import annotations

from reflect.base.answers import Pooled, Progress, RunRepeats
from reflect.base.text import counted
from reflect.store.protocol import ProgressStore

__all__ = ["render", "report"]

SPARKS = "▁▂▃▄▅▆▇█"


def report(store: ProgressStore, min_runs: int = 5) -> Progress:
    failures: dict[str, list[str]] = {}
    for run, fingerprint in store.failure_fingerprints():
        failures.setdefault(run, []).append(fingerprint)
    injected = store.injected_by_run()
    seen: set[str] = set()
    rows = []
    for run, first in store.runs_by_first_activity():
        mine, repeats = failures.get(run, []), 0
        for fingerprint in mine:
            repeats += fingerprint in seen
            seen.add(fingerprint)
        n, (lessons, tokens) = len(mine), injected.get(run, (0, 0))
        rows.append(RunRepeats(run, first, n, repeats, lessons, tokens, _rate(repeats, n)))
    enough = len(rows) >= min_runs
    third = max(1, len(rows) // 3)
    total = _pooled(rows, len(rows))
    return Progress(
        rows, min_runs, enough, total.failures, total.repeats, total.repeat_rate,
        lessons_injected=sum(r.lessons_injected for r in rows),
        tokens_injected=sum(r.tokens_injected for r in rows),
        # The first and last third of the runs; None until there are enough of them.
        early=_pooled(rows[:third], third) if enough else None,
        recent=_pooled(rows[-third:], third) if enough else None)


def render(report: Progress) -> str:
    rows, n = report.runs, len(report.runs)
    if not rows:
        return (f"No runs recorded yet: at least {report.min_runs} runs are needed "
                "to tell whether memory helps.")
    lines = [
        f"{counted(n, 'run')}, {counted(report.failures, 'failure')}, "
        f"{counted(report.repeats, 'repeat')} ({_pct(report.repeat_rate)})",
        f"repeat rate  {sparkline([r.repeat_rate for r in rows], top=1.0)}",
        f"failures     {sparkline([r.failures for r in rows])}",
    ]
    if report.early is not None and report.recent is not None:
        k = report.early.runs
        for label, group in ((f"early  (runs 1-{k})", report.early),
                             (f"recent (runs {n - k + 1}-{n})", report.recent)):
            lines.append(f"{label}: repeat rate {_pct(group.repeat_rate)}"
                         f" ({group.repeats}/{group.failures})")
    else:
        need = report.min_runs - n
        lines.append(f"Not enough data yet: {n} of the {report.min_runs} runs needed to "
                     f"tell whether memory helps ({need} more).")
    lines.append(f"injected     {counted(report.lessons_injected, 'lesson')}, "
                 f"{counted(report.tokens_injected, 'token')}")
    return "\n".join(lines)


def sparkline(values: list[float], top: float | None = None, width: int = 60) -> str:
    """One bar per value, scaled to ``top`` (else the largest value); more values than
    ``width`` are averaged in consecutive groups, so the line stays one line."""
    if len(values) > width:
        size = -(-len(values) // width)
        values = [sum(g) / len(g) for g in (values[i:i + size]
                                            for i in range(0, len(values), size))]
    top = top or max(values, default=0) or 1
    return "".join(SPARKS[min(len(SPARKS) - 1, round(v / top * (len(SPARKS) - 1)))]
                   for v in values)


def _pooled(rows: list[RunRepeats], runs: int) -> Pooled:
    failures = sum(r.failures for r in rows)
    repeats = sum(r.repeats for r in rows)
    return Pooled(failures, repeats, _rate(repeats, failures), runs)


def _rate(repeats: int, failures: int) -> float:
    return round(repeats / failures, 4) if failures else 0.0


def _pct(rate: float) -> str:
    return f"{rate:.0%}"
