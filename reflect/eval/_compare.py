"""Replays (or live arms) side by side: a table with bootstrap intervals, and a PNG chart.

Each input is a directory holding ``summary.json`` (what ``replay`` and
``ab`` write) or such a file. Intervals resample runs with a seeded RNG;
when every input has the same runs (modes of one trace, arms of one A/B, a
Reflexion run and its simple twin) the resamples are shared, and the table adds each column's
difference from the first with its own interval.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reflect.eval._charts import pyplot, save
from reflect.eval._metrics import RESAMPLES, bootstrap
from reflect.eval._replay import SUMMARY_FILE

# (metric, label, shown as a percentage)
ROWS = (
    ("repeat_rate", "repeats per iteration", True),
    ("repeats_per_failure", "repeats per failure", True),
    ("coverage_within", "coverage, within-run repeats", True),
    ("coverage_cross", "coverage, cross-run repeats", True),
    ("tokens_per_iteration", "tokens injected per iteration", False),
    ("noise", "noise (injected items)", True),
    ("noise_lessons", "noise (lesson-section items)", True),
    ("lesson_precision", "lesson precision (borne out in their run)", True),
    ("foreign", "items naming a foreign detail", True),
    ("last_ok", "runs whose last iteration succeeded", True),
)
CHART_RATES = ("repeat_rate", "coverage_within", "coverage_cross", "noise", "last_ok")
INSTALL_CHARTS = "pip install 'reflect-memory[charts]'"


class CompareError(RuntimeError):
    """An input that cannot be compared; the message says how to fix it."""


def load(path: str | Path) -> tuple[str, dict[str, Any]]:
    """A label (the directory's name) and the summary read from a directory or file."""
    path = Path(path)
    file = path / SUMMARY_FILE if path.is_dir() else path
    try:
        summary = json.loads(file.read_text(encoding="utf-8"))
    except OSError as e:
        raise CompareError(f"cannot read {file}: {e.strerror or e}; give a directory written "
                           "by `reflect eval replay --out DIR` (or its summary.json)") from e
    except ValueError as e:
        raise CompareError(f"{file}: not valid JSON ({e}); rerun the replay") from None
    if not isinstance(summary, dict) or not isinstance(summary.get("runs"), list):
        raise CompareError(f"{file}: no per-run counts ('runs'); is it a replay summary?")
    return (file.parent.name or str(file.parent)), summary


def compare(paths: Sequence[str | Path], seed: int = 0, resamples: int = RESAMPLES
            ) -> dict[str, Any]:
    return compare_summaries([load(p) for p in paths], seed, resamples)


def compare_summaries(loaded: Sequence[tuple[str, dict[str, Any]]], seed: int = 0,
                      resamples: int = RESAMPLES) -> dict[str, Any]:
    """The comparison of (label, summary) pairs, bootstrapped anew with ``seed``."""
    labels = _unique([label for label, _ in loaded])
    results = bootstrap([s["runs"] for _, s in loaded], seed=seed, resamples=resamples)
    arms = []
    for label, (_, summary), metrics in zip(labels, loaded, results, strict=True):
        arms.append({
            "label": label,
            "mode": summary.get("mode", ""),
            "runs": len(summary["runs"]),
            "iterations": sum(r.get("iterations", 0) for r in summary["runs"]),
            "metrics": metrics,
            "recall_ms": summary.get("recall_ms") or {},
            "wall_seconds": summary.get("wall_seconds"),
            "matched": summary.get("matched"),
        })
    return {"seed": seed, "resamples": resamples, "arms": arms}


def _unique(labels: list[str]) -> list[str]:
    out = []
    for i, label in enumerate(labels):
        out.append(label if labels.count(label) == 1 else f"{label}#{i + 1}")
    return out


def _fmt(value: float | None, pct: bool) -> str:
    if value is None:
        return "-"
    return f"{100 * value:.1f}%" if pct else f"{value:.1f}"


def _cell(m: dict[str, Any], pct: bool) -> str:
    if m["value"] is None:
        return "-"
    if m["low"] is None:
        return _fmt(m["value"], pct)
    return f"{_fmt(m['value'], pct)} [{_fmt(m['low'], pct)}, {_fmt(m['high'], pct)}]"


def _diff_cell(m: dict[str, Any], pct: bool) -> str:
    d = m.get("diff")
    if not d or d["value"] is None:
        return "-"
    sign = "+" if d["value"] >= 0 else ""
    scale = 100 if pct else 1
    unit = " pts" if pct else ""
    text = f"{sign}{scale * d['value']:.1f}{unit}"
    if d["low"] is not None:
        text += f" [{scale * d['low']:.1f}, {scale * d['high']:.1f}]"
    return text


def table(result: dict[str, Any]) -> str:
    arms = result["arms"]
    header = ["", *(f"{a['label']} ({a['mode']})" if a["mode"] not in ("", a["label"])
                     else a["label"] for a in arms)]
    lines = [header, ["runs / iterations", *(f"{a['runs']} / {a['iterations']}" for a in arms)]]
    for name, label, pct in ROWS:
        lines.append([label, *(_cell(a["metrics"][name], pct) for a in arms)])
    lines.append(["recall p50 / p95 ms", *(_latency(a["recall_ms"]) for a in arms)])
    lines.append(["wall time s", *(_fmt(a["wall_seconds"], False) for a in arms)])
    paired = len(arms) > 1 and any("diff" in a["metrics"]["coverage"] for a in arms[1:])
    if paired:
        lines.append([f"difference from {arms[0]['label']} (paired):", *([""] * len(arms))])
        for name, label, pct in ROWS:
            lines.append([f"  {label}", "", *(_diff_cell(a["metrics"][name], pct)
                                              for a in arms[1:])])
    widths = [max(len(row[i]) for row in lines) for i in range(len(header))]
    text = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            for row in lines]
    note = (f"95% intervals: bootstrap over runs, {result['resamples']} resamples, "
            f"seed {result['seed']}")
    return "\n".join([*text, *(line for a in arms for line in matched_lines(a)), note])


