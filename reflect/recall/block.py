"""The block for the next prompt: this run's recent failures, then the lessons of what it
is likely to hit next, predicted from earlier runs (``predict``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from reflect.base.records import Eligible, FailureRow, LessonRow, Recall, RecallItem
from reflect.capture.commands import kind
from reflect.recall import taught
from reflect.recall.holdout import DEMOTED, PROMOTED, WITHHELD, Holdout, arm, effects
from reflect.recall.predict import (
    Estimate,
    Neighbourhood,
    Predictor,
    command_hits,
    estimate,
    similar_by_words,
)
from reflect.recall.render import (
    LESSONS_HEADER,
    RECENT_HEADER,
    estimate_tokens,
    fit,
    house_header,
    house_item_text,
    lesson_item_text,
    recent_item_text,
)
from reflect.recall.worked import mostly_work
from reflect.reflection.embedding import Vectors
from reflect.store import error_query
from reflect.store.protocol import FailureStore, GoalSearch, InjectionLog, RunStore

GLOBAL = "global"  # the scope outside a project

__all__ = ["Holdout", "Predictor", "Query", "build"]

RECENT_WINDOW = 200  # failures scanned for the recent section: bounds recall on long runs
FAMILY_RECORD = 200  # a family's latest failures a house rule's fix is counted over
MAX_RECENT_ITEMS = 8


@dataclass(frozen=True)
class Query:
    """What a harness knows before an iteration, and how the block may be built."""

    run: str
    goal: str = ""
    phase: str = ""
    iteration: int | None = None
    scope: str = "global"
    now: float = 0.0
    max_tokens: int = 400
    sections: tuple[str, ...] = ("recent", "lessons")
    embed: bool = False  # compute this goal's vector here (loads the model once)
    escalate_after: int = 2
    action: str = ""  # the command about to run, where the client tells it (scrubbed)


R = TypeVar("R", bound=Mapping[str, Any])  # a failure's row, whole or lean


class RecallStore(FailureStore, InjectionLog, RunStore, GoalSearch, Protocol):
    """The roles of the store a recall reads."""


NO_HOLDOUT = Holdout()  # every eligible lesson shown


def build(store: RecallStore, vectors: Vectors, q: Query, predictor: Predictor,
          holdout: Holdout = NO_HOLDOUT,
          kept: Sequence[tuple[FailureRow, LessonRow]] = ()) -> Recall:
    """``kept``: the captures kept aside (``reflect.store.pending.kept``), not in the store
    yet: this run's are its newest failures."""
    # The window is read lean: whole rows only for the failures an item shows.
    rows = store.recent_causes(q.run, q.iteration, RECENT_WINDOW)
    recent = recent_items(store, q, rows, kept) if "recent" in q.sections else []
    rules = Rules()
    if "lessons" in q.sections:
        rules = lesson_items(store, vectors, q, predictor, rows, holdout)
    block = fit(rules.sections(recent), q.max_tokens)
    return withhold(block, rules, recent, q.max_tokens) if rules.chosen else block


@dataclass
class Rules:
    """The lessons of a block: the house rules (what this scope's runs hit most, under
    ``header``), then taught and imported lessons; ``chosen``: the predicted lessons with
    their holdout arms."""

    header: str = ""
    house: list[RecallItem] = field(default_factory=list)
    taught: list[RecallItem] = field(default_factory=list)
    chosen: dict[str, Eligible] = field(default_factory=dict)

    def sections(self, recent: list[RecallItem], keep: set[str] | None = None
                 ) -> list[tuple[str, list[RecallItem]]]:
        def kept(items: list[RecallItem]) -> list[RecallItem]:
            return [i for i in items if keep is None or i.id in keep]

        return [(RECENT_HEADER, recent), (self.header, kept(self.house)),
                (LESSONS_HEADER, kept(self.taught))]


