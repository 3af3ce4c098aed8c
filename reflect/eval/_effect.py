"""``reflect eval effect``: what each lesson changes, as the holdout measured it
(``recall.holdout``): its family's rate in the runs that saw it and in those that did not,
with intervals, the predicted rate beside them, and the verdict. A table and a PNG."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reflect.base.text import clip
from reflect.eval._charts import pyplot, save
from reflect.recall.holdout import Effect, Holdout, wilson


def rows(effects: list[Effect], rule: Holdout, triggers: dict[str, str]) -> list[dict[str, Any]]:
    """Each effect as the JSON output gives it, with the lesson's trigger."""
    return [{**e.to_dict(rule), "trigger": triggers.get(e.lesson_id, "")} for e in effects]


OFF = ("the holdout is off (REFLECT_HOLDOUT unset or 0) and no run had a lesson withheld, so"
       " nothing is measured; run the fleet with REFLECT_HOLDOUT=0.1 (see docs/holdout.md)")


def table(effects: list[Effect], rule: Holdout, triggers: dict[str, str]) -> str:
    if not rule.p and not any(e.withheld for e in effects):
        return OFF  # runs that were all shown every lesson measure no effect
    if not effects:
        return (
            f"no lesson has been withheld yet (the holdout withholds each lesson from"
            f" {100 * rule.p:g}% of the runs it would be shown to: REFLECT_HOLDOUT); its"
            " effects appear here as runs go by (see docs/holdout.md)")

    def rate(hits: int, n: int) -> str:
        lo, hi = wilson(hits, n, rule.z)
        return f"{100 * hits / max(n, 1):5.1f}% [{100 * lo:4.1f}, {100 * hi:5.1f}] n={n}"

    out = [f"{'lesson':<14} {'shown':<27} {'withheld':<27} {'predicted':>9} "
           f"{'effect':<22} verdict   trigger"]
    for e in effects:
        lo, hi = e.interval(rule.z)
        effect = f"{100 * e.effect():+5.1f} [{100 * lo:+5.1f}, {100 * hi:+5.1f}]"
        out.append(f"{e.lesson_id:<14} {rate(e.shown_hits, e.shown):<27} "
                   f"{rate(e.withheld_hits, e.withheld):<27} {100 * e.predicted:8.1f}% "
                   f"{effect:<22} {e.verdict or '-':<9} "
                   f"{clip(' '.join(triggers.get(e.lesson_id, '').split()), 40)}")
    out.append(f"rates: how often the lesson's family followed once it was eligible; effect: "
               f"withheld minus shown, in points ({rule.z:g}-sigma intervals); judged at "
               f"{rule.min_runs} runs an arm and each doubling; demoted below "
               f"{100 * rule.min_effect:g} points")
    if not rule.p:
        out.append("the holdout is off now (REFLECT_HOLDOUT unset or 0): these were measured"
                   " while it was on, and nothing new is measured until it is on again")
    return "\n".join(out)


def chart(effects: list[Effect], rule: Holdout, path: str | Path) -> bool:
    """A PNG of the lessons by measured effect, with intervals; False (nothing written)
    when matplotlib is not installed."""
    plt = pyplot()
    if plt is None:
        return False
    shown = sorted(effects, key=lambda e: e.effect())
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.35 * max(len(shown), 1)))
    colours = {"promoted": "C2", "demoted": "C3"}
    for y, e in enumerate(shown):
        lo, hi = e.interval(rule.z)
        d = e.effect()
        ax.errorbar([100 * d], [y], xerr=[[100 * (d - lo)], [100 * (hi - d)]], fmt="o",
                    capsize=3, color=colours.get(e.verdict, "C0"))
    ax.axvline(0, color="black", linewidth=0.8)
    ax.axvline(100 * rule.min_effect, color="grey", linewidth=0.8, linestyle="--")
    ax.set_yticks(range(len(shown)), [f"{e.lesson_id} {e.verdict}".strip() for e in shown],
                  fontsize=8)
    ax.set_xlabel("points its family's rate falls when shown (withheld minus shown)")
    ax.set_title(f"what each lesson changes ({rule.z:g}-sigma intervals; green promoted, "
                 "red demoted)", fontsize=9)
    return save(plt, fig, path)
