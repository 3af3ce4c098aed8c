"""What worked: a failure is resolved only by a later step that re-ran its command (same
program and target) and passed, and the text says what changed in between: a short,
concrete fix or nothing. A step that merely looked (an ``ls``, a ``cat``) is no part of
the fix, and the last two of many changes are not the fix either."""

from __future__ import annotations

from collections.abc import Callable

from reflect.base.records import Failure
from reflect.capture import commands

MAX_STEPS = 2  # steps that changed something: more, and no one of them can be named the fix
STEP_CHARS = 45


def reran(failed_action: str, action: str) -> bool:
    program, target = commands.key(failed_action)
    return bool(program) and (program, target) == commands.key(action)


def what_changed(failed_action: str, between: list[str], action: str) -> str:
    """One line: the steps that changed something between the failure and the rerun (each
    by its short form; a step that only looked is left out), then the rerun; or that a
    plain rerun passed. "" when more than ``MAX_STEPS`` changed something: a list of the
    last few of many steps names no fix, and a lesson is better without it."""
    rerun = commands.brief(action, STEP_CHARS * 2)
    briefs = [commands.brief(s, STEP_CHARS) for s in between if not commands.inspects(s)]
    changes = [b for i, b in enumerate(briefs) if i == 0 or b != briefs[i - 1]]
    if len(changes) > MAX_STEPS:
        return ""
    if changes:
        return f"{'; '.join(f'`{b}`' for b in changes)}, then `{rerun}` passed"
    if commands.brief(failed_action) == commands.brief(action):
        return f"`{rerun}` passed when rerun unchanged"
    return f"`{rerun}` passed"


def resolutions(open_failures: list[Failure], action: str,
                between: Callable[[int], list[str]]) -> dict[str, str]:
    """For the open failures that ``action`` re-ran with a fix that can be named: failure
    id -> what worked. ``between(iteration)`` gives the steps that succeeded after that
    iteration. A failure whose fix cannot be named stays open."""
    found = {f["id"]: what_changed(f["action"], between(f["iteration"] or 0), action)
             for f in open_failures if reran(f["action"], action)}
    return {failure_id: text for failure_id, text in found.items() if text}