def withhold(block: Recall, rules: Rules, recent: list[RecallItem], max_tokens: int) -> Recall:
    """The block without the lessons its run is in the withheld arm for. Eligible are the
    predicted lessons of the block as it would be (what fits the budget), and those
    demoted; nothing takes a withheld lesson's place, so the arms differ by it alone."""
    chosen = rules.chosen
    shown = [i for i in block.items if i.section == "lesson" and i.id in chosen]
    eligible = [chosen[i.id] for i in shown] + [e for e in chosen.values() if e.arm == DEMOTED]
    hidden = {e.lesson_id for e in eligible if e.arm == WITHHELD}
    if hidden:
        kept = {i.id for i in block.items if i.section != "recent" and i.id not in hidden}
        block = fit(rules.sections(recent, kept), max_tokens)
    block.eligible = eligible
    return block


def recent_items(store: RecallStore, q: Query, rows: Sequence[Mapping[str, Any]],
                 kept: Sequence[tuple[FailureRow, LessonRow]] = ()) -> list[RecallItem]:
    """One item per fingerprint, newest first, each shown with its latest failure; one
    whose hint this run read and failed the same way after comes first. The run's
    captures in ``kept`` come before the stored ones: none is older."""
    aside = _aside(kept, q)
    groups = _groups([*aside.values(), *rows])
    ids = [group[0]["id"] for group in groups.values()]
    full = {**store.failures_by_id([i for i in ids if i not in aside]), **aside}
    latest = [full[i] for i in ids]
    fingerprints = [f["fingerprint"] for f in latest]
    lessons = {**_aside_lessons(kept), **store.active_lessons(fingerprints)}
    return _items(latest, groups, lessons, store.shown_then_failed(q.run, fingerprints), q)


def _aside(kept: Sequence[tuple[FailureRow, LessonRow]], q: Query) -> dict[str, FailureRow]:
    """The run's captures kept aside before the query's iteration, newest first, by id."""
    return {f["id"]: {"resolution": "", **f} for f, _ in kept if f["run"] == q.run
            and (q.iteration is None or (f["iteration"] or 0) < q.iteration)}


def _aside_lessons(kept: Sequence[tuple[FailureRow, LessonRow]]) -> dict[str, LessonRow]:
    """Their lessons by fingerprint; a quarantined one is never shown."""
    return {f["fingerprint"]: lesson for f, lesson in kept if not lesson.get("quarantine")}


def kept_block(kept: list[tuple[FailureRow, LessonRow]], q: Query) -> Recall:
    """The recent section from captures kept aside (failure, lesson), newest first, while
    the store cannot be read: what this run failed with is still said."""
    groups = _groups(list(_aside(kept, q).values()))
    latest = [group[0] for group in groups.values()]
    return fit([(RECENT_HEADER, _items(latest, groups, _aside_lessons(kept), {}, q))],
               q.max_tokens)


def _groups(rows: Sequence[R]) -> dict[str, list[R]]:
    groups: dict[str, list[R]] = {}
    for row in rows:  # newest first, so each group's first row is its latest
        groups.setdefault(row["fingerprint"], []).append(row)
    return dict(list(groups.items())[:MAX_RECENT_ITEMS])


def _items(latest: list[FailureRow], groups: Mapping[str, Sequence[Mapping[str, Any]]],
           lessons: dict[str, LessonRow],
           shown: dict[str, int], q: Query) -> list[RecallItem]:
    items = [recent_item(f, [g["id"] for g in groups[f["fingerprint"]]],
                         lessons.get(f["fingerprint"]), shown.get(f["fingerprint"], 0),
                         rank, q.escalate_after)
             for rank, f in enumerate(latest)]
    items.sort(key=lambda i: shown.get(i.fingerprint, 0) < q.escalate_after)
    return items


