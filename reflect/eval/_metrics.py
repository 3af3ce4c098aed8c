"""Metrics of a replay or a live arm, and bootstrap intervals that resample runs.

Input: one row per iteration, in order (what ``replay`` writes to
``iterations.jsonl``): ``run``, ``success``, ``signature`` (of this
iteration's failure, None when it has no error text or succeeded), and
``items`` injected before it, each with the ``signatures`` of the failures it
was derived from, its ``section`` and ``tokens`` for the whole block.

- repeat: a failure whose signature occurred in an earlier failure, of this
  run (``within``) or only of earlier runs (``cross``);
- coverage: the share of repeats whose injected block held an item derived
  from an earlier failure with the same signature;
- noise: the share of injected items (each injection counts) none of whose
  signatures occurs as a failure at this iteration or later in the run;
- lesson precision: of the distinct lessons shown in a run's lessons section, the share
  whose signatures then fail in that run (at or after the iteration first shown);
- foreign: the share of injected items naming a detail (file, path, module, table)
  that none of the failures it stands for holds (``reflect.capture.details``), which must be 0;
- tokens per iteration: all injected tokens over all iterations;
- last_ok: the share of runs whose last iteration succeeded (for Reflexion
  and DebugBench whether the task was solved; not for mini-swe-agent, whose
  trace ends before the submission is graded).

Every rate is a ratio of sums over runs, so a bootstrap resamples runs (not
iterations: iterations of one run are not independent), recomputes the
ratio, and reports the 2.5th and 97.5th percentiles.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

COUNTS = (
    "runs", "iterations", "failures", "unclassified", "repeats", "repeats_within",
    "repeats_cross", "covered", "covered_within", "covered_cross", "tokens", "items",
    "noise_items", "lesson_items", "lesson_noise", "lessons_shown", "lessons_borne",
    "foreign_items", "last_ok",
)
RATIOS = {
    "repeat_rate": ("repeats", "iterations"),
    "repeats_per_failure": ("repeats", "failures"),
    "coverage": ("covered", "repeats"),
    "coverage_within": ("covered_within", "repeats_within"),
    "coverage_cross": ("covered_cross", "repeats_cross"),
    "tokens_per_iteration": ("tokens", "iterations"),
    "noise": ("noise_items", "items"),
    "noise_lessons": ("lesson_noise", "lesson_items"),
    "lesson_precision": ("lessons_borne", "lessons_shown"),
    "foreign": ("foreign_items", "items"),
    "last_ok": ("last_ok", "runs"),
}
RESAMPLES = 2000


def per_run(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Counts per run (in order of first appearance) from per-iteration rows."""
    runs: dict[str, dict[str, Any]] = {}
    seen: dict[str, set[str]] = {}  # signature -> runs where it failed before
    shown: dict[str, set[str]] = {}  # run -> lessons shown in it so far
    later = _later_signatures(rows)
    for index, row in enumerate(rows):
        run = row["run"]
        c = runs.get(run)
        if c is None:
            c = runs[run] = {"run": run, **dict.fromkeys(COUNTS, 0), "runs": 1}
        c["iterations"] += 1
        c["tokens"] += row.get("tokens", 0)
        c["last_ok"] = int(bool(row["success"]))  # the last iteration decides
        for item in row.get("items", ()):
            noise = not set(item.get("signatures", ())) & later[index]
            c["items"] += 1
            c["noise_items"] += noise
            c["foreign_items"] += bool(item.get("foreign"))
            if item.get("section") != "recent":
                c["lesson_items"] += 1
                c["lesson_noise"] += noise
                if item["id"] not in shown.setdefault(run, set()):
                    shown[run].add(item["id"])
                    c["lessons_shown"] += 1
                    c["lessons_borne"] += not noise
        if row["success"]:
            continue
        c["failures"] += 1
        sig = row.get("signature")
        if sig is None:
            c["unclassified"] += 1
            continue
        before = seen.setdefault(sig, set())
        if before:
            kind = "within" if run in before else "cross"
            covered = any(sig in item.get("signatures", ()) for item in row.get("items", ()))
            c["repeats"] += 1
            c[f"repeats_{kind}"] += 1
            c["covered"] += covered
            c[f"covered_{kind}"] += covered
        before.add(run)
    return list(runs.values())