def matched_lines(arm: dict[str, Any]) -> list[str]:
    """The arm's cross-run coverage and lesson precision beside the popularity baselines
    with as many lesson items (``matched.py``), by each key, in both readings: the block
    before the step (matched block by block) and anywhere earlier in the run (matched run
    by run); then each fold's, against its best list."""
    found = arm.get("matched")
    if not found:
        return []
    lines = [f"{arm['label']}: cross-run repeats covered, at {found['lesson_items']} lesson "
             "items in all (each baseline shows as many, block by block):"]
    for key, figures in found["keys"].items():
        cells = [f"{arm['label']} {_share(figures['mode'])}"]
        cells += [f"popular/{pool} {_share(t)}" for pool, t in figures["matched"].items()]
        lines.append(f"  by {key:<9} " + "  ".join(cells))
    if found.get("run"):
        lines.append(f"{arm['label']}: anywhere earlier in the run (each list shown once at "
                     "the start, as long as the run's distinct lessons):")
        for key, figures in found["run"].items():
            cells = [f"{arm['label']} {_share(figures['mode'])}"]
            cells += [f"popular/{pool} {_share(t)}" for pool, t in figures["matched"].items()]
            lines.append(f"  by {key:<9} " + "  ".join(cells))
    for n, fold in enumerate(found.get("folds", ()), 1):
        lines.append(f"  fold {n} ({fold['runs']} runs: {', '.join(fold['groups'])}):")
        for key, readings in fold["keys"].items():
            lines.append(f"    by {key:<9} " + "; ".join(
                f"{reading} {verdict(figures)}" for reading, figures in readings.items()))
    return lines