def recent_item(failure: FailureRow, group: list[str], lesson: LessonRow | None, shown_failed: int,
                rank: int, escalate_after: int) -> RecallItem:
    """The item of one of this run's failures, standing for the failures in ``group``."""
    return RecallItem(
        section="recent",
        id=lesson["id"] if lesson else failure["lesson_id"],
        text=recent_item_text(failure, len(group), lesson, shown_failed, escalate_after),
        fingerprint=failure["fingerprint"],
        source_failure_ids=group,
        score=round(1 / (1 + rank), 3),
    )


def relative(similar: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Cosines scaled so the closest run weighs 1, as the goals' word matches are: what a
    cosine means depends on the model (two goals of like meaning: 0.1 with MiniLM)."""
    best = max((w for _, w in similar), default=0.0)
    return [(run, w / best) for run, w in similar] if best > 0 else []


def neighbourhood(store: RecallStore, vectors: Vectors, q: Query, predictor: Predictor,
                  seen: set[str]) -> Neighbourhood:
    """Earlier runs like this one: by goal vector where this goal has one (else by the
    goal's words), those that hit a family this run has hit, and those whose command of
    the kind about to run failed."""
    shared = predictor.members > 1 and store.several_members(q.scope)

    def window(size: int) -> tuple[int, dict[str, int], dict[str, int]]:
        share = -(-size // predictor.members) if shared else None  # rounded up
        return store.recent_families(q.run, q.scope, size, share)

    latest, hits, latest_by = window(predictor.window)
    long, long_hits, long_by = latest, hits, latest_by  # a store no larger: the same runs
    if latest == predictor.window and predictor.long_window > latest:
        long, long_hits, long_by = window(predictor.long_window)
    near = Neighbourhood(
        following=store.families_after(seen, q.run) if predictor.follow else {},
        latest=latest, latest_hits=hits, long=long, long_hits=long_hits, shared=shared,
        latest_by=latest_by, long_by=long_by)
    if predictor.action and (command := kind(q.action)):
        near.command = command
        near.commands, actions = store.recent_commands(q.run, q.scope, predictor.action_window)
        near.command_runs, near.command_hits = command_hits(actions, command)
    if q.goal and predictor.k:
        vector = vectors.query_vector(q.goal, q.embed) if vectors.spec is not None else None
        if vector is not None:
            near.similar = relative(vectors.similar_runs(vector, q.run, predictor.k))
        else:
            near.similar = similar_by_words(store, q.goal, q.run, q.scope, predictor.k)
    return near


def predicted(store: RecallStore, vectors: Vectors, q: Query, predictor: Predictor,
              seen: set[str], earlier: int) -> list[Estimate]:
    """The families of mistakes this run is likely to make, most probable first, none of
    ``seen`` (the families it already has); ``earlier``: the scope's runs before this one
    (``earlier_runs``)."""
    if earlier == 0:  # nothing to predict from, but later runs will look for this one
        if q.goal and predictor.k and vectors.spec is not None:
            vectors.query_vector(q.goal, q.embed)
        return []
    near = neighbourhood(store, vectors, q, predictor, seen)
    return estimate(store, predictor, near, q.run, earlier, seen)


def lesson_items(store: RecallStore, vectors: Vectors, q: Query, predictor: Predictor,
                 rows: Sequence[Mapping[str, Any]], holdout: Holdout = NO_HOLDOUT) -> Rules:
    """Taught and imported lessons the query's words call for, and the house rules: the
    mistakes this run is most likely to make, most likely first, each while its expected
    value pays for its tokens; none of a family this run already has. With them, each
    predicted lesson with its holdout arm (a demoted one is left out, and the next takes
    its place)."""
    seen = {row["family"] for row in rows}
    latest = store.failures_by_id([rows[0]["id"]])[rows[0]["id"]] if rows else None
    query = "\n".join([q.goal, q.phase, q.action, *(
        (error_query(latest), latest["action"]) if latest else ())])
    rules = Rules(taught=[
        RecallItem(section="lesson", id=lesson["id"],
                   text=lesson_item_text(lesson, None, "taught" if lesson["kind"] == "taught"
                                         else "imported"),
                   fingerprint=lesson["fingerprint"], source_failure_ids=[], score=1.0)
        for lesson in taught.matching(store, query, q.scope)
        if lesson["fingerprint"] not in {row["fingerprint"] for row in rows}
    ][:predictor.max_items])
    earlier = store.earlier_runs(q.run, q.scope)
    rules.header = house_header(earlier, q.scope != GLOBAL)
    # With what followed or the command about to run, the estimates move within the run,
    # and what it hit is left out of them.
    moves = predictor.follow or (predictor.action and q.action)
    estimates = predicted(store, vectors, q, predictor, seen if moves else set(), earlier)
    estimates = estimates[:2 * predictor.max_items + len(seen)]
    lessons = store.family_lessons([e.family for e in estimates], q.run, q.scope)
    verdicts = {}
    if holdout.p > 0:  # verdicts are read while a holdout runs: the log is read for them
        judged = effects(store.holdout_arms([lesson["id"] for lesson, _ in lessons.values()]),
                         holdout)
        verdicts = {lesson_id: e.verdict for lesson_id, e in judged.items()}
    offered: list[tuple[bool, float, RecallItem]] = []
    places = predictor.max_items - len(rules.taught)
    for e in estimates:
        if e.family not in lessons or len(offered) >= places:
            continue
        lesson, failure = lessons[e.family]
        if any(i.id == lesson["id"] for i in rules.taught):
            continue  # an imported lesson its trigger already brought in
        text, ids = house_rule(store, q, e, lesson, failure,
                               predictor.members if e.long_by else 0)
        if not text:
            continue  # nothing to do said: the next likely rule takes its place
        verdict = verdicts.get(lesson["id"], "")
        # A lesson on trial or promoted needs no threshold: what it prevents no longer
        # shows in p, and its arms must not lose runs to its own effect. Any other pays
        # for its tokens: p times the tokens of the failed step it may save.
        worth = e.p * predictor.step_tokens >= estimate_tokens(text)
        if (not worth or e.p < predictor.threshold) and lesson["id"] not in verdicts:
            continue
        if e.family in seen:
            continue  # the recent section shows it: the next likely rule takes its place
        rules.chosen[lesson["id"]] = Eligible(
            lesson["id"], e.family, arm(q.run, lesson["fingerprint"], verdict, holdout), e.p)
        if rules.chosen[lesson["id"]].arm == DEMOTED:
            continue
        offered.append((verdict == PROMOTED, e.p, RecallItem(
            section="lesson", id=lesson["id"], text=text, fingerprint=lesson["fingerprint"],
            source_failure_ids=ids, score=e.p)))
    offered.sort(key=lambda o: o[:2], reverse=True)  # a proven lesson first, then by p
    rules.house = [item for *_, item in offered]
    return rules


def house_rule(store: RecallStore, q: Query, e: Estimate, lesson: LessonRow,
               failure: FailureRow, members: int = 0) -> tuple[str, list[str]]:
    """A family's house rule and its provenance; "" when it is no rule: a mistake that is
    mostly the runs' own progress (a test red until the fix), or one it says nothing to do
    about. ``members``: of how many members a fix's runs must be (0: a scope of one)."""
    record = store.family_record(e.family, q.scope, FAMILY_RECORD)
    if lesson["kind"] == "heuristic" and mostly_work(record):
        return "", []
    ids = _provenance(failure["id"], store.family_failure_ids(e.family, q.scope))
    found = store.failures_by_id(ids)
    text, told_from = house_item_text(lesson, failure, [found[i] for i in ids if i in found],
                                      e.why(q.scope != GLOBAL), record, members)
    if told_from and told_from not in ids:
        ids = [*ids, told_from]  # the failure whose fix it tells
    return text, ids


def _provenance(shown: str, latest: list[str]) -> list[str]:
    """The failure an item shows first, then the family's latest others, five in all."""
    return [shown, *(i for i in latest if i != shown)][:len(latest) or 1]