def _later_signatures(rows: Sequence[dict[str, Any]]) -> list[set[str]]:
    """For each row, the signatures failing at it or later in its run."""
    later: list[set[str]] = [set() for _ in rows]
    ahead: dict[str, set[str]] = {}
    for index in range(len(rows) - 1, -1, -1):
        row = rows[index]
        sigs = ahead.setdefault(row["run"], set())
        if not row["success"] and row.get("signature"):
            sigs = ahead[row["run"]] = sigs | {row["signature"]}
        later[index] = sigs
    return later


def totals(runs: Sequence[dict[str, Any]]) -> dict[str, int]:
    return {name: sum(r[name] for r in runs) for name in COUNTS}


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def bootstrap(
    arms: Sequence[Sequence[dict[str, Any]]], seed: int = 0, resamples: int = RESAMPLES,
    paired: bool | None = None,
) -> list[dict[str, dict[str, Any]]]:
    """Point estimates and 95% intervals of every ratio, for each arm's per-run counts.

    Arms with the same runs (by name, in any order) are resampled with the
    same draws (paired), so their differences get intervals too (``diff``
    against the first arm).
    """
    rng = np.random.default_rng(seed)
    names = [[r["run"] for r in arm] for arm in arms]
    same_runs = all(len(n) == len(names[0]) and set(n) == set(names[0]) for n in names)
    if paired is None:
        paired = len(arms) > 1 and same_runs and len(set(names[0])) == len(names[0])
    if paired:  # the same run in every arm takes the same row, so draws are shared
        order = {name: k for k, name in enumerate(names[0])}
        arms = [sorted(arm, key=lambda r: order[r["run"]]) for arm in arms]
    shared = _weights(rng, len(arms[0]), resamples) if paired and arms[0] else None
    results, first = [], None
    for arm in arms:
        matrix = np.array([[r[name] for name in COUNTS] for r in arm], dtype=float)
        matrix = matrix.reshape(len(arm), len(COUNTS))
        weights = shared if shared is not None else _weights(rng, len(arm), resamples)
        sums = weights @ matrix if len(arm) else np.zeros((resamples, len(COUNTS)))
        whole = matrix.sum(axis=0)
        arm_result: dict[str, dict[str, Any]] = {}
        samples = {}
        for name, (num, den) in RATIOS.items():
            i, j = COUNTS.index(num), COUNTS.index(den)
            with np.errstate(divide="ignore", invalid="ignore"):
                draws = np.where(sums[:, j] > 0, sums[:, i] / sums[:, j], np.nan)
            samples[name] = draws
            arm_result[name] = {
                "value": _ratio(whole[i], whole[j]),
                **_interval(draws),
                "num": int(whole[i]),
                "den": int(whole[j]),
            }
        if paired and first is not None:
            for name in RATIOS:
                value, base = arm_result[name]["value"], results[0][name]["value"]
                diff = samples[name] - first[name]
                arm_result[name]["diff"] = {
                    "value": None if value is None or base is None else value - base,
                    **_interval(diff),
                }
        first = first or samples
        results.append(arm_result)
    return results


def _weights(rng: np.random.Generator, n: int, resamples: int) -> np.ndarray:
    """How often each run is drawn in each resample (n draws with replacement)."""
    if n == 0:
        return np.zeros((resamples, 0))
    return rng.multinomial(n, np.full(n, 1 / n), size=resamples).astype(float)


def _interval(draws: np.ndarray) -> dict[str, float | None]:
    finite = draws[np.isfinite(draws)]
    if finite.size == 0:
        return {"low": None, "high": None}
    low, high = np.percentile(finite, [2.5, 97.5])
    return {"low": float(low), "high": float(high)}


def percentiles(samples: Sequence[float]) -> dict[str, float | None]:
    if not samples:
        return {"p50": None, "p95": None}
    p50, p95 = np.percentile(np.asarray(samples, dtype=float), [50, 95])
    return {"p50": round(float(p50), 3), "p95": round(float(p95), 3)}


def summarize(rows: Sequence[dict[str, Any]], seed: int = 0) -> dict[str, Any]:
    """Everything ``summary.json`` holds about a list of iteration rows."""
    runs = per_run(rows)
    latencies = [r["recall_ms"] for r in rows if r.get("recall_ms") is not None]
    return {
        "metrics": bootstrap([runs], seed=seed)[0],
        "totals": totals(runs),
        "recall_ms": percentiles(latencies),
        "bootstrap": {"resamples": RESAMPLES, "seed": seed, "unit": "run"},
        "runs": runs,
    }