def best_list(figures: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The reading's best popularity list (by coverage, then precision): its pool and tally."""
    matched: dict[str, dict[str, Any]] = figures["matched"]
    return max(matched.items(), key=lambda kv: (kv[1]["covered"], kv[1]["precision"] or 0))


def holds_against(tally: dict[str, Any], best: dict[str, Any]) -> bool:
    """At least the best list's coverage and its precision."""
    return (tally["covered"] >= best["covered"]
            and (tally["precision"] or 0) >= (best["precision"] or 0))


def verdict(figures: dict[str, Any]) -> str:
    """The mode against the best list: k/n against its k, and whether the mode held."""
    mode = figures["mode"]
    pool, best = best_list(figures)
    held = holds_against(mode, best)
    return (f"{mode['covered']}/{mode['repeats']} (precision {_pct(mode['precision'])}) vs "
            f"popular/{pool} {best['covered']} ({_pct(best['precision'])}) "
            f"{'held' if held else 'LOST'}")


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _share(t: dict[str, Any]) -> str:
    coverage = "-" if t["coverage"] is None else f"{100 * t['coverage']:.1f}%"
    precision = "-" if t["precision"] is None else f"{100 * t['precision']:.1f}%"
    return f"{t['covered']}/{t['repeats']} {coverage} (precision {precision})"


def _latency(ms: dict[str, Any]) -> str:
    if not ms or ms.get("p50") is None:
        return "-"
    return f"{ms['p50']:.2f} / {ms['p95']:.2f}"


def chart(result: dict[str, Any], path: str | Path) -> bool:
    """Write a PNG; False (and nothing written) when matplotlib is not installed."""
    plt = pyplot()
    if plt is None:
        return False
    arms = result["arms"]
    labels = [label for name, label, _ in ROWS if name in CHART_RATES]
    fig, (rates, tokens) = plt.subplots(
        1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [4, 1.3]})
    width = 0.8 / max(len(arms), 1)
    for k, arm in enumerate(arms):
        values, errors = _bars(arm, CHART_RATES, 100)
        xs = [i + (k - (len(arms) - 1) / 2) * width for i in range(len(CHART_RATES))]
        rates.bar(xs, values, width, yerr=errors, capsize=3, label=arm["label"], color=f"C{k}")
        tv, te = _bars(arm, ("tokens_per_iteration",), 1)
        tokens.bar([k], tv, 0.6, yerr=te, capsize=3, color=f"C{k}")
    rates.set_xticks(range(len(CHART_RATES)), [_wrap(x) for x in labels], fontsize=8)
    rates.set_ylabel("%")
    rates.legend(fontsize=8)
    rates.set_title("rates (95% bootstrap intervals over runs)", fontsize=9)
    tokens.set_xticks(range(len(arms)), [a["label"] for a in arms], fontsize=8)
    tokens.set_title("tokens injected per iteration", fontsize=9)
    return save(plt, fig, path)


def curve_chart(summary: dict[str, Any], path: str | Path, key: str = "group") -> bool:
    """A PNG of cross-run coverage by ``key`` against lesson items per block: each
    popularity baseline at fixed lengths (``matched.py``'s curve) and the mode's own point
    at its mean items; False (nothing written) when matplotlib is not installed."""
    plt = pyplot()
    if plt is None:
        return False
    figures = summary["matched"]["keys"][key]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for k, (pool, points) in enumerate(figures["curve"].items()):
        xs = range(1, len(points) + 1)
        ax.plot(xs, [100 * (p["coverage"] or 0) for p in points], "o-", color=f"C{k}",
                label=f"popular/{pool}", markersize=4)
    items = summary["blocks"]["lesson_items"]["mean"]
    mode = figures["mode"]
    ax.plot([items], [100 * (mode["coverage"] or 0)], "*", color="black", markersize=14,
            label=f"{summary.get('mode', 'mode')} ({mode['covered']}/{mode['repeats']})")
    ax.set_xlabel("lesson items per block")
    ax.set_ylabel(f"cross-run repeats covered, by {key} (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save(plt, fig, path)


def _bars(arm: dict[str, Any], names: Sequence[str], scale: float
          ) -> tuple[list[float], list[list[float]]]:
    values: list[float] = []
    errors: list[list[float]] = [[], []]
    for name in names:
        m = arm["metrics"][name]
        value = (m["value"] or 0) * scale
        values.append(value)
        low = m["low"] * scale if m["low"] is not None else value
        high = m["high"] * scale if m["high"] is not None else value
        errors[0].append(max(value - low, 0))
        errors[1].append(max(high - value, 0))
    return values, errors


def _wrap(label: str) -> str:
    words = label.split()
    half = (len(words) + 1) // 2
    return " ".join(words[:half]) + "\n" + " ".join(words[half:])
