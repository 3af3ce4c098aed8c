"""Is memory helping? Repeat rates run by run, and what was injected to get them.

A failure is a repeat when its fingerprint was seen before, in the same run or
an earlier one (runs ordered by their first recorded activity). If memory
works, the repeat rate of recent runs falls below that of early runs. Rates of
a group of runs are pooled (its repeats over its failures), so a run with few
failures cannot swing them.
"""

from __future__ import annotations

from typing import Any

from reflect.store.protocol import ProgressStore
from reflect.text import counted

__all__ = ["render", "report"]

SPARKS = "▁▂▃▄▅▆▇█"


def report(store: ProgressStore, min_runs: int = 5) -> dict[str, Any]:
    runs: dict[str, dict[str, Any]] = {
        run: {"run": run, "first_ts": first, "failures": 0, "repeats": 0,
              "lessons_injected": 0, "tokens_injected": 0}
        for run, first in store.runs_by_first_activity()}
    failures: dict[str, list[str]] = {}
    for run, fingerprint in store.failure_fingerprints():
        failures.setdefault(run, []).append(fingerprint)
    seen: set[str] = set()
    for run, row in runs.items():
        for fingerprint in failures.get(run, []):
            row["failures"] += 1
            row["repeats"] += fingerprint in seen
            seen.add(fingerprint)
        row["repeat_rate"] = _rate(row["repeats"], row["failures"])
    for run, (lessons, tokens) in store.injected_by_run().items():
        runs[run]["lessons_injected"] = lessons
        runs[run]["tokens_injected"] = tokens
    rows = list(runs.values())
    enough = len(rows) >= min_runs
    third = max(1, len(rows) // 3)
    return {
        "runs": rows,
        "min_runs": min_runs,
        "enough_data": enough,
        **_pooled(rows),
        "lessons_injected": sum(r["lessons_injected"] for r in rows),
        "tokens_injected": sum(r["tokens_injected"] for r in rows),
        # The first and last third of the runs; None until there are enough of them.
        "early": (_pooled(rows[:third]) | {"runs": third}) if enough else None,
        "recent": (_pooled(rows[-third:]) | {"runs": third}) if enough else None,
    }


def render(report: dict[str, Any]) -> str:
    rows, n = report["runs"], len(report["runs"])
    if not rows:
        return (f"No runs recorded yet: at least {report['min_runs']} runs are needed "
                "to tell whether memory helps.")
    lines = [
        f"{counted(n, 'run')}, {counted(report['failures'], 'failure')}, "
        f"{counted(report['repeats'], 'repeat')} ({_pct(report['repeat_rate'])})",
        f"repeat rate  {sparkline([r['repeat_rate'] for r in rows], top=1.0)}",
        f"failures     {sparkline([r['failures'] for r in rows])}",
    ]
    if report["enough_data"]:
        k = report["early"]["runs"]
        for label, group in ((f"early  (runs 1-{k})", report["early"]),
                             (f"recent (runs {n - k + 1}-{n})", report["recent"])):
            lines.append(f"{label}: repeat rate {_pct(group['repeat_rate'])}"
                         f" ({group['repeats']}/{group['failures']})")
    else:
        need = report["min_runs"] - n
        lines.append(f"Not enough data yet: {n} of the {report['min_runs']} runs needed to "
                     f"tell whether memory helps ({need} more).")
    lines.append(f"injected     {counted(report['lessons_injected'], 'lesson')}, "
                 f"{counted(report['tokens_injected'], 'token')}")
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


def _pooled(rows: list[dict[str, Any]]) -> dict[str, Any]:
    failures = sum(r["failures"] for r in rows)
    repeats = sum(r["repeats"] for r in rows)
    return {"failures": failures, "repeats": repeats, "repeat_rate": _rate(repeats, failures)}


def _rate(repeats: int, failures: int) -> float:
    return round(repeats / failures, 4) if failures else 0.0


def _pct(rate: float) -> str:
    return f"{rate:.0%}"
